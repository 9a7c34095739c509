/*
 * The plan module's parser of --for, for the command line.
 *
 * Not installed: include/gpushare/internal/ holds what only the command
 * line (cli/) uses of the library, so that the installed API is what an
 * embedding program needs. lib/LAYERS places each of these headers with its
 * module's public one.
 */
#ifndef GPUSHARE_INTERNAL_PLAN_H
#define GPUSHARE_INTERNAL_PLAN_H

/* The target called name (gpushare_plan_target_name()), or -1. */
int gpushare_plan_target_parse(const char *name);

#endif
