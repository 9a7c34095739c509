/*
 * Fault containment under MPS (farm_fault.h). While a GPU's fault is open
 * (from the first attempt that failed with a fatal GPU error until every
 * job on that GPU has ended) no job is placed there, and every attempt that
 * fails there is held, unrecorded. Then, once the MPS server serves again
 * (or was shut down after FARM_FAULT_RECOVER_NS in its FAULT state), the
 * culprit is chosen (farm_fault_pick), the others are recorded as
 * bystanders and requeued without charge, the culprit as failed, its retry
 * queued to run alone on a GPU, and a fault record says what happened.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "gpushare/gpushare.h"
#include "gpushare/mps.h"
#include "gpushare/strategy.h"
#include "mps_fault.h"
#include "farm_fault.h"

#define SEEN_MAX 64

struct window {
	bool open, restarted;
	uint64_t recover_t0_ns, next_check_ns;
	double t0_unix;
	struct farm_fault_member *m;
	size_t n, cap;
};

struct farm_faults {
	struct window *win;            /* one per GPU */
	size_t n_open;
	uint64_t *earlier;             /* jobs that failed in a settled fault */
	size_t n_earlier, cap_earlier;
	uint64_t *by;                  /* the bystanders of the fault being settled */
	pid_t seen[SEEN_MAX];          /* server-log pids of settled faults */
	size_t n_seen;
};

const char *farm_fault_evidence_name(enum farm_fault_evidence e)
{
	switch (e) {
	case FARM_EVIDENCE_LOG:
		return "server log";
	case FARM_EVIDENCE_ALONE:
		return "alone";
	case FARM_EVIDENCE_EARLIER:
		return "earlier fault";
	case FARM_EVIDENCE_FIRST:
		return "first to fail";
	case FARM_EVIDENCE_REFUSED:
		return "refused";
	}
	return "unknown";
}

size_t farm_fault_pick(const struct farm_fault_cand *c, size_t n, enum farm_fault_evidence *ev)
{
	size_t first = SIZE_MAX, earlier = 0, n_earlier = 0, n_ran = 0, ran = 0;

	for (size_t i = 0; i < n; i++) {
		if (c[i].not_ready)
			continue;
		if (c[i].named) {
			*ev = FARM_EVIDENCE_LOG;
			return i;
		}
		if (n_ran++ == 0)
			ran = i;
	}
	if (n_ran == 1) { /* the only one that ran GPU work */
		*ev = FARM_EVIDENCE_ALONE;
		return ran;
	}
	for (size_t i = 0; i < n; i++) {
		if (c[i].not_ready && n_ran)
			continue;
		if (c[i].earlier && n_earlier++ == 0)
			earlier = i;
		if (first == SIZE_MAX || c[i].end_ns < c[first].end_ns)
			first = i;
	}
	if (first == SIZE_MAX)
		first = 0;
	if (!n_ran) {
		*ev = FARM_EVIDENCE_REFUSED;
		return first;
	}
	if (n_earlier == 1) {
		*ev = FARM_EVIDENCE_EARLIER;
		return earlier;
	}
	*ev = FARM_EVIDENCE_FIRST;
	return first;
}

bool farm_fault_watched(int strategy, const struct gpushare_mps_session *mps)
{
	return gpushare_strategy_uses_mps(strategy) && mps->open;
}

static struct farm_faults *faults(struct farm_faults **F, size_t n_gpus)
{
	if (!*F) {
		*F = calloc(1, sizeof(**F));
		if (*F && !((*F)->win = calloc(n_gpus ? n_gpus : 1, sizeof(*(*F)->win)))) {
			free(*F);
			*F = NULL;
		}
	}
	return *F;
}

void farm_fault_slot_ended(struct farm_gpu *gpus, struct slot *s)
{
	if (s->isolated) {
		s->isolated = false;
		if (gpus[s->gpu].hold == FARM_HOLD_ISOLATED)
			gpus[s->gpu].hold = FARM_HOLD_NONE;
	}
}

static bool seen(const struct farm_faults *F, pid_t p)
{
	for (size_t i = 0; i < F->n_seen; i++)
		if (F->seen[i] == p)
			return true;
	return false;
}

/* The server log's new culprit pids: mark the attempts on GPU gi whose
 * process (group) they are, the one that just ended (ended) included. */
static void name_from_log(struct farm_faults *F, const struct farm_fault_view *v, size_t gi, struct slot *ended)
{
	struct gpushare_mps_fault_log log;

	gpushare_mps_fault_log_read(v->mps->m.log_dir, &log);
	for (size_t i = 0; i < log.n_named; i++) {
		const pid_t p = log.named[i];
		pid_t pg;

		if (seen(F, p))
			continue;
		if (p == ended->ch.pid || p == ended->ch.pgid)
			ended->fault_named = true;
		pg = getpgid(p);
		for (unsigned k = 0; k < v->max_k; k++) {
			struct slot *s = &v->slots[gi * v->max_k + k];

			if (s->busy && (s->ch.pid == p || (pg > 0 && s->ch.pgid == pg)))
				s->fault_named = true;
		}
	}
}

bool farm_fault_take(struct farm_faults **Fp, const struct farm_fault_view *v, struct slot *s, int wstatus,
		     uint64_t end_ns, bool close_busy)
{
	struct farm_faults *F = *Fp;
	struct window *w;
	struct farm_fault_member *m;
	char path[GPUSHARE_PATH_MAX * 2];
	enum gpushare_mps_fault k;

	snprintf(path, sizeof(path), "%s/%s", v->dir, s->err_rel);
	k = gpushare_mps_fault_file(path);
	if (!F || !F->win[s->gpu].open) {
		/* A fatal error, or the server refusing the job: it is in fault. */
		if (k == GPUSHARE_MPS_FAULT_NONE || !(F = faults(Fp, v->n_gpus)))
			return false;
		w = &F->win[s->gpu];
		w->open = true;
		w->restarted = false;
		w->recover_t0_ns = w->next_check_ns = 0;
		w->t0_unix = s->start_unix_s + (double)(end_ns - s->start_ns) / 1e9;
		F->n_open++;
		v->gpus[s->gpu].hold = FARM_HOLD_FAULT;
	}
	w = &F->win[s->gpu];
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 8;
		struct farm_fault_member *p = realloc(w->m, cap * sizeof(*p));

		if (!p)
			return false;
		w->m = p;
		w->cap = cap;
	}
	name_from_log(F, v, s->gpu, s);
	m = &w->m[w->n++];
	m->s = *s;
	m->wstatus = wstatus;
	m->end_ns = end_ns;
	m->close_busy = close_busy;
	m->not_ready = k == GPUSHARE_MPS_FAULT_NOT_READY;
	s->argv = NULL;
	return true;
}

static int add_earlier(struct farm_faults *F, uint64_t job)
{
	for (size_t i = 0; i < F->n_earlier; i++)
		if (F->earlier[i] == job)
			return GPUSHARE_OK;
	if (gpushare_grow(&F->earlier, F->n_earlier, &F->cap_earlier, sizeof(*F->earlier), 16))
		return GPUSHARE_E_NOMEM;
	F->earlier[F->n_earlier++] = job;
	return GPUSHARE_OK;
}

static bool was_earlier(const struct farm_faults *F, uint64_t job)
{
	for (size_t i = 0; i < F->n_earlier; i++)
		if (F->earlier[i] == job)
			return true;
	return false;
}

/* The fault of GPU gi is over: no more jobs held there. */
static void close_window(struct farm_faults *F, const struct farm_fault_view *v, size_t gi)
{
	struct window *w = &F->win[gi];

	w->n = 0;
	w->open = false;
	F->n_open--;
	if (v->gpus[gi].hold == FARM_HOLD_FAULT)
		v->gpus[gi].hold = FARM_HOLD_NONE;
}

/* Tell the culprit of GPU gi's fault from the bystanders: each attempt's
 * outcome, and the fault record. */
static int settle(struct farm_faults *F, const struct farm_fault_view *v, size_t gi, struct farm_fault_settle *out)
{
	struct window *w = &F->win[gi];
	struct farm_fault_cand *c = calloc(w->n, sizeof(*c));
	struct farm_fault_record *rec = &out->rec;
	enum farm_fault_evidence ev;
	size_t ci;

	free(F->by);
	F->by = calloc(w->n, sizeof(*F->by));
	if (!c || !F->by) {
		free(c);
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < w->n; i++) {
		c[i].end_ns = w->m[i].end_ns;
		c[i].named = w->m[i].s.fault_named;
		c[i].earlier = was_earlier(F, w->m[i].s.job);
		c[i].not_ready = w->m[i].not_ready;
	}
	ci = farm_fault_pick(c, w->n, &ev);
	free(c);
	memset(out, 0, sizeof(*out));
	out->gpu = gi;
	out->m = w->m;
	out->n = w->n;
	rec->gpu = v->gpus[gi].id.index;
	snprintf(rec->gpu_uuid, sizeof(rec->gpu_uuid), "%s", v->gpus[gi].id.uuid);
	rec->culprit = w->m[ci].s.job;
	rec->culprit_attempt = w->m[ci].s.attempt;
	/* Told by the order only, the culprit is a suspect: not charged. */
	rec->culprit_failed = ev != FARM_EVIDENCE_FIRST && ev != FARM_EVIDENCE_REFUSED &&
			      (w->m[ci].s.culprit_before || w->m[ci].s.attempts + 1 >= v->retries + 1);
	snprintf(rec->evidence, sizeof(rec->evidence), "%s", farm_fault_evidence_name(ev));
	rec->start_unix_s = w->t0_unix;
	rec->recovered_unix_s = farm_unix_now();
	if (rec->recovered_unix_s < rec->start_unix_s)
		rec->recovered_unix_s = rec->start_unix_s;
	rec->server_restarted = w->restarted;
	for (size_t i = 0; i < w->n; i++) {
		struct farm_fault_member *m = &w->m[i];
		bool charge = i == ci && ev != FARM_EVIDENCE_FIRST;
		/* Only refused (a server that stays in fault, or another's
		 * fault): ordinary failures, or they would come back forever. */
		bool refused = ev == FARM_EVIDENCE_REFUSED;

		/* Told by the order only: nobody is charged, and each suspect
		 * runs alone, so the one that faults again is known for
		 * certain. */
		m->s.fault_culprit = charge && !refused;
		m->s.isolate_next = ev == FARM_EVIDENCE_FIRST;
		if (i != ci && !refused)
			F->by[rec->n_bystanders++] = m->s.job;
		m->o = charge || refused ? FARM_FAILED : FARM_BYSTANDER;
	}
	rec->bystanders = F->by;
	return 1;
}

int farm_fault_poll(struct farm_faults *F, const struct farm_fault_view *v, uint64_t now, bool stopping,
		    struct farm_fault_settle *out)
{
	for (size_t gi = 0; F && F->n_open && gi < v->n_gpus; gi++) {
		struct window *w = &F->win[gi];

		if (!w->open || v->gpus[gi].running)
			continue;
		/* Every client has left: wait (bounded) until the server is
		 * out of its FAULT state; not when the farm stops. */
		if (!w->recover_t0_ns)
			w->recover_t0_ns = now;
		if (!stopping) {
			if (now < w->next_check_ns)
				continue;
			if (gpushare_mps_fault_server(&v->mps->m, false)) {
				if (now - w->recover_t0_ns < FARM_FAULT_RECOVER_NS) {
					w->next_check_ns = now + FARM_FAULT_CHECK_NS;
					continue;
				}
				/* A daemon of the farm's own: its server is shut
				 * down (the next client starts a new one). */
				if (v->mps->started) {
					gpushare_mps_fault_server(&v->mps->m, true);
					w->restarted = true;
				}
			}
		}
		if (!w->n) { /* its first attempt could not be kept: recorded as it was */
			close_window(F, v, gi);
			continue;
		}
		return settle(F, v, gi, out);
	}
	return 0;
}

int farm_fault_settled(struct farm_faults *F, const struct farm_fault_view *v, struct farm_fault_settle *st)
{
	struct gpushare_mps_fault_log log;
	int rc = GPUSHARE_OK;

	for (size_t i = 0; i < st->n; i++) {
		if (!rc)
			rc = add_earlier(F, st->m[i].s.job);
		free(st->m[i].s.argv);
		st->m[i].s.argv = NULL;
	}
	gpushare_mps_fault_log_read(v->mps->m.log_dir, &log);
	for (size_t i = 0; i < log.n_named && F->n_seen < SEEN_MAX; i++)
		if (!seen(F, log.named[i]))
			F->seen[F->n_seen++] = log.named[i];
	free(F->by);
	F->by = NULL;
	close_window(F, v, st->gpu);
	return rc;
}

size_t farm_fault_gpu_alone(struct farm_gpu *gpus, size_t n_gpus)
{
	size_t best = SIZE_MAX, fewest = SIZE_MAX;
	bool reserved = false;

	for (size_t g = 0; g < n_gpus; g++) {
		const struct farm_gpu *gp = &gpus[g];

		reserved = reserved || gp->hold == FARM_HOLD_RESERVED;
		if (gp->running == 0 && gp->mem_cap > 0 &&
		    (gp->hold == FARM_HOLD_RESERVED || (gp->hold == FARM_HOLD_NONE && best == SIZE_MAX)))
			best = g;
		if (gp->hold == FARM_HOLD_NONE && gp->mem_cap > 0 && (fewest == SIZE_MAX || gp->running < gpus[fewest].running))
			fewest = g;
	}
	if (best != SIZE_MAX)
		return best;
	/* Keep new jobs off one GPU until it is empty. */
	if (!reserved && fewest != SIZE_MAX)
		gpus[fewest].hold = FARM_HOLD_RESERVED;
	return SIZE_MAX;
}

bool farm_fault_open(const struct farm_faults *F)
{
	return F && F->n_open;
}

void farm_fault_free(struct farm_faults *F, size_t n_gpus)
{
	if (!F)
		return;
	for (size_t g = 0; g < n_gpus; g++) {
		for (size_t i = 0; i < F->win[g].n; i++)
			free(F->win[g].m[i].s.argv);
		free(F->win[g].m);
	}
	free(F->by);
	free(F->earlier);
	free(F->win);
	free(F);
}
