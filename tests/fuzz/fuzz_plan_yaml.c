/*
 * libFuzzer harness for the YAML that `gpushare plan` writes (--for
 * k8s-device-plugin, k8s-dra, mig-parted), read back by libyaml's own
 * parser: the names a results file records (the host, the GPU, the
 * driver, the measuring command line) and --name come from the fuzzer, go
 * through the results loader, the decision and the writers, and every part
 * of every output must parse to its stream end. A byte libyaml's reader
 * refuses (a C1 control, U+FFFE/U+FFFF) or a name that leaves its comment
 * or scalar aborts. Built with clang and -DGPUSHARE_FUZZ=ON
 * (tests/CMakeLists.txt); seeds in tests/fuzz/corpus_plan_yaml/.
 *
 *   build-fuzz/tests/fuzz_plan_yaml -max_total_time=20 tests/fuzz/corpus_plan_yaml
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "gpushare/buf.h"
#include "gpushare/gpushare.h"
#include "gpushare/plan.h"
#include "gpushare/report.h"
#include "gpushare/strategy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Field i of the input (fields separated by '\n'); "" when absent. */
static void field(const uint8_t *data, size_t size, int i, char *out, size_t len)
{
	size_t a = 0, n = 0;

	for (int k = 0; k < i && a < size; k++) {
		const uint8_t *e = memchr(data + a, '\n', size - a);

		a = e ? (size_t)(e - data) + 1 : size;
	}
	while (a + n < size && data[a + n] != '\n' && n + 1 < len)
		n++;
	memcpy(out, data + a, n);
	out[n] = '\0';
}

/* s as the body of a JSON string: quotes, backslashes and controls escaped,
 * other bytes (invalid UTF-8 included) as they are. */
static void json_body(struct gpushare_buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			gpushare_buf_addf(b, "\\%c", c);
		else if (c < 0x20)
			gpushare_buf_addf(b, "\\u%04x", c);
		else
			gpushare_buf_add(b, s, 1);
	}
}

static void record(struct gpushare_buf *b, const char *strategy, int workers, int repeat, double rate, const char *host,
		   const char *gpu, const char *driver, const char *arg)
{
	gpushare_buf_addf(b, "{\"gpushare_sweep_record\":1,\"cell\":{\"key\":\"matmul|%s|w%d|b1\",\"shape\":\"matmul\","
			     "\"workload\":\"matmul\",\"strategy\":\"%s\",\"workers\":%d,\"batch\":1},\"repeat\":%d,"
			     "\"status\":\"ok\",\"error\":null,\"metadata\":{\"gpushare_version\":\"0.1.0\","
			     "\"date\":\"2026-11-20T10:00:00Z\",\"host\":\"",
			  strategy, workers, strategy, workers, repeat);
	json_body(b, host);
	gpushare_buf_addf(b, "\",\"gpu\":{\"index\":0,\"name\":\"");
	json_body(b, gpu);
	gpushare_buf_addf(b, "\",\"uuid\":\"GPU-0\"},\"driver_version\":\"");
	json_body(b, driver);
	gpushare_buf_addf(b, "\",\"command_line\":[\"gpushare\",\"sweep\",\"");
	json_body(b, arg);
	gpushare_buf_addf(b, "\"]},\"peak_search\":null,\"bench\":{\"results\":[{\"strategy\":\"%s\",\"aggregate\":"
			     "{\"items_per_second\":%g,\"requests_per_second\":%g,\"mean_seconds\":0.001,"
			     "\"p50_seconds\":0.001,\"p90_seconds\":0.001,\"p99_seconds\":0.002,\"p999_seconds\":0.003},"
			     "\"workers\":[",
			  strategy, rate, rate);
	for (int w = 0; w < workers; w++) {
		gpushare_buf_addf(b, "%s{\"index\":%d,\"device_name\":\"", w ? "," : "", w);
		json_body(b, gpu);
		gpushare_buf_addf(b, "%s\",\"visible_devices\":\"%d\"}", strcmp(strategy, "mig") ? "" : " MIG 1g.10gb", w);
	}
	gpushare_buf_addf(b, "]}]}}\n");
}

/* Every event of text through libyaml's parser, to the stream's end. */
static void parse_back(const char *text, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	bool done = false;

	if (!yaml_parser_initialize(&parser))
		abort();
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			fprintf(stderr, "libyaml: %s at byte %zu\n%s\n", parser.problem ? parser.problem : "?",
				parser.problem_mark.index, text);
			abort();
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int targets[] = { GPUSHARE_PLAN_K8S_DEVICE_PLUGIN, GPUSHARE_PLAN_K8S_DRA, GPUSHARE_PLAN_MIG_PARTED };
	char host[256], gpu[96], driver[80], arg[512], name[96];
	struct gpushare_buf b = { 0 };
	struct gpushare_report r;

	if (size > 4096)
		return 0;
	field(data, size, 0, host, sizeof(host));
	field(data, size, 1, gpu, sizeof(gpu));
	field(data, size, 2, driver, sizeof(driver));
	field(data, size, 3, arg, sizeof(arg));
	field(data, size, 4, name, sizeof(name));
	for (int rep = 0; rep < 2; rep++) {
		record(&b, "timeslice", 2, rep, 100 + rep, host, gpu, driver, arg);
		record(&b, "mps", 2, rep, 200 + rep, host, gpu, driver, arg);
		record(&b, "mig", 2, rep, 150 + rep, host, gpu, driver, arg);
	}
	if (gpushare_report_load_buffer(gpushare_buf_str(&b), b.len, &r) == 0 && gpushare_report_summarise(&r, 0) == 0) {
		for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
			struct gpushare_plan_options o;
			struct gpushare_plan p;
			struct gpushare_plan_output out;

			gpushare_plan_options_init(&o);
			o.target = targets[t];
			o.name = name[0] ? name : NULL;
			if (gpushare_plan_decide(&r, &o, &p))
				continue;
			if (gpushare_plan_render(&r, &o, &p, &out) == 0) {
				for (size_t i = 0; i < out.n_parts; i++)
					parse_back(out.parts[i].text, out.parts[i].len);
			}
			gpushare_plan_output_release(&out);
		}
	}
	gpushare_report_release(&r);
	gpushare_buf_release(&b);
	return 0;
}
