/* report_md.c - report.md: the run, how to read it, the summary table and
 * findings, one section per figure with the tables behind it, and the SQL of
 * every query. Reads the tables of rp (report_data.c) and what the figures
 * left there (made, note, mit_gen); its own numbers are only counts, means,
 * medians and maxima over query rows. */
#include "report_int.h"

#include <limits.h>

#include "ccsweep/report/report_sql.h"
#include "ccsweep/util/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* "175B", "1.01T", "334M" */
static void fmt_params(char *buf, size_t n, double p)
{
    if (!isfinite(p))
        snprintf(buf, n, "?");
    else if (p >= 1e12)
        snprintf(buf, n, "%.3gT", p / 1e12);
    else if (p >= 1e9)
        snprintf(buf, n, "%.3gB", p / 1e9);
    else
        snprintf(buf, n, "%.3gM", p / 1e6);
}

static const char *pct(char *buf, size_t n, double v)
{
    if (!isfinite(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.1f%%", v);
    return buf;
}

/* Row of the summary query for (plan, hardware, generation), or -1. */
static long summary_row(const rp *r, const char *plan, const char *hw, int gen)
{
    const rtab *t = &r->summary;
    for (size_t i = 0; i < t->nrows; i++)
        if (rtab_is(t, i, "plan", plan) && rtab_is(t, i, "hardware", hw) &&
            (int)rtab_num(t, i, "generation") == gen)
            return (long)i;
    return -1;
}

static void md_summary(const rp *r, FILE *f)
{
    const rtab *t = &r->summary;
    size_t nm = r->models.nrows;
    const char *unit = r->multi ? "groups" : "models";
    if (r->multi)
        fprintf(f,
                "A group is one model x devices x global batch x sequence length on one "
                "hardware generation: the work its plans share, so the only set within which "
                "plans compare. This run has several per model (%s); each counts "
                "once.\n\n",
                r->gword);
    fprintf(f,
            "Communication share = exposed communication time / iteration time, over the "
            "%s that fit (min - max, mean in brackets); DP hidden = share of the "
            "data-parallel gradient communication overlapped with the backward pass "
            "(min - max over the %s with DP traffic).\n\n",
            unit, unit);
    fprintf(f,
            "| hardware | gen | HBM GiB | %s fitting: best / TP+DP | comm share, best "
            "plan | largest model, best plan | comm share, TP+DP | largest model, TP+DP "
            "| DP hidden, best plan | DP hidden, TP+DP |\n",
            r->multi ? "groups (models)" : "models");
    fprintf(f, "|---|---:|---:|---|---|---|---|---|---|---|\n");
    for (size_t h = 0; h < r->hwrows.nrows; h++) {
        const char *hw = rtab_str(&r->hwrows, h, "name");
        int gen = (int)rtab_num(&r->hwrows, h, "generation");
        long b = summary_row(r, "best", hw, gen), p = summary_row(r, "tp+dp", hw, gen);
        char a[5][24], c[6][24];
        fprintf(f, "| %s | %d | %.0f |", hw, gen,
                rtab_num(&r->hwrows, h, "mem_cap") / 1073741824.0);
        if (r->multi)
            fprintf(f, " %.0f / %.0f of %.0f groups (%.0f / %.0f of %.0f models) |",
                    b < 0 ? 0 : rtab_num(t, (size_t)b, "groups"),
                    p < 0 ? 0 : rtab_num(t, (size_t)p, "groups"), rtab_num(t, 0, "all_groups"),
                    b < 0 ? 0 : rtab_num(t, (size_t)b, "models"),
                    p < 0 ? 0 : rtab_num(t, (size_t)p, "models"), rtab_num(t, 0, "all_models"));
        else
            fprintf(f, " %.0f / %.0f of %zu |", b < 0 ? 0 : rtab_num(t, (size_t)b, "models"),
                    p < 0 ? 0 : rtab_num(t, (size_t)p, "models"), nm);
        for (int k = 0; k < 2; k++) {
            long i = k ? p : b;
            if (i < 0) {
                fprintf(f, " - | - |");
                continue;
            }
            char work[96] = "";
            static const char *const lcol[3] = {"largest_devices", "largest_gbs", "largest_seq"};
            static const char *const lfmt[3] = {", %.0f devices", ", gbs %.0f", ", seq %.0f"};
            for (int d = 0; d < 3; d++)
                if (r->vary[d])
                    snprintf(work + strlen(work), sizeof work - strlen(work), lfmt[d],
                             rtab_num(t, (size_t)i, lcol[d]));
            fprintf(f, " %s - %s (%s) | %s%s: %s |",
                    pct(a[0], 24, rtab_num(t, (size_t)i, "comm_min_pct")),
                    pct(a[1], 24, rtab_num(t, (size_t)i, "comm_max_pct")),
                    pct(a[2], 24, rtab_num(t, (size_t)i, "comm_mean_pct")),
                    rtab_str(t, (size_t)i, "largest_model"), work,
                    pct(a[3], 24, rtab_num(t, (size_t)i, "largest_comm_pct")));
        }
        for (int k = 0; k < 2; k++) {
            long i = k ? p : b;
            if (i < 0)
                fprintf(f, " - |");
            else
                fprintf(f, " %s - %s |", pct(c[0], 24, rtab_num(t, (size_t)i, "dp_hidden_min_pct")),
                        pct(c[1], 24, rtab_num(t, (size_t)i, "dp_hidden_max_pct")));
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

/* Comm share statistics over every hardware for one plan kind and generation. */
static void comm_stats(const rp *r, const char *plan, int gen, report_stats *st,
                       const char **max_model, const char **max_hw, size_t *n_over40,
                       char *max_work, size_t nw)
{
    const rtab *t = &r->q[P_COMM];
    double *v = malloc((t->nrows ? t->nrows : 1) * sizeof *v);
    size_t n = 0;
    *max_model = *max_hw = "";
    *n_over40 = 0;
    double best = -1;
    for (size_t i = 0; v && i < t->nrows; i++) {
        if (!rtab_is(t, i, "plan", plan) || (int)rtab_num(t, i, "generation") != gen)
            continue;
        v[n] = rtab_num(t, i, "comm_pct");
        *n_over40 += v[n] >= 40;
        if (v[n] > best) {
            best = v[n];
            *max_model = rtab_str(t, i, "model");
            *max_hw = rtab_str(t, i, "hardware");
            rp_work_label(r, t, i, max_work, nw);
        }
        n++;
    }
    report_stats_of(v ? v : (double[]){NAN}, v ? n : 1, st);
    free(v);
}

/* Communication share over every hardware, per plan kind and generation. */
static void find_comm(const rp *r, FILE *f)
{
    char a[4][24];
    for (int k = 0; k < 2; k++) {
        int gens[2] = {r->gen_first, r->gen_last};
        for (int j = 0; j < (r->gen_first == r->gen_last ? 1 : 2); j++) {
            report_stats st;
            const char *mm, *mh;
            size_t over;
            char work[96] = "";
            comm_stats(r, rp_lens_key[k], gens[j], &st, &mm, &mh, &over, work, sizeof work);
            if (!st.n)
                continue;
            fprintf(f,
                    "- %s, generation %d: communication is %s - %s of the iteration "
                    "(median %s) over %zu %s; the most is %s%s%s%s on %s; "
                    "%zu %s at 40%% or more (`queries/comm_share.sql`).\n",
                    k ? "TP+DP (memory-forced TP)" : "Best plan", gens[j], pct(a[0], 24, st.min),
                    pct(a[1], 24, st.max), pct(a[2], 24, st.median), st.n, r->gword, mm,
                    *work ? " (" : "", *work ? work + 2 : "", *work ? ")" : "", mh, over, r->gnoun);
        }
    }
}

/* The first generation's plans kept on later hardware. */
static void find_fixed(const rp *r, FILE *f)
{
    char a[4][24];
    const rtab *fx = &r->q[P_FIXED];
    for (int k = 0; k < 2 && r->gen_first != r->gen_last; k++) {
        double *v = malloc((fx->nrows ? fx->nrows : 1) * sizeof *v);
        report_stats st[2];
        size_t over = 0;
        for (int j = 0; v && j < 2; j++) {
            size_t n = 0;
            int g = j ? r->gen_last : r->gen_first;
            for (size_t i = 0; i < fx->nrows; i++)
                if (rtab_is(fx, i, "plan", rp_lens_key[k]) &&
                    (int)rtab_num(fx, i, "generation") == g) {
                    v[n] = rtab_num(fx, i, "comm_pct");
                    over += j && v[n] >= 40;
                    n++;
                }
            report_stats_of(v, n, &st[j]);
        }
        if (v && st[0].n && st[1].n)
            fprintf(f,
                    "- %s plans of generation %d kept unchanged: the median communication "
                    "share goes from %s to %s at generation %d (max %s); %zu of %zu %s "
                    "reach 40%% or more (`queries/fixed_plan.sql`).\n",
                    k ? "TP+DP" : "Best", r->gen_first, pct(a[0], 24, st[0].median),
                    pct(a[1], 24, st[1].median), r->gen_last, pct(a[2], 24, st[1].max), over,
                    st[1].n, r->gword);
        free(v);
    }
}

/* Hidden DP communication turning exposed, on the reference hardware. */
static void find_dp(const rp *r, FILE *f)
{
    const rtab *t = &r->q[P_DP];
    const char *hw = rp_hw_name(r, r->ref);
    for (int k = 0; k < 2; k++) {
        size_t hidden0 = 0, exposed = 0;
        ccs_buf names = CCS_BUF_INIT;
        for (size_t m = 0; m < r->grp.nrows; m++) {
            char name[160];
            rp_grp_label(r, m, name, sizeof name);
            double first = NAN, last = NAN;
            for (size_t i = 0; i < t->nrows; i++) {
                if (!rtab_is(t, i, "plan", rp_lens_key[k]) || !rtab_is(t, i, "hardware", hw) ||
                    !rp_grp_match(r, m, t, i))
                    continue;
                int g = (int)rtab_num(t, i, "generation");
                if (g == r->gen_first)
                    first = rtab_num(t, i, "dp_hidden_pct");
                if (g == r->gen_last)
                    last = rtab_num(t, i, "dp_hidden_pct");
            }
            if (!(first >= 50))
                continue;
            hidden0++;
            if (last < 50) {
                exposed++;
                ccs_buf_printf(&names, "%s%s", names.len ? ", " : "", name);
            }
        }
        if (hidden0 && r->gen_first != r->gen_last)
            fprintf(f,
                    "- %s on %s: of the %zu %s whose DP communication is at least half "
                    "hidden at generation %d, %zu have less than half hidden at generation "
                    "%d%s%s%s (`queries/dp_hidden.sql`).\n",
                    k ? "TP+DP" : "Best plan", hw, hidden0, r->multi ? r->gword : "models",
                    r->gen_first, exposed, r->gen_last, exposed ? " (" : "",
                    exposed ? ccs_buf_str(&names) : "", exposed ? ")" : "");
        ccs_buf_free(&names);
    }
}

/* Memory-forced TP on the reference hardware. */
static void find_tp(const rp *r, FILE *f)
{
    const rtab *ft = &r->q[P_TP];
    const char *hw = rp_hw_name(r, r->ref);
    int gens[2] = {r->gen_first, r->gen_last};
    for (int j = 0; j < (r->gen_first == r->gen_last ? 1 : 2); j++) {
        int max_nopp = 0, max_any = 0, nofit = 0;
        char mn[160] = "", ma[160] = "";
        for (size_t i = 0; i < ft->nrows; i++) {
            if (!rtab_is(ft, i, "hardware", hw) || (int)rtab_num(ft, i, "generation") != gens[j])
                continue;
            double a1 = rtab_num(ft, i, "tp_no_pp"), a2 = rtab_num(ft, i, "tp_any_pp");
            if (a1 > max_nopp) {
                max_nopp = (int)a1;
                snprintf(mn, sizeof mn, "%s", rtab_str(ft, i, "model"));
                rp_work_label(r, ft, i, mn + strlen(mn), sizeof mn - strlen(mn));
            }
            if (a2 > max_any) {
                max_any = (int)a2;
                snprintf(ma, sizeof ma, "%s", rtab_str(ft, i, "model"));
                rp_work_label(r, ft, i, ma + strlen(ma), sizeof ma - strlen(ma));
            }
            nofit += !isfinite(a1);
        }
        fprintf(f,
                "- Memory-forced TP on %s, generation %d: without pipeline parallelism "
                "the smallest fitting tp reaches %d (%s) and %d %s fit no TP+DP plan; "
                "with pipeline parallelism it reaches %d (%s) (`queries/forced_tp.sql`).\n",
                hw, gens[j], max_nopp, mn, nofit, r->multi ? r->gword : "models", max_any, ma);
    }
}

/* The findings: one bullet per statement, each naming its query. */
static void md_findings(const rp *r, FILE *f)
{
    fprintf(f, "What this run shows (each number from the query named after it; the queries "
               "are listed at the end):\n\n");
    find_comm(r, f);
    find_fixed(r, f);
    find_dp(r, f);
    find_tp(r, f);
    fprintf(f, "\n");
}

static void md_dp_table(const rp *r, FILE *f)
{
    const rtab *t = &r->q[P_DP];
    const char *hw = rp_hw_name(r, r->ref);
    size_t ng = r->gens.nrows;
    int *gens = malloc(ng * sizeof *gens);
    double *v = malloc(ng * sizeof *v);
    if (!gens || !v) {
        free(gens);
        free(v);
        return;
    }
    fprintf(f,
            "Hidden share of DP communication on %s per generation (%d .. %d), and the "
            "generation from which less than half of it stays hidden:\n\n",
            hw, r->gen_first, r->gen_last);
    fprintf(f, "| model | params | best plan | below 50%% from | TP+DP | below 50%% from |\n");
    fprintf(f, "|---|---:|---|---:|---|---:|\n");
    for (size_t m = 0; m < r->models.nrows; m++) {
        const char *name = rtab_str(&r->models, m, "name");
        char p[16];
        fmt_params(p, sizeof p, rtab_num(&r->models, m, "params"));
        fprintf(f, "| %s | %s |", name, p);
        for (int k = 0; k < 2; k++) {
            int any = 0;
            for (size_t gi = 0; gi < ng; gi++) {
                gens[gi] = rp_gen_at(r, gi);
                v[gi] = NAN;
                for (size_t i = 0; i < t->nrows; i++)
                    if (rtab_is(t, i, "plan", rp_lens_key[k]) && rtab_is(t, i, "hardware", hw) &&
                        rtab_is(t, i, "model", name) &&
                        (int)rtab_num(t, i, "generation") == gens[gi]) {
                        v[gi] = rtab_num(t, i, "dp_hidden_pct");
                        any = 1;
                    }
            }
            fprintf(f, " ");
            for (size_t gi = 0; gi < ng; gi++)
                isfinite(v[gi]) ? fprintf(f, "%s%.0f", gi ? " / " : "", v[gi])
                                : fprintf(f, "%s-", gi ? " / " : "");
            int fb = report_first_below(gens, v, ng, 50.0);
            if (!any)
                fprintf(f, " | - |");
            else if (fb < 0)
                fprintf(f, " | stays hidden |");
            else if (fb == r->gen_first)
                fprintf(f, " | already at gen %d |", fb);
            else
                fprintf(f, " | gen %d |", fb);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
    free(gens);
    free(v);
}

static void md_tp_table(const rp *r, FILE *f)
{
    const rtab *t = &r->q[P_TP];
    const char *hw = rp_hw_name(r, r->ref);
    fprintf(f,
            "Smallest tp that fits on %s, without pipeline parallelism / with it "
            "(- : nothing fits):\n\n| model | params | layers | hidden |",
            hw);
    for (size_t gi = 0; gi < r->gens.nrows; gi++) {
        double cap = NAN;
        for (size_t h = 0; h < r->hwrows.nrows; h++)
            if (rtab_is(&r->hwrows, h, "name", hw) &&
                (int)rtab_num(&r->hwrows, h, "generation") == rp_gen_at(r, gi))
                cap = rtab_num(&r->hwrows, h, "mem_cap") / 1073741824.0;
        fprintf(f, " gen %d (%.0f GiB) |", rp_gen_at(r, gi), cap);
    }
    fprintf(f, "\n|---|---:|---:|---:|");
    for (size_t gi = 0; gi < r->gens.nrows; gi++)
        fprintf(f, "---|");
    fprintf(f, "\n");
    for (size_t m = 0; m < r->models.nrows; m++) {
        const char *name = rtab_str(&r->models, m, "name");
        char p[16];
        fmt_params(p, sizeof p, rtab_num(&r->models, m, "params"));
        fprintf(f, "| %s | %s | %.0f | %.0f |", name, p, rtab_num(&r->models, m, "layers"),
                rtab_num(&r->models, m, "hidden"));
        for (size_t gi = 0; gi < r->gens.nrows; gi++) {
            double a = NAN, b = NAN;
            for (size_t i = 0; i < t->nrows; i++)
                if (rtab_is(t, i, "hardware", hw) && rtab_is(t, i, "model", name) &&
                    (int)rtab_num(t, i, "generation") == rp_gen_at(r, gi)) {
                    a = rtab_num(t, i, "tp_no_pp");
                    b = rtab_num(t, i, "tp_any_pp");
                }
            char sa[16] = "-", sb[16] = "-";
            if (isfinite(a))
                snprintf(sa, sizeof sa, "%.0f", a);
            if (isfinite(b))
                snprintf(sb, sizeof sb, "%.0f", b);
            fprintf(f, " %s / %s |", sa, sb);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

static void md_mit_table(const rp *r, FILE *f)
{
    const rtab *t = &r->q[P_MIT];
    fprintf(f,
            "At generation %d, each mitigation applied to the same plan (mean and largest "
            "saving over the models; exposed communication removed, mean):\n\n",
            r->mit_gen);
    fprintf(f, "| plan | hardware | mitigation | models | time saved, mean | time saved, max "
               "| exposed comm removed, mean |\n|---|---|---|---:|---:|---|---:|\n");
    for (int k = 0; k < 2; k++) {
        for (size_t h = 0; h < r->hwnames.nrows; h++) {
            const char *hw = rp_hw_name(r, h);
            const char *labels[16];
            size_t nl = 0;
            for (size_t i = 0; i < t->nrows; i++) {
                if (!rtab_is(t, i, "hardware", hw) ||
                    (int)rtab_num(t, i, "generation") != r->mit_gen)
                    continue;
                size_t j;
                for (j = 0; j < nl && strcmp(labels[j], rtab_str(t, i, "mitigation")); j++)
                    ;
                if (j == nl && nl < 16)
                    labels[nl++] = rtab_str(t, i, "mitigation");
            }
            for (size_t j = 0; j < nl; j++) {
                double sum = 0, sum_rm = 0, mx = -INFINITY;
                size_t n = 0, n_rm = 0;
                const char *mx_model = "";
                for (size_t i = 0; i < t->nrows; i++) {
                    if (!rtab_is(t, i, "plan", rp_lens_key[k]) || !rtab_is(t, i, "hardware", hw) ||
                        (int)rtab_num(t, i, "generation") != r->mit_gen ||
                        !rtab_is(t, i, "mitigation", labels[j]))
                        continue;
                    double v = rtab_num(t, i, "time_saved_pct");
                    double rm = rtab_num(t, i, "exposed_comm_removed_pct");
                    if (isfinite(v)) {
                        sum += v;
                        n++;
                        if (v > mx) {
                            mx = v;
                            mx_model = rtab_str(t, i, "model");
                        }
                    }
                    if (isfinite(rm)) {
                        sum_rm += rm;
                        n_rm++;
                    }
                }
                if (!n)
                    continue;
                char a[3][24];
                fprintf(f, "| %s | %s | %s | %zu | %s | %s (%s) | %s |\n", rp_lens_key[k], hw,
                        labels[j], n, pct(a[0], 24, sum / (double)n), pct(a[1], 24, mx), mx_model,
                        pct(a[2], 24, n_rm ? sum_rm / (double)n_rm : NAN));
            }
        }
    }
    fprintf(f, "\n");
}

/* Statistics of the kept first-generation plans per generation, and per model on
 * the reference hardware. */
static void md_fixed_table(const rp *r, FILE *f)
{
    const rtab *t = &r->q[P_FIXED];
    double *v = malloc((t->nrows ? t->nrows : 1) * sizeof *v);
    double *d = malloc((t->nrows ? t->nrows : 1) * sizeof *d);
    if (!v || !d) {
        free(v);
        free(d);
        return;
    }
    char a[5][24];
    fprintf(f, "Kept plans over every hardware of the run: communication share (min - max, "
               "median) and hidden share of DP communication (median) per generation:\n\n"
               "| plan | gen | model x hardware pairs | comm share | pairs at 40%% or more "
               "| DP hidden, median |\n|---|---:|---:|---|---:|---:|\n");
    for (int k = 0; k < 2; k++) {
        for (size_t gi = 0; gi < r->gens.nrows; gi++) {
            size_t n = 0, nd = 0, over = 0;
            for (size_t i = 0; i < t->nrows; i++) {
                if (!rtab_is(t, i, "plan", rp_lens_key[k]) ||
                    (int)rtab_num(t, i, "generation") != rp_gen_at(r, gi))
                    continue;
                v[n] = rtab_num(t, i, "comm_pct");
                over += v[n] >= 40;
                n++;
                double h = rtab_num(t, i, "dp_hidden_pct");
                if (isfinite(h))
                    d[nd++] = h;
            }
            if (!n)
                continue;
            report_stats sc, sd;
            report_stats_of(v, n, &sc);
            report_stats_of(d, nd, &sd);
            fprintf(f, "| %s | %d | %zu | %s - %s (%s) | %zu | %s |\n", rp_lens_key[k],
                    rp_gen_at(r, gi), n, pct(a[0], 24, sc.min), pct(a[1], 24, sc.max),
                    pct(a[2], 24, sc.median), over, pct(a[3], 24, sd.median));
        }
    }
    free(v);
    free(d);
    const char *hw = rp_hw_name(r, r->ref);
    fprintf(f,
            "\nOn %s, communication share per generation (%d .. %d) of the kept plans:\n\n"
            "| model | best plan (tp x pp, mbs) | comm share | TP+DP plan (tp, mbs) | "
            "comm share |\n|---|---|---|---|---|\n",
            hw, r->gen_first, r->gen_last);
    for (size_t m = 0; m < r->models.nrows; m++) {
        const char *name = rtab_str(&r->models, m, "name");
        fprintf(f, "| %s |", name);
        for (int k = 0; k < 2; k++) {
            ccs_buf b = CCS_BUF_INIT;
            char planbuf[64] = "-";
            for (size_t gi = 0; gi < r->gens.nrows; gi++) {
                double c = NAN;
                for (size_t i = 0; i < t->nrows; i++)
                    if (rtab_is(t, i, "plan", rp_lens_key[k]) && rtab_is(t, i, "hardware", hw) &&
                        rtab_is(t, i, "model", name) &&
                        (int)rtab_num(t, i, "generation") == rp_gen_at(r, gi)) {
                        c = rtab_num(t, i, "comm_pct");
                        if (k)
                            snprintf(planbuf, sizeof planbuf, "%.0f, %.0f", rtab_num(t, i, "tp"),
                                     rtab_num(t, i, "mbs"));
                        else
                            snprintf(planbuf, sizeof planbuf, "%.0f x %.0f, %.0f",
                                     rtab_num(t, i, "tp"), rtab_num(t, i, "pp"),
                                     rtab_num(t, i, "mbs"));
                    }
                if (isfinite(c))
                    ccs_buf_printf(&b, "%s%.0f", gi ? " / " : "", c);
                else
                    ccs_buf_printf(&b, "%s-", gi ? " / " : "");
            }
            fprintf(f, " %s | %s |", planbuf, ccs_buf_str(&b));
            ccs_buf_free(&b);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

void rp_md_figure(const rp *r, FILE *f, const char *head, const char *title, const char *stem,
                  int made, const char *note, const char *caption, const char *query)
{
    unsigned formats = r->o->formats ? r->o->formats : REPORT_PNG;
    /* shown inline: PNG, else SVG; every format drawn is linked */
    const char *shown = formats & REPORT_PNG ? "png" : formats & REPORT_SVG ? "svg" : NULL;
    fprintf(f, "%s %s (`%s`)\n\n", head, title, stem);
    if (made && shown)
        fprintf(f, "![%s](%s.%s)\n\n", title, stem, shown);
    if (made) {
        static const char *const ext[] = {"png", "pdf", "svg"};
        fprintf(f, "Figure:");
        for (int k = 0; k < 3; k++)
            if (formats & (1u << k))
                fprintf(f, " [%s](%s.%s)", ext[k], stem, ext[k]);
        fprintf(f, "\n\n");
    }
    if (note && note[0])
        fprintf(f, "%s\n\n", note);
    fprintf(f,
            "%s Query: [`queries/%s.sql`](queries/%s.sql); plotted numbers and gnuplot "
            "script: `data/%s.dat`, `data/%s.gp`.\n\n",
            caption, query, query, stem, stem);
}

static void md_plot(const rp *r, FILE *f, int p, const char *caption)
{
    char head[16], stem[64];
    snprintf(head, sizeof head, "## %d.", p + 1);
    snprintf(stem, sizeof stem, "%.*s", (int)strcspn(rp_figures[p].file, "."), rp_figures[p].file);
    rp_md_figure(r, f, head, rp_figures[p].title, stem, r->made[p], r->note[p], caption,
                 rp_figures[p].query);
}

/* Communication by class of the mixture-of-experts and long-context best
 * plans (query comm_class): per hardware, the mean share of each class at
 * the first and the last generation, then the rows of the reference hardware. */
static void md_comm_class(const rp *r, FILE *f)
{
    /* the columns TP, CP, EP, DP, PP of the tables */
    static const char *const cls[] = {"tp_pct", "cp_pct", "ep_pct", "dp_pct", "pp_pct"};
    enum { NC = sizeof cls / sizeof cls[0] };
    const rtab *t = &r->cls;
    const char *ref = rp_hw_name(r, r->ref);
    fprintf(f, "## Communication by class: mixture-of-experts and long-context models\n\n");
    if (t->nrows == 0) {
        fprintf(f, "This run has no fitting plan of a mixture-of-experts model or of sequences "
                   "longer than 8192 tokens (`queries/comm_class.sql`).\n\n");
        return;
    }
    fprintf(f, "The best plan of every mixture-of-experts model and of every sequence longer "
               "than 8192 tokens, its exposed communication split by class, in %% of the "
               "iteration: tensor-parallel collectives (TP), context-parallel K/V transfers "
               "(CP), expert-parallel all-to-alls (EP), data-parallel gradient reduction (DP) "
               "and pipeline transfers (PP); the classes add up to the communication share "
               "(`queries/comm_class.sql`). Mean over these groups, per hardware, at the first "
               "and the last generation:\n\n");
    fprintf(f, "| hardware | gen | groups | comm | TP | CP | EP | DP | PP |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t h = 0; h < r->hwnames.nrows; h++) {
        const char *hw = rp_hw_name(r, h);
        for (int k = 0; k < 2; k++) {
            int gen = k ? r->gen_last : r->gen_first;
            if (k && gen == r->gen_first)
                break;
            double sum[NC + 1] = {0};
            size_t n = 0;
            for (size_t i = 0; i < t->nrows; i++) {
                if (!rtab_is(t, i, "hardware", hw) || (int)rtab_num(t, i, "generation") != gen)
                    continue;
                n++;
                sum[NC] += rtab_num(t, i, "comm_pct");
                for (int c = 0; c < NC; c++)
                    sum[c] += rtab_num(t, i, cls[c]);
            }
            if (n == 0)
                continue;
            fprintf(f, "| %s | %d | %zu | %.1f |", hw, gen, n, sum[NC] / (double)n);
            for (int c = 0; c < NC; c++)
                fprintf(f, " %.1f |", sum[c] / (double)n);
            fprintf(f, "\n");
        }
    }
    fprintf(f,
            "\nOn %s, every generation (plan: tp x cp x ep x pp x dp, micro-batch):\n\n"
            "| model | params | experts | seq | devices | gen | plan | comm | TP | CP | EP | DP | "
            "PP |\n|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n",
            ref);
    for (size_t i = 0; i < t->nrows; i++) {
        if (!rtab_is(t, i, "hardware", ref))
            continue;
        char p[16];
        fmt_params(p, sizeof p, rtab_num(t, i, "params"));
        fprintf(f,
                "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0fx%.0fx%.0fx%.0fx%.0f, mbs %.0f | "
                "%.1f |",
                rtab_str(t, i, "model"), p, rtab_num(t, i, "experts"), rtab_num(t, i, "seq"),
                rtab_num(t, i, "devices"), rtab_num(t, i, "generation"), rtab_num(t, i, "tp"),
                rtab_num(t, i, "cp"), rtab_num(t, i, "ep"), rtab_num(t, i, "pp"),
                rtab_num(t, i, "dp"), rtab_num(t, i, "mbs"), rtab_num(t, i, "comm_pct"));
        for (int c = 0; c < NC; c++)
            fprintf(f, " %.1f |", rtab_num(t, i, cls[c]));
        fprintf(f, "\n");
    }
    fprintf(f, "\n");
}

/* text from the database, fit for one line of markdown (a title, a table
 * cell): control characters (a newline in a spec's name) become spaces and
 * '|' is escaped, so no value can end its line or its cell. Returns out. */
static const char *md_line(char *out, size_t n, const char *text)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p && o + 3 < n; p++) {
        if (*p < 0x20 || *p == 0x7f)
            out[o++] = ' ';
        else if (*p == '|') {
            out[o++] = '\\';
            out[o++] = '|';
        } else
            out[o++] = (char)*p;
    }
    out[o] = '\0';
    return out;
}

void rp_md_run(const rp *r, FILE *f, const rtab *ri)
{
    char a[2 * PATH_MAX], b[2 * PATH_MAX];
    fprintf(f, "| | |\n|---|---|\n");
    fprintf(f, "| database | `%s` |\n", md_line(a, sizeof a, r->o->db));
    fprintf(f, "| spec | `%s` (sha256 %.12s...) |\n",
            md_line(a, sizeof a, rtab_str(ri, 0, "spec_path")), rtab_str(ri, 0, "spec_sha256"));
    fprintf(f,
            "| run | %s; %.0f scenarios, %.0f rows stored (%.0f fit, %.0f out of memory, "
            "%.0f invalid), %.0f filtered out by `where` |\n",
            rtab_str(ri, 0, "status"), rtab_num(ri, 0, "total"), rtab_num(ri, 0, "n_rows"),
            rtab_num(ri, 0, "n_ok"), rtab_num(ri, 0, "n_oom"), rtab_num(ri, 0, "n_invalid"),
            rtab_num(ri, 0, "n_filtered"));
    fprintf(f, "| when | %s - %s, %.0f MPI ranks on %s |\n", rtab_str(ri, 0, "started"),
            rtab_str(ri, 0, "ended"), rtab_num(ri, 0, "ranks"),
            md_line(a, sizeof a, rtab_str(ri, 0, "host")));
    fprintf(f, "| build | ccsweep %s (%s) |\n", rtab_str(ri, 0, "version"),
            md_line(b, sizeof b, rtab_str(ri, 0, "git_rev")));
    fprintf(f, "| hardware evolution | %s |\n", md_line(a, sizeof a, rtab_str(ri, 0, "evolution")));
    fprintf(f, "| where | `%s` |\n\n", md_line(a, sizeof a, rtab_str(ri, 0, "where_expr")));
    if (strcmp(rtab_str(ri, 0, "status"), "complete"))
        fprintf(f,
                "**Note:** this run is %s, not complete: the numbers cover only the "
                "scenarios stored so far.\n\n",
                rtab_str(ri, 0, "status"));
}

/* The title, the run table and how to read the report. */
static void md_head(const rp *r, FILE *f)
{
    const rtab *ri = r->run ? &r->runinfo : &r->srunfo;
    char a[2 * PATH_MAX];
    fprintf(f, "# ccsweep report: %s (run %lld)\n\n", md_line(a, sizeof a, rtab_str(ri, 0, "name")),
            (long long)(r->run ? r->run : r->srun));
    rp_md_run(r, f, ri);
    if (!r->run)
        return;
    fprintf(f,
            "## How to read this report\n\n"
            "- *Communication share*: exposed communication (tensor-parallel collectives "
            "on the critical path, context-parallel K/V transfers not hidden under the "
            "attention, expert-parallel all-to-alls, data-parallel gradient reduction not "
            "hidden under the backward pass, pipeline transfers) divided by the iteration "
            "time.\n"
            "- Every model x hardware generation is shown at two plans, chosen in SQL "
            "(the `plans` CTE of the queries) among the fitting plans with no mitigation "
            "switched on, and compared only at equal model, hardware generation, "
            "devices, global batch and sequence length:\n"
            "  - **best**: the plan the view `plan_rank` ranks first, the highest tokens/s "
            "(ties: lower memory per device) over all tensor, pipeline and data-parallel "
            "plans of the run;\n"
            "  - **TP+DP**: the paper's setting, no pipeline parallelism (pp = 1), the "
            "smallest tensor-parallel degree that fits device memory (memory-forced TP), "
            "then `plan_rank`'s order.\n"
            "- Mitigations are applied to the very same plan (same tp, pp, dp, micro-batch, "
            "...), so their savings are for that plan, not after re-planning.\n"
            "- Plots 2, 3 and 5 and the per-model tables of sections 4, 6 and 7 show one "
            "hardware: "
            "**%s** (`--hw NAME` picks another).\n\n",
            rp_hw_name(r, r->ref));
}

/* The text of every canned query, as run. */
static void md_queries(const rp *r, FILE *f)
{
    fprintf(f,
            "## Queries\n\nEvery number above comes from these queries (also in "
            "`queries/` next to this file and in the source tree as `tools/queries/`), "
            "run on run %lld. Each runs as it is with `sqlite3 DB < FILE` on the latest "
            "run (the latest serving run for `serve_*`), or on another with "
            "`sqlite3 -cmd '.param set :run N' DB < FILE`.\n\n",
            (long long)(r->run ? r->run : r->srun));
    if (r->run && r->srun)
        fprintf(f, "The `serve_*` queries ran on the serving run %lld.\n\n", (long long)r->srun);
    for (size_t i = 0; i < report_query_count(); i++) {
        const report_query *q = report_query_get(i);
        int serve = !strncmp(q->name, "serve_", 6);
        if (serve ? !r->srun : !r->run)
            continue; /* a query of the workload this report does not cover */
        fprintf(f, "### %s (`queries/%s.sql`)\n\n```sql\n", q->title, q->name);
        for (const char *const *l = q->lines; *l; l++)
            fputs(*l, f);
        fprintf(f, "```\n\n");
    }
}

/* The training sections: summary, findings, one section per figure. */
static void md_training(const rp *r, FILE *f)
{
    fprintf(f, "## Summary\n\n");
    md_summary(r, f);
    md_findings(r, f);

    md_plot(r, f, P_COMM,
            "One line per hardware generation; x: parameters (billions, log scale); y: "
            "exposed communication in % of the iteration. Top: best plans; bottom: TP+DP "
            "plans with the memory-forced TP. A model missing from a line has no fitting "
            "plan of that kind.");
    md_plot(r, f, P_BREAKDOWN,
            "Bars per model (ascending size), stacked shares of the iteration that add up "
            "to 100%: computation (with the optimizer step), exposed TP communication, "
            "exposed CP communication, EP all-to-alls, exposed DP communication, pipeline "
            "transfers, pipeline bubble; first and last "
            "generation, best plans (top) and TP+DP plans (bottom).");
    char cap[640];
    snprintf(cap, sizeof cap,
             "Analytic ratio of one layer's forward FLOPs per device to the TP bytes each "
             "device sends in that forward (`results.ccr`, about h/(tp-1) for Megatron "
             "layers): at a fixed tp = %d (dashed) it grows with the hidden size h; at the "
             "memory-forced tp of the TP+DP plan (one line per generation, labels: tp) it "
             "falls as h grows, because the tp needed to fit grows faster than h. "
             "Points with tp = 1 (no TP traffic) are not drawn.",
             r->fixed_tp);
    md_plot(r, f, P_CCR, cap);
    md_plot(r, f, P_DP,
            "Share of the data-parallel gradient communication hidden under the backward "
            "pass (100%: fully overlapped), one line per generation; best plans (top), "
            "TP+DP plans (bottom).");
    md_dp_table(r, f);
    md_plot(r, f, P_MIT,
            "Iteration time saved by each mitigation on the same plan, per model, at the "
            "last generation with mitigation rows; best plans (top), TP+DP plans (bottom). "
            "tp_overlap: TP collectives hidden under their block's GEMMs (max instead of "
            "sum); comm_compress: bytes factor on every collective; innet_reduce: "
            "in-network reduction ((n-1)/n instead of 2(n-1)/n per all-reduce); "
            "net_bw_factor: every link faster.");
    if (r->mit_gen >= 0)
        md_mit_table(r, f);
    md_plot(r, f, P_TP,
            "Smallest tensor-parallel degree that fits device memory, per model (x: "
            "parameters, billions) and generation: with pipeline parallelism allowed (top) "
            "and without (bottom, the paper's setting). Memory capacity grows 2x per "
            "generation under memory-wall, so later generations need less TP.");
    md_tp_table(r, f);
    md_plot(r, f, P_FIXED,
            "The plan each model got at the first generation (best, top; TP+DP, bottom), "
            "kept unchanged on every later generation of the same hardware line: the "
            "paper's view of today's models on future hardware, without re-planning for "
            "the larger memory. One line per generation; x: parameters (billions).");
    md_fixed_table(r, f);
    md_comm_class(r, f);
}

int rp_write_md(rp *r)
{
    int rc = CCS_OK;
    FILE *f = rp_open_out(r, r->dir, "report.md", &rc);
    if (!f)
        return rc;
    md_head(r, f);
    if (r->run)
        md_training(r, f);
    if (r->srun)
        rp_serve_md(r, f);
    md_queries(r, f);
    rc = rp_close_out(r, f, r->dir, "report.md");
    if (!rc && r->log)
        fprintf(r->log, "  %s/report.md\n", r->dir);
    return rc;
}
