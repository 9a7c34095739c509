/*
 * The MPS module's parser of `mps start|set --mem-limit`, for the command line.
 *
 * Not installed: include/gpushare/internal/ holds what only the command
 * line (cli/) uses of the library, so that the installed API is what an
 * embedding program needs. lib/LAYERS places each of these headers with its
 * module's public one.
 */
#ifndef GPUSHARE_INTERNAL_MPS_H
#define GPUSHARE_INTERNAL_MPS_H

#include "gpushare/mps.h"

/* Parse a memory-limit list: "4G" (every device in 0..ndev-1) or
 * "0=4G,1=512M". Fills limits->mem_limit_bytes / n_mem_limits. */
int gpushare_mps_parse_mem_limits(const char *s, int ndev, struct gpushare_mps_limits *limits);

#endif
