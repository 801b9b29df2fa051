/* store_keep.c - keep.aggregate: one keep_groups row per group and field,
 * stored in the batch transaction, read back on resume, and added up when a
 * shard is merged (exact sums, xsum.h). */
#include "store_int.h"

#include <math.h>
#include <string.h>

/* One field of a group's aggregates, replacing what the file held. */
static const char *const keep_put_sql =
    "INSERT OR REPLACE INTO main.keep_groups (run_id, gkey, field, g0, g1, g2, g3, g4, g5, g6, "
    "g7, scenarios, n, min, max, sum, sum_exact) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

/* A readable group value: model and hardware by name, whole numbers as
 * integers (as the results columns hold them), others as reals. */
static void bind_axis(ccs_store *st, sqlite3_stmt *q, int i, int id, double v)
{
    const ccs_spec *sp = grid_spec(st->g);
    if (id == SPEC_PER_MODEL)
        sqlite3_bind_text(q, i, spec_model(sp, (size_t)v)->name, -1, SQLITE_STATIC);
    else if (id == SPEC_PER_HW)
        sqlite3_bind_text(q, i, spec_hw(sp, (size_t)v)->name, -1, SQLITE_STATIC);
    else if (v == floor(v) && fabs(v) < 0x1p53)
        sqlite3_bind_int64(q, i, (int64_t)v);
    else
        sqlite3_bind_double(q, i, v);
}

/* Bind a field's aggregates from i on: n, min, max, sum, sum_exact. */
static void bind_stat(sqlite3_stmt *q, int i, const keep_stat *f)
{
    unsigned char enc[XSUM_ENCODED_MAX];
    size_t len = xsum_encode(&f->sum, enc);
    sqlite3_bind_int64(q, i, f->n);
    if (f->n) {
        sqlite3_bind_double(q, i + 1, f->min);
        sqlite3_bind_double(q, i + 2, f->max);
        sqlite3_bind_double(q, i + 3, xsum_value(&f->sum));
    } else {
        for (int k = 1; k <= 3; k++)
            sqlite3_bind_null(q, i + k);
    }
    sqlite3_bind_blob(q, i + 4, enc, (int)len, SQLITE_TRANSIENT);
}

int store_keep_group(ccs_store *st, const double *key, int64_t scenarios, const keep_stat *stats,
                     ccs_err *err)
{
    const spec_keep *rule = spec_keep_rule(grid_spec(st->g));
    if (sti_begin(st, err))
        return CCS_EIO;
    if (!st->put_group &&
        sqlite3_prepare_v2(st->db, keep_put_sql, -1, &st->put_group, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "preparing to store the keep aggregates");
    unsigned char gkey[8 * SPEC_KEEP_PER_MAX];
    for (int i = 0; i < rule->n_per; i++) {
        uint64_t w;
        memcpy(&w, &key[i], sizeof w);
        ccs_put_le64(gkey + 8 * i, w);
    }
    sqlite3_stmt *q = st->put_group;
    for (int f = 0; f < rule->n_agg; f++) {
        sqlite3_bind_int64(q, 1, st->run_id);
        sqlite3_bind_blob(q, 2, gkey, 8 * rule->n_per, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, expr_field_name(rule->agg[f]), -1, SQLITE_STATIC);
        for (int i = 0; i < SPEC_KEEP_PER_MAX; i++) {
            if (i < rule->n_per)
                bind_axis(st, q, 4 + i, rule->per[i], key[i]);
            else
                sqlite3_bind_null(q, 4 + i);
        }
        sqlite3_bind_int64(q, 12, scenarios);
        bind_stat(q, 13, &stats[f]);
        if (sti_write_step(st, q, err, "storing the keep aggregates"))
            return CCS_EIO;
    }
    return CCS_OK;
}

/* A stored field's aggregates from column i on (n, min, max, sum_exact);
 * -1 when sum_exact is not an exact sum. */
static int read_stat(sqlite3_stmt *s, int i, keep_stat *f)
{
    keep_stat_zero(f);
    f->n = sqlite3_column_int64(s, i);
    if (f->n) {
        f->min = sqlite3_column_double(s, i + 1);
        f->max = sqlite3_column_double(s, i + 2);
    }
    const unsigned char *b = sqlite3_column_blob(s, i + 3);
    size_t n = (size_t)sqlite3_column_bytes(s, i + 3);
    return b && xsum_decode(&f->sum, b, n) == n ? 0 : -1;
}

int store_each_keep_group(ccs_store *st,
                          int (*cb)(const double *key, int64_t scenarios, const keep_stat *stats,
                                    void *ctx),
                          void *ctx, ccs_err *err)
{
    const spec_keep *rule = spec_keep_rule(grid_spec(st->g));
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT gkey, field, scenarios, n, min, max, sum_exact FROM "
                           "keep_groups WHERE run_id = ? ORDER BY gkey",
                           -1, &s, NULL) != SQLITE_OK)
        return sti_fail_db(st, err, "reading the keep aggregates");
    sqlite3_bind_int64(s, 1, st->run_id);
    keep_stat stats[SPEC_KEEP_AGG_MAX];
    double key[SPEC_KEEP_PER_MAX] = {0};
    int64_t scenarios = 0;
    int have = 0, rc = CCS_OK; /* bit f: field f of the group in key was read */
    size_t klen = 8 * (size_t)rule->n_per;
    while (rc == CCS_OK) {
        int r = sqlite3_step(s), row = r == SQLITE_ROW;
        if (!row && r != SQLITE_DONE) {
            rc = sti_fail_db(st, err, "reading the keep aggregates");
            break;
        }
        double k[SPEC_KEEP_PER_MAX] = {0};
        if (row && (size_t)sqlite3_column_bytes(s, 0) != klen) {
            ccs_err_set(err, "%s: run %lld: a keep_groups key of %d bytes, expected %zu", st->path,
                        (long long)st->run_id, sqlite3_column_bytes(s, 0), klen);
            rc = CCS_EIO;
            break;
        }
        const unsigned char *gk = row ? sqlite3_column_blob(s, 0) : NULL;
        for (int i = 0; gk && i < rule->n_per; i++) {
            uint64_t w = ccs_get_le64(gk + 8 * i);
            memcpy(&k[i], &w, sizeof w);
        }
        if (have && (!row || memcmp(k, key, klen))) { /* the group in key is complete */
            if (have != (1 << rule->n_agg) - 1) {
                ccs_err_set(err, "%s: run %lld: keep_groups lacks fields of a group", st->path,
                            (long long)st->run_id);
                rc = CCS_EIO;
                break;
            }
            if ((rc = cb(key, scenarios, stats, ctx)))
                break;
            have = 0;
        }
        if (!row)
            break;
        memcpy(key, k, sizeof key);
        const char *field = (const char *)sqlite3_column_text(s, 1);
        int f = 0;
        while (f < rule->n_agg && (!field || strcmp(field, expr_field_name(rule->agg[f]))))
            f++;
        if (f == rule->n_agg || read_stat(s, 3, &stats[f])) {
            ccs_err_set(err,
                        "%s: run %lld: keep_groups holds a field '%s' or an exact sum "
                        "that keep.aggregate of the spec does not give",
                        st->path, (long long)st->run_id, field ? field : "?");
            rc = CCS_EIO;
            break;
        }
        scenarios = sqlite3_column_int64(s, 2);
        have |= 1 << f;
    }
    sqlite3_finalize(s);
    return rc;
}

/* Add the shard's keep aggregates to this file's, group and field by field
 * (exact sums: the result does not depend on the order of the shards). */
int sti_merge_keep_groups(ccs_store *st, ccs_err *err)
{
    static const char *const sel =
        "SELECT s.gkey, s.field, s.g0, s.g1, s.g2, s.g3, s.g4, s.g5, s.g6, s.g7, "
        "s.scenarios + coalesce(m.scenarios, 0), s.n, s.min, s.max, s.sum_exact, m.n, m.min, "
        "m.max, m.sum_exact FROM shard.keep_groups s LEFT JOIN main.keep_groups m ON m.run_id = "
        "s.run_id AND m.gkey = s.gkey AND m.field = s.field WHERE s.run_id = ?";
    sqlite3_stmt *s = NULL, *q = NULL;
    if (sqlite3_prepare_v2(st->db, sel, -1, &s, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, keep_put_sql, -1, &q, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return sti_fail_db(st, err, "merging the keep aggregates");
    }
    sqlite3_bind_int64(s, 1, st->run_id);
    int rc = CCS_OK, r;
    while (rc == CCS_OK && (r = sqlite3_step(s)) == SQLITE_ROW) {
        keep_stat a, b;
        if (read_stat(s, 11, &a) ||
            (sqlite3_column_type(s, 18) != SQLITE_NULL && read_stat(s, 15, &b))) {
            ccs_err_set(err, "%s: a keep_groups row of the shard has a damaged exact sum",
                        st->path);
            rc = CCS_EIO;
            break;
        }
        if (sqlite3_column_type(s, 18) != SQLITE_NULL)
            keep_stat_merge(&a, &b);
        sqlite3_bind_int64(q, 1, st->run_id);
        for (int i = 0; i < 10; i++)
            sqlite3_bind_value(q, 2 + i, sqlite3_column_value(s, i));
        sqlite3_bind_int64(q, 12, sqlite3_column_int64(s, 10));
        bind_stat(q, 13, &a);
        rc = sti_step_done(st, q, err, "merging the keep aggregates");
    }
    if (rc == CCS_OK && r != SQLITE_DONE)
        rc = sti_fail_db(st, err, "merging the keep aggregates");
    sqlite3_finalize(s);
    sqlite3_finalize(q);
    return rc;
}
