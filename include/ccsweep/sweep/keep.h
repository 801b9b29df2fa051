/* keep.h - the spec's keep: rule, best K records per group: a table of
 * groups (the values of the rule's per fields), each holding its K best
 * records by (score, idx), score being the rule's by field (negated for
 * highest first). Offering the same records in any order, or per chunk and
 * then merged, ends with the same table: the order is total (ties go to the
 * lower index), and a chunk's K best per group hold every record of the
 * overall K best that the chunk has. Pure computation: no MPI, no SQLite. */
#ifndef CCSWEEP_KEEP_H
#define CCSWEEP_KEEP_H

#include "ccsweep/sweep/grid.h"
#include "ccsweep/util/xsum.h"

typedef struct ccs_keep ccs_keep;

/* A table for grid g (borrowed), whose spec has a keep rule. max_groups 0:
 * the table grows as groups appear; else it holds at most max_groups groups,
 * allocated here, and keep_offer allocates nothing. NULL when out of memory
 * or the spec has no keep rule. */
ccs_keep *keep_new(const ccs_grid *g, size_t max_groups);
void keep_free(ccs_keep *k);

enum { KEEP_DROPPED = 0, KEEP_KEPT = 1, KEEP_FULL = 2 };

/* Offer rec (a record that passed the where-filter). Under best 0 nothing is
 * kept (KEEP_DROPPED). Returns KEEP_KEPT when
 * it is now among the best of its group; then, when it displaced a record,
 * *out_idx and *out_status (when not NULL) name that record and *displaced is
 * 1, else 0. KEEP_DROPPED when it is not (invalid plans, no score, or worse
 * than the K held); KEEP_FULL when a fixed-size table has no room for its new
 * group (nothing changed); CCS_ENOMEM. */
int keep_offer(ccs_keep *k, const ccs_record *rec, int *displaced, int64_t *out_idx,
               int *out_status);

/* Records held, visited in an unspecified order: slots 0 .. keep_slots(k)-1,
 * of which keep_at returns NULL for the empty ones. */
size_t keep_slots(const ccs_keep *k);
const ccs_record *keep_at(const ccs_keep *k, size_t slot);
/* Records held. */
size_t keep_count(const ccs_keep *k);
/* Forget every group (memory is kept). */
void keep_clear(ccs_keep *k);

/* ---- keep.aggregate: per group, over the records the rule ranks (the ones
 * keep_offer does not drop as invalid, unranked or without a score), their
 * count and per field the count of defined (not NaN) values, their min, max
 * and exact sum. Counts, min and max are exact, the sum too (xsum.h): a
 * table reached by any split of the records into parts, merged in any
 * order, holds the same values bit for bit. */
typedef struct keep_stat {
    int64_t n;       /* defined values */
    double min, max; /* of them (0 when n is 0); -0.0 counts as 0.0 */
    ccs_xsum sum;
} keep_stat;

void keep_stat_zero(keep_stat *s);
/* into += from. */
void keep_stat_merge(keep_stat *into, const keep_stat *from);

typedef struct ccs_agg ccs_agg;

/* An aggregate table for grid g (borrowed), whose keep rule has aggregate
 * fields; max_groups as for keep_new. NULL when out of memory or the rule
 * has no aggregate fields. */
ccs_agg *agg_new(const ccs_grid *g, size_t max_groups);
void agg_free(ccs_agg *a);
/* Count rec (a record that passed the where-filter) in its group: KEEP_KEPT,
 * KEEP_DROPPED when the rule does not rank it, KEEP_FULL (nothing changed)
 * or CCS_ENOMEM. */
int agg_offer(ccs_agg *a, const ccs_record *rec);
/* Add a group's aggregates (scenarios, and spec_keep.n_agg stats) to the
 * group of key: CCS_OK, KEEP_FULL (nothing changed) or CCS_ENOMEM. */
int agg_add_group(ccs_agg *a, const double *key, int64_t scenarios, const keep_stat *stats);
/* into += from, group by group: CCS_OK, KEEP_FULL or CCS_ENOMEM (into then
 * holds part of from). */
int agg_merge(ccs_agg *into, const ccs_agg *from);
/* Groups held, 0 .. agg_groups(a)-1 in an unspecified order: the key
 * (spec_keep.n_per values; model and hardware as spec indices), with the
 * scenario count and the n_agg stats. */
size_t agg_groups(const ccs_agg *a);
const double *agg_group_at(const ccs_agg *a, size_t gi, int64_t *scenarios,
                           const keep_stat **stats);
/* The groups changed since the last agg_clean (or agg_clear), into *groups. */
size_t agg_dirty(const ccs_agg *a, const size_t **groups);
void agg_clean(ccs_agg *a);
/* Forget every group (memory is kept). */
void agg_clear(ccs_agg *a);
/* Group gi packed into buf (agg_pack_max bytes) for another table of the
 * same grid: returns its length. agg_unpack_add adds a packed group at buf
 * (n bytes available) to a, *used its length: agg_add_group's results, or
 * CCS_EINPUT when buf holds no packed group. */
size_t agg_pack(const ccs_agg *a, size_t gi, unsigned char *buf);
size_t agg_pack_max(const ccs_agg *a);
int agg_unpack_add(ccs_agg *a, const unsigned char *buf, size_t n, size_t *used);

#endif
