/*
 * Parsers for replies of the MPS control daemon. Internal to libgpushare;
 * exposed to the unit tests, which feed them every reply shape seen on R580.
 */
#ifndef GPUSHARE_MPS_PARSE_H
#define GPUSHARE_MPS_PARSE_H

#include <stddef.h>
#include <sys/types.h>

/* Trim trailing white space in place; returns s. */
char *gpushare_mps_trim(char *s);

/* Whether a reply says the command was not understood
 * ("Unknown command \"foo\""). */
int gpushare_mps_reply_is_unknown(const char *reply);

/* A list of pids, one per line (get_server_list, get_client_list). Empty
 * reply → 0 pids. Any other line → GPUSHARE_E_MPS_REPLY. *pids is malloc'ed. */
int gpushare_mps_parse_pid_list(const char *reply, pid_t **pids, size_t *n);

/* A float percentage ("100.0", "30"). */
int gpushare_mps_parse_percentage(const char *reply, double *pct);

/* A memory limit as the getters print it ("4G", "900M", "0", or empty for
 * none). Copies the token into buf ("" for none). */
int gpushare_mps_parse_mem_limit(const char *reply, char *buf, size_t len);

/* Client priority ("0" or "1"). */
int gpushare_mps_parse_priority(const char *reply, int *prio);

/* A server status word ("ACTIVE", "FAULT", "INIT" ...). */
int gpushare_mps_parse_server_status(const char *reply, char *buf, size_t len);

/* The setter replies: nothing, or an echo of the value. */
int gpushare_mps_check_setter_reply(const char *reply);

/* terminate_client's reply: "0" on success. */
int gpushare_mps_check_terminate_reply(const char *reply);

#endif
