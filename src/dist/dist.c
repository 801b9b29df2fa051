/* dist.c - MPI coordinator and workers.
 *
 * Protocol (tags on the sweep communicator):
 *   worker -> 0, TAG_UP:   header {flags, n, lo, hi} + n fixed-size records.
 *                          UP_DONE marks [lo, hi) finished, UP_WANT asks for
 *                          work (a worker keeps one request ahead), UP_INTR
 *                          reports a signal (lo = signal), UP_BYE follows a
 *                          worker's last data after it was told to stop (or
 *                          after UP_INTR, in the same header), UP_EFILTER
 *                          reports that the where-filter is undefined
 *                          (division by zero) for scenario lo. UP_AGG: n
 *                          packed keep.aggregate groups (keep.h) of chunk
 *                          [lo, hi) instead of records.
 *   0 -> worker, TAG_DOWN: {lo, hi}, the next chunk, or lo < 0: stop.
 * A signal anywhere makes rank 0 answer every request with stop and wait for
 * each worker's goodbye: the job ends with MPI_Finalize on every rank, no abort.
 * Messages from one worker arrive in order (MPI non-overtaking), so a chunk's
 * UP_DONE always follows its records. Rank 0 never blocks on a worker: it
 * polls, queues the writes for its writer thread (writeq.h), and computes
 * small chunks itself when nothing is waiting and the writer keeps up.
 * Memory on rank 0 is one receive buffer and the todo list, whatever the grid.
 * Rank 0's states in this protocol, their invariants and transitions: "the
 * coordinator's states", above coordinate(). */
#include "ccsweep/dist/dist.h"
#include "ccsweep/sweep/keep.h"
#include "ccsweep/dist/writeq.h"
#include "dist_int.h"

#include <assert.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static dist_comm world_ = {0}, self_ = {0};
static int funneled_; /* MPI allows threads that do not call it */

static volatile sig_atomic_t caught_;

static void on_signal(int sig)
{
    if (!caught_)
        caught_ = sig;
}

void dist_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* I/O in SQLite and MPI resumes; the loops poll the flag */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

int dist_signal(void)
{
    return caught_;
}

int dist_init(int *argc, char ***argv)
{
    int init = 0;
    MPI_Initialized(&init);
    /* funneled: rank 0's writer thread (writeq.h) never calls MPI */
    int provided = MPI_THREAD_SINGLE;
    if (!init && MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return CCS_ERUNTIME;
    if (init)
        MPI_Query_thread(&provided);
    funneled_ = provided >= MPI_THREAD_FUNNELED;
    world_.comm = MPI_COMM_WORLD;
    self_.comm = MPI_COMM_SELF;
    return CCS_OK;
}

void dist_finalize(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin)
        MPI_Finalize();
}

dist_comm *dist_world(void)
{
    world_.comm = MPI_COMM_WORLD;
    return &world_;
}

dist_comm *dist_self(void)
{
    self_.comm = MPI_COMM_SELF;
    return &self_;
}

int dist_rank(const dist_comm *c)
{
    int r = 0;
    MPI_Comm_rank(c->comm, &r);
    return r;
}

int dist_size(const dist_comm *c)
{
    int n = 1;
    MPI_Comm_size(c->comm, &n);
    return n;
}

int dist_agree(const dist_comm *c, int rc)
{
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, c->comm);
    return worst;
}

int dist_bcast_text(const dist_comm *c, char **text, long *len)
{
    MPI_Bcast(len, 1, MPI_LONG, 0, c->comm);
    if (*len < 0)
        return CCS_EINPUT;
    if (dist_rank(c) != 0) {
        *text = malloc((size_t)*len + 1);
        if (!*text)
            dist_abort(c, 2);
        (*text)[*len] = 0;
    }
    /* chunks below INT_MAX elements */
    for (long off = 0; off < *len; off += 1L << 30) {
        long n = *len - off < (1L << 30) ? *len - off : (1L << 30);
        MPI_Bcast(*text + off, (int)n, MPI_CHAR, 0, c->comm);
    }
    return CCS_OK;
}

void dist_abort(const dist_comm *c, int code)
{
    MPI_Abort(c->comm, code);
    exit(code); /* not reached */
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double dist_clock(void)
{
    return now_s();
}

/* Wait the microseconds test variable var gives (at most max; *us caches
 * it, -1 before the first call); a caught signal ends the wait early. */
static void test_delay(const char *var, long max, long *us)
{
    if (*us < 0) {
        const char *v = getenv(var);
        *us = v ? strtol(v, NULL, 10) : 0;
        if (*us < 0 || *us > max)
            *us = 0;
    }
    if (*us > 0 && !caught_) {
        struct timespec d = {*us / 1000000, (*us % 1000000) * 1000};
        nanosleep(&d, NULL);
    }
}

/* Test hook: CCSWEEP_TEST_LOAD_DELAY_US=N makes every rank wait N us (at
 * most 60 s, cut short by a signal) once the spec is checked, so that a test
 * interrupts a run while it loads; the line it prints first tells the test
 * that ccsweep's own handlers are in place. Unset (always, outside the
 * tests): no wait, nothing printed. */
void dist_test_load_delay(void)
{
    static long us = -1;
    if (getenv("CCSWEEP_TEST_LOAD_DELAY_US") && !caught_) /* the test waits for this line */
        fprintf(stderr, "ccsweep run: test hook: holding the load\n");
    test_delay("CCSWEEP_TEST_LOAD_DELAY_US", 60000000, &us);
}

/* Test hook: CCSWEEP_TEST_CHUNK_DELAY_US=N makes every rank wait N us before
 * each chunk it computes (a serving run: before each job), so that the signal
 * and concurrency tests stop or meet a sweep mid-way however fast the machine
 * is. Unset (always, outside the tests): no wait. */
void dist_test_chunk_delay(void)
{
    static long us = -1;
    test_delay("CCSWEEP_TEST_CHUNK_DELAY_US", 1000000, &us);
}

/* ---- work distribution (rank 0) ------------------------------------------------ */

typedef struct sched {
    const store_range *todo;
    size_t n, ti;
    int64_t next;      /* next index to hand out in todo[ti] */
    int64_t remaining; /* indices not yet handed out */
    int64_t fixed;     /* --chunk, or 0 */
    int ranks;
} sched;

/* Guided self-scheduling (Polychronopoulos & Kuck 1987): a chunk is a share
 * of what remains, so early chunks amortise messages and late ones balance. */
static int take(sched *s, int64_t cap, int64_t *lo, int64_t *hi)
{
    while (s->ti < s->n && s->next >= s->todo[s->ti].hi) {
        if (++s->ti < s->n)
            s->next = s->todo[s->ti].lo;
    }
    if (s->ti >= s->n)
        return 0;
    int64_t want = s->fixed;
    if (want <= 0) {
        want = s->remaining / (4 * (int64_t)s->ranks);
        want = want < 256 ? 256 : want > 65536 ? 65536 : want;
    }
    if (cap > 0 && want > cap)
        want = cap;
    *lo = s->next;
    *hi = s->todo[s->ti].hi - s->next < want ? s->todo[s->ti].hi : s->next + want;
    s->next = *hi;
    s->remaining -= *hi - *lo;
    return 1;
}

typedef struct coord {
    ccs_store *st;
    ccs_writeq *wq; /* rank 0's writes on their own thread, or NULL: st directly */
    const ccs_grid *g;
    const dist_opts *o;
    dist_stats *stats;
    int64_t total, done_before, rows_before;
    store_counts base;
    double t0, last_progress, last_commit;
    size_t rec_size;
    ccs_keep *kp;      /* the keep: rule's best rows so far, or NULL */
    int64_t *dead_idx; /* stored rows the rule no longer keeps */
    int *dead_st;      /* their status */
    size_t n_dead, cap_dead;
    ccs_region_time *rg; /* CCS_RG_N: regions of a kept row (--detail) */
    /* keep.aggregate: ag counts the completed chunks (what the file holds),
     * pend[r] the chunk rank r is computing, merged into ag when it is done:
     * chunks that never finish are never counted. The sums are exact
     * (xsum.h), so ag does not depend on the order the chunks end in, their
     * size, the rank count or the sessions: integer addition commutes. */
    ccs_agg *ag;
    ccs_agg **pend;
    int n_pend;
    /* the progress line counts only completed chunks, so that ok + invalid +
     * oom + filtered is what it calls done: fly[r] holds the rows of rank r's
     * chunk in progress (ok, invalid, oom, rows), shown those of done chunks */
    int64_t (*fly)[4];
    int64_t shown[4];
} coord;

/* h:mm:ss of s seconds into buf. */
static const char *hms(char *buf, size_t n, double s)
{
    long long t = s > 0 && s < 1e9 ? (long long)(s + 0.5) : 0;
    snprintf(buf, n, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    return buf;
}

static void progress(coord *c, int final)
{
    const dist_opts *o = c->o;
    if (o->quiet || !o->log)
        return;
    double t = now_s();
    if (!final && t - c->last_progress < o->progress)
        return;
    c->last_progress = t;
    dist_stats *s = c->stats;
    int64_t done = c->done_before + s->done;
    double el = t - c->t0, rate = el > 0 ? s->done / el : 0;
    double left = rate > 0 ? (c->total - done) / rate : 0;
    const int64_t *n = c->shown;
    int64_t filtered = s->done - n[3] > 0 ? s->done - n[3] : 0;
    char eta[32];
    int tty = isatty(fileno(o->log));
    char who[48] = "";
    if (o->writers > 1)
        snprintf(who, sizeof who, "writer %d of %d: ", o->writer + 1, o->writers);
    fprintf(o->log,
            "%sccsweep: %s%lld/%lld (%.1f%%) %.0f/s ETA %s | ok %lld invalid %lld oom %lld "
            "filtered %lld%s",
            tty ? "\r" : "", who, (long long)done, (long long)c->total,
            c->total ? 100.0 * done / c->total : 100.0, rate, hms(eta, sizeof eta, left),
            (long long)(c->base.ok + n[0]), (long long)(c->base.invalid + n[1]),
            (long long)(c->base.oom + n[2]), (long long)(c->base.filtered + filtered),
            tty && !final ? "   " : "\n");
    fflush(o->log);
}

/* A row of rank src's chunk in progress, for the progress line. */
static void fly_add(coord *c, int src, int status)
{
    int64_t *f = c->fly ? c->fly[src] : c->shown;
    f[0] += status == CCS_ST_OK;
    f[1] += status == CCS_ST_INVALID;
    f[2] += status == CCS_ST_OOM;
    f[3]++;
}

static int push_dead(coord *c, int64_t idx, int status, ccs_err *err)
{
    if (c->n_dead == c->cap_dead) {
        size_t n = c->cap_dead ? 2 * c->cap_dead : 1024;
        int64_t *ni = realloc(c->dead_idx, n * sizeof *ni);
        if (ni)
            c->dead_idx = ni;
        int *ns = ni ? realloc(c->dead_st, n * sizeof *ns) : NULL;
        if (!ns) {
            ccs_err_set(err, "out of memory");
            return CCS_ENOMEM;
        }
        c->dead_st = ns;
        c->cap_dead = n;
    }
    c->dead_idx[c->n_dead] = idx;
    c->dead_st[c->n_dead++] = status;
    return CCS_OK;
}

/* Under a keep: rule a row is stored when it enters its group's best; the
 * row it displaces stays in the file until the run completes (dropped then),
 * so that a resumed run rebuilds the best of exactly the committed chunks
 * from the rows in the file, whatever was in flight when it stopped. */
static int put_kept(coord *c, const ccs_record *r, int src, ccs_err *err)
{
    int disp = 0, dst = 0;
    int64_t didx = -1;
    int k = keep_offer(c->kp, r, &disp, &didx, &dst);
    if (k < 0) {
        ccs_err_set(err, "out of memory for the keep: groups");
        return k;
    }
    if (disp && push_dead(c, didx, dst, err))
        return CCS_ENOMEM;
    if (k != KEEP_KEPT)
        return CCS_OK;
    dist_stats *s = c->stats;
    s->rows++;
    s->ok += r->r.status == CCS_ST_OK;
    s->oom += r->r.status == CCS_ST_OOM;
    fly_add(c, src, r->r.status);
    if (c->o->detail) {
        ccs_record tmp; /* regions do not travel under keep: recompute them */
        grid_eval(c->g, r->s.idx, &tmp, c->rg);
    }
    return store_put(c->st, r, c->o->detail ? c->rg : NULL, err);
}

/* A resumed run under keep.aggregate: the committed aggregates, again. */
static int load_group(const double *key, int64_t scenarios, const keep_stat *stats, void *ctx)
{
    return agg_add_group(ctx, key, scenarios, stats);
}

/* A resumed run under keep: the rows in the file, offered again. */
static int rebuild_one(int64_t idx, void *ctx)
{
    coord *c = ctx;
    ccs_record rec;
    ccs_err err;
    if (grid_eval(c->g, idx, &rec, NULL) != 1) /* stored rows passed the filter */
        return push_dead(c, idx, rec.r.status, &err);
    int disp = 0, dst = 0;
    int64_t didx = -1;
    int k = keep_offer(c->kp, &rec, &disp, &didx, &dst);
    if (k < 0)
        return k;
    if (disp && push_dead(c, didx, dst, &err))
        return CCS_ENOMEM;
    return k == KEEP_KEPT ? CCS_OK : push_dead(c, idx, rec.r.status, &err);
}

/* The pending aggregates of rank src's chunk. */
static ccs_agg *pending(coord *c, int src)
{
    if (!c->pend[src])
        c->pend[src] = agg_new(c->g, 0);
    return c->pend[src];
}

static int no_memory(ccs_err *err)
{
    ccs_err_set(err, "out of memory for the keep: groups");
    return CCS_ENOMEM;
}

/* A record from rank src; rank 0's own are counted in its aggregates here,
 * the workers' arrive counted (UP_AGG). */
static int put(coord *c, const unsigned char *rec, int src, ccs_err *err)
{
    const ccs_record *r = (const ccs_record *)(const void *)rec;
    if (c->ag && src == 0) {
        ccs_agg *a = pending(c, 0);
        if (!a || agg_offer(a, r) < 0)
            return no_memory(err);
    }
    if (c->kp)
        return put_kept(c, r, src, err);
    const ccs_region_time *rg =
        c->o->detail ? (const ccs_region_time *)(const void *)(rec + sizeof(ccs_record)) : NULL;
    dist_stats *s = c->stats;
    s->rows++;
    s->ok += r->r.status == CCS_ST_OK;
    s->invalid += r->r.status == CCS_ST_INVALID;
    s->oom += r->r.status == CCS_ST_OOM;
    fly_add(c, src, r->r.status);
    return c->wq ? writeq_put(c->wq, r, rg, err) : store_put(c->st, r, rg, err);
}

static int commit(coord *c, ccs_err *err)
{
    return c->wq ? writeq_commit(c->wq, err) : store_commit(c->st, err);
}

/* [lo, hi) is handed out (to a worker, or to rank 0 itself): its rows will
 * arrive in index order, so every commit can record the part of it that
 * they cover (store_chunk_open). Not under keep:, whose rows come as a
 * chunk's best, in no order, and whose aggregates count whole chunks. */
static int open_chunk(coord *c, int64_t lo, int64_t hi, ccs_err *err)
{
    if (c->kp)
        return CCS_OK;
    return c->wq ? writeq_chunk_open(c->wq, lo, hi, err) : store_chunk_open(c->st, lo, hi, err);
}

/* Rank src's packed aggregates, n of them in buf[0..len). */
static int put_aggs(coord *c, const unsigned char *buf, size_t len, int n, int src, ccs_err *err)
{
    ccs_agg *a = pending(c, src);
    if (!a)
        return no_memory(err);
    for (int i = 0; i < n; i++) {
        size_t used = 0;
        int rc = agg_unpack_add(a, buf, len, &used);
        if (rc == CCS_EINPUT) {
            ccs_err_set(err, "rank %d sent a damaged keep aggregate", src);
            return CCS_ERUNTIME;
        }
        if (rc)
            return no_memory(err);
        buf += used;
        len -= used;
    }
    return CCS_OK;
}

/* [lo, hi), rank src's chunk, is complete: its aggregates join the
 * committed ones, and the groups they changed are written in the
 * transaction that records the chunk. */
static int chunk_done(coord *c, int64_t lo, int64_t hi, int src, ccs_err *err)
{
    c->stats->done += hi - lo;
    for (int i = 0; c->fly && i < 4; i++) {
        c->shown[i] += c->fly[src][i];
        c->fly[src][i] = 0;
    }
    if (c->ag && c->pend[src]) {
        if (agg_merge(c->ag, c->pend[src]))
            return no_memory(err);
        agg_clear(c->pend[src]);
        const size_t *dirty;
        size_t nd = agg_dirty(c->ag, &dirty);
        for (size_t i = 0; i < nd; i++) {
            int64_t scen;
            const keep_stat *kst;
            const double *key = agg_group_at(c->ag, dirty[i], &scen, &kst);
            if (store_keep_group(c->st, key, scen, kst, err))
                return CCS_EIO;
        }
        agg_clean(c->ag);
    }
    /* (keep: runs, the only ones with aggregates, have no writer thread) */
    if (c->wq ? writeq_chunk_done(c->wq, lo, hi, err) : store_chunk_done(c->st, lo, hi, err))
        return CCS_EIO;
    double t = now_s();
    if (t - c->last_commit >= COMMIT_SECS) {
        c->last_commit = t;
        return commit(c, err);
    }
    return CCS_OK;
}

/* Evaluate [lo, hi) into consecutive records at buf; returns how many were
 * kept, or -1 with *bad set to the first scenario the filter is undefined for. */
static int eval_range(const ccs_grid *g, int64_t lo, int64_t hi, int detail, size_t rec_size,
                      unsigned char *buf, int64_t *bad)
{
    int n = 0;
    for (int64_t i = lo; i < hi; i++) {
        unsigned char *p = buf + (size_t)n * rec_size;
        ccs_region_time *rg = detail ? (ccs_region_time *)(void *)(p + sizeof(ccs_record)) : NULL;
        int k = grid_eval(g, i, (ccs_record *)(void *)p, rg);
        if (k < 0) {
            *bad = i;
            return -1;
        }
        n += k;
    }
    return n;
}

/* The where-filter divided by zero for scenario idx: an error of the spec. */
static int filter_undefined(const ccs_grid *g, int64_t idx, ccs_err *err)
{
    ccs_scenario s;
    grid_decode(g, idx, &s);
    const ccs_spec *sp = grid_spec(g);
    const ccs_plan *p = &s.plan;
    ccs_err_set(err,
                "%s: field 'where': '%s' divides by zero for scenario %lld (model %s, hardware "
                "%s, generation %d, devices %d, tp %d, pp %d, dp %d, mbs %d, gbs %d, seq %d), "
                "the first such one; guard the divisor (e.g. 'dp > 0 and gbs / dp > 8')",
                spec_path(sp), spec_where_text(sp), (long long)idx,
                spec_model(sp, (size_t)s.model)->name, spec_hw(sp, (size_t)s.hw)->name, (int)s.gen,
                p->devices, p->tp, p->pp, p->dp, p->mbs, p->gbs, p->seq);
    return CCS_EINPUT;
}

/* ---- the coordinator's states ---------------------------------------------------
 *
 * coordinate() is rank 0's side of the protocol described at the top of this
 * file: it polls for worker messages, answers chunk requests from the
 * schedule (take), computes slices of chunks of its own in between, and
 * hands every row to the writer. Its state (coord_loop.state) is one of:
 *
 *   COORD_HANDOUT  The schedule may still hold work. Every UP_WANT is
 *                  answered with the next chunk; rank 0 takes chunks for
 *                  itself (at most SELF_CHUNK while workers run) and computes
 *                  them SELF_SLICE scenarios between polls, except while its
 *                  writer thread is WRITEQ_BEHIND.
 *   COORD_DRAIN    take() found the schedule empty. Every UP_WANT is answered
 *                  with stop ({-1, -1}); rank 0 finishes its own chunk, and
 *                  stores what arrives until each worker's UP_BYE.
 *   COORD_STOP     A signal: caught on rank 0 (dist_signal) or reported by a
 *                  worker (UP_INTR). Every UP_WANT is answered with stop;
 *                  rank 0's unfinished chunk is abandoned (never marked done:
 *                  the last commit records the part its rows cover, a resume
 *                  recomputes the rest); data and UP_DONE still arriving
 *                  are stored and recorded, until each worker's UP_BYE.
 *   COORD_DONE     Every worker said goodbye and rank 0 holds no chunk (or
 *                  STOP abandoned it): the loop ends. After it, under keep:
 *                  the rows displaced from their groups are dropped (not
 *                  after a signal: a resume rebuilds the groups from the rows
 *                  in the file), and the last transaction is committed.
 *   COORD_FAIL     An error (rc != CCS_OK: the store, memory, a damaged
 *                  aggregate, a where-filter undefined here or in a worker's
 *                  UP_EFILTER): the loop ends at once, without waiting for
 *                  the workers; the caller ends the job.
 *
 * Transitions (coord_move refuses any other):
 *
 *   HANDOUT -> DRAIN    take() returns 0: serve (an UP_WANT) or own_take
 *   HANDOUT -> STOP     dist_signal() seen at the loop's top, or UP_INTR in serve:
 *   DRAIN   -> STOP       coord_stop, which records the signal in stats
 *   DRAIN   -> DONE     the loop's bottom: no message, no own chunk, active == 0
 *   STOP    -> DONE     the loop's top: active == 0
 *   (any)   -> FAIL     rc != CCS_OK out of serve or own_slice
 *
 * Invariants (assert_coord_state, checked at every move and at the loop's top):
 *
 *   always:   0 <= active <= ranks - 1, the workers that have not said UP_BYE;
 *             s.ti <= s.n; an own chunk has own_lo <= own_next < own_hi
 *             (except in FAIL, which may leave one mid-update).
 *   HANDOUT:  no signal recorded; active == ranks - 1 (a worker says goodbye
 *             only after a stop answer or with UP_INTR, which leave HANDOUT).
 *   DRAIN:    no signal recorded; s.ti == s.n (take has nothing left).
 *   STOP:     stats->signal != 0.
 *   DONE:     active == 0; no own chunk, unless stopped.
 *
 * A worker (work, work_kept) keeps exactly one chunk request outstanding from
 * its first chunk_ask to the stop answer, so rank 0 answering every UP_WANT,
 * in every state, is what lets a worker leave: it computes job[] while the
 * answer to next[] travels, has at most two record buffers in flight, and
 * ends in worker_bye (its sends completed, then UP_BYE, or UP_INTR | UP_BYE
 * and the outstanding answer awaited). On UP_EFILTER it returns at once:
 * rank 0 fails the job. */
enum { COORD_HANDOUT, COORD_DRAIN, COORD_STOP, COORD_DONE, COORD_FAIL, COORD_N };

typedef struct coord_loop {
    int state;  /* COORD_* */
    int ranks;  /* of the sweep communicator, rank 0 included */
    int active; /* workers that have not said goodbye */
    sched s;
    int have_own;                     /* rank 0 computes [own_lo, own_hi) */
    int64_t own_lo, own_hi, own_next; /* own_next: its first scenario not computed */
} coord_loop;

/* Assert the invariants of L's state (the note above); nothing with NDEBUG. */
static void assert_coord_state(const coord_loop *L, const coord *c)
{
    int sig = c->stats->signal;
    assert(L->active >= 0 && L->active <= L->ranks - 1);
    assert(L->s.ti <= L->s.n);
    assert(L->state == COORD_FAIL || !L->have_own ||
           (L->own_lo <= L->own_next && L->own_next < L->own_hi));
    switch (L->state) {
    case COORD_HANDOUT:
        assert(sig == 0 && L->active == L->ranks - 1);
        break;
    case COORD_DRAIN:
        assert(sig == 0 && L->s.ti == L->s.n);
        break;
    case COORD_STOP:
        assert(sig != 0);
        break;
    case COORD_DONE:
        assert(L->active == 0 && (sig != 0 || !L->have_own));
        break;
    default:
        assert(L->state == COORD_FAIL);
    }
    (void)L;
    (void)sig;
}

/* Move L to state to, one of the transitions of the note above. */
static void coord_move(coord_loop *L, const coord *c, int to)
{
    static const unsigned legal[COORD_N] = {
        [COORD_HANDOUT] = 1u << COORD_DRAIN | 1u << COORD_STOP | 1u << COORD_FAIL,
        [COORD_DRAIN] = 1u << COORD_STOP | 1u << COORD_DONE | 1u << COORD_FAIL,
        [COORD_STOP] = 1u << COORD_DONE | 1u << COORD_FAIL,
    };
    assert(to >= 0 && to < COORD_N && (legal[L->state] & (1u << to)));
    (void)legal;
    L->state = to;
    assert_coord_state(L, c);
}

/* Signal sig stops the hand-out: every further request is answered with
 * stop and the loop drains until each worker has said goodbye, so that all
 * ranks leave MPI cleanly. */
static void coord_stop(coord_loop *L, coord *c, int sig)
{
    c->stats->signal = sig;
    coord_move(L, c, COORD_STOP);
}

/* One message from a worker, probed as *stt, received into msg: its records
 * or aggregates stored, its chunk recorded, its request answered, its
 * goodbye counted. Returns the first error (UP_EFILTER: the spec's). */
static int serve(const dist_comm *dc, coord *c, coord_loop *L, unsigned char *msg, MPI_Status *stt,
                 ccs_err *err)
{
    int bytes, src = stt->MPI_SOURCE;
    MPI_Get_count(stt, MPI_BYTE, &bytes);
    MPI_Recv(msg, bytes, MPI_BYTE, src, TAG_UP, dc->comm, MPI_STATUS_IGNORE);
    up_hdr h;
    memcpy(&h, msg, sizeof h);
    if ((h.flags & UP_INTR) && L->state != COORD_STOP)
        coord_stop(L, c, (int)h.lo);
    if (h.flags & UP_EFILTER)
        return filter_undefined(c->g, h.lo, err);
    int rc = CCS_OK;
    if (h.flags & UP_AGG)
        rc = put_aggs(c, msg + sizeof h, (size_t)bytes - sizeof h, h.n, src, err);
    for (int i = 0; !(h.flags & UP_AGG) && i < h.n && rc == CCS_OK; i++)
        rc = put(c, msg + sizeof h + (size_t)i * c->rec_size, src, err);
    if (rc == CCS_OK && (h.flags & UP_DONE))
        rc = chunk_done(c, h.lo, h.hi, src, err);
    if (rc == CCS_OK && (h.flags & UP_WANT)) {
        int64_t job[2] = {-1, -1};
        if (L->state != COORD_STOP && !take(&L->s, 0, &job[0], &job[1]) &&
            L->state == COORD_HANDOUT)
            coord_move(L, c, COORD_DRAIN);
        if (job[0] >= 0)
            rc = open_chunk(c, job[0], job[1], err);
        MPI_Send(job, 2, MPI_INT64_T, src, TAG_DOWN, dc->comm);
    }
    if (h.flags & UP_BYE) {
        L->active--;
        assert_coord_state(L, c);
    }
    progress(c, 0);
    return rc;
}

/* A chunk for rank 0 itself, when the schedule has one (capped while
 * workers run, so that they are not kept waiting at the end). */
static int own_take(coord_loop *L, coord *c, ccs_err *err)
{
    if (take(&L->s, L->ranks > 1 ? SELF_CHUNK : 0, &L->own_lo, &L->own_hi)) {
        L->have_own = 1;
        L->own_next = L->own_lo;
        dist_test_chunk_delay();
        return open_chunk(c, L->own_lo, L->own_hi, err);
    }
    if (L->state == COORD_HANDOUT)
        coord_move(L, c, COORD_DRAIN);
    return CCS_OK;
}

/* The next slice of rank 0's own chunk, computed into own (SELF_SLICE
 * records) and stored; the chunk recorded when it is complete. */
static int own_slice(coord_loop *L, coord *c, unsigned char *own, ccs_err *err)
{
    int64_t end = L->own_next + SELF_SLICE < L->own_hi ? L->own_next + SELF_SLICE : L->own_hi;
    int64_t bad = 0;
    int rc = CCS_OK;
    int n = eval_range(c->g, L->own_next, end, c->o->detail && !c->kp, c->rec_size, own, &bad);
    if (n < 0)
        rc = filter_undefined(c->g, bad, err);
    for (int i = 0; i < n && rc == CCS_OK; i++)
        rc = put(c, own + (size_t)i * c->rec_size, 0, err);
    L->own_next = end;
    if (rc == CCS_OK && L->own_next >= L->own_hi) {
        L->have_own = 0;
        rc = chunk_done(c, L->own_lo, L->own_hi, 0, err);
    }
    return rc;
}

/* Rank 0's loop over the states above, then the finish: the drops of a
 * keep: run and the last commit. Returns the first error. */
static int coordinate(const dist_comm *dc, coord *c, ccs_err *err)
{
    coord_loop L = {.state = COORD_HANDOUT, .ranks = dist_size(dc)};
    size_t n_todo = c->o->n_todo;
    L.s.todo = c->o->todo ? c->o->todo : store_todo(c->st, &n_todo);
    L.s.n = n_todo;
    L.s.next = n_todo ? L.s.todo[0].lo : 0;
    for (size_t i = 0; i < n_todo; i++)
        L.s.remaining += L.s.todo[i].hi - L.s.todo[i].lo;
    L.s.fixed = c->o->chunk;
    L.s.ranks = L.ranks;

    size_t maxmsg = sizeof(up_hdr) + RECS_PER_MSG * c->rec_size;
    unsigned char *msg = malloc(maxmsg);
    unsigned char *own = malloc(SELF_SLICE * c->rec_size);
    if (!msg || !own) {
        free(msg);
        free(own);
        ccs_err_set(err, "out of memory");
        return CCS_ENOMEM;
    }
    L.active = L.ranks - 1;
    int rc = CCS_OK;
    while (rc == CCS_OK) {
        assert_coord_state(&L, c);
        if (L.state != COORD_STOP && dist_signal())
            coord_stop(&L, c, dist_signal());
        if (L.state == COORD_STOP && L.active == 0) {
            coord_move(&L, c, COORD_DONE);
            break;
        }
        int flag = 0;
        MPI_Status stt;
        if (L.ranks > 1)
            MPI_Iprobe(MPI_ANY_SOURCE, TAG_UP, dc->comm, &flag, &stt);
        if (flag) {
            rc = serve(dc, c, &L, msg, &stt, err);
            continue;
        }
        /* Nothing waiting: compute a slice of rank 0's own chunk (an
         * unfinished one is left on a stop: resume recomputes what its
         * committed rows do not cover). */
        if (L.state == COORD_STOP) {
            struct timespec nap = {0, 20000};
            nanosleep(&nap, NULL);
            continue;
        }
        /* While workers run, rank 0 computes only while its writer keeps up: when
         * the writes bound the sweep, more rows sooner only lengthen the queue,
         * and the projection would take CPU from the writer thread (the same
         * core, under mpirun's default binding). */
        int writer_behind = L.active > 0 && c->wq && writeq_pending(c->wq) >= WRITEQ_BEHIND;
        if (!L.have_own && !writer_behind && (rc = own_take(&L, c, err)) != CCS_OK)
            continue;
        if (L.have_own && !writer_behind) {
            rc = own_slice(&L, c, own, err);
            progress(c, 0);
            continue;
        }
        if (L.active == 0) { /* everything handed out, done and received */
            coord_move(&L, c, COORD_DONE);
            break;
        }
        struct timespec nap = {0, 20000}; /* 20 us: wait for workers without spinning hard */
        nanosleep(&nap, NULL);
        progress(c, 0);
    }
    if (rc != CCS_OK)
        coord_move(&L, c, COORD_FAIL);
    free(msg);
    free(own);
    if (rc == CCS_OK && c->kp && !c->stats->signal)
        for (size_t i = 0; rc == CCS_OK && i < c->n_dead; i++)
            rc = store_drop(c->st, c->dead_idx[i], c->dead_st[i], err);
    if (rc == CCS_OK)
        rc = commit(c, err);
    return rc;
}

int dist_sweep(dist_comm *c, const ccs_grid *g, ccs_store *st, const dist_opts *o, dist_stats *out,
               ccs_err *err)
{
    memset(out, 0, sizeof *out);
    int kept = spec_keep_rule(grid_spec(g)) != NULL;
    size_t rec_size =
        sizeof(ccs_record) + (o->detail && !kept ? sizeof(ccs_region_time) * CCS_RG_N : 0);
    double t0 = now_s();
    int rc;
    if (dist_rank(c) != 0) {
        rc = dist_work(c, g, o, rec_size, out);
    } else {
        coord co = {
            .st = st, .g = g, .o = o, .stats = out, .total = grid_count(g), .rec_size = rec_size};
        store_counts_get(st, &co.base);
        co.done_before = co.base.done;
        if (o->todo) {
            /* a writer group's part: the progress counts this session's share */
            memset(&co.base, 0, sizeof co.base);
            co.done_before = co.total = 0;
            for (size_t i = 0; i < o->n_todo; i++)
                co.total += o->todo[i].hi - o->todo[i].lo;
        }
        co.t0 = co.last_progress = co.last_commit = t0;
        co.fly = calloc((size_t)dist_size(c), sizeof *co.fly); /* NULL: rows counted at once */
        rc = CCS_OK;
        if (kept) {
            co.kp = keep_new(g, 0);
            co.rg = calloc(CCS_RG_N, sizeof *co.rg);
            rc = co.kp && co.rg ? store_each_row(st, rebuild_one, &co, err) : CCS_ENOMEM;
            if (rc == CCS_OK && spec_keep_rule(grid_spec(g))->n_agg) {
                co.ag = agg_new(g, 0);
                co.n_pend = dist_size(c);
                co.pend = calloc((size_t)co.n_pend, sizeof *co.pend);
                rc = co.ag && co.pend ? store_each_keep_group(st, load_group, co.ag, err)
                                      : CCS_ENOMEM;
                if (rc == CCS_OK)
                    agg_clean(co.ag); /* the file holds them */
            }
            if (rc == CCS_ENOMEM)
                ccs_err_set(err, "out of memory for the keep: groups");
        }
        /* without keep (whose drops and reads need the store itself), the
         * writes run on a thread of their own where MPI allows it; if the
         * thread cannot start, rank 0 writes them itself */
        if (rc == CCS_OK && !kept && funneled_)
            co.wq = writeq_open(st, o->detail, NULL);
        /* one rank bound to one core (mpirun's default): say how to give the
         * writer thread a core of its own */
        if (co.wq && !o->quiet && o->log && dist_size(c) == 1 && writeq_cpus() == 1)
            fprintf(o->log, "ccsweep: the only rank is bound to one core, which its writer "
                            "thread shares: with two (mpirun --bind-to none, or --map-by "
                            "slot:PE=2) the writes run beside the projection\n");
        if (rc == CCS_OK)
            rc = coordinate(c, &co, err);
        ccs_err qerr;
        int qrc = writeq_close(co.wq, &out->writer_cpu, &qerr);
        if (rc == CCS_OK && qrc != CCS_OK) {
            rc = qrc;
            *err = qerr;
        }
        keep_free(co.kp);
        agg_free(co.ag);
        for (int i = 0; co.pend && i < co.n_pend; i++)
            agg_free(co.pend[i]);
        free(co.pend);
        free(co.fly);
        free(co.rg);
        free(co.dead_idx);
        free(co.dead_st);
        out->seconds = now_s() - t0;
        if (rc == CCS_OK && !out->signal)
            progress(&co, 1);
    }
    out->seconds = now_s() - t0;
    if (rc == CCS_OK && out->signal)
        rc = DIST_INTERRUPTED;
    return rc;
}

/* ---- several writers ----------------------------------------------------------- */

dist_comm *dist_split_writers(const dist_comm *c, int color, int *index, int *n)
{
    int rank = dist_rank(c), size = dist_size(c);
    int *all = malloc(sizeof *all * (size_t)size);
    dist_comm *g = malloc(sizeof *g);
    if (dist_agree(c, all && g ? CCS_OK : CCS_ENOMEM) != CCS_OK) {
        free(all);
        free(g);
        return NULL;
    }
    if (color < 0)
        MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &g->comm);
    else
        MPI_Comm_split(c->comm, color, rank, &g->comm);
    /* a group is named by its lowest rank (its rank 0, the ranks keep their order) */
    int lowest = rank;
    MPI_Bcast(&lowest, 1, MPI_INT, 0, g->comm);
    MPI_Allgather(&lowest, 1, MPI_INT, all, 1, MPI_INT, c->comm);
    *index = *n = 0;
    for (int r = 0; r < size; r++) {
        *n += all[r] == r;
        *index += all[r] == r && r < lowest;
    }
    free(all);
    return g;
}

void dist_comm_free(dist_comm *c)
{
    if (!c)
        return;
    MPI_Comm_free(&c->comm);
    free(c);
}

void dist_bcast_i64(const dist_comm *c, int64_t *v, int n)
{
    MPI_Bcast(v, n, MPI_INT64_T, 0, c->comm);
}

int dist_bcast_ranges(const dist_comm *c, store_range **r, size_t *n)
{
    int64_t len = (int64_t)*n;
    dist_bcast_i64(c, &len, 1);
    int rc = CCS_OK;
    if (dist_rank(c) != 0) {
        *n = (size_t)len;
        *r = malloc(sizeof **r * (*n ? *n : 1));
        rc = *r ? CCS_OK : CCS_ENOMEM;
    }
    if ((rc = dist_agree(c, rc)) != CCS_OK)
        return rc;
    /* as int64 pairs, in pieces below INT_MAX elements */
    for (size_t off = 0; off < *n; off += 1u << 28) {
        size_t k = *n - off < (1u << 28) ? *n - off : (1u << 28);
        int64_t *buf = malloc(2 * k * sizeof *buf);
        rc = dist_agree(c, buf ? CCS_OK : CCS_ENOMEM);
        if (rc != CCS_OK) {
            free(buf);
            return rc;
        }
        for (size_t i = 0; dist_rank(c) == 0 && i < k; i++) {
            buf[2 * i] = (*r)[off + i].lo;
            buf[2 * i + 1] = (*r)[off + i].hi;
        }
        MPI_Bcast(buf, (int)(2 * k), MPI_INT64_T, 0, c->comm);
        for (size_t i = 0; i < k; i++) {
            (*r)[off + i].lo = buf[2 * i];
            (*r)[off + i].hi = buf[2 * i + 1];
        }
        free(buf);
    }
    return CCS_OK;
}

int dist_partition(const store_range *todo, size_t n, int w, int nw, store_range **out,
                   size_t *nout)
{
    int64_t left = 0;
    for (size_t i = 0; i < n; i++)
        left += todo[i].hi - todo[i].lo;
    /* the w-th of nw equal shares of what is left, in index order */
    int64_t from = (int64_t)((double)left * w / nw), to = (int64_t)((double)left * (w + 1) / nw);
    if (w == nw - 1)
        to = left;
    size_t k = 0;
    store_range *v = malloc(sizeof *v * (n ? n : 1));
    if (!v)
        return CCS_ENOMEM;
    int64_t pos = 0; /* scenarios of todo before todo[i] */
    for (size_t i = 0; i < n; pos += todo[i].hi - todo[i].lo, i++) {
        int64_t len = todo[i].hi - todo[i].lo;
        int64_t lo = todo[i].lo + (from > pos ? from - pos : 0);
        int64_t hi = todo[i].lo + (to - pos < len ? to - pos : len);
        if (lo < hi) {
            v[k].lo = lo;
            v[k++].hi = hi;
        }
    }
    *out = v;
    *nout = k;
    return CCS_OK;
}

void dist_sum_stats(const dist_comm *c, dist_stats *s)
{
    int64_t v[5] = {s->done, s->rows, s->ok, s->invalid, s->oom}, sum[5];
    MPI_Allreduce(v, sum, 5, MPI_INT64_T, MPI_SUM, c->comm);
    s->done = sum[0];
    s->rows = sum[1];
    s->ok = sum[2];
    s->invalid = sum[3];
    s->oom = sum[4];
    double secs = s->seconds;
    MPI_Allreduce(&secs, &s->seconds, 1, MPI_DOUBLE, MPI_MAX, c->comm);
    int sig = s->signal;
    MPI_Allreduce(&sig, &s->signal, 1, MPI_INT, MPI_MAX, c->comm);
}

int dist_keep_reduce(const ccs_grid *g, ccs_store *st, ccs_err *err)
{
    coord co = {.st = st, .g = g};
    co.kp = keep_new(g, 0);
    int rc = co.kp ? store_each_row(st, rebuild_one, &co, err) : CCS_ENOMEM;
    if (rc == CCS_ENOMEM)
        ccs_err_set(err, "out of memory for the keep: groups");
    for (size_t i = 0; rc == CCS_OK && i < co.n_dead; i++)
        rc = store_drop(st, co.dead_idx[i], co.dead_st[i], err);
    if (rc == CCS_OK)
        rc = store_commit(st, err);
    keep_free(co.kp);
    free(co.dead_idx);
    free(co.dead_st);
    return rc;
}

/* ---- search ---------------------------------------------------------------- */

int dist_search(dist_comm *c, const ccs_search *s, int k, search_hit *top, int *n, search_stats *st)
{
    int rank = dist_rank(c), size = dist_size(c);
    size_t bytes = (size_t)k * sizeof(search_hit);
    search_hit *local = malloc(bytes ? bytes : 1);
    search_hit *all = rank == 0 ? malloc(bytes * (size_t)size + 1) : NULL;
    int *counts = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    int rc = local && (rank != 0 || (all && counts)) ? CCS_OK : CCS_ENOMEM;
    if ((rc = dist_agree(c, rc)) != CCS_OK) {
        free(local);
        free(all);
        free(counts);
        *n = 0;
        return rc;
    }
    int nl = 0;
    search_stats ls = {0};
    memset(local, 0, bytes);
    search_range(s, rank, search_count(s), size, local, k, &nl, &ls);
    int64_t sums[5] = {ls.plans, ls.fit, ls.filtered, ls.kept, ls.undefined};
    int64_t tot[5] = {0}, first = ls.undefined ? ls.undefined_idx : INT64_MAX, low = INT64_MAX;
    MPI_Reduce(sums, tot, 5, MPI_INT64_T, MPI_SUM, 0, c->comm);
    MPI_Reduce(&first, &low, 1, MPI_INT64_T, MPI_MIN, 0, c->comm);
    MPI_Gather(&nl, 1, MPI_INT, counts, 1, MPI_INT, 0, c->comm);
    MPI_Gather(local, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, c->comm);
    *n = 0;
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            for (int i = 0; i < counts[r]; i++)
                search_insert(top, k, n, &all[(size_t)r * (size_t)k + (size_t)i]);
        if (tot[4] && (!st->undefined || low < st->undefined_idx))
            st->undefined_idx = low;
        st->plans += tot[0];
        st->fit += tot[1];
        st->filtered += tot[2];
        st->kept += tot[3];
        st->undefined += tot[4];
    }
    free(local);
    free(all);
    free(counts);
    return CCS_OK;
}
