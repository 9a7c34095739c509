/*
 * Unit tests: choosing a GPU fault's culprit among the attempts that
 * failed in it (farm_fault_pick).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "clock.h"
#include "farm_fault.h"

static void test_pick(void **state)
{
	struct farm_fault_cand c[4];
	enum farm_fault_evidence ev;

	(void)state;
	memset(c, 0, sizeof(c));
	/* one attempt: it */
	c[0].end_ns = 50;
	assert_int_equal(farm_fault_pick(c, 1, &ev), 0);
	assert_int_equal(ev, FARM_EVIDENCE_ALONE);
	/* several: the first to fail */
	c[0].end_ns = 30;
	c[1].end_ns = 10;
	c[2].end_ns = 20;
	c[3].end_ns = 10;
	assert_int_equal(farm_fault_pick(c, 4, &ev), 1);
	assert_int_equal(ev, FARM_EVIDENCE_FIRST);
	/* the only one of an earlier fault beats the order */
	c[2].earlier = true;
	assert_int_equal(farm_fault_pick(c, 4, &ev), 2);
	assert_int_equal(ev, FARM_EVIDENCE_EARLIER);
	/* two of an earlier fault: the order again */
	c[0].earlier = true;
	assert_int_equal(farm_fault_pick(c, 4, &ev), 1);
	assert_int_equal(ev, FARM_EVIDENCE_FIRST);
	/* the server log beats everything, even when it failed last */
	c[0].named = true;
	assert_int_equal(farm_fault_pick(c, 4, &ev), 0);
	assert_int_equal(ev, FARM_EVIDENCE_LOG);
	/* refused by the faulted server (807): never the culprit while another ran */
	memset(c, 0, sizeof(c));
	c[0].end_ns = 5;
	c[0].not_ready = true;
	c[1].end_ns = 20;
	c[2].end_ns = 10;
	assert_int_equal(farm_fault_pick(c, 3, &ev), 2);
	assert_int_equal(ev, FARM_EVIDENCE_FIRST);
	c[2].not_ready = true;
	assert_int_equal(farm_fault_pick(c, 3, &ev), 1);
	assert_int_equal(ev, FARM_EVIDENCE_ALONE);
	c[0].named = true; /* a log naming a refused process does not count */
	assert_int_equal(farm_fault_pick(c, 3, &ev), 1);
	c[1].not_ready = true; /* all refused: the first to fail, none ran */
	assert_int_equal(farm_fault_pick(c, 3, &ev), 0);
	assert_int_equal(ev, FARM_EVIDENCE_REFUSED);
	assert_string_equal(farm_fault_evidence_name(FARM_EVIDENCE_LOG), "server log");
	assert_string_equal(farm_fault_evidence_name(FARM_EVIDENCE_FIRST), "first to fail");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
