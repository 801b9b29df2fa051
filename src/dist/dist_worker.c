/* dist_worker.c - the worker side of the sweep protocol (dist.c's top note):
 * ask for chunks one ahead, compute them, send their records (or best-K and
 * aggregates under keep:) in RECS_PER_MSG messages with two sends in flight,
 * and say goodbye when rank 0 answers stop or a signal arrives. */
#include "dist_int.h"
#include "ccsweep/sweep/keep.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Wait for a request without spinning: a worker that is ahead of the writer
 * (the usual case) must leave the core to rank 0, also when ranks share cores. */
static void wait_quietly(MPI_Request *r)
{
    int done = 0;
    MPI_Test(r, &done, MPI_STATUS_IGNORE);
    while (!done) {
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
    }
}

static void send_hdr(const dist_comm *dc, int flags, int64_t lo, int64_t hi)
{
    up_hdr h = {flags, 0, lo, hi};
    MPI_Send(&h, (int)sizeof h, MPI_BYTE, 0, TAG_UP, dc->comm);
}

/* A worker keeps one chunk request ahead of its work (the reply arrives
 * while it computes) and two record buffers, one filling while the other is
 * in flight. */
/* Send n records at buf[*cur] (header first) and switch buffers: the one
 * sent two messages ago must have gone. */
static void send_recs(const dist_comm *dc, unsigned char *buf[2], MPI_Request sent[2], int *cur,
                      int n, int flags, int64_t lo, int64_t hi, size_t bytes)
{
    up_hdr h = {flags, n, lo, hi};
    memcpy(buf[*cur], &h, sizeof h);
    MPI_Isend(buf[*cur], (int)(sizeof h + bytes), MPI_BYTE, 0, TAG_UP, dc->comm, &sent[*cur]);
    *cur ^= 1;
    wait_quietly(&sent[*cur]);
}

/* Send what the chunk's keep table holds; the last message carries flags. */
static void send_kept(const dist_comm *dc, ccs_keep *kp, unsigned char *buf[2], MPI_Request sent[2],
                      int *cur, int flags, int64_t lo, int64_t hi)
{
    int n = 0;
    size_t slots = keep_slots(kp);
    for (size_t i = 0; i < slots; i++) {
        const ccs_record *r = keep_at(kp, i);
        if (!r)
            continue;
        if (n == RECS_PER_MSG) {
            send_recs(dc, buf, sent, cur, n, UP_DATA, lo, hi, (size_t)n * sizeof *r);
            n = 0;
        }
        memcpy(buf[*cur] + sizeof(up_hdr) + (size_t)n * sizeof *r, r, sizeof *r);
        n++;
    }
    send_recs(dc, buf, sent, cur, n, flags, lo, hi, (size_t)n * sizeof(ccs_record));
    keep_clear(kp);
}

/* Send the chunk's aggregates, packed in messages of at most cap bytes
 * after the header. */
static void send_aggs(const dist_comm *dc, ccs_agg *ag, unsigned char *buf[2], MPI_Request sent[2],
                      int *cur, size_t cap, int64_t lo, int64_t hi)
{
    int n = 0;
    size_t at = 0, groups = agg_groups(ag), most = agg_pack_max(ag);
    for (size_t gi = 0; gi < groups; gi++) {
        if (at + most > cap) {
            send_recs(dc, buf, sent, cur, n, UP_AGG, lo, hi, at);
            n = 0;
            at = 0;
        }
        at += agg_pack(ag, gi, buf[*cur] + sizeof(up_hdr) + at);
        n++;
    }
    if (n)
        send_recs(dc, buf, sent, cur, n, UP_AGG, lo, hi, at);
    agg_clear(ag);
}

#define KEEP_GROUPS 4096 /* groups a worker reduces per chunk before it sends */

/* Chunks come from rank 0 one ahead: the next is asked for as soon as one
 * arrives, so its answer travels while this chunk computes. */
static void chunk_ask(const dist_comm *dc, int64_t next[2], MPI_Request *req)
{
    send_hdr(dc, UP_WANT, 0, 0);
    MPI_Irecv(next, 2, MPI_INT64_T, 0, TAG_DOWN, dc->comm, req);
}

/* The chunk asked for into job, and the next one asked for; 0 when rank 0
 * has no more work. */
static int chunk_take(const dist_comm *dc, int64_t next[2], MPI_Request *req, int64_t job[2])
{
    dist_test_chunk_delay();
    wait_quietly(req);
    if (next[0] < 0)
        return 0;
    job[0] = next[0];
    job[1] = next[1];
    chunk_ask(dc, next, req);
    return 1;
}

/* A worker's end: its sends completed, then its goodbye. When interrupted it
 * tells rank 0, which stops handing out work; the rows of the unfinished
 * chunk that were not sent are dropped (resume redoes the rest of the chunk). Rank 0
 * answers every request, so the prefetch completes. Otherwise the goodbye
 * follows all data: rank 0 may stop listening. */
static void worker_bye(const dist_comm *dc, MPI_Request sent[2], MPI_Request *next_req, int rc,
                       dist_stats *stats)
{
    wait_quietly(&sent[0]);
    wait_quietly(&sent[1]);
    if (rc == DIST_INTERRUPTED) {
        stats->signal = dist_signal();
        send_hdr(dc, UP_INTR | UP_BYE, dist_signal(), 0);
        wait_quietly(next_req);
    } else {
        send_hdr(dc, UP_BYE, 0, 0);
    }
}

/* Under keep: each chunk reduced to its best rows per group (and counted
 * in its aggregates), then sent: aggregates first, the records with UP_DONE
 * last. A table that fills is sent early, within the chunk. */
static int work_kept(const dist_comm *dc, const ccs_grid *g, dist_stats *stats)
{
    size_t cap = RECS_PER_MSG * sizeof(ccs_record), maxmsg = sizeof(up_hdr) + cap;
    unsigned char *buf[2] = {malloc(maxmsg), malloc(maxmsg)};
    MPI_Request sent[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, next_req;
    ccs_keep *kp = keep_new(g, KEEP_GROUPS);
    ccs_agg *ag = agg_new(g, KEEP_GROUPS);
    int64_t job[2], next[2];
    int cur = 0, rc = CCS_OK;
    if (!buf[0] || !buf[1] || !kp || (spec_keep_rule(grid_spec(g))->n_agg && !ag) ||
        (ag && agg_pack_max(ag) > cap))
        dist_abort(dc, 2);
    chunk_ask(dc, next, &next_req);
    while (chunk_take(dc, next, &next_req, job)) {
        for (int64_t i = job[0]; i < job[1] && rc == CCS_OK; i++) {
            ccs_record rec;
            int disp, kept = grid_eval(g, i, &rec, NULL);
            if (kept < 0) {
                /* rank 0 reports it and ends the job; buffers may be in flight */
                send_hdr(dc, UP_EFILTER, i, 0);
                return CCS_EINPUT;
            }
            if (kept && keep_offer(kp, &rec, &disp, NULL, NULL) == KEEP_FULL) {
                send_kept(dc, kp, buf, sent, &cur, UP_DATA, job[0], job[1]);
                keep_offer(kp, &rec, &disp, NULL, NULL);
            }
            if (kept && ag && agg_offer(ag, &rec) == KEEP_FULL) {
                send_aggs(dc, ag, buf, sent, &cur, cap, job[0], job[1]);
                agg_offer(ag, &rec);
            }
            stats->done++;
            if ((i & 1023) == 0 && dist_signal())
                rc = DIST_INTERRUPTED;
        }
        if (rc != CCS_OK)
            break;
        if (ag)
            send_aggs(dc, ag, buf, sent, &cur, cap, job[0], job[1]);
        send_kept(dc, kp, buf, sent, &cur, UP_DATA | UP_DONE, job[0], job[1]);
    }
    worker_bye(dc, sent, &next_req, rc, stats);
    keep_free(kp);
    agg_free(ag);
    free(buf[0]);
    free(buf[1]);
    return rc;
}

/* A worker's sweep: chunks from rank 0 until it answers stop, each computed
 * into RECS_PER_MSG-record messages (regions appended under --detail), the
 * chunk's last one flagged UP_DONE. Returns CCS_OK, DIST_INTERRUPTED or
 * CCS_EINPUT (the where-filter undefined; rank 0 was told). */
int dist_work(const dist_comm *dc, const ccs_grid *g, const dist_opts *o, size_t rec_size,
              dist_stats *stats)
{
    if (spec_keep_rule(grid_spec(g)))
        return work_kept(dc, g, stats);
    size_t maxmsg = sizeof(up_hdr) + RECS_PER_MSG * rec_size;
    unsigned char *buf[2] = {malloc(maxmsg), malloc(maxmsg)};
    MPI_Request sent[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, next_req;
    int64_t job[2], next[2];
    int cur = 0, n = 0, rc = CCS_OK;
    if (!buf[0] || !buf[1])
        dist_abort(dc, 2);
    chunk_ask(dc, next, &next_req);
    while (chunk_take(dc, next, &next_req, job)) {
        for (int64_t i = job[0]; i < job[1] && rc == CCS_OK; i++) {
            unsigned char *p = buf[cur] + sizeof(up_hdr) + (size_t)n * rec_size;
            ccs_region_time *rg =
                o->detail ? (ccs_region_time *)(void *)(p + sizeof(ccs_record)) : NULL;
            int k = grid_eval(g, i, (ccs_record *)(void *)p, rg);
            if (k < 0) {
                /* rank 0 reports it and ends the job; buffers may be in flight */
                send_hdr(dc, UP_EFILTER, i, 0);
                return CCS_EINPUT;
            }
            n += k;
            stats->done++;
            if ((i & 1023) == 0 && dist_signal())
                rc = DIST_INTERRUPTED;
            int last = i + 1 == job[1];
            if (n == RECS_PER_MSG || last) {
                up_hdr h = {last ? UP_DATA | UP_DONE : UP_DATA, n, job[0], job[1]};
                memcpy(buf[cur], &h, sizeof h);
                MPI_Isend(buf[cur], (int)(sizeof h + (size_t)n * rec_size), MPI_BYTE, 0, TAG_UP,
                          dc->comm, &sent[cur]);
                cur ^= 1;
                n = 0;
                wait_quietly(&sent[cur]); /* the buffer sent two batches ago */
            }
        }
        if (rc != CCS_OK)
            break;
    }
    worker_bye(dc, sent, &next_req, rc, stats);
    free(buf[0]);
    free(buf[1]);
    return rc;
}
