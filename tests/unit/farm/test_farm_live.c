/*
 * The farm's live file, DIR/running.json (lib/farm/farm_live.c): what a
 * running farm writes is what farm status reads back; a farm whose pid is
 * dead on this host is stale; a removed or broken file reads as none.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "farm_live.h"

#define UNIT_TMPDIR "/tmp/gpushare-test-farm-live"
#include "tmpdir.h"

static void write_text(const char *text)
{
	char path[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/" FARM_LIVE_NAME, dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static void test_round_trip(void **state)
{
	char host[256];
	const struct farm_live_job run[2] = { { 0, 1, 3, 0, 100.5 }, { 41, 2, 3, 1, 101.0 } };
	struct farm_live_head h = { host, 99.0, 2, 7, 2 };
	struct gpushare_farm_live l;
	const cJSON *jobs, *j;
	cJSON *o;

	(void)state;
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	host[sizeof(host) - 1] = '\0';
	farm_live_write(dir, &h, run, 2);

	o = farm_live_parse(dir);
	assert_non_null(o);
	jobs = cJSON_GetObjectItemCaseSensitive(o, "jobs");
	assert_int_equal(cJSON_GetArraySize(jobs), 2);
	j = cJSON_GetArrayItem(jobs, 1);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "job")->valueint, 42);  /* numbered from 1 */
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "attempt")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "gpu")->valueint, 3);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "slot")->valueint, 1);
	cJSON_Delete(o);

	assert_true(farm_live_read(dir, &l));
	assert_int_equal(l.pid, (long)getpid());
	assert_string_equal(l.host, host);
	assert_int_equal(l.running, 2);
	assert_int_equal(l.queued, 7);
	assert_int_equal(l.slots, 2);
	assert_true(l.updated_unix_s > 0);
	assert_false(l.stale);                  /* this process: alive */

	farm_live_remove(dir);
	assert_false(farm_live_read(dir, &l));
	assert_null(farm_live_parse(dir));
}

/* A farm whose pid is gone on this host: stale; on another host it cannot
 * be told, so it is not. Not JSON: none. */
static void test_stale_and_broken(void **state)
{
	char host[256], text[512];
	struct gpushare_farm_live l;

	(void)state;
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	host[sizeof(host) - 1] = '\0';
	snprintf(text, sizeof(text), "{\"pid\":2147483646,\"host\":\"%s\",\"running\":1,\"jobs\":[]}", host);
	write_text(text);
	assert_true(farm_live_read(dir, &l));
	assert_true(l.stale);
	write_text("{\"pid\":2147483646,\"host\":\"another-host.invalid\",\"jobs\":[]}");
	assert_true(farm_live_read(dir, &l));
	assert_false(l.stale);
	write_text("{\"pid\":");
	assert_false(farm_live_read(dir, &l));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_and_broken, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
