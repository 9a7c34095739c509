/*
 * The cost of an empty request through the C client (include/gpushare/client.h):
 * run under `gpushare bench -- client_overhead` it reports every empty
 * request (running(), now, now, report()); run alone (the client inactive)
 * it times N iterations of the same loop itself and prints ns per request.
 * bench/client_overhead.sh runs both side by side.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gpushare/client.h"

int main(int argc, char **argv)
{
	struct gpushare_client gs;
	long n = argc > 1 ? atol(argv[1]) : 2000000, i = 0;
	uint64_t t0;

	if (gpushare_client_init(&gs) != 0)
		return 3;
	if (gpushare_client_ready(&gs) != 0)
		return 0;
	t0 = gpushare_client_now_ns();
	while (gpushare_client_running(&gs) && (gs.active || i < n)) {
		uint64_t a = gpushare_client_now_ns();

		gpushare_client_report(&gs, a, gpushare_client_now_ns());
		i++;
	}
	if (!gs.active)
		printf("alone: %.1f ns per empty request (%ld requests)\n",
		       (double)(gpushare_client_now_ns() - t0) / (double)i, i);
	gpushare_client_close(&gs);
	return 0;
}
