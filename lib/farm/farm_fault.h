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

struct farm;
struct slot;
struct farm_gpu;

/* Called by the dispatch (farm_dispatch.c). */
void farm_fault_init(struct farm *f);
/* A slot's attempt ended (any outcome) and f->faults exists: the GPU of an
 * isolated job is free again. */
void farm_fault_slot_ended(struct farm *f, struct slot *s);
/* A failed attempt under MPS: true when it belongs to a fault (it is kept,
 * with its argv, until the fault is settled; nothing is recorded yet). */
bool farm_fault_take(struct farm *f, struct slot *s, int wstatus, uint64_t end_ns);
/* Settle the faults whose GPU all clients have left: records, requeues,
 * the fault record. */
int farm_fault_poll(struct farm *f, uint64_t now);
/* The GPU where a retry that must run alone (a culprit's, a suspect's)
 * starts now: an empty one, the one reserved for it first; SIZE_MAX when
 * none is empty (one GPU is then reserved: no new job is placed there until
 * it is empty). */
size_t farm_fault_gpu_alone(struct farm_gpu *gpus, size_t n_gpus);
/* Some fault is not settled yet (the loop must not end). */
bool farm_fault_open(const struct farm *f);
void farm_fault_free(struct farm *f);

#endif
