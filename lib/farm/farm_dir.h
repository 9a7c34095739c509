/*
 * The farm directory and its job source (lib/farm/farm_dir.c), for the
 * farm's setup (farm.c) and its dry run (farm_dryrun.c).
 */
#ifndef GPUSHARE_FARM_DIR_H
#define GPUSHARE_FARM_DIR_H

#include <stddef.h>

#include "gpushare/farm.h"
#include "farm_jobs.h"

struct farm;

/* Before anything is created: a resumed farm's options not given are the
 * first run's (its journal's first header), those given must be the same.
 * eff starts as a copy of the caller's config; gpus_buf holds a recorded
 * GPU list. */
int farm_resume_options(struct gpushare_farm_config *eff, char *gpus_buf, size_t gpus_len);
/* The job source: the options go together, the range parses, the files
 * can be opened. */
int farm_check_source(struct farm *f);
/* --gpus given on resume: the GPUs chosen must be the first run's. */
int farm_check_resume_gpus(const struct farm *f);
/* Parse the job source into list (which may have a sink). */
int farm_load_source(struct farm *f, struct farm_jobs *list);
/* The farm directory: created for a new farm (refused when it already
 * holds a journal), required with its journal for --resume; its journal
 * open and locked, the copy installed, the queue's cursor on it and the
 * job states built, f->cfg the header to write. */
int farm_open_dir(struct farm *f);
/* A farm that failed before its run loop in a directory it created leaves
 * nothing behind. */
void farm_undo_new_dir(struct farm *f);

#endif
