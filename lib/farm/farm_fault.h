/*
 * Fault containment under MPS (lib/farm/farm_fault.c, docs/farm.md "Faults
 * under MPS"). A fatal GPU fault of one job is reported by MPS to every
 * client of that GPU's server; the farm tells the culprit from the
 * bystanders, requeues the bystanders without charging their retries once
 * the server has been left by all its clients (and serves again), and runs
 * the culprit's retry alone on a GPU: a culprit that faults again is
 * failed. Nothing of this runs while nothing faults.
 */
#ifndef GPUSHARE_FARM_FAULT_H
#define GPUSHARE_FARM_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "mps_session.h"
#include "farm_journal.h"
#include "farm_slot.h"

#define FARM_FAULT_RECOVER_NS (10 * NS_PER_S)  /* the server's FAULT state, then it is shut down */
#define FARM_FAULT_CHECK_NS (100 * NS_PER_MS)  /* how often the server's state is asked meanwhile */

/* How the culprit was told from the others (the journal's "evidence"). */
enum farm_fault_evidence {
	FARM_EVIDENCE_LOG,       /* the server log names its process */
	FARM_EVIDENCE_ALONE,     /* it was the only attempt that failed */
	FARM_EVIDENCE_EARLIER,   /* the only one that failed in an earlier fault too */
	FARM_EVIDENCE_FIRST,     /* the first to fail */
	FARM_EVIDENCE_REFUSED,   /* every attempt was refused by the server (807): none ran */
};

const char *farm_fault_evidence_name(enum farm_fault_evidence e);

/* An attempt that failed in a fault window, as the choice sees it. */
struct farm_fault_cand {
	uint64_t end_ns;         /* when it ended */
	bool named;              /* the server log names its process */
	bool earlier;            /* its job failed in an earlier fault of this run */
	bool not_ready;          /* refused by the faulted server (807): it ran no GPU work */
};

/* The culprit among n > 0 failed attempts: the one the server log names
 * (the first named when several), else the only one, else the only one
 * that failed in an earlier fault too, else the first to fail (ties: the
 * lower index). Attempts refused by the faulted server (not_ready) are
 * never chosen while another is there; when all are, the first to fail
 * (FARM_EVIDENCE_REFUSED: they are charged as ordinary failures).
 * Its index; *ev says which rule chose it. */
size_t farm_fault_pick(const struct farm_fault_cand *c, size_t n, enum farm_fault_evidence *ev);

/* ---- the farm's side: the fault state of a run ---- */

struct farm_faults;  /* the open faults, the jobs of settled ones: NULL until the first */

/* What the fault part sees of the farm: its GPUs (it sets their holds),
 * their slots (n_gpus * max_k; it marks those the server log names), the
 * farm directory (the jobs' .err files) and the MPS session. */
struct farm_fault_view {
	struct farm_gpu *gpus;
	size_t n_gpus;
	struct slot *slots;
	unsigned max_k;
	const char *dir;
	const struct gpushare_mps_session *mps;
	unsigned retries;        /* --retries: a culprit with none left fails for good */
};

/* An attempt held in a fault: the slot as it ended (its argv owned here
 * until the fault is settled) and how it ended. */
struct farm_fault_member {
	struct slot s;
	int wstatus;
	uint64_t end_ns;
	bool close_busy;         /* it ended its GPU's busy period */
	bool not_ready;          /* refused by the faulted server (807) */
	enum farm_outcome o;     /* when settled: FARM_FAILED or FARM_BYSTANDER */
};

/* A fault ready to be recorded: its attempts, in the order they ended (the
 * culprit's slot with fault_culprit, the suspects' with isolate_next), and
 * its journal record. Held by the fault state until farm_fault_settled. */
struct farm_fault_settle {
	size_t gpu;
	struct farm_fault_member *m;
	size_t n;
	struct farm_fault_record rec;
};

/* Faults are watched under mps and mps-split with a daemon. */
bool farm_fault_watched(int strategy, const struct gpushare_mps_session *mps);
/* A slot's attempt ended (any outcome): the GPU of an isolated job is free
 * again. */
void farm_fault_slot_ended(struct farm_gpu *gpus, struct slot *s);
/* A failed attempt under MPS: true when it belongs to a fault (it is kept,
 * argv included: s->argv is NULL then; nothing is recorded yet). *F is
 * made at the first fault. */
bool farm_fault_take(struct farm_faults **F, const struct farm_fault_view *v, struct slot *s, int wstatus,
		     uint64_t end_ns, bool close_busy);
/* The next fault whose GPU all clients have left (and whose server serves
 * again, or was shut down): 1 and *out, to be recorded by the caller, then
 * passed to farm_fault_settled; 0 when none; < 0 out of memory. While the
 * farm stops (stopping) the servers are not waited for. */
int farm_fault_poll(struct farm_faults *F, const struct farm_fault_view *v, uint64_t now, bool stopping,
		    struct farm_fault_settle *out);
/* The fault of *st recorded: its GPU takes jobs again; what is left of its
 * attempts (argv) is freed; its jobs count as having failed in a fault
 * (out of memory for that: GPUSHARE_E_NOMEM). */
int farm_fault_settled(struct farm_faults *F, const struct farm_fault_view *v, struct farm_fault_settle *st);
/* The GPU where a retry that must run alone (a culprit's, a suspect's)
 * starts now: an empty one, the one reserved for it first; SIZE_MAX when
 * none is empty (one GPU is then reserved: no new job is placed there until
 * it is empty). */
size_t farm_fault_gpu_alone(struct farm_gpu *gpus, size_t n_gpus);
/* Some fault is not settled yet (the loop must not end). */
bool farm_fault_open(const struct farm_faults *F);
void farm_fault_free(struct farm_faults *F, size_t n_gpus);

#endif
