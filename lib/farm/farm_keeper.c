/*
 * The farm's keeper (farm_keeper.h): what outlives a killed gpushare farm
 * for the moment it takes to leave nothing running and lose no finished
 * job.
 *
 * Messages: fixed records of 64 bytes on one pipe (each write is atomic,
 * below PIPE_BUF), written by the jobs' mirrors ('S' the job of slot N was
 * forked, 'E' it ended with this wait status) and by gpushare ('A' this
 * attempt is in the journal, 'D' the farm ends normally). A mirror writes
 * 'E' before it exits, so gpushare reaps it and records the attempt after
 * the keeper has its 'E'; so per slot at most one attempt ended without
 * its 'A'.
 *
 * The keeper is a keeper of lib/sys/loop.h watching its owner: gpushare's
 * death is seen on its pidfd (or, without one, by the keeper's parent
 * changing, checked every 10 ms), and the pipe is one more descriptor on
 * the keeper's loop. The pipe's end (EOF) comes once gpushare and every
 * mirror are gone: the mirrors hold its write end, the programs do not
 * (close-on-exec).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "loop.h"
#include "sys.h"
#include "gpushare/child.h"
#include "gpushare/gpushare.h"
#include "farm_slot.h"
#include "farm_journal.h"
#include "farm_keeper.h"
#include "rundir.h"

#define KEEPER_TICK_NS (50 * NS_PER_MS)
#define KEEPER_DRAIN_NS (5 * NS_PER_S)      /* mirrors get this long to end after gpushare died */
#define KEEPER_TAIL_BYTES (4 << 20)         /* the journal's tail searched for unacknowledged records */
#define MSG_BATCH 64                        /* messages written at once */

struct keeper_msg {
	uint8_t type;                        /* 'S', 'E', 'A', 'D' */
	uint8_t pad[3];
	uint32_t slot;
	uint32_t attempt;
	int32_t pgid;
	int32_t wstatus;
	uint32_t pad2;
	uint64_t job, hash;
	double start_unix_s, end_unix_s, duration_s;
};

_Static_assert(sizeof(struct keeper_msg) == 64, "keeper messages are 64 bytes");

/* The link the mirrors and the keeper see (their copy of gpushare's). */
static struct farm_keeper_link *keeper_link;

static void send_msg(int fd, const struct keeper_msg *m, size_t n)
{
	const char *p = (const char *)m;
	size_t len = n * sizeof(*m);

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		len -= (size_t)w;
	}
}

static void slot_msg(const struct slot *s, char type, struct keeper_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)type;
	m->slot = s->index;
	m->attempt = s->attempt;
	m->pgid = (int32_t)getpid();
	m->job = s->job;
	m->hash = s->hash;
	m->start_unix_s = s->start_unix_s;
}

void farm_keeper_job_started(void *arg)
{
	struct keeper_msg m;

	if (!keeper_link || keeper_link->fd < 0)
		return;
	slot_msg(arg, 'S', &m);
	send_msg(keeper_link->fd, &m, 1);
}

void farm_keeper_job_ended(void *arg, int wstatus)
{
	const struct slot *s = arg;
	struct keeper_msg m;

	if (!keeper_link || keeper_link->fd < 0)
		return;
	slot_msg(s, 'E', &m);
	m.wstatus = wstatus;
	m.duration_s = (double)(gpushare_now_ns() - s->start_ns) / 1e9;
	m.end_unix_s = s->start_unix_s + m.duration_s;
	send_msg(keeper_link->fd, &m, 1);
}

void farm_keeper_init(struct farm_keeper_link *k)
{
	memset(k, 0, sizeof(*k));
	k->fd = k->pidfd = -1;
}

bool farm_keeper_linked(const struct farm_keeper_link *k)
{
	return k->fd >= 0;
}

void farm_keeper_recorded(struct farm_keeper_link *l, const struct farm_attempt *a, size_t n)
{
	struct keeper_msg m[MSG_BATCH];
	size_t k = 0;

	if (l->fd < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		memset(&m[k], 0, sizeof(m[k]));
		m[k].type = 'A';
		m[k].job = a[i].job;
		m[k].attempt = a[i].attempt;
		if (++k == MSG_BATCH) {
			send_msg(l->fd, m, k);
			k = 0;
		}
	}
	if (k)
		send_msg(l->fd, m, k);
}

/* ---- the keeper process ---- */

enum { K_IDLE, K_RUNNING, K_ENDED };

struct kslot {
	int state;
	struct keeper_msg start, end;
	bool end_after_kill;                 /* its 'E' came after the keeper began killing */
};

struct keeper {
	struct farm_keeper_link *f;
	struct kslot *ks;
	size_t n;
	int rd;                              /* the pipe's read end, non-blocking */
	bool killing, eof, done;
};

static void handle(struct keeper *k, const struct keeper_msg *m)
{
	struct kslot *s;

	if (m->type == 'D') {
		k->done = true;
		return;
	}
	if (m->type == 'A') {
		for (size_t i = 0; i < k->n; i++) {
			s = &k->ks[i];
			if (s->state != K_IDLE && s->start.job == m->job && s->start.attempt == m->attempt)
				s->state = K_IDLE;
		}
		return;
	}
	if (m->slot >= k->n)
		return;
	s = &k->ks[m->slot];
	if (m->type == 'S') {
		s->state = K_RUNNING;
		s->start = *m;
	} else if (m->type == 'E') {
		s->state = K_ENDED;
		s->end = *m;
		s->end_after_kill = k->killing;
	}
}

/* Read what is there (the descriptor is non-blocking). */
static void drain(struct keeper *k)
{
	static char buf[64 * sizeof(struct keeper_msg)];
	static size_t have;

	for (;;) {
		ssize_t r = read(k->rd, buf + have, sizeof(buf) - have);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			k->eof = true;
		if (r <= 0)
			return;
		have += (size_t)r;
		while (have >= sizeof(struct keeper_msg)) {
			struct keeper_msg m;

			memcpy(&m, buf, sizeof(m));
			handle(k, &m);
			have -= sizeof(m);
			memmove(buf, buf + sizeof(m), have);
		}
	}
}

static void kill_job_member(pid_t pid, pid_t pgrp, void *arg)
{
	const struct keeper *k = arg;

	for (size_t i = 0; i < k->n; i++) {
		if (k->ks[i].state != K_IDLE && k->ks[i].start.pgid == pgrp && pid != pgrp)
			kill(pid, SIGKILL);
	}
}

/* SIGKILL to every process of the running jobs' groups but their leaders
 * (the mirrors, which then report how the job ended). */
static void kill_jobs(struct keeper *k)
{
	gpushare_proc_each(kill_job_member, k);
}

/* Is the attempt already in the journal's tail (written by gpushare just
 * before it died, not acknowledged)? */
static bool recorded(const struct farm_journal *j, uint64_t job, unsigned attempt, const char *tail, size_t len)
{
	const char *p = tail, *end = tail + len;

	(void)j;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (nl && memmem(p, n, "\"type\":\"attempt\"", 16)) {
			cJSON *o = cJSON_ParseWithLength(p, n);
			const cJSON *jj = cJSON_GetObjectItemCaseSensitive(o, "job");
			const cJSON *aa = cJSON_GetObjectItemCaseSensitive(o, "attempt");
			/* Compared as doubles: exact for every count below 2^53. */
			bool same = cJSON_IsNumber(jj) && cJSON_IsNumber(aa) &&
				    jj->valuedouble == (double)FARM_JOB_NUMBER(job) && aa->valuedouble == (double)attempt;

			cJSON_Delete(o);
			if (same)
				return true;
		}
		p += n + 1;
	}
	return false;
}

/* Write the records of the attempts that ended without gpushare recording
 * them: exit status 0 always (the job finished), other endings only when
 * they came before the keeper began killing (the kill's own are not the
 * job's: those run again on resume). */
static void write_missing(struct keeper *k)
{
	struct farm_keeper_link *f = k->f;
	struct farm_attempt *a = calloc(k->n ? k->n : 1, sizeof(*a));
	char *tail = NULL;
	size_t n = 0, tlen = 0;
	off_t size;

	if (!a || gpushare_farm_journal_cut_torn(f->journal) != GPUSHARE_OK)
		goto out;
	size = lseek(f->journal->fd, 0, SEEK_END);
	if (size > 0) {
		off_t from = size > KEEPER_TAIL_BYTES ? size - KEEPER_TAIL_BYTES : 0;
		ssize_t r;

		tail = malloc((size_t)(size - from));
		r = tail ? pread(f->journal->fd, tail, (size_t)(size - from), from) : -1;
		tlen = r > 0 ? (size_t)r : 0;
	}
	for (size_t i = 0; i < k->n; i++) {
		const struct kslot *s = &k->ks[i];
		const struct slot *sl;
		const struct farm_gpu_id *g;
		struct farm_attempt *x;
		int ws = s->end.wstatus;
		bool ok = WIFEXITED(ws) && WEXITSTATUS(ws) == 0;

		if (s->state != K_ENDED || (!ok && s->end_after_kill) ||
		    recorded(f->journal, s->start.job, s->start.attempt, tail, tlen))
			continue;
		sl = &f->slots[i];
		g = &f->gpu_ids[sl->gpu];
		x = &a[n++];
		x->job = s->start.job;
		x->hash = s->start.hash;
		x->attempt = s->start.attempt;
		x->outcome = ok ? FARM_OK : FARM_FAILED;
		x->exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
		x->signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
		x->gpu = g->index;
		snprintf(x->gpu_uuid, sizeof(x->gpu_uuid), "%s", f->placed ? g->uuid : "");
		x->slot = (int)sl->k;
		x->start_unix_s = s->start.start_unix_s;
		x->end_unix_s = s->end.end_unix_s;
		x->duration_s = s->end.duration_s;
		snprintf(x->stdout_path, sizeof(x->stdout_path), "out/%" PRIu64 ".%u.out", FARM_JOB_NUMBER(x->job), x->attempt);
		snprintf(x->stderr_path, sizeof(x->stderr_path), "out/%" PRIu64 ".%u.err", FARM_JOB_NUMBER(x->job), x->attempt);
	}
	if (n)
		gpushare_farm_journal_write_attempts(f->journal, a, n);
out:
	free(tail);
	free(a);
}

/* While gpushare runs: its messages and the mirrors'. 'D' ends the keeper
 * at once; the pipe's end means gpushare is gone (as its pidfd, which the
 * keeper skeleton watches). */
static int keeper_read(struct gpushare_loop *l, void *arg)
{
	struct keeper *k = arg;

	(void)l;
	drain(k);
	if (k->done)
		return GPUSHARE_KEEPER_DONE;
	return k->eof ? GPUSHARE_KEEPER_GONE : 0;
}

static int keeper_setup(struct gpushare_loop *l, void *arg)
{
	struct keeper *k = arg;

	k->f->fd = -1; /* closed here with every descriptor not kept */
	return gpushare_loop_add_fd(l, k->rd, keeper_read, k);
}

/* After gpushare died: the mirrors' last words, until every one is gone
 * (the pipe's end), killing the jobs' processes on every wake. */
static int killing_read(struct gpushare_loop *l, void *arg)
{
	struct keeper *k = arg;

	(void)l;
	drain(k);
	if (k->eof)
		return 1;
	kill_jobs(k);
	return 0;
}

static int killing_tick(struct gpushare_loop *l, void *arg)
{
	kill_jobs(arg);
	return gpushare_loop_add_deadline(l, gpushare_now_ns() + KEEPER_TICK_NS, killing_tick, arg) < 0;
}

static int keeper_cleanup(void *arg)
{
	struct keeper *k = arg;
	struct gpushare_loop l;

	/* gpushare is gone: what it said last, then end the jobs. */
	drain(k);
	k->killing = true;
	drain(k);
	if (k->done)
		return 0;
	if (!k->eof) {
		gpushare_loop_init(&l);
		kill_jobs(k);
		if (gpushare_loop_add_fd(&l, k->rd, killing_read, k) >= 0 &&
		    gpushare_loop_add_deadline(&l, gpushare_now_ns() + KEEPER_TICK_NS, killing_tick, k) >= 0 &&
		    gpushare_loop_add_deadline(&l, gpushare_now_ns() + KEEPER_DRAIN_NS, gpushare_loop_end, k) >= 0)
			gpushare_loop_run(&l);
		gpushare_loop_release(&l);
	}
	write_missing(k);
	for (size_t i = 0; i < k->n; i++) {
		if (k->ks[i].state != K_IDLE && k->ks[i].start.pgid > 1)
			gpushare_pgroup_kill(k->ks[i].start.pgid);
	}
	if (k->f->rundir)
		gpushare_rundir_cleanup(k->f->rundir);
	return 0;
}

int farm_keeper_start(struct farm_keeper_link *f)
{
	struct gpushare_keeper kp;
	struct keeper k;
	int fds[2], rc;

	memset(&k, 0, sizeof(k));
	k.f = f;
	k.n = f->n_slots;
	k.ks = calloc(k.n, sizeof(*k.ks));
	if (!k.ks)
		return gpushare_fail(GPUSHARE_E_NOMEM, "out of memory");
	if (pipe2(fds, O_CLOEXEC) != 0) {
		free(k.ks);
		return gpushare_fail(GPUSHARE_E_SYS, "pipe: %s", strerror(errno));
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	k.rd = fds[0];
	keeper_link = f;
	f->fd = fds[1];
	gpushare_keeper_init(&kp);
	kp.flags = GPUSHARE_KEEPER_OWNER;
	kp.setup = keeper_setup;
	kp.cleanup = keeper_cleanup;
	kp.arg = &k;
	kp.keep_fds[kp.n_keep_fds++] = k.rd;
	kp.keep_fds[kp.n_keep_fds++] = f->journal->fd;
	rc = gpushare_keeper_start(&kp);
	close(fds[0]);
	free(k.ks);
	if (rc) {
		close(fds[1]);
		f->fd = -1;
		return gpushare_fail(rc, "cannot start the farm's keeper (without it the jobs would outlive a killed "
				     "gpushare): %s", gpushare_errdetail());
	}
	f->pid = kp.ch.pid;
	f->pidfd = kp.ch.pidfd;
	kp.ch.pidfd = -1;
	gpushare_keeper_release(&kp);
	return GPUSHARE_OK;
}

/* The keeper has ended (reaped), or is not ours to wait for. */
static int keeper_reaped(struct gpushare_loop *l, void *arg)
{
	const struct farm_keeper_link *f = arg;
	pid_t w;
	int st;

	do
		w = waitpid(f->pid, &st, WNOHANG);
	while (w < 0 && errno == EINTR);
	if (w != 0)
		return 1;
	if (f->pidfd < 0)
		return gpushare_loop_add_deadline(l, gpushare_now_ns() + 2 * NS_PER_MS, keeper_reaped, arg) < 0;
	return 0;
}

void farm_keeper_finish(struct farm_keeper_link *f)
{
	struct gpushare_loop l;
	struct keeper_msg m;

	if (f->fd < 0)
		return;
	memset(&m, 0, sizeof(m));
	m.type = 'D';
	send_msg(f->fd, &m, 1);
	close(f->fd);
	f->fd = -1;
	/* It leaves at once; bounded anyway (and left alone past the bound). */
	gpushare_loop_init(&l);
	if (f->pid > 0 && keeper_reaped(&l, f) == 0 &&
	    (f->pidfd < 0 || gpushare_loop_add_fd(&l, f->pidfd, keeper_reaped, f) >= 0) &&
	    gpushare_loop_add_deadline(&l, gpushare_now_ns() + 5 * NS_PER_S, gpushare_loop_end, NULL) >= 0)
		gpushare_loop_run(&l);
	gpushare_loop_release(&l);
	if (f->pidfd >= 0)
		close(f->pidfd);
	f->pidfd = -1;
	f->pid = 0;
}
