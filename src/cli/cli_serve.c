/* cli_serve.c - 'ccsweep serve': the serving projection of one model on one
 * hardware generation under one serving plan (cost/serve.h), in phases: parse
 * the options (one table), resolve the names, project, print text or JSON. */
#include "ccsweep/cli/cli.h"
#include "ccsweep/cost/serve.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct serve_args {
    const char *model, *hw, *evolution;
    cli_catalogs catalogs;
    long gen;
    int json, max_tp, no_chunked, requests;
    double qps;
    ccs_serve_plan p;
} serve_args;

/* clang-format off */
#define A serve_args
static const cli_opt serve_opts[] = {
    CLI_O_STR("model", "NAME", A, model, "catalog model (see 'ccsweep list models')"),
    CLI_O_STR("hw", "NAME", A, hw, "catalog hardware (see 'ccsweep list hardware')"),
    CLI_O_INT("gen", "G", A, gen, 0, CCS_MAX_GEN,
              "hardware generation, base scaled by the evolution rule^G (0)"),
    CLI_O_STR("evolution", "RULE", A, evolution, "scaling rule for --gen (memory-wall)"),
    CLI_O_INT("devices", "N", A, p.devices, 1, CCS_MAX_DEVICES,
              "total devices: N / (tp * pp) replicas (tp * pp)"),
    CLI_O_INT("tp", "T", A, p.tp, 1, CCS_MAX_DEVICES, "tensor parallel degree of a replica (1)"),
    CLI_O_INT("pp", "P", A, p.pp, 1, CCS_MAX_DEVICES, "pipeline stages (1)"),
    CLI_O_INT("ep", "E", A, p.ep, 1, CCS_MAX_DEVICES,
              "expert parallelism inside the tp group (mixture of experts) (1)"),
    CLI_O_FLAG("attn-dp", A, p.attn_dp,
               "attention data parallel over the tp ranks, experts over\n"
               "ep = tp (DeepSeek's DEP)"),
    CLI_O_INT("isl", "IN", A, p.isl, 1, CCS_MAX_SEQ, "input (prompt) tokens per request"),
    CLI_O_INT("osl", "OUT", A, p.osl, 1, CCS_MAX_SEQ, "output tokens per request"),
    CLI_O_INT("concurrency", "C", A, p.concurrency, 1, 1 << 30,
              "requests in flight per replica (default: the maximum)"),
    {.name = "max-throughput", .kind = CLI_FLAG, CLI_AT(A, max_tp), .value = 1,
     .help = "the offline point: as many requests as fit (the default)"},
    CLI_O_REAL("qps", "R", A, qps, 1e9,
               "requests per second offered per replica: concurrency from\n"
               "Little's law; a rate past what the replica serves is\n"
               "reported as saturating it, with the rate it serves"),
    CLI_O_INT("requests", "N", A, requests, 1, 10000000,
              "a finite run of N requests (a benchmark client), all at once\n"
              "or arriving at --qps R, simulated iteration by iteration:\n"
              "TTFT, TPOT and tokens/s are the run's (at most 4,000,000\n"
              "engine iterations: a longer run exits 1)"),
    CLI_O_SERVE_FORMATS(A, p, no_chunked),
    CLI_O_INT("max-num-tokens", "N", A, p.max_num_tokens, 1, 1 << 24,
              "tokens per engine iteration (trtllm-bench's heuristic)"),
    CLI_O_REAL("kv-fraction", "X", A, p.kv_fraction, 1,
               "share of free memory for the KV cache (0.9)"),
    CLI_O_CATALOG(A, catalogs, "catalog overlay (directory or YAML file); repeatable"),
    CLI_O_FLAG("json", A, json, "one JSON object with every output, SI units"),
    CLI_O_HELP,
};
#undef A
/* clang-format on */

static void serve_notes(FILE *f)
{
    fprintf(f, "\nNot modelled: speculative decoding, prefix caching, disaggregated prefill and\n"
               "decode, preemption, spread of request lengths, the host scheduler's time.\n");
}

static const cli_cmd serve_cmd = {
    .name = "serve",
    .synopsis = "ccsweep serve --model M --hw H [--devices N] --tp T [--pp P] [--ep E]\n"
                "                     --isl IN --osl OUT [--concurrency C | --max-throughput |\n"
                "                     --qps R] [--requests N] [--weight-dtype T] [--kv-dtype T]\n"
                "                     [--json]",
    .about = "Projects serving: prefill and decode steps (FLOPs, weight / KV-cache / activation\n"
             "bytes, TP all-reduce, EP all-to-all), KV-cache capacity, TTFT, TPOT and output\n"
             "tokens/s per GPU under continuous batching, and the compute / memory /\n"
             "communication split of a decode step.",
    .opts = serve_opts,
    .n_opts = sizeof serve_opts / sizeof serve_opts[0],
    .col = 22,
    .notes = serve_notes,
};

json_t *cli_serve_json(const char *model, const ccs_hw *hw, long gen, const ccs_serve_plan *p,
                       const ccs_serve_result *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    static const char *const st[] = {"ok", "invalid", "oom"};
    json_object_set_new(o, "model", json_string(model));
    json_object_set_new(o, "hardware", json_string(hw->name));
    json_object_set_new(o, "generation", json_integer(gen));
    json_object_set_new(o, "status", json_string(st[r->status]));
    json_object_set_new(o, "reason", json_string(plan_reason_name(r->reason)));
    const struct {
        const char *k;
        double v;
    } f[] = {{"devices", p->devices},
             {"tp", p->tp},
             {"pp", p->pp},
             {"ep", p->ep},
             {"replicas", p->dp},
             {"attn_dp", p->attn_dp},
             {"isl", p->isl},
             {"osl", p->osl},
             {"chunked_prefill", p->chunked},
             {"concurrency", r->concurrency},
             {"max_concurrency", r->max_concurrency},
             {"max_num_tokens", r->max_num_tokens},
             {"mem_weights", r->mem_weights},
             {"mem_activations", r->mem_activations},
             {"mem_kv", r->mem_kv},
             {"kv_bytes_token", r->kv_bytes_token},
             {"kv_tokens", r->kv_tokens},
             {"t_prefill", r->t_prefill},
             {"ttft", r->ttft},
             {"tpot", r->tpot},
             {"tok_s_gpu", r->tok_s_gpu},
             {"tok_s_system", r->tok_s_system},
             {"tok_s_gpu_limit_mem", r->tok_s_gpu_limit_mem},
             {"tok_s_gpu_limit_compute", r->tok_s_gpu_limit_compute},
             {"share_compute", r->share_compute},
             {"share_memory", r->share_memory},
             {"share_comm", r->share_comm},
             {"comm_exposed_share", r->comm_exposed_share},
             {"step_decode_tokens", r->step.decode},
             {"step_prefill_tokens", r->step.prefill},
             {"step_t", r->step.t},
             {"step_flops", r->step.flops},
             {"step_bytes", r->step.bytes},
             {"step_bytes_weights", r->step.bytes_weights},
             {"step_bytes_kv_read", r->step.bytes_kv_read},
             {"step_bytes_kv_write", r->step.bytes_kv_write},
             {"step_comm_bytes", r->step.comm_bytes}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        json_object_set_new(o, f[i].k, json_real(isfinite(f[i].v) ? f[i].v : 0));
    json_object_set_new(o, "weight_dtype", json_string(serve_dtype_name(p->wdtype)));
    json_object_set_new(o, "kv_dtype", json_string(serve_dtype_name(p->kvdtype)));
    return o;
}

/* Requests per second one replica serves: its output rate over osl. */
static double served_qps(const ccs_serve_plan *p, const ccs_serve_result *r)
{
    return r->tok_s_gpu * p->tp * p->pp / p->osl;
}

static void print_text(const serve_args *a, const ccs_hw *hw, const ccs_serve_plan *p,
                       const ccs_serve_result *r, int saturated)
{
    printf("%s on %s (gen %ld): tp %d, pp %d, ep %d%s, %d replica(s), %s weights, %s KV\n",
           a->model, hw->name, a->gen, p->tp, p->pp, p->ep, p->attn_dp ? ", attention DP" : "",
           p->dp, serve_dtype_name(p->wdtype), serve_dtype_name(p->kvdtype));
    printf("  memory per device: weights %.2f GB, activations %.2f GB, KV cache %.2f GB\n",
           r->mem_weights / 1e9, r->mem_activations / 1e9, r->mem_kv / 1e9);
    printf("  KV cache: %.0f B/token/device, %.0f tokens, %d requests of %d + %d fit\n",
           r->kv_bytes_token, r->kv_tokens, r->max_concurrency, p->isl, p->osl);
    printf("  concurrency %d per replica (max_num_tokens %d, chunked prefill %s)\n", r->concurrency,
           r->max_num_tokens, p->chunked ? "on" : "off");
    if (a->requests > 0)
        printf("  a run of %d requests per replica (%s), simulated iteration by iteration: TTFT, "
               "TPOT and tokens/s are the run's means\n",
               a->requests, a->qps > 0 ? "arriving at --qps" : "all at once");
    if (saturated && a->qps > 0) {
        double served = served_qps(p, r);
        printf("  the rate saturates the replica: %.4g requests/s offered per replica, %.4g "
               "served (the offer is %.3g times that)%s\n",
               a->qps, served, a->qps / served,
               a->requests > 0 ? "; requests waited for a slot"
                               : "; the queue grows without end, TTFT and TPOT are those of "
                                 "the requests in the full batch");
    }
    printf("  TTFT %.2f ms (prompt alone %.2f ms), TPOT %.3f ms\n", r->ttft * 1e3,
           r->t_prefill * 1e3, r->tpot * 1e3);
    printf("  output tokens/s: %.1f per GPU, %.1f system (limits per GPU: memory %.1f, "
           "compute %.1f)\n",
           r->tok_s_gpu, r->tok_s_system, r->tok_s_gpu_limit_mem, r->tok_s_gpu_limit_compute);
    printf("  decode step %.3f ms (%.0f decode + %.0f prefill tokens): compute-bound %.1f%%, "
           "memory-bound %.1f%%, communication %.1f%% (all exposed)\n",
           r->step.t * 1e3, r->step.decode, r->step.prefill, 100 * r->share_compute,
           100 * r->share_memory, 100 * r->share_comm);
}

int cli_serve_resolve(const char *cmd, const cli_catalogs *overlays, const char *model,
                      const char *hwname, const char *evolution, long gen, ccs_catalog **cat,
                      const ccs_model **m, ccs_hw *hw)
{
    if (!(*cat = cli_catalog(cmd, overlays)))
        return 1;
    int rc = 0;
    const ccs_hw *base = catalog_hw(*cat, hwname);
    const ccs_evolution *ev = catalog_evolution(*cat, evolution);
    if (!(*m = catalog_model(*cat, model)))
        rc = cli_unknown(cmd, *cat, CLI_ENTRY_MODEL, model);
    else if (!base)
        rc = cli_unknown(cmd, *cat, CLI_ENTRY_HW, hwname);
    else if (!ev && gen > 0)
        rc = cli_unknown(cmd, *cat, CLI_ENTRY_EVOLUTION, evolution);
    if (rc) {
        catalog_free(*cat);
        *cat = NULL;
        return rc;
    }
    hw_evolve(base, ev, (int)gen, hw);
    return 0;
}

int cli_serve(int argc, char **argv)
{
    serve_args a;
    memset(&a, 0, sizeof a);
    a.evolution = "memory-wall";
    serve_plan_defaults(&a.p);
    int first, rc = cli_opt_parse(&serve_cmd, argc, argv, &a, stderr, &first);
    if (rc != CLI_OK)
        return rc == CLI_DONE ? 0 : 1;
    if (first < argc)
        return cli_fail("serve", "unexpected argument '%s'", argv[first]);
    if (!a.model || !a.hw)
        return cli_fail("serve", "--model NAME and --hw NAME are required");
    if (!a.p.isl || !a.p.osl)
        return cli_fail("serve", "--isl IN and --osl OUT are required");
    if ((a.p.concurrency > 0) + a.max_tp + (a.qps > 0) > 1)
        return cli_fail("serve", "give one of --concurrency, --max-throughput and --qps");
    if (a.requests > 0 && a.p.concurrency > 0)
        return cli_fail("serve", "--requests is a run at a rate (--qps R) or all at once, not at "
                                 "a fixed --concurrency");
    a.p.chunked = (int8_t)!a.no_chunked;
    ccs_catalog *cat;
    const ccs_model *m;
    ccs_hw hw;
    rc = cli_serve_resolve("serve", &a.catalogs, a.model, a.hw, a.evolution, a.gen, &cat, &m, &hw);
    if (rc)
        return rc;
    ccs_serve_plan p = a.p;
    int reason = serve_plan_check(m, &hw, &p);
    if (reason != CCS_R_OK) {
        catalog_free(cat);
        return cli_fail("serve", "plan is invalid: %s", plan_reason_text(reason));
    }
    ccs_cost c;
    serve_cost_init(&c, &hw, &p);
    ccs_serve_result r;
    int saturated = 0;
    if (a.qps > 0 || a.requests > 0) {
        saturated = serve_at_rate(m, &p, &c, a.qps, a.requests, &r);
        if (saturated < 0) {
            catalog_free(cat);
            if (saturated == CCS_ENOMEM) {
                cli_fail("serve", "out of memory simulating the run");
                return 2;
            }
            return cli_fail("serve",
                            "--requests %d: %d requests of %d + %d tokens, at most %d in "
                            "flight per replica, take more than %d engine iterations, the most "
                            "a simulated run may; give fewer or shorter requests, or leave "
                            "--requests out for the steady state",
                            a.requests, a.requests, p.isl, p.osl, r.concurrency,
                            CCS_SERVE_RUN_MAX_ITER);
        }
    } else
        serve_project(m, &p, &c, &r);
    if (a.json) {
        json_t *o = cli_serve_json(a.model, &hw, a.gen, &p, &r);
        if (o) {
            json_object_set_new(o, "requests", json_integer(a.requests));
            json_object_set_new(o, "iterations", json_integer(r.iterations));
            json_object_set_new(o, "qps", json_real(a.qps));
            json_object_set_new(o, "served_qps",
                                json_real(r.status == CCS_ST_OK ? served_qps(&p, &r) : 0));
            json_object_set_new(o, "saturated", json_boolean(saturated));
        }
        rc = o && json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) == 0 ? 0 : 2;
        json_decref(o);
        if (!rc)
            putchar('\n');
    } else if (r.status != CCS_ST_OK)
        printf("%s on %s: does not fit (%s): weights %.2f GB + activations %.2f GB of %.2f GB, "
               "%d requests fit\n",
               a.model, hw.name, plan_reason_name(r.reason), r.mem_weights / 1e9,
               r.mem_activations / 1e9, hw.mem_cap / 1e9, r.max_concurrency);
    else
        print_text(&a, &hw, &p, &r, saturated);
    catalog_free(cat);
    return rc;
}
