/*
 * transformer_check: correctness and speed check of the transformer
 * workload's forward pass (workloads/transformer.cu) on a GPU.
 *
 * 1. Several small shapes (batch > 1, several heads, odd sequence lengths)
 *    and one BERT-base layer are run on the GPU, as a CUDA graph and
 *    eagerly, and compared with a CPU reference: the check fails when the
 *    relative error exceeds 1e-2 or graph and eager outputs differ.
 * 2. Unless --no-time: BERT-base (12 layers, hidden 768, 12 heads, seq 128,
 *    batch 1) is timed with and without the graph; the mean latency and
 *    throughput are printed (not checked: compare with bench/bert_torch.py).
 *
 * Exit status: 0 all checks passed, 1 a check failed, 2 bad arguments.
 */
#include <stdio.h>
#include <string.h>

#include "common.h"

struct shape {
	int layers, hidden, heads, seq, batch;
};

int main(int argc, char **argv)
{
	static const struct shape shapes[] = {
		{1, 64, 2, 7, 1},    /* odd seq, tiny */
		{2, 128, 4, 24, 3},  /* batch > 1, two layers */
		{2, 96, 3, 33, 2},   /* head_dim 32, seq not a multiple of 8 */
		{1, 768, 12, 128, 1} /* one BERT-base layer */
	};
	const double max_rel_err = 1e-2, max_graph_diff = 1e-3;
	bool timing = true;
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--no-time") == 0) {
			timing = false;
		} else {
			fprintf(stderr, "usage: transformer_check [--no-time]\n");
			return 2;
		}
	}

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];
		struct wl_error err;
		double rel = 0.0, gd = 0.0;
		bool ok;

		memset(&err, 0, sizeof(err));
		if (wl_transformer_selfcheck(s->layers, s->hidden, s->heads, s->seq, s->batch, &rel,
					     &gd, &err) != 0) {
			printf("FAIL layers=%d hidden=%d heads=%d seq=%d batch=%d: %s\n", s->layers,
			       s->hidden, s->heads, s->seq, s->batch, err.message);
			failed++;
			continue;
		}
		ok = rel <= max_rel_err && gd <= max_graph_diff;
		printf("%s layers=%d hidden=%d heads=%d seq=%d batch=%d: rel_err=%.3g (max %.0e) "
		       "graph_vs_eager=%.3g (max %.0e)\n",
		       ok ? "ok  " : "FAIL", s->layers, s->hidden, s->heads, s->seq, s->batch, rel,
		       max_rel_err, gd, max_graph_diff);
		failed += !ok;
	}

	if (timing) {
		for (int g = 1; g >= 0; g--) {
			struct wl_error err;
			double sec = 0.0, flops = 0.0;

			memset(&err, 0, sizeof(err));
			if (wl_transformer_time(12, 768, 12, 128, 1, g == 1, 200, &sec, &flops, &err) !=
			    0) {
				printf("FAIL timing (graph=%s): %s\n", g ? "on" : "off", err.message);
				failed++;
				continue;
			}
			printf("time BERT-base b1 s128 graph=%s: %.3f ms/request, %.1f requests/s, "
			       "%.1f TFLOP/s\n",
			       g ? "on " : "off", sec * 1e3, 1.0 / sec, flops / sec * 1e-12);
		}
	}
	printf("%s\n", failed ? "transformer_check: FAILED" : "transformer_check: passed");
	return failed ? 1 : 0;
}
