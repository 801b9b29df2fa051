/* keep.h - the spec's keep: rule, best K records per group: a table of
 * groups (the values of the rule's per fields), each holding its K best
 * records by (score, idx), score being the rule's by field (negated for
 * highest first). Offering the same records in any order, or per chunk and
 * then merged, ends with the same table: the order is total (ties go to the
 * lower index), and a chunk's K best per group hold every record of the
 * overall K best that the chunk has. Pure computation: no MPI, no SQLite. */
#ifndef CCSWEEP_KEEP_H
#define CCSWEEP_KEEP_H

#include "ccsweep/grid.h"

typedef struct ccs_keep ccs_keep;

/* A table for grid g (borrowed), whose spec has a keep rule. max_groups 0:
 * the table grows as groups appear; else it holds at most max_groups groups,
 * allocated here, and keep_offer allocates nothing. NULL when out of memory
 * or the spec has no keep rule. */
ccs_keep *keep_new(const ccs_grid *g, size_t max_groups);
void keep_free(ccs_keep *k);

enum { KEEP_DROPPED = 0, KEEP_KEPT = 1, KEEP_FULL = 2 };

/* Offer rec (a record that passed the where-filter). Returns KEEP_KEPT when
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

#endif
