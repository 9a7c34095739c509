/*
 * A CUDA program in its simplest form, for checking from the outside which
 * GPU a process opened: loads the driver library FAKE_CUDA_LIBRARY (the
 * stand-in libfakecuda.so, whose FAKE_CUDA_OPEN_LOG records each device
 * taken), initialises it and takes every device it sees. Exit 0 when it
 * took at least one, 1 otherwise (the reason on standard error).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*init_fn)(unsigned);
typedef int (*count_fn)(int *);
typedef int (*get_fn)(int *, int);

int main(void)
{
	const char *lib = getenv("FAKE_CUDA_LIBRARY");
	void *h = lib && *lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
	init_fn init;
	count_fn count;
	get_fn get;
	int n = 0, d, rc;

	if (!h) {
		fprintf(stderr, "cuda_open: cannot load FAKE_CUDA_LIBRARY '%s': %s\n", lib ? lib : "", dlerror());
		return 1;
	}
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&count = dlsym(h, "cuDeviceGetCount");
	*(void **)&get = dlsym(h, "cuDeviceGet");
	if (!init || !count || !get) {
		fprintf(stderr, "cuda_open: '%s' lacks cuInit, cuDeviceGetCount or cuDeviceGet\n", lib);
		return 1;
	}
	if ((rc = init(0)) != 0 || (rc = count(&n)) != 0) {
		fprintf(stderr, "cuda_open: the driver says %d\n", rc);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		if ((rc = get(&d, i)) != 0) {
			fprintf(stderr, "cuda_open: device %d: %d\n", i, rc);
			return 1;
		}
	}
	printf("cuda_open: %d device%s\n", n, n == 1 ? "" : "s");
	return n > 0 ? 0 : 1;
}
