/* cli_compare_runs.c - 'ccsweep compare --db A.db --db B.db': stored runs side
 * by side. Each run's best plans (the best_plan view: one per group, model x
 * hardware x generation x devices x gbs x seq x stack) are lined up by group,
 * with t_iter, MFU, exposed communication and the plan of each, and the
 * speed-up over the first run that has the group; groups that only one run
 * holds are counted and listed apart.
 *
 * Fairness: a best plan answers one job on one machine, so plans compare only
 * at equal work. Groups pair only when model, devices, global batch and
 * sequence are equal, always; hardware, generation and stack must be equal
 * too unless --across names them (then the comparison is of the machines or
 * stacks, at equal work). The model is its name and its definition as the
 * run stored it (models: the parameter count and the architecture fields):
 * two runs' models of one name but another shape do not pair, and the output
 * says so. Reads through store_query.h only (read-only). */
#include "ccsweep/cli/cli.h"
#include "ccsweep/store/store_query.h"
#include "ccsweep/util/buf.h"

#include <assert.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The model's definition as a run stored it (models), in pairing order: the
 * exact parameter count, then the architecture; NULL (a field older versions
 * did not record) reads 0. */
static const char *const def_sql[] = {"CAST(m.params AS INTEGER)",
                                      "m.layers",
                                      "m.hidden",
                                      "m.heads",
                                      "m.kv_heads",
                                      "m.ffn",
                                      "m.vocab",
                                      "m.gated",
                                      "m.bias",
                                      "m.tied",
                                      "m.experts",
                                      "m.top_k",
                                      "m.shared_experts",
                                      "m.moe_ffn"};
#define CMP_DEF_N ((int)(sizeof def_sql / sizeof def_sql[0]))

/* One best_plan row of a run: a group and its best plan. */
typedef struct cmp_best {
    char model[CCS_NAME_MAX], hw[CCS_NAME_MAX], stack[CCS_NAME_MAX];
    int64_t def[CMP_DEF_N]; /* def_sql's values; def[0] the parameter count */
    char dtype[16], recompute[16];
    int64_t gen, devices, gbs, seq;
    int64_t tp, cp, pp, dp, ep, vpp, mbs, sp, zero, flash_attn, dp_overlap;
    double t_iter;       /* s */
    double tokens_per_s; /* tokens/s */
    double mfu, comm_fraction;
    double mem_total; /* bytes per device */
} cmp_best;

/* One stored run, resolved, with its best plans sorted by the pairing key. */
typedef struct cmp_run {
    const char *db; /* as given (borrowed from argv) */
    int64_t run;
    char name[128], status[16], started[32];
    char label[96]; /* "[i] BASENAME run N" */
    cmp_best *best;
    size_t n, cap;
    int oom;
} cmp_run;

static void copy_text(char *dst, size_t n, const storeq_row *row, int i)
{
    const char *s = storeq_text(row, i);
    ccs_strlcpy(dst, s ? s : "", n);
}

/* ---- reading a run ---------------------------------------------------------------- */

/* The runs row: a training run (workload NULL) or the refusal. */
typedef struct run_row {
    int found;
    int64_t id;
    char name[128], status[16], started[32], workload[16];
} run_row;

static int on_run_row(void *ctx, const storeq_row *row)
{
    run_row *r = ctx;
    r->found = 1;
    r->id = storeq_int(row, 0);
    copy_text(r->name, sizeof r->name, row, 1);
    copy_text(r->status, sizeof r->status, row, 2);
    copy_text(r->started, sizeof r->started, row, 3);
    copy_text(r->workload, sizeof r->workload, row, 4);
    return 0;
}

static int on_ids(void *ctx, const storeq_row *row)
{
    copy_text(ctx, 256, row, 0);
    return 0;
}

/* The columns read from best_plan (b), in on_best's order; def_sql's follow
 * as d0, d1, ... */
#define BEST_COLS                                                                                  \
    "b.model AS model, b.hardware AS hardware, b.stack AS stack, b.dtype, b.recompute, "           \
    "b.generation AS generation, b.devices AS devices, b.gbs AS gbs, b.seq AS seq, b.tp, b.cp, "   \
    "b.pp, b.dp, b.ep, b.vpp, b.mbs, b.sp, b.zero, b.flash_attn, b.dp_overlap, b.t_iter, "         \
    "b.tokens_per_s, b.mfu, b.comm_fraction, b.mem_total"
#define BEST_NCOLS 25

static int on_best(void *ctx, const storeq_row *row)
{
    cmp_run *r = ctx;
    if (ccs_grow((void **)&r->best, &r->cap, r->n + 1, sizeof *r->best)) {
        r->oom = 1;
        return 1;
    }
    cmp_best *b = &r->best[r->n++];
    memset(b, 0, sizeof *b);
    copy_text(b->model, sizeof b->model, row, 0);
    copy_text(b->hw, sizeof b->hw, row, 1);
    copy_text(b->stack, sizeof b->stack, row, 2);
    copy_text(b->dtype, sizeof b->dtype, row, 3);
    copy_text(b->recompute, sizeof b->recompute, row, 4);
    int64_t *iv[] = {&b->gen, &b->devices, &b->gbs, &b->seq, &b->tp, &b->cp,   &b->pp,
                     &b->dp,  &b->ep,      &b->vpp, &b->mbs, &b->sp, &b->zero, &b->flash_attn};
    for (int i = 0; i < 14; i++)
        *iv[i] = storeq_int(row, 5 + i);
    /* dp_overlap: its word in schema 12's results (best_plan's source), its
     * code in the views of older files */
    char dpo[32];
    copy_text(dpo, sizeof dpo, row, 19);
    int mode = dp_overlap_parse(dpo);
    b->dp_overlap = mode >= 0 ? mode : storeq_int(row, 19);
    b->t_iter = storeq_double(row, 20);
    b->tokens_per_s = storeq_double(row, 21);
    b->mfu = storeq_double(row, 22);
    b->comm_fraction = storeq_double(row, 23);
    b->mem_total = storeq_double(row, 24);
    for (int i = 0; i < CMP_DEF_N; i++)
        b->def[i] = storeq_int(row, BEST_NCOLS + i);
    return 0;
}

/* The ORDER BY of the pairing key: equal work first, then the dimensions that
 * must be equal (those --across does not name). */
static void key_order(unsigned across, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "model");
    for (int i = 0; i < CMP_DEF_N && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, ", d%d", i);
    if (len < n)
        snprintf(buf + len, n - len, ", devices, gbs, seq%s%s%s",
                 across & CLI_ACROSS_HW ? "" : ", hardware",
                 across & CLI_ACROSS_GEN ? "" : ", generation",
                 across & CLI_ACROSS_STACK ? "" : ", stack");
}

/* Resolve run r (its given id, or the latest training run) in database q and
 * read its best plans. 0, or 1 with the message printed. */
static int read_run(storeq_db *q, const cli_compare_runs_opts *o, cmp_run *r)
{
    ccs_err err = {{0}};
    run_row rr = {0};
    storeq_param par = {.name = ":run", .type = STOREQ_INT, .i = r->run};
    const char *sql = r->run ? "SELECT run_id, name, status, started, workload FROM runs WHERE "
                               "run_id = :run"
                             : "SELECT run_id, name, status, started, workload FROM runs WHERE "
                               "workload IS NULL ORDER BY run_id DESC LIMIT 1";
    if (storeq_exec(q, sql, &par, 1, on_run_row, &rr, &err))
        return cli_fail("compare", "%s", err.msg);
    if (!rr.found) {
        char ids[256] = "";
        storeq_exec(q,
                    "SELECT group_concat(run_id || CASE WHEN workload = 'serve' THEN ' (serving)' "
                    "ELSE '' END, ', ') FROM (SELECT run_id, workload FROM runs ORDER BY run_id)",
                    NULL, 0, on_ids, ids, &err);
        if (r->run)
            return cli_fail("compare", "%s: no run %lld (runs in the database: %s)", r->db,
                            (long long)r->run, ids[0] ? ids : "none");
        return cli_fail("compare", "%s: no training run to compare (runs in the database: %s)",
                        r->db, ids[0] ? ids : "none");
    }
    if (!strcmp(rr.workload, "serve"))
        return cli_fail("compare",
                        "%s: run %lld ('%s') is a serving run: compare --db lines up the best "
                        "plans of training runs (serving runs: serve_best, 'ccsweep report')",
                        r->db, (long long)rr.id, rr.name);
    r->run = rr.id;
    ccs_strlcpy(r->name, rr.name, sizeof r->name);
    ccs_strlcpy(r->status, rr.status, sizeof r->status);
    ccs_strlcpy(r->started, rr.started, sizeof r->started);
    char order[256], defs[640] = "", q_sql[2048];
    key_order(o->across, order, sizeof order);
    for (int i = 0; i < CMP_DEF_N; i++)
        snprintf(defs + strlen(defs), sizeof defs - strlen(defs), ", coalesce(%s, 0) AS d%d",
                 def_sql[i], i);
    snprintf(q_sql, sizeof q_sql,
             "SELECT * FROM (SELECT " BEST_COLS "%s FROM best_plan b JOIN models m ON "
             "m.model_id = b.model_id WHERE b.run_id = :run) WHERE (:model IS NULL OR model = "
             ":model) AND (:devices = 0 OR devices = :devices) AND (:gbs = 0 OR gbs = :gbs) AND "
             "(:seq = 0 OR seq = :seq) ORDER BY %s, hardware, generation, stack",
             defs, order);
    storeq_param ps[] = {
        {.name = ":run", .type = STOREQ_INT, .i = r->run},
        {.name = ":model", .type = o->model ? STOREQ_TEXT : STOREQ_NULL, .s = o->model},
        {.name = ":devices", .type = STOREQ_INT, .i = o->devices},
        {.name = ":gbs", .type = STOREQ_INT, .i = o->gbs},
        {.name = ":seq", .type = STOREQ_INT, .i = o->seq},
    };
    int rc = storeq_exec(q, q_sql, ps, sizeof ps / sizeof ps[0], on_best, r, &err);
    if (r->oom)
        return cli_fail("compare", "%s: out of memory reading run %lld", r->db, (long long)r->run);
    if (rc)
        return cli_fail("compare", "%s", err.msg);
    return 0;
}

/* ---- pairing ---------------------------------------------------------------------- */

/* Order of two groups by the pairing key (key_order's, as SQLite orders text:
 * bytewise); 0 when they pair. */
/* Order of two models by name then definition; 0 when they are one model. */
static int model_cmp(const cmp_best *a, const cmp_best *b)
{
    int c = strcmp(a->model, b->model);
    for (int i = 0; !c && i < CMP_DEF_N; i++)
        c = a->def[i] < b->def[i] ? -1 : a->def[i] > b->def[i];
    return c;
}

static int key_cmp(const cmp_best *a, const cmp_best *b, unsigned across)
{
    int c = model_cmp(a, b);
    if (c)
        return c;
    const int64_t av[] = {a->devices, a->gbs, a->seq}, bv[] = {b->devices, b->gbs, b->seq};
    for (int i = 0; i < 3; i++)
        if (av[i] != bv[i])
            return av[i] < bv[i] ? -1 : 1;
    if (!(across & CLI_ACROSS_HW) && (c = strcmp(a->hw, b->hw)))
        return c;
    if (!(across & CLI_ACROSS_GEN) && a->gen != b->gen)
        return a->gen < b->gen ? -1 : 1;
    if (!(across & CLI_ACROSS_STACK) && (c = strcmp(a->stack, b->stack)))
        return c;
    return 0;
}

/* 1 when a run holds a model of b's name with another definition. */
static int name_collides(const cmp_run *r, int nr, const cmp_best *b)
{
    for (int i = 0; i < nr; i++)
        for (size_t j = 0; j < r[i].n; j++)
            if (!strcmp(r[i].best[j].model, b->model) && model_cmp(&r[i].best[j], b))
                return 1;
    return 0;
}

/* The group's work and the dimensions that must be equal, in words
 * ("llama3-8b, 64 devices, gbs 256, seq 2048, h100-sxm g0 megatron-core");
 * with def, the model's parameter count after its name ("llama3-8b
 * (8.03B)"), where its name alone does not say which model it is. */
static void key_text(const cmp_best *b, unsigned across, int def, char *buf, size_t n)
{
    char hw[CCS_NAME_MAX + 2] = "", gen[24] = "", st[CCS_NAME_MAX + 2] = "";
    if (!(across & CLI_ACROSS_HW))
        snprintf(hw, sizeof hw, " %s", b->hw);
    if (!(across & CLI_ACROSS_GEN))
        snprintf(gen, sizeof gen, " g%lld", (long long)b->gen);
    if (!(across & CLI_ACROSS_STACK))
        snprintf(st, sizeof st, " %s", b->stack);
    char par[32] = "";
    if (def)
        snprintf(par, sizeof par, " (%.2fB)", b->def[0] / 1e9);
    snprintf(buf, n, "%s%s, %lld devices, gbs %lld, seq %lld%s%s%s%s", b->model, par,
             (long long)b->devices, (long long)b->gbs, (long long)b->seq,
             hw[0] || gen[0] || st[0] ? "," : "", hw, gen, st);
}

/* A run holding two groups with one pairing key cannot pair them: refuse. */
static int check_unique(const cmp_run *r, unsigned across)
{
    for (size_t i = 1; i < r->n; i++)
        if (!key_cmp(&r->best[i - 1], &r->best[i], across)) {
            char k[256];
            key_text(&r->best[i], across, 0, k, sizeof k);
            return cli_fail("compare",
                            "%s run %lld has more than one group of %s (%s g%lld %s and %s g%lld "
                            "%s): --across pairs one group of each run with one of each other "
                            "run; name fewer dimensions in --across",
                            r->db, (long long)r->run, k, r->best[i - 1].hw,
                            (long long)r->best[i - 1].gen, r->best[i - 1].stack, r->best[i].hw,
                            (long long)r->best[i].gen, r->best[i].stack);
        }
    return 0;
}

/* One line of the comparison: a pairing key and each run's group (NULL: the
 * run has none). */
typedef struct cmp_line {
    const cmp_best *b[CLI_CMP_MAX_RUNS];
    int present;
    int ref; /* the first run with the group: the speed-up's base */
} cmp_line;

/* Merge the runs' sorted groups into lines (a new array of *n). */
static cmp_line *merge(const cmp_run *r, int nr, unsigned across, size_t *n)
{
    size_t total = 0, pos[CLI_CMP_MAX_RUNS] = {0};
    for (int i = 0; i < nr; i++)
        total += r[i].n;
    cmp_line *v = calloc(total ? total : 1, sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (;;) {
        const cmp_best *lo = NULL;
        for (int i = 0; i < nr; i++)
            if (pos[i] < r[i].n && (!lo || key_cmp(&r[i].best[pos[i]], lo, across) < 0))
                lo = &r[i].best[pos[i]];
        if (!lo)
            break;
        cmp_line *l = &v[(*n)++];
        l->ref = -1;
        for (int i = 0; i < nr; i++)
            if (pos[i] < r[i].n && !key_cmp(&r[i].best[pos[i]], lo, across)) {
                l->b[i] = &r[i].best[pos[i]++];
                l->present++;
                if (l->ref < 0)
                    l->ref = i;
            }
    }
    return v;
}

/* ---- output ----------------------------------------------------------------------- */

static const char *const fairness =
    "groups pair only at equal work (model: its name and definition, devices, global batch, "
    "sequence): plans compare fairly only at equal work";

/* Print the model names some run holds with another definition than another
 * run (their groups do not pair): each run's parameter count and shape. */
static void print_other_models(const cmp_run *r, int nr)
{
    for (int i = 0; i < nr; i++)
        for (size_t j = 0; j < r[i].n; j++) {
            const cmp_best *b = &r[i].best[j];
            int first = 1; /* b's name printed once: at its first group in any run */
            for (int k = 0; first && k <= i; k++)
                for (size_t g = 0; first && g < (k < i ? r[k].n : j); g++)
                    first = strcmp(r[k].best[g].model, b->model) != 0;
            if (!first || !name_collides(r, nr, b))
                continue;
            printf("  %s is another model in another run:", b->model);
            for (int k = 0; k < nr; k++)
                for (size_t g = 0; g < r[k].n; g++)
                    if (!strcmp(r[k].best[g].model, b->model)) {
                        const int64_t *d = r[k].best[g].def;
                        printf(" [%d] %.2fB parameters (%lld layers, hidden %lld);", k + 1,
                               d[0] / 1e9, (long long)d[1], (long long)d[2]);
                        break; /* one model of a name per run */
                    }
            printf(" not paired\n");
        }
}

/* What must be equal besides the work, in words. */
static void equal_text(unsigned across, char *buf, size_t n)
{
    const char *d[3] = {"hardware", "generation", "stack"};
    const unsigned bit[3] = {CLI_ACROSS_HW, CLI_ACROSS_GEN, CLI_ACROSS_STACK};
    char same[64] = "", diff[64] = "";
    for (int i = 0; i < 3; i++) {
        char *t = across & bit[i] ? diff : same;
        snprintf(t + strlen(t), 64 - strlen(t), "%s%s", *t ? ", " : "", d[i]);
    }
    snprintf(buf, n, "%s%s%s%s%s", same[0] ? "at equal " : "", same, same[0] && diff[0] ? "; " : "",
             diff[0] ? "across (--across) " : "", diff);
}

static void print_text(const cmp_run *r, int nr, const cmp_line *l, size_t nl,
                       const cli_compare_runs_opts *o)
{
    char eq[128];
    equal_text(o->across, eq, sizeof eq);
    printf("%d stored runs: the best plan of each group (best_plan: model x hardware x generation "
           "x devices x gbs x seq x stack)\n",
           nr);
    for (int i = 0; i < nr; i++)
        printf("  %s: %s, '%s', %s, started %s, %zu group%s\n", r[i].label, r[i].db, r[i].name,
               r[i].status, r[i].started, r[i].n, r[i].n == 1 ? "" : "s");
    printf("  plans compare fairly only at equal work: groups pair only at equal model (name\n"
           "  and definition), devices, global batch and sequence, and %s\n"
           "  speed-up: t_iter of the first run with the group over each run's (at equal work,\n"
           "  the ratio of tokens/s)\n",
           eq);
    size_t paired = 0, all = 0, only[CLI_CMP_MAX_RUNS] = {0};
    for (size_t k = 0; k < nl; k++) {
        paired += l[k].present > 1;
        all += l[k].present == nr;
        if (l[k].present == 1)
            only[l[k].ref]++;
    }
    printf("  %zu group%s paired (%zu in every run)", paired, paired == 1 ? "" : "s", all);
    for (int i = 0; i < nr; i++)
        printf("; %zu only in %s", only[i], r[i].label);
    printf("\n");
    print_other_models(r, nr);
    int w = 20; /* wide enough for the labels and the hardware cells */
    for (int i = 0; i < nr; i++) {
        w = (int)strlen(r[i].label) > w ? (int)strlen(r[i].label) : w;
        for (size_t j = 0; o->across && j < r[i].n; j++) {
            int c = (int)(strlen(r[i].best[j].hw) + strlen(r[i].best[j].stack)) + 6;
            w = c > w ? c : w;
        }
    }
    for (size_t k = 0; k < nl; k++) {
        if (l[k].present < 2)
            continue;
        char key[256];
        const cmp_best *ref = l[k].b[l[k].ref];
        key_text(ref, o->across, name_collides(r, nr, ref), key, sizeof key);
        printf("\n%s\n  %-22s", key, "");
        for (int i = 0; i < nr; i++)
            printf(" %*s", w, r[i].label);
        printf("\n");
#define ROW(NAME, FMT, ...)                                                                        \
    do {                                                                                           \
        printf("  %-22s", NAME);                                                                   \
        for (int i = 0; i < nr; i++) {                                                             \
            const cmp_best *b = l[k].b[i];                                                         \
            char cell[160];                                                                        \
            if (b)                                                                                 \
                snprintf(cell, sizeof cell, FMT, __VA_ARGS__);                                     \
            else                                                                                   \
                ccs_strlcpy(cell, "no such group", sizeof cell);                                   \
            printf(" %*s", w, cell);                                                               \
        }                                                                                          \
        printf("\n");                                                                              \
    } while (0)
        if (o->across)
            ROW("hardware, gen, stack", "%s g%lld %s", b->hw, (long long)b->gen, b->stack);
        ROW("t_iter", "%.4f s", b->t_iter);
        ROW("speed-up", "%.2fx", ref->t_iter / b->t_iter);
        ROW("MFU", "%.1f%%", 100 * b->mfu);
        ROW("comm exposed", "%.1f%%", 100 * b->comm_fraction);
        ROW("tokens/s", "%.4g", b->tokens_per_s);
        ROW("tp x cp x pp x dp", "%lld x %lld x %lld x %lld", (long long)b->tp, (long long)b->cp,
            (long long)b->pp, (long long)b->dp);
        ROW("ep, vpp, mbs", "%lld, %lld, %lld", (long long)b->ep, (long long)b->vpp,
            (long long)b->mbs);
        ROW("recompute, sp, zero", "%s, %lld, %lld", b->recompute, (long long)b->sp,
            (long long)b->zero);
        ROW("flash attn, dp overlap", "%lld, %s", (long long)b->flash_attn,
            dp_overlap_name((int)b->dp_overlap));
        ROW("dtype, memory/device", "%s, %.2f GiB", b->dtype, b->mem_total / 1073741824.0);
#undef ROW
    }
    for (int i = 0; i < nr; i++) {
        if (!only[i])
            continue;
        printf("\nonly in %s (%zu group%s):\n", r[i].label, only[i], only[i] == 1 ? "" : "s");
        for (size_t k = 0; k < nl; k++) {
            if (l[k].present != 1 || l[k].ref != i)
                continue;
            char key[256];
            const cmp_best *b = l[k].b[i];
            key_text(b, 0, name_collides(r, nr, b), key, sizeof key);
            printf("  %s: t_iter %.4f s, MFU %.1f%%, comm exposed %.1f%%\n", key, b->t_iter,
                   100 * b->mfu, 100 * b->comm_fraction);
        }
    }
}

/* The JSON object of group b of a run. */
static json_t *best_json(const cmp_best *b)
{
    json_t *e = json_object(), *p = json_object();
    int rc = !e || !p;
    if (!rc) {
        rc |= json_object_set_new(e, "model", json_string(b->model));
        rc |= json_object_set_new(e, "params", json_integer(b->def[0]));
        rc |= json_object_set_new(e, "hardware", json_string(b->hw));
        rc |= json_object_set_new(e, "generation", json_integer(b->gen));
        rc |= json_object_set_new(e, "stack", json_string(b->stack));
        rc |= json_object_set_new(e, "devices", json_integer(b->devices));
        rc |= json_object_set_new(e, "gbs", json_integer(b->gbs));
        rc |= json_object_set_new(e, "seq", json_integer(b->seq));
        rc |= json_object_set_new(e, "t_iter", json_real(b->t_iter));
        rc |= json_object_set_new(e, "tokens_per_s", json_real(b->tokens_per_s));
        rc |= json_object_set_new(e, "mfu", json_real(b->mfu));
        rc |= json_object_set_new(e, "comm_fraction", json_real(b->comm_fraction));
        rc |= json_object_set_new(e, "mem_total", json_real(b->mem_total));
        const char *ik[] = {"tp", "cp", "pp", "dp", "ep", "vpp", "mbs", "sp", "zero", "flash_attn"};
        const int64_t iv[] = {b->tp,  b->cp,  b->pp, b->dp,   b->ep,
                              b->vpp, b->mbs, b->sp, b->zero, b->flash_attn};
        for (int i = 0; i < 10; i++)
            rc |= json_object_set_new(p, ik[i], json_integer(iv[i]));
        rc |=
            json_object_set_new(p, "dp_overlap", json_string(dp_overlap_name((int)b->dp_overlap)));
        rc |= json_object_set_new(p, "recompute", json_string(b->recompute));
        rc |= json_object_set_new(p, "dtype", json_string(b->dtype));
    }
    if (rc || json_object_set_new(e, "plan", p)) {
        json_decref(e);
        return NULL;
    }
    return e;
}

static int print_json(const cmp_run *r, int nr, const cmp_line *l, size_t nl,
                      const cli_compare_runs_opts *o)
{
    json_t *top = json_object(), *runs = json_array(), *groups = json_array(), *only = json_array(),
           *across = json_array(), *others = json_array();
    int rc = !top || !runs || !groups || !only || !across || !others;
    /* the model names some run holds with another definition (once each) */
    for (size_t k = 0; !rc && k < nl; k++) {
        const cmp_best *b = l[k].b[l[k].ref];
        int seen = 0;
        for (size_t j = 0; j < json_array_size(others) && !seen; j++)
            seen = !strcmp(json_string_value(json_array_get(others, j)), b->model);
        if (!seen && name_collides(r, nr, b))
            rc |= json_array_append_new(others, json_string(b->model));
    }
    const char *dims[3] = {"hw", "gen", "stack"};
    const unsigned bit[3] = {CLI_ACROSS_HW, CLI_ACROSS_GEN, CLI_ACROSS_STACK};
    for (int i = 0; !rc && i < 3; i++)
        if (o->across & bit[i])
            rc |= json_array_append_new(across, json_string(dims[i]));
    for (int i = 0; !rc && i < nr; i++) {
        json_t *e = json_object();
        rc |= !e || json_array_append_new(runs, e);
        if (rc)
            break;
        rc |= json_object_set_new(e, "db", json_string(r[i].db));
        rc |= json_object_set_new(e, "run_id", json_integer(r[i].run));
        rc |= json_object_set_new(e, "name", json_string(r[i].name));
        rc |= json_object_set_new(e, "status", json_string(r[i].status));
        rc |= json_object_set_new(e, "started", json_string(r[i].started));
        rc |= json_object_set_new(e, "label", json_string(r[i].label));
        rc |= json_object_set_new(e, "groups", json_integer((json_int_t)r[i].n));
    }
    size_t paired = 0;
    for (size_t k = 0; !rc && k < nl; k++) {
        if (l[k].present == 1) {
            json_t *e = best_json(l[k].b[l[k].ref]);
            rc |= !e || json_object_set_new(e, "run", json_integer(l[k].ref)) ||
                  json_array_append_new(only, e);
            continue;
        }
        paired++;
        json_t *g = json_object(), *cols = json_array();
        rc |=
            !g || !cols || json_array_append_new(groups, g) || json_object_set_new(g, "runs", cols);
        if (rc)
            break;
        const cmp_best *ref = l[k].b[l[k].ref];
        rc |= json_object_set_new(g, "model", json_string(ref->model));
        rc |= json_object_set_new(g, "params", json_integer(ref->def[0]));
        rc |= json_object_set_new(g, "devices", json_integer(ref->devices));
        rc |= json_object_set_new(g, "gbs", json_integer(ref->gbs));
        rc |= json_object_set_new(g, "seq", json_integer(ref->seq));
        if (!(o->across & CLI_ACROSS_HW))
            rc |= json_object_set_new(g, "hardware", json_string(ref->hw));
        if (!(o->across & CLI_ACROSS_GEN))
            rc |= json_object_set_new(g, "generation", json_integer(ref->gen));
        if (!(o->across & CLI_ACROSS_STACK))
            rc |= json_object_set_new(g, "stack", json_string(ref->stack));
        rc |= json_object_set_new(g, "speedup_vs", json_integer(l[k].ref));
        for (int i = 0; !rc && i < nr; i++) {
            json_t *e = l[k].b[i] ? best_json(l[k].b[i]) : json_null();
            rc |= !e;
            if (!rc && l[k].b[i])
                rc |= json_object_set_new(e, "speedup", json_real(ref->t_iter / l[k].b[i]->t_iter));
            rc |= rc || json_array_append_new(cols, e);
        }
    }
    if (!rc) {
        rc |= json_object_set_new(top, "runs", runs);
        runs = NULL;
        rc |= json_object_set_new(top, "across", across);
        across = NULL;
        rc |= json_object_set_new(top, "fairness", json_string(fairness));
        rc |= json_object_set_new(top, "paired", json_integer((json_int_t)paired));
        rc |= json_object_set_new(top, "only_in", only);
        only = NULL;
        rc |= json_object_set_new(top, "other_models", others);
        others = NULL;
    }
    json_decref(runs);
    json_decref(across);
    json_decref(only);
    json_decref(others);
    return cli_json_emit(top, groups, "groups", rc);
}

/* ---- the command ------------------------------------------------------------------ */

/* "[i] BASENAME run N" */
static void run_label(cmp_run *r, int i)
{
    const char *base = strrchr(r->db, '/');
    snprintf(r->label, sizeof r->label, "[%d] %s run %lld", i + 1, base ? base + 1 : r->db,
             (long long)r->run);
}

int cli_compare_runs(const cli_compare_runs_opts *o)
{
    assert(o->n >= 2 && o->n <= CLI_CMP_MAX_RUNS);
    cmp_run r[CLI_CMP_MAX_RUNS];
    memset(r, 0, sizeof r);
    int rc = 0, nr = 0;
    for (int i = 0; rc == 0 && i < o->n; i++, nr++) {
        r[i].db = o->runs[i].db;
        r[i].run = o->runs[i].run;
        int orc;
        ccs_err err = {{0}};
        /* one file at a time: a file named twice is opened twice (read-only) */
        storeq_db *q = storeq_open(r[i].db, &orc, &err);
        if (!q)
            rc = cli_fail("compare", "%s", err.msg) + (orc != CCS_EINPUT);
        else
            rc = read_run(q, o, &r[i]);
        storeq_close(q);
        if (rc == 0)
            run_label(&r[i], i);
        for (int j = 0; rc == 0 && j < i; j++)
            if (!strcmp(r[j].db, r[i].db) && r[j].run == r[i].run)
                rc =
                    cli_fail("compare", "%s run %lld is named twice", r[i].db, (long long)r[i].run);
        if (rc == 0)
            rc = check_unique(&r[i], o->across);
    }
    size_t nl = 0;
    cmp_line *l = NULL;
    if (rc == 0 && !(l = merge(r, nr, o->across, &nl)))
        rc = cli_fail("compare", "out of memory") + 1;
    if (rc == 0 && !o->json)
        print_text(r, nr, l, nl, o);
    else if (rc == 0 && print_json(r, nr, l, nl, o))
        rc = cli_fail("compare", "out of memory writing JSON") + 1;
    free(l);
    for (int i = 0; i < nr; i++)
        free(r[i].best);
    return rc;
}
