/*
 * Unit tests of lib/plan: the Slurm key=value writer (every value Slurm
 * would misread is refused, the buffer left as it was), the comment writer,
 * Kubernetes quantities, target names, and which strategies each target
 * writes (by what the strategy is, never its name).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpushare/gpushare.h"
#include "gpushare/plan.h"
#include "gpushare/strategy.h"
#include "gpushare/internal/plan.h"
#include "plan_internal.h"

static void slurm_line_ok(void **state)
{
	struct gpushare_buf b = { 0 };
	const struct gpushare_slurm_kv kv[] = {
		{ "NodeName", "gpu-node-[01-04]" }, { "Name", "shard" }, { "Count", "16" }, { "File", "/dev/nvidia[0-3]" },
	};

	(void)state;
	assert_int_equal(gpushare_slurm_line(&b, kv, 4), 0);
	assert_string_equal(gpushare_buf_str(&b), "NodeName=gpu-node-[01-04] Name=shard Count=16 File=/dev/nvidia[0-3]\n");
	assert_int_equal(gpushare_slurm_line(&b, &(struct gpushare_slurm_kv){ "GresTypes", "gpu,shard" }, 1), 0);
	assert_string_equal(gpushare_buf_str(&b), "NodeName=gpu-node-[01-04] Name=shard Count=16 File=/dev/nvidia[0-3]\n"
						  "GresTypes=gpu,shard\n");
	gpushare_buf_release(&b);
}

static void slurm_line_refuses(void **state)
{
	static const struct {
		const char *value, *why;
	} bad[] = {
		{ "", "empty" },
		{ "a b", "white space" },
		{ "a\tb", "white space" },
		{ "a\nGresTypes=x", "line break" },
		{ "a\r", "line break" },
		{ "gpu#0", "comment" },
		{ "a=b", "'='" },
		{ "\"quoted\"", "quote" },
		{ "it's", "quote" },
		{ "back\\slash", "backslash" },
		{ "caf\xc3\xa9", "non-ASCII" },
		{ "bell\a", "control" },
	};
	struct gpushare_buf b = { 0 };

	(void)state;
	assert_int_equal(gpushare_slurm_line(&b, &(struct gpushare_slurm_kv){ "Name", "gpu" }, 1), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const struct gpushare_slurm_kv kv[] = { { "Name", "shard" }, { "File", bad[i].value } };

		assert_false(gpushare_slurm_value_ok(bad[i].value));
		assert_int_equal(gpushare_slurm_line(&b, kv, 2), GPUSHARE_E_INVAL);
		assert_non_null(strstr(gpushare_errdetail(), "File"));
		assert_non_null(strstr(gpushare_errdetail(), bad[i].why));
		/* Nothing of a refused line is written. */
		assert_string_equal(gpushare_buf_str(&b), "Name=gpu\n");
	}
	assert_false(gpushare_slurm_value_ok(NULL));
	/* Keys: letters only. */
	assert_int_equal(gpushare_slurm_line(&b, &(struct gpushare_slurm_kv){ "Node Name", "x" }, 1), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slurm_line(&b, &(struct gpushare_slurm_kv){ "", "x" }, 1), GPUSHARE_E_INVAL);
	assert_int_equal(gpushare_slurm_line(&b, NULL, 0), GPUSHARE_E_INVAL);
	assert_string_equal(gpushare_buf_str(&b), "Name=gpu\n");
	gpushare_buf_release(&b);
}

static void comments(void **state)
{
	struct gpushare_buf b = { 0 };

	(void)state;
	assert_int_equal(plan_comment(&b, "one\n\ntwo\tthree\rfour"), 0);
	assert_string_equal(gpushare_buf_str(&b), "# one\n#\n# two three four\n");
	assert_int_equal(plan_comment(&b, "ends in \\\nnext"), 0);
	assert_string_equal(gpushare_buf_str(&b), "# one\n#\n# two three four\n# ends in \\ \n# next\n");
	gpushare_buf_release(&b);
	/* YAML's other line breaks (U+0085, U+2028, U+2029) never end a comment;
	 * other UTF-8 stays. */
	assert_int_equal(plan_comment(&b, "a\xc2\x85" "kind: Secret\xe2\x80\xa8" "b\xe2\x80\xa9" "c \xc3\xa9"), 0);
	assert_string_equal(gpushare_buf_str(&b), "# a kind: Secret b c \xc3\xa9" "\n");
	gpushare_buf_release(&b);
	/* What YAML readers refuse anywhere in a stream (libyaml's, go-yaml's
	 * and PyYAML's reader): C1 controls, U+FFFE, U+FFFF, and a byte order
	 * mark inside it, each a space; invalid bytes U+FFFD. U+00A0 and
	 * U+FFFD stay. */
	assert_int_equal(plan_comment(&b, "gpu\xc2\x80node\xc2\x9f" "a\xef\xbf\xbe" "b\xef\xbf\xbf" "c\xef\xbb\xbf" "d\xff" "e\xc2\xa0" "f"),
			 0);
	assert_string_equal(gpushare_buf_str(&b), "# gpu node a b c d\xef\xbf\xbd" "e\xc2\xa0" "f\n");
	gpushare_buf_release(&b);
}

/* Whether layout (profiles and counts, NULL-ended) fits gpu; *ids set. */
static int mig(const char *gpu, const char *const *prof, const int *count, const char *const **ids)
{
	struct plan_mig_layout l = { .n = 0 };

	for (; prof[l.n]; l.n++) {
		l.profile[l.n] = prof[l.n];
		l.count[l.n] = count[l.n];
	}
	return plan_mig_check(gpu, &l, ids);
}

static void mig_placement(void **state)
{
	const char *const h100 = "NVIDIA H100 80GB HBM3";
	const char *const *ids;

	(void)state;
	/* Fits: seven 1g, two 3g (slices 0-3, 4-7), the mixed layout
	 * 1g.10gb x2 + 2g.20gb + 3g.40gb, 4g + 3g. */
	assert_int_equal(mig(h100, (const char *[]){ "1g.10gb", NULL }, (int[]){ 7 }, &ids), 0);
	assert_non_null(ids);
	assert_string_equal(ids[0], "0x233010DE");
	assert_int_equal(mig(h100, (const char *[]){ "3g.40gb", NULL }, (int[]){ 2 }, &ids), 0);
	assert_int_equal(mig(h100, (const char *[]){ "1g.10gb", "2g.20gb", "3g.40gb", NULL }, (int[]){ 2, 1, 1 }, &ids), 0);
	assert_int_equal(mig(h100, (const char *[]){ "4g.40gb", "3g.40gb", NULL }, (int[]){ 1, 1 }, &ids), 0);
	assert_int_equal(mig("NVIDIA A100-SXM4-40GB", (const char *[]){ "1g.5gb", NULL }, (int[]){ 7 }, &ids), 0);
	assert_string_equal(ids[0], "0x20B010DE");
	assert_int_equal(mig("NVIDIA H200", (const char *[]){ "1g.18gb", NULL }, (int[]){ 7 }, &ids), 0);
	assert_string_equal(ids[0], "0x233510DE");
	/* Cannot be placed: four (or three) 3g, eight 1g, two 4g, 2g x3 + 3g,
	 * two +me; a profile of another GPU. */
	assert_int_equal(mig(h100, (const char *[]){ "3g.40gb", NULL }, (int[]){ 4 }, &ids), GPUSHARE_E_UNSUPPORTED);
	assert_non_null(strstr(gpushare_errdetail(), "cannot be placed on one H100 80GB"));
	assert_int_equal(mig(h100, (const char *[]){ "3g.40gb", NULL }, (int[]){ 3 }, &ids), GPUSHARE_E_UNSUPPORTED);
	assert_int_equal(mig(h100, (const char *[]){ "1g.10gb", NULL }, (int[]){ 8 }, &ids), GPUSHARE_E_UNSUPPORTED);
	assert_int_equal(mig(h100, (const char *[]){ "4g.40gb", NULL }, (int[]){ 2 }, &ids), GPUSHARE_E_UNSUPPORTED);
	assert_int_equal(mig(h100, (const char *[]){ "2g.20gb", "3g.40gb", NULL }, (int[]){ 3, 1 }, &ids), GPUSHARE_E_UNSUPPORTED);
	assert_int_equal(mig(h100, (const char *[]){ "1g.10gb+me", NULL }, (int[]){ 2 }, &ids), GPUSHARE_E_UNSUPPORTED);
	assert_int_equal(mig(h100, (const char *[]){ "1g.5gb", NULL }, (int[]){ 1 }, &ids), GPUSHARE_E_UNSUPPORTED);
	assert_non_null(strstr(gpushare_errdetail(), "no MIG profile '1g.5gb'"));
	/* A GPU the table does not know: nothing checked, no filter. */
	assert_int_equal(mig("NVIDIA B200", (const char *[]){ "1g.23gb", NULL }, (int[]){ 7 }, &ids), 0);
	assert_null(ids);
	assert_int_equal(mig("", (const char *[]){ "1g.10gb", NULL }, (int[]){ 7 }, &ids), 0);
	assert_null(ids);
}

static void quantities(void **state)
{
	char q[32];

	(void)state;
	plan_quantity(10ULL << 30, q, sizeof(q));
	assert_string_equal(q, "10Gi");
	plan_quantity(3840ULL << 20, q, sizeof(q));
	assert_string_equal(q, "3840Mi");
	plan_quantity(1536ULL << 10, q, sizeof(q));
	assert_string_equal(q, "1536Ki");
	plan_quantity(1000, q, sizeof(q));
	assert_string_equal(q, "1000");
}

static void targets(void **state)
{
	(void)state;
	for (int t = 0; t < GPUSHARE_PLAN_TARGET_COUNT; t++)
		assert_int_equal(gpushare_plan_target_parse(gpushare_plan_target_name(t)), t);
	assert_int_equal(gpushare_plan_target_parse("kubernetes"), -1);
	assert_int_equal(gpushare_plan_target_parse(NULL), -1);
	assert_null(gpushare_plan_target_name(GPUSHARE_PLAN_TARGET_COUNT));
}

/* A plan made by hand is written only for a strategy its target
 * expresses: a share for the share targets, a partition for mig-parted, no
 * reference anywhere. */
static void render_by_capability(void **state)
{
	struct gpushare_report r;
	struct gpushare_plan_options o;
	struct gpushare_plan p;
	struct gpushare_plan_output out;

	(void)state;
	memset(&r, 0, sizeof(r));
	gpushare_plan_options_init(&o);
	memset(&p, 0, sizeof(p));
	p.workers = 4;
	snprintf(p.host, sizeof(p.host), "node1");
	for (int t = 0; t < GPUSHARE_PLAN_TARGET_COUNT; t++) {
		o.target = t;
		for (int s = 0; s < GPUSHARE_STRATEGY_COUNT; s++) {
			bool layout = t == GPUSHARE_PLAN_MIG_PARTED;
			bool fits = gpushare_strategy_is_sharing(s) && gpushare_strategy_partitions(s) == layout;
			int rc;

			p.strategy = s;
			rc = gpushare_plan_render(&r, &o, &p, &out);
			if (!fits) {
				assert_int_equal(rc, GPUSHARE_E_UNSUPPORTED);
				assert_non_null(strstr(gpushare_errdetail(), "cannot express"));
				assert_int_equal(out.n_parts, 0);
			} else if (!layout) {
				/* A share: time-slicing, or MPS when the strategy uses it. */
				bool mps = gpushare_strategy_uses_mps(s);

				assert_int_equal(rc, 0);
				assert_true(out.n_parts >= 1);
				if (t == GPUSHARE_PLAN_SLURM)
					assert_non_null(strstr(out.parts[0].text, mps ? "Name=mps" : "Name=shard"));
				if (t == GPUSHARE_PLAN_K8S_DRA)
					assert_non_null(strstr(out.parts[0].text, mps ? "strategy: MPS" : "strategy: TimeSlicing"));
			} else {
				/* A partition, but no layout recorded: refused. */
				assert_int_equal(rc, GPUSHARE_E_UNSUPPORTED);
			}
			gpushare_plan_output_release(&out);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slurm_line_ok), cmocka_unit_test(slurm_line_refuses), cmocka_unit_test(comments),
		cmocka_unit_test(quantities), cmocka_unit_test(mig_placement), cmocka_unit_test(targets), cmocka_unit_test(render_by_capability),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
