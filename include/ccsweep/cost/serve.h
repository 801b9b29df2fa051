/* serve.h - serving (inference) projection: prefill and decode phases of a
 * model on one hardware generation under a serving plan (tp, pp, ep, replicas,
 * attention data parallelism), the KV cache and how many requests fit, and
 * in-flight (continuous) batching at the steady state of a given concurrency
 * or at the offline maximum-throughput point. Every formula and engine figure
 * is in serve.c with its source. Pure; allocates nothing. */
#ifndef CCSWEEP_SERVE_H
#define CCSWEEP_SERVE_H

#include "ccsweep/cost/opcost.h"

/* Storage formats of weights and KV cache. */
typedef enum ccs_sdtype { CCS_S_BF16 = 0, CCS_S_FP16, CCS_S_FP8, CCS_S_FP4, CCS_S_N } ccs_sdtype;

/* Bytes per stored element (fp4 with its block scales), the name, and the
 * parse of a name (-1 when unknown). */
double serve_dtype_bytes(int s);
const char *serve_dtype_name(int s);
int serve_dtype_parse(const char *s);

typedef struct ccs_serve_plan {
    int32_t devices;        /* tp * pp * dp */
    int32_t tp;             /* tensor-parallel degree of one model replica */
    int32_t pp;             /* pipeline stages */
    int32_t ep;             /* expert-parallel degree inside the tp group (MoE; 1 = experts
                               split tp ways like dense weights) */
    int32_t dp;             /* independent replicas (0: derived from devices) */
    int32_t isl, osl;       /* input and output tokens per request */
    int32_t concurrency;    /* requests in flight per replica; 0 = the memory-bound maximum
                               (the offline point: all requests queued) */
    int32_t max_num_tokens; /* tokens one engine iteration takes; 0 = the engine heuristic */
    int8_t wdtype, kvdtype; /* ccs_sdtype of the weights and of the KV cache */
    int8_t chunked;         /* 1: prefill chunks ride in the decode steps (in-flight batching
                               with chunked prefill); 0: prefill-only iterations stall decode */
    int8_t attn_dp;         /* 1: attention data parallel over the tp ranks, experts over ep
                               (DeepSeek's DEP); needs a mixture of experts and ep == tp */
    double kv_fraction;     /* share of the memory left after weights and activations that
                               the engine gives the KV cache; 0 = CCS_SERVE_KV_FRACTION */
} ccs_serve_plan;

/* One engine iteration of a replica: decode tokens and prefill tokens through
 * every layer (times per device, the slowest stage times pp for pp > 1). */
typedef struct ccs_serve_step {
    double decode, prefill; /* tokens of each kind in the iteration */
    double t;               /* s, the iteration */
    double t_compute;       /* s, in operators bound by arithmetic */
    double t_memory;        /* s, in operators bound by device memory */
    double t_comm;          /* s, collectives (TP all-reduce, EP all-to-all, PP p2p),
                               all on the critical path: none is overlapped */
    double t_overhead;      /* s, fixed kernel costs (already inside the three above) */
    double flops;           /* per device */
    double bytes;           /* device-memory bytes per device (all kinds below) */
    double bytes_weights;   /* weights read */
    double bytes_kv_read;   /* KV cache read by attention */
    double bytes_kv_write;  /* KV cache written for the iteration's tokens */
    double comm_bytes;      /* collective buffer bytes per device */
    double t_hbm_floor;     /* s, bytes / peak memory bandwidth */
    double t_flops_floor;   /* s, flops / peak matrix throughput */
    int32_t stages;         /* pipeline stages costed, the work: serve_stage_reps's, at
                               most CCS_SERVE_STAGE_REPS whatever pp */
} ccs_serve_step;

typedef struct ccs_serve_result {
    int32_t status;                 /* CCS_ST_OK, CCS_ST_INVALID, CCS_ST_OOM (timeline.h values) */
    int32_t reason;                 /* ccs_reason */
    int32_t concurrency;            /* requests in flight per replica, as projected */
    int32_t max_concurrency;        /* the most that fit the KV cache per replica (and the engine's
                                       batch limit) */
    int32_t max_num_tokens;         /* tokens per iteration */
    double mem_weights;             /* bytes per device */
    double mem_activations;         /* bytes per device, the engine's activation workspace */
    double mem_kv;                  /* bytes per device given to the KV cache */
    double kv_bytes_token;          /* KV bytes per token of context per device (all its layers) */
    double kv_tokens;               /* tokens of context the replica's KV cache holds */
    double t_prefill;               /* s, one request's prompt alone (an idle engine) */
    double ttft;                    /* s, time to first token at the concurrency */
    double tpot;                    /* s, time per output token (mean inter-token latency) */
    double tok_s_gpu;               /* output tokens/s per device at the concurrency */
    double tok_s_system;            /* output tokens/s of all devices */
    double tok_s_gpu_limit_mem;     /* the same if every step ran at the HBM floor */
    double tok_s_gpu_limit_compute; /* the same if every step ran at the FLOP floor */
    double share_compute, share_memory, share_comm; /* of the decode step's time */
    double comm_exposed_share;                      /* exposed communication / step */
    ccs_serve_step step;                            /* the steady-state iteration */
    int64_t iterations; /* engine iterations a finite run simulated (serve_at_rate), else 0 */
} ccs_serve_result;

/* The most engine iterations serve_at_rate simulates of a finite run. */
#define CCS_SERVE_RUN_MAX_ITER 4000000

/* Share of free memory (after weights and activations) the engine gives the
 * KV cache by default (see serve.c). */
#define CCS_SERVE_KV_FRACTION 0.9

/* Defaults: tp = pp = ep = 1, dp derived, bf16 weights and KV, chunked
 * prefill on, no attention data parallelism. Sizes left 0 for the caller. */
void serve_plan_defaults(ccs_serve_plan *p);

/* Derive dp (devices / (tp * pp)) or devices, and check the plan's structure
 * for model m on hw: CCS_R_OK or the first failing ccs_reason. */
int serve_plan_check(const ccs_model *m, const ccs_hw *hw, ccs_serve_plan *p);

/* A cost context for plan p on hw (already at its generation): the
 * synthetic operator curves, the straggler derate of the replica's tp x pp
 * devices. */
void serve_cost_init(ccs_cost *c, const ccs_hw *hw, const ccs_serve_plan *p);

/* Project plan p (checked by serve_plan_check) of model m; c is the cost
 * context of the hardware generation (cost_init with a NULL plan). out is
 * overwritten whole; status says ok, invalid (reason) or oom (weights and
 * activations exceed memory, or the concurrency exceeds the KV cache). */
void serve_project(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c,
                   ccs_serve_result *out);

/* One engine iteration of decode tokens for `decode` requests at mean
 * context ctx and `prefill` prompt tokens of prompts of length isl (0: none),
 * per replica. Used by serve_project; exposed for tests and invariants. */
void serve_step(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c, double decode,
                double ctx, double prefill, ccs_serve_step *out);

/* The stages of a pp-stage replica of m that stand for all of them, in
 * increasing order, into rep; returns how many (1 to CCS_SERVE_STAGE_REPS).
 * Stage st holds blocks st L .. (st + 1) L - 1 (L = layers / pp), of them
 * d(st) = min(max(D - st L, 0), L) of the model's first D dense blocks; what a
 * stage costs and holds depends on d(st), on st = 0 (the embedding) and on
 * st = pp - 1 (the head) alone. d(st) is L below k = D / L, D - k L at k and 0
 * beyond, so every stage has the three of one of 0, 1, k, k + 1 and pp - 1 no
 * later than itself: the first of the slowest stages is one of them.
 * Needs 1 <= pp <= layers. */
#define CCS_SERVE_STAGE_REPS 5
int serve_stage_reps(const ccs_model *m, int32_t pp, int32_t rep[CCS_SERVE_STAGE_REPS]);

/* The online point at a request rate. n_requests > 0 is a finite run of that
 * many requests (a benchmark client; qps <= 0: all at once), simulated engine
 * iteration by iteration (serve.c, finite_run): the output rate (requests x
 * osl over the run), the mean TTFT and the mean inter-token latency are the
 * run's, its ramp and tail included; the step figures are the steady state at
 * the most requests it holds in flight. n_requests = 0 is an endless stream:
 * the concurrency that Little's law gives at the steady state (C = qps x osl
 * x TPOT(C): output tokens/s = qps x osl, concurrency the mean rounded up),
 * or the steady state of the full replica when the rate exceeds what it
 * serves (qps <= 0: at once). qps is per replica. Returns 1 when the rate
 * saturates the replica (its output rate is then below qps x osl), else 0;
 * CCS_EINPUT when the finite run would take more than CCS_SERVE_RUN_MAX_ITER
 * iterations (out->iterations the ones simulated, 0 where a bound shows it
 * unstarted; TTFT, TPOT and tokens/s 0), CCS_ENOMEM when memory ran out. */
int serve_at_rate(const ccs_model *m, const ccs_serve_plan *p, const ccs_cost *c, double qps,
                  int32_t n_requests, ccs_serve_result *out);

#endif
