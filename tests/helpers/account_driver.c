/*
 * A CUDA process without CUDA, for the accounting tests: it does what the
 * CUDA driver does with CUDA_INJECTION64_PATH (load the library it names and
 * call its InitializeInjection), then stays for the seconds given, while the
 * library's sampling thread runs against the stand-in CUPTI
 * (libfakecupti.c). As the built-in probe of `gpushare check` does, it
 * writes the SM count its context reports to $GPUSHARE_CHECK_SMS_FILE when
 * set: FAKE_CUDA_SMS (default 132), reduced under
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. With GPUSHARE_CUDA_LIBRARY set it
 * loads that driver (the stand-in libfakecuda.so) and calls its cuInit
 * first, as a CUDA process has its libcuda loaded and initialised, so that
 * the library can ask it for each device's UUID; a driver that does not
 * load is left out.
 *
 *   account_driver SECONDS
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec t = { .tv_sec = (time_t)secs, .tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9) };
	const char *cuda = getenv("GPUSHARE_CUDA_LIBRARY");
	void *dl, *cu;
	int (*init)(void), (*cu_init)(unsigned);

	if (!path) {
		fprintf(stderr, "account_driver: CUDA_INJECTION64_PATH is not set\n");
		return 2;
	}
	if (cuda && *cuda && (cu = dlopen(cuda, RTLD_NOW | RTLD_LOCAL))) {
		*(void **)(&cu_init) = dlsym(cu, "cuInit");
		if (cu_init)
			cu_init(0);
	}
	if (!(dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "account_driver: %s\n", dlerror());
		return 2;
	}
	*(void **)(&init) = dlsym(dl, "InitializeInjection");
	if (!init) {
		fprintf(stderr, "account_driver: no InitializeInjection in %s\n", path);
		return 2;
	}
	if (getenv("GPUSHARE_CHECK_SMS_FILE")) {
		const char *f = getenv("FAKE_CUDA_SMS"), *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
		int sms = f ? atoi(f) : 132;
		FILE *out = fopen(getenv("GPUSHARE_CHECK_SMS_FILE"), "w");

		if (pct && atoi(pct) > 0 && atoi(pct) < 100)
			sms = sms * atoi(pct) / 100;
		if (out) {
			fprintf(out, "%d\n", sms);
			fclose(out);
		}
	}
	if (init() != 1) {
		fprintf(stderr, "account_driver: InitializeInjection failed\n");
		return 1;
	}
	nanosleep(&t, NULL);
	return 0;
}
