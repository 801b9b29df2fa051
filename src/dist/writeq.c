/* writeq.c - a bounded ring of store calls and the thread that applies them.
 * One producer (the coordinator) and one consumer (the writer thread); the
 * consumer takes every queued call at once and applies them without the lock,
 * so the producer waits only when the ring is full. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "ccsweep/dist/writeq.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WQ_SLOTS 4096 /* about 1.5 MB of records, 4 MB with regions */
#define WQ_WAKE 256   /* rows queued before an idle writer is woken */

enum { WQ_PUT, WQ_OPEN, WQ_CHUNK, WQ_COMMIT };

typedef struct slot {
    int kind, has_rg;
    int64_t lo, hi;
    ccs_record rec;
    /* CCS_RG_N ccs_region_time follow when the queue carries regions */
} slot;

struct ccs_writeq {
    ccs_store *st;
    int detail; /* slots carry CCS_RG_N regions */
    size_t slot_size;
    unsigned char *ring;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    size_t head, count; /* next free slot; queued slots (tail = head - count) */
    int closing;
    int idle;    /* the writer waits for work */
    int rc;      /* first failed write, then nothing more is applied */
    ccs_err err; /* its message */
    double cpu;  /* the thread's CPU time, s */
};

static slot *slot_at(ccs_writeq *q, size_t i)
{
    return (slot *)(void *)(q->ring + (i % WQ_SLOTS) * q->slot_size);
}

static ccs_region_time *slot_rg(slot *s)
{
    return (ccs_region_time *)(void *)((unsigned char *)s + sizeof(slot));
}

static int apply(ccs_writeq *q, slot *s, ccs_err *err)
{
    switch (s->kind) {
    case WQ_PUT:
        return store_put(q->st, &s->rec, s->has_rg ? slot_rg(s) : NULL, err);
    case WQ_OPEN:
        return store_chunk_open(q->st, s->lo, s->hi, err);
    case WQ_CHUNK:
        return store_chunk_done(q->st, s->lo, s->hi, err);
    default:
        return store_commit(q->st, err);
    }
}

static void *writer_main(void *arg)
{
    ccs_writeq *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while ((q->count == 0 || q->idle) && !q->closing) {
            q->idle = 1;
            pthread_cond_wait(&q->not_empty, &q->mu);
        }
        q->idle = 0;
        size_t n = q->count, tail = q->head + WQ_SLOTS - q->count;
        if (n == 0)
            break; /* closing, and everything applied */
        int rc = q->rc;
        pthread_mutex_unlock(&q->mu);
        /* the producer writes only free slots: these n are ours until released */
        ccs_err e = {{0}};
        for (size_t i = 0; i < n && rc == CCS_OK; i++)
            rc = apply(q, slot_at(q, tail + i), &e);
        pthread_mutex_lock(&q->mu);
        if (rc != CCS_OK && q->rc == CCS_OK) {
            q->rc = rc;
            q->err = e;
        }
        q->count -= n;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->mu);
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        q->cpu = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return NULL;
}

static void free_queue(ccs_writeq *q)
{
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    free(q->ring);
    free(q);
}

ccs_writeq *writeq_open(ccs_store *st, int detail, ccs_err *err)
{
    ccs_writeq *q = calloc(1, sizeof *q);
    size_t sz = sizeof(slot) + (detail ? CCS_RG_N * sizeof(ccs_region_time) : 0);
    size_t al = alignof(slot);
    if (q) {
        q->st = st;
        q->detail = detail;
        q->slot_size = (sz + al - 1) / al * al;
        q->ring = malloc(WQ_SLOTS * q->slot_size);
    }
    if (!q || !q->ring) {
        free(q);
        ccs_err_set(err, "out of memory for the write queue");
        return NULL;
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    /* the thread inherits a full signal mask: SIGINT/SIGTERM/SIGUSR1 keep
     * reaching the main thread, whose loops poll the flag they set */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(&q->thread, NULL, writer_main, q);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        free_queue(q);
        ccs_err_set(err, "cannot start the writer thread: %s", strerror(r));
        return NULL;
    }
    return q;
}

/* Wait for a free slot; CCS_OK with the lock held (publish releases it), or
 * the first write's error, unlocked. */
static int reserve(ccs_writeq *q, ccs_err *err, slot **s)
{
    pthread_mutex_lock(&q->mu);
    while (q->count == WQ_SLOTS && q->rc == CCS_OK)
        pthread_cond_wait(&q->not_full, &q->mu);
    int rc = q->rc;
    if (rc != CCS_OK) {
        if (err)
            *err = q->err;
        pthread_mutex_unlock(&q->mu);
        return rc;
    }
    *s = slot_at(q, q->head);
    return CCS_OK;
}

/* Queue the reserved slot. An idle writer is woken for a chunk's end or a
 * commit, or once WQ_WAKE calls wait: not for every row, which would cost a
 * wake-up per row whenever the writer keeps up. */
static void publish(ccs_writeq *q, int urgent)
{
    q->head = (q->head + 1) % WQ_SLOTS;
    q->count++;
    if (q->idle && (urgent || q->count >= WQ_WAKE)) {
        q->idle = 0;
        pthread_cond_signal(&q->not_empty);
    }
    pthread_mutex_unlock(&q->mu);
}

int writeq_put(ccs_writeq *q, const ccs_record *rec, const ccs_region_time *rg, ccs_err *err)
{
    slot *s;
    int rc = reserve(q, err, &s);
    if (rc != CCS_OK)
        return rc;
    s->kind = WQ_PUT;
    s->rec = *rec;
    s->has_rg = rg && q->detail;
    if (s->has_rg)
        memcpy(slot_rg(s), rg, CCS_RG_N * sizeof *rg);
    publish(q, 0);
    return CCS_OK;
}

int writeq_chunk_open(ccs_writeq *q, int64_t lo, int64_t hi, ccs_err *err)
{
    slot *s;
    int rc = reserve(q, err, &s);
    if (rc != CCS_OK)
        return rc;
    s->kind = WQ_OPEN;
    s->lo = lo;
    s->hi = hi;
    publish(q, 0);
    return CCS_OK;
}

int writeq_chunk_done(ccs_writeq *q, int64_t lo, int64_t hi, ccs_err *err)
{
    slot *s;
    int rc = reserve(q, err, &s);
    if (rc != CCS_OK)
        return rc;
    s->kind = WQ_CHUNK;
    s->lo = lo;
    s->hi = hi;
    publish(q, 1);
    return CCS_OK;
}

int writeq_commit(ccs_writeq *q, ccs_err *err)
{
    slot *s;
    int rc = reserve(q, err, &s);
    if (rc != CCS_OK)
        return rc;
    s->kind = WQ_COMMIT;
    publish(q, 1);
    return CCS_OK;
}

int writeq_close(ccs_writeq *q, double *cpu, ccs_err *err)
{
    if (cpu)
        *cpu = 0;
    if (!q)
        return CCS_OK;
    pthread_mutex_lock(&q->mu);
    q->closing = 1;
    q->idle = 0;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    if (cpu)
        *cpu = q->cpu;
    int rc = q->rc;
    if (rc != CCS_OK && err)
        *err = q->err;
    free_queue(q);
    return rc;
}

size_t writeq_pending(ccs_writeq *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->count;
    pthread_mutex_unlock(&q->mu);
    return n;
}

int writeq_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    return CPU_COUNT(&set);
}
