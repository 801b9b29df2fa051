#!/bin/sh
# migrate.sh - a database of schema version 5 (tests/data/schema5.sql, made by
# the last build that wrote version 5) is migrated in place to version 12, by a
# reader (report) and by run, in one transaction: every row stays as it was,
# the new columns hold what version 5 computed without storing it, and the
# tables end as a new file's. So are ones of version 6, 7, 8, 9, 10 and 11
# (tests/data/schema6.sql .. schema11.sql, made by the last builds
# that wrote them): version 7 added the empty keep.aggregate tables, version 8
# the --detail rows as one region_rows row per scenario, read through the view
# regions as the table of that name was, version 9 the views that derive five
# outputs a new row leaves NULL, version 10 the plans' software stack (NULL,
# the default, in every older plan; the views name it megatron-core), version
# 11 runs.workload and the serving tables (serve_results and its views),
# version 12 the view results with names instead of codes (result_codes is the
# id-level view that results was). A migration that cannot finish changes
# nothing.
cd "$(dirname "$0")/../.." || exit 1
B=./ccsweep
CUR=12 # the schema version of this build
T=$(mktemp -d)
SLEEPER=""
trap '[ -n "$SLEEPER" ] && kill "$SLEEPER" 2>/dev/null; rm -rf "$T"' EXIT
ok() { echo "PASS: $1"; }
bad() { echo "FAIL: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
q() { sqlite3 "$@"; }
# reports VER DB: report on the version-VER file DB (which migrates it) exits 0
reports() {
    $B report --db "$2" --out "$2.rep" >/dev/null 2>"$T/err"; rc=$?
    check "report on a version-$1 database exits 0 (rc $rc: $(head -c 300 "$T/err"))" "[ $rc -eq 0 ]"
}
# loadv VER DB: DB made afresh from the fixture of schema version VER
loadv() { rm -f "$2" "$2-wal" "$2-shm"; q "$2" <"tests/data/schema$1.sql"; }
load() { loadv 5 "$1"; }
V5COLS="rid, key, sr, micro_batches, t_iter, t_iter_lo, t_iter_hi, extrap, t_compute, t_comm,
  t_comm_exposed, t_tp_comm, t_tp_comm_exposed, t_dp_comm, t_dp_comm_exposed, t_pp_comm, t_bubble,
  t_optimizer, comm_fraction, hidden_fraction, mem_weights, mem_grads, mem_optimizer,
  mem_activations, mem_total, model_flops, hw_flops, mfu, tokens_per_s, tp_bytes, dp_bytes,
  pp_bytes, ccr, name"
PLAN5="pid, devices, tp, pp, dp, vpp, mbs, gbs, seq, dtype, sp, zero, recompute, flash_attn,
  tp_overlap, dp_overlap, innet_reduce, comm_compress, net_bw_factor"
MODEL5="model_id, run_id, name, layers, hidden, heads, kv_heads, ffn, vocab, max_pos, seq, gbs,
  gated, bias, tied, params"
# every version-5 value of the database, row by row
snap() {
    q "$1" "SELECT $V5COLS FROM result_rows ORDER BY rid;
            SELECT $PLAN5 FROM plans ORDER BY pid;
            SELECT * FROM cells ORDER BY cid; SELECT * FROM regions;
            SELECT * FROM chunks; SELECT $MODEL5 FROM models; SELECT * FROM hardware;
            SELECT run_id, name, spec_sha256, status, total, n_done, n_rows, n_ok, n_invalid,
              n_oom FROM runs; SELECT * FROM run_inputs; SELECT * FROM sessions;"
}
# the shape of every table and view
shape() {
    q "$1" "SELECT m.type, m.name, p.cid, p.name, p.type, p.\"notnull\", p.dflt_value, p.pk
            FROM sqlite_schema m, pragma_table_info(m.name) p
            WHERE m.type IN ('table', 'view') ORDER BY m.name, p.cid;"
}

load "$T/a.db"
snap "$T/a.db" >"$T/before"
check "the fixture is a version-5 database with its 24 rows" \
    "[ \"\$(q '$T/a.db' 'PRAGMA user_version; SELECT count(*) FROM result_rows')\" = '5
24' ]"

# a reader migrates it once, then reads it
reports 5 "$T/a.db"
check "and leaves it at version $CUR" "[ \"\$(q '$T/a.db' 'PRAGMA user_version')\" = $CUR ]"
snap "$T/a.db" >"$T/after"
check "every version-5 value is unchanged ($(wc -l <"$T/before") lines compared)" \
    "cmp -s '$T/before' '$T/after'"
check "the results view still gives all 24 rows" \
    "[ \"\$(q '$T/a.db' 'SELECT count(*) FROM results_view')\" = 24 ]"
new=$(q "$T/a.db" "SELECT count(*), sum(cp = 1 AND cp_comm = 0 AND ep = 1 AND capacity_factor = 0
    AND pp_first_layers = 0 AND pp_last_layers = 0) FROM plans")
check "migrated plans: cp 1, ring, ep 1, dropless, the stage rule ($new)" \
    "[ '$new' = '12|12' ]"
moe=$(q "$T/a.db" "SELECT count(*) FROM models WHERE experts IS NULL AND top_k IS NULL
    AND shared_experts IS NULL AND moe_ffn IS NULL")
check "migrated models: the expert fields version 5 did not record are NULL ($moe of 2)" \
    "[ '$moe' = 2 ]"
outs=$(q "$T/a.db" "SELECT
    sum(sr & 3 != 1 AND t_cp_comm = 0 AND t_cp_comm_exposed = 0 AND cp_bytes = 0 AND t_ep_comm = 0
        AND ep_bytes = 0 AND abs(hfu - mfu * hw_flops / model_flops) <= 1e-15 * hfu),
    sum(sr & 3 = 1 AND hfu IS NULL AND t_cp_comm IS NULL AND ep_bytes IS NULL),
    count(*) FROM result_rows")
check "migrated outputs: no CP/EP traffic, hfu = mfu x hw_flops / model_flops; NULL when invalid ($outs)" \
    "[ '$outs' = '16|8|24' ]"

# a new file of this build has the same tables and views
$B run tests/data/schema5.yaml --db "$T/new.db" --detail --quiet >/dev/null 2>"$T/err"
shape "$T/new.db" >"$T/shape.new"
shape "$T/a.db" >"$T/shape.mig"
check "a migrated file has the tables and views of a new one ($(wc -l <"$T/shape.new") columns)" \
    "[ -s '$T/shape.new' ] && cmp -s '$T/shape.new' '$T/shape.mig'"
# in this build's rows, too, hfu is mfu x hw_flops / model_flops: the migration's formula
hfu=$(q "$T/new.db" "SELECT count(*) FROM result_rows WHERE sr & 3 != 1 AND
    abs(hfu - mfu * hw_flops / model_flops) <= 1e-12 * hfu")
check "a new run's hfu equals mfu x hw_flops / model_flops ($hfu of 16 rows)" "[ '$hfu' = 16 ]"

# run migrates too, and appends: the old run is kept beside the new one
load "$T/b.db"
snap "$T/b.db" >"$T/before.b"
$B run tests/data/schema5.yaml --db "$T/b.db" --detail --quiet >/dev/null 2>"$T/err"; rc=$?
check "run on a version-5 database exits 0 (rc $rc: $(head -c 300 "$T/err"))" "[ $rc -eq 0 ]"
q "$T/b.db" "SELECT $V5COLS FROM result_rows WHERE rid < 2 << 40 ORDER BY rid" >"$T/run1.after"
head -24 "$T/before.b" >"$T/run1.fixture"
check "run 1 of the fixture is intact after run 2 was added" \
    "cmp -s '$T/run1.fixture' '$T/run1.after'"
# the migrated plans are those this build writes for the same spec, new
# columns included (the plan follows from the spec alone, unlike keys and
# outputs, which move with the catalog and the projection)
PLANCOLS="devices, tp, pp, dp, vpp, mbs, gbs, seq, dtype, sp, zero, recompute, flash_attn,
  tp_overlap, dp_overlap, innet_reduce, comm_compress, net_bw_factor, cp, cp_comm, ep,
  capacity_factor, pp_first_layers, pp_last_layers"
same=$(q "$T/b.db" "SELECT count(*) FROM (SELECT idx, $PLANCOLS FROM result_codes WHERE run_id = 1
    INTERSECT SELECT idx, $PLANCOLS FROM result_codes WHERE run_id = 2)")
check "run 2 has the plans of the migrated run 1, idx by idx ($same of 24)" "[ '$same' = 24 ]"
inv=$(q "$T/b.db" "SELECT count(*) FROM results a JOIN results b ON b.run_id = 2 AND b.idx = a.idx
    WHERE a.run_id = 1 AND a.status = 'invalid' AND b.status = 'invalid' AND a.reason = b.reason")
check "and the same invalid plans with the same reasons ($inv of 8: tp 3 divides no head count)" \
    "[ '$inv' = 8 ]"

# a migration that cannot finish leaves the file as it was
load "$T/c.db"
q "$T/c.db" "ALTER TABLE plans ADD COLUMN ep INTEGER"
snap "$T/c.db" >"$T/before.c"
$B run tests/data/schema5.yaml --db "$T/c.db" --quiet >/dev/null 2>"$T/err"; rc=$?
check "a failing migration is an error naming it (rc $rc: $(head -c 300 "$T/err"))" \
    "[ $rc -ne 0 ] && grep -q 'cannot migrate the database from schema version 5 to $CUR (nothing was changed)' '$T/err' && grep -q 'duplicate column name: ep' '$T/err'"
snap "$T/c.db" >"$T/after.c"
check "and changes nothing: version 5, no cp column, the same rows, the views" \
    "[ \"\$(q '$T/c.db' \"PRAGMA user_version; SELECT count(*) FROM pragma_table_info('plans') WHERE name = 'cp'; SELECT count(*) FROM results_view\")\" = '5
0
24' ] && cmp -s '$T/before.c' '$T/after.c'"

# a file another process is writing is not migrated under it
load "$T/d.db"
sleep 60 &
SLEEPER=$!
q "$T/d.db" "INSERT INTO writer (id, host, pid, started, run_id) VALUES (1, '$(hostname)', $SLEEPER, '2026-01-01T00:00:00Z', 1)"
$B report --db "$T/d.db" --out "$T/rep.d" >/dev/null 2>"$T/err"; rc=$?
check "a version-5 file with a live writer: exit 1 naming it (rc $rc: $(head -c 300 "$T/err"))" \
    "[ $rc -eq 1 ] && grep -q 'cannot migrate' '$T/err' && grep -q \"another ccsweep is writing to this database: pid $SLEEPER\" '$T/err'"
check "and it stays at version 5" "[ \"\$(q '$T/d.db' 'PRAGMA user_version')\" = 5 ]"
kill "$SLEEPER" 2>/dev/null
wait "$SLEEPER" 2>/dev/null
SLEEPER=""

# refused VER TABLE: a version-VER file that already has a table TABLE its
# migration creates: run fails naming it, and the file keeps its version,
# tables and rows
refused() {
    loadv "$1" "$T/bad$1.db"
    q "$T/bad$1.db" "CREATE TABLE $2 (x)"
    snap "$T/bad$1.db" >"$T/before.bad"
    shape "$T/bad$1.db" >"$T/shape.bad"
    $B run tests/data/schema5.yaml --db "$T/bad$1.db" --quiet >/dev/null 2>"$T/err"; rc=$?
    check "a failing migration from version $1 is an error naming it (rc $rc: $(head -c 300 "$T/err"))" \
        "[ $rc -ne 0 ] && grep -q 'cannot migrate the database from schema version $1 to $CUR (nothing was changed)' '$T/err' && grep -q 'table $2 already exists' '$T/err'"
    snap "$T/bad$1.db" >"$T/after.bad"
    shape "$T/bad$1.db" >"$T/shape.bad2"
    check "and changes nothing: version $1, the same tables and rows" \
        "[ \"\$(q '$T/bad$1.db' 'PRAGMA user_version')\" = $1 ] && cmp -s '$T/before.bad' '$T/after.bad' && cmp -s '$T/shape.bad' '$T/shape.bad2'"
}

# values DB SQL: every value snap compares, and SQL's rows
values() { snap "$1"; q "$1" "$2"; }
# cols DB VIEW: the columns of VIEW in DB, comma-separated
cols() { q "$1" "SELECT group_concat(name, ', ') FROM pragma_table_info('$2')"; }
# views DB CODES RCOLS VCOLS: the rows of the id-level view CODES (results up
# to version 11, result_codes from 12) and of results_view, columns RCOLS and
# VCOLS, by rid
views() { q "$1" "SELECT $3 FROM $2 ORDER BY rid; SELECT $4 FROM results_view ORDER BY rid"; }
# migrated VER DB SQL BEFORE: DB's values are those in the file BEFORE, and
# its tables and views a new file's
migrated() {
    values "$2" "$3" >"$T/after.v"
    check "every version-$1 value is unchanged ($(wc -l <"$4") lines compared)" "cmp -s '$4' '$T/after.v'"
    shape "$2" >"$T/shape.v"
    check "a migrated version-$1 file has the tables and views of a new one" \
        "cmp -s '$T/shape.new' '$T/shape.v'"
}

# version 6: every row stays, the keep.aggregate tables are added, empty
# the plans' version-6 columns (version 10 appended stack)
PLAN6="$PLAN5, cp, cp_comm, ep, capacity_factor, pp_first_layers, pp_last_layers"
V6="SELECT * FROM result_rows ORDER BY rid; SELECT $PLAN6 FROM plans ORDER BY pid; SELECT * FROM models"
loadv 6 "$T/f.db"
values "$T/f.db" "$V6" >"$T/before.f"
check "the fixture is a version-6 database with its 24 rows" \
    "[ \"\$(q '$T/f.db' 'PRAGMA user_version; SELECT count(*) FROM result_rows')\" = '6
24' ]"
reports 6 "$T/f.db"
check "and leaves it at version $CUR, with empty keep_groups and keep_axes" \
    "[ \"\$(q '$T/f.db' 'PRAGMA user_version; SELECT count(*) FROM keep_groups; SELECT count(*) FROM keep_axes; SELECT count(*) FROM keep_stats')\" = '$CUR
0
0
0' ]"
migrated 6 "$T/f.db" "$V6" "$T/before.f"
# run migrates too; a failing migration (the table exists already) changes nothing
refused 6 keep_axes
loadv 6 "$T/h.db"
$B run tests/data/schema5.yaml --db "$T/h.db" --quiet >/dev/null 2>"$T/err"; rc=$?
check "run on a version-6 database exits 0 and appends run 2 (rc $rc)" \
    "[ $rc -eq 0 ] && [ \"\$(q '$T/h.db' 'PRAGMA user_version; SELECT count(*) FROM runs')\" = '$CUR
2' ]"

# version 7: the regions rows become one region_rows row per scenario, the
# view regions gives them back row for row, in the table's order
V7="SELECT * FROM result_rows ORDER BY rid; SELECT * FROM keep_groups; SELECT * FROM regions"
loadv 7 "$T/i.db"
values "$T/i.db" "$V7" >"$T/before.i"
scen=$(q "$T/i.db" "SELECT count(*) || '|' || count(DISTINCT idx) FROM regions")
check "the fixture is a version-7 database with regions rows ($scen: rows|scenarios)" \
    "[ \"\$(q '$T/i.db' 'PRAGMA user_version')\" = 7 ] && [ '${scen%%|*}' -gt '${scen##*|}' ] && [ '${scen##*|}' -gt 0 ]"
reports 7 "$T/i.db"
check "and leaves it at version $CUR, regions a view over one region_rows row per scenario" \
    "[ \"\$(q '$T/i.db' \"PRAGMA user_version; SELECT type FROM sqlite_schema WHERE name = 'regions'; SELECT count(*) FROM region_rows\")\" = '$CUR
view
${scen##*|}' ]"
migrated 7 "$T/i.db" "$V7" "$T/before.i" # the regions rows, in order, among them
refused 7 region_rows

# version 8: the stored rows stay as they are and the results view gives the
# same values (the derived outputs are stored in them), through views that
# also derive them for the rows this build writes; a file whose user dropped
# a view migrates too
V8="SELECT * FROM result_rows ORDER BY rid; SELECT * FROM region_rows ORDER BY rid"
loadv 8 "$T/j.db"
values "$T/j.db" "$V8" >"$T/before.j"
# the views' columns before the migration (version 10 adds stack)
RCOLS=$(cols "$T/j.db" results)
VCOLS=$(cols "$T/j.db" results_view)
views "$T/j.db" results "$RCOLS" "$VCOLS" >"$T/view.before.j"
check "the fixture is a version-8 database with its 24 rows and their derived outputs" \
    "[ \"\$(q '$T/j.db' 'PRAGMA user_version; SELECT count(*) FROM result_rows WHERE sr & 3 = 1 OR t_comm IS NOT NULL')\" = '8
24' ]"
reports 8 "$T/j.db"
check "and leaves it at version $CUR" "[ \"\$(q '$T/j.db' 'PRAGMA user_version')\" = $CUR ]"
migrated 8 "$T/j.db" "$V8" "$T/before.j"
views "$T/j.db" result_codes "$RCOLS" "$VCOLS" >"$T/view.after.j"
check "the views give the version-8 values, row by row" "cmp -s '$T/view.before.j' '$T/view.after.j'"
check "and name the default stack for every migrated plan" \
    "[ \"\$(q '$T/j.db' \"SELECT count(*), count(DISTINCT stack), min(stack) FROM results_view; SELECT count(*) FROM plans WHERE stack IS NOT NULL\")\" = '24|1|megatron-core
0' ]"
loadv 8 "$T/k.db"
q "$T/k.db" "DROP VIEW best_plan"
$B report --db "$T/k.db" --out "$T/rep.k" >/dev/null 2>"$T/err"; rc=$?
check "a version-8 file without the view best_plan migrates (rc $rc: $(head -c 300 "$T/err"))" \
    "[ $rc -eq 0 ] && [ \"\$(q '$T/k.db' \"PRAGMA user_version; SELECT count(*) FROM sqlite_schema WHERE name = 'best_plan'\")\" = '$CUR
1' ]"
# version 9: plans gain stack (NULL: the default); every stored value stays,
# the views give the same rows and name the stack; a run appended to the
# file after the migration stores its stacks by name
V9="SELECT * FROM result_rows ORDER BY rid; SELECT * FROM region_rows ORDER BY rid;
    SELECT $PLAN6 FROM plans ORDER BY pid; SELECT * FROM models"
loadv 9 "$T/n.db"
values "$T/n.db" "$V9" >"$T/before.n"
RCOLS=$(cols "$T/n.db" results)
VCOLS=$(cols "$T/n.db" results_view)
views "$T/n.db" results "$RCOLS" "$VCOLS" >"$T/view.before.n"
check "the fixture is a version-9 database with its 24 rows" \
    "[ \"\$(q '$T/n.db' 'PRAGMA user_version; SELECT count(*) FROM result_rows')\" = '9
24' ]"
reports 9 "$T/n.db"
check "and leaves it at version $CUR" "[ \"\$(q '$T/n.db' 'PRAGMA user_version')\" = $CUR ]"
migrated 9 "$T/n.db" "$V9" "$T/before.n"
views "$T/n.db" result_codes "$RCOLS" "$VCOLS" >"$T/view.after.n"
check "the views give the version-9 values, row by row" "cmp -s '$T/view.before.n' '$T/view.after.n'"
check "and name the default stack for every migrated plan" \
    "[ \"\$(q '$T/n.db' \"SELECT count(*), count(DISTINCT stack), min(stack) FROM results_view\")\" = '24|1|megatron-core' ]"
sed 's/^plan:$/plan:\n  stack: [llm-foundry]/' tests/data/schema5.yaml >"$T/stk.yaml"
$B run "$T/stk.yaml" --db "$T/n.db" --quiet >/dev/null 2>"$T/err"; rc=$?
check "a run with plan.stack appended to the migrated file names its stack (rc $rc)" \
    "[ $rc -eq 0 ] && [ \"\$(q '$T/n.db' \"SELECT run_id, stack, count(*) FROM results_view GROUP BY 1, 2 ORDER BY 1\")\" = '1|megatron-core|24
2|llm-foundry|24' ]"

# version 10: runs gain workload (NULL: training) and the serving tables and
# views are added, empty; every stored value and view row stays, and a
# serving run appended to the migrated file lands in serve_results
V10="SELECT * FROM result_rows ORDER BY rid; SELECT * FROM region_rows ORDER BY rid;
    SELECT * FROM plans ORDER BY pid; SELECT * FROM models; SELECT * FROM hardware"
loadv 10 "$T/p.db"
values "$T/p.db" "$V10" >"$T/before.p"
RCOLS=$(cols "$T/p.db" results)
VCOLS=$(cols "$T/p.db" results_view)
views "$T/p.db" results "$RCOLS" "$VCOLS" >"$T/view.before.p"
check "the fixture is a version-10 database with its 24 rows" \
    "[ \"\$(q '$T/p.db' 'PRAGMA user_version; SELECT count(*) FROM result_rows')\" = '10
24' ]"
reports 10 "$T/p.db"
check "and leaves it at version $CUR, runs.workload NULL, serve_results empty" \
    "[ \"\$(q '$T/p.db' 'PRAGMA user_version; SELECT count(*) FROM runs WHERE workload IS NULL; SELECT count(*) FROM serve_results')\" = '$CUR
1
0' ]"
migrated 10 "$T/p.db" "$V10" "$T/before.p"
views "$T/p.db" result_codes "$RCOLS" "$VCOLS" >"$T/view.after.p"
check "the views give the version-10 values, row by row" "cmp -s '$T/view.before.p' '$T/view.after.p'"
printf 'workload: serve\nmodels: llama3-8b\nhardware: h100-sxm\nserve: {isl: 100, osl: 100}\nplan: {tp: [1, 2]}\n' >"$T/sv.yaml"
$B run "$T/sv.yaml" --db "$T/p.db" --quiet 2>"$T/err"; rc=$?
check "a serving run appended to the migrated file (rc $rc: $(head -c 200 "$T/err"))" \
    "[ $rc -eq 0 ] && [ \"\$(q '$T/p.db' \"SELECT run_id, workload, count(*) FROM runs JOIN serve_results USING (run_id) GROUP BY 1\")\" = '2|serve|2' ]"

# version 11: results becomes the view of names (model, hardware, dtype,
# recompute, dp_overlap, status and reason as words, params an integer);
# result_codes is the id-level view results was, row for row, results_view
# stays as it was, results has its values (dp_overlap as the word of its
# code), and a DELETE through results deletes the stored rows
V11="SELECT * FROM result_rows ORDER BY rid; SELECT * FROM region_rows ORDER BY rid;
    SELECT * FROM plans ORDER BY pid; SELECT * FROM models; SELECT * FROM hardware;
    SELECT * FROM serve_results; SELECT * FROM keep_groups"
loadv 11 "$T/s.db"
loadv 11 "$T/s11.db" # left at version 11, to compare with
values "$T/s.db" "$V11" >"$T/before.s"
RCOLS=$(cols "$T/s.db" results)
VCOLS=$(cols "$T/s.db" results_view)
views "$T/s.db" results "$RCOLS" "$VCOLS" >"$T/view.before.s"
check "the fixture is a version-11 database with its 24 rows" \
    "[ \"\$(q '$T/s.db' 'PRAGMA user_version; SELECT count(*) FROM result_rows')\" = '11
24' ]"
reports 11 "$T/s.db"
check "and leaves it at version $CUR" "[ \"\$(q '$T/s.db' 'PRAGMA user_version')\" = $CUR ]"
migrated 11 "$T/s.db" "$V11" "$T/before.s"
views "$T/s.db" result_codes "$RCOLS" "$VCOLS" >"$T/view.after.s"
check "result_codes and results_view give the version-11 rows of results and results_view" \
    "cmp -s '$T/view.before.s' '$T/view.after.s'"
# every column of the version-11 results_view, in results, compared as
# values (IS NOT: REALs bit for bit, NULLs count; params 8030261248.0 and
# 8030261248 are equal), dp_overlap as the word of its code
cond=
for c in $(echo "$VCOLS" | tr -d ,); do
    case $c in
    dp_overlap) cond="$cond OR y.$c IS NOT CASE x.$c WHEN 0 THEN 'none' WHEN 1 THEN 'last-microbatch'
        WHEN 2 THEN 'bucketed' END" ;;
    *) cond="$cond OR x.$c IS NOT y.$c" ;;
    esac
done
diff=$(q "$T/s.db" "ATTACH '$T/s11.db' AS o; SELECT count(*) FROM o.results_view x
    LEFT JOIN main.results y ON y.rid = x.rid WHERE ${cond# OR }")
check "results has every value of the version-11 results_view ($diff of 24 rows differ)" \
    "[ '$diff' = 0 ]"
ids=$(q "$T/s.db" "ATTACH '$T/s11.db' AS o; SELECT count(*) FROM o.results x
    JOIN main.results y ON y.rid = x.rid AND y.run_id = x.run_id AND y.idx = x.idx
    AND y.key = x.key AND y.model_id = x.model_id AND y.hw_id = x.hw_id")
check "and the ids of the version-11 results: run_id, idx, rid, key, model_id, hw_id ($ids of 24)" \
    "[ '$ids' = 24 ]"
typed=$(q "$T/s.db" "SELECT count(*) FROM results WHERE typeof(params) = 'integer'
    AND typeof(devices + tp + pp + dp + vpp + mbs + gbs + seq + generation + cp + ep) = 'integer'
    AND dtype = 'bf16' AND dp_overlap IN ('none', 'last-microbatch', 'bucketed')
    AND status IN ('ok', 'invalid', 'oom') AND model IS NOT NULL AND hardware IS NOT NULL")
check "results: params and the counts integers, codes as words ($typed of 24)" "[ '$typed' = 24 ]"
q "$T/s.db" "DELETE FROM results WHERE status = 'invalid'"
check "DELETE FROM results deletes the stored rows (8 invalid of 24)" \
    "[ \"\$(q '$T/s.db' 'SELECT count(*) FROM result_rows; SELECT count(*) FROM result_codes')\" = '16
16' ]"

# this build's rows leave the derived outputs NULL (test_store's round trip
# checks that the view gives the projected values back bit for bit)
new=$(q "$T/new.db" "SELECT sum(t_comm IS NULL AND comm_fraction IS NULL AND tokens_per_s IS NULL
    AND t_iter_lo IS NULL), count(*) FROM result_rows WHERE sr & 3 != 1")
check "a new row stores no derived output and no band equal to t_iter ($new)" "[ '$new' = '16|16' ]"

# A read-only file of an older version is never written: report reads a copy
# migrated in $TMPDIR (removed afterwards) and says so, the file keeps its
# version and bytes; run refuses it (exit 1, saying why). Read-only here: a
# read-only mount when root (whom permissions do not stop), else no write
# permission on the file and its directory.
RO=$T/ro
mkdir "$RO"
ro_ok=0
if [ "$(id -u)" = 0 ]; then
    if mount -t tmpfs -o size=16m tmpfs "$RO" 2>/dev/null; then
        trap '[ -n "$SLEEPER" ] && kill "$SLEEPER" 2>/dev/null; umount "$RO" 2>/dev/null; rm -rf "$T"' EXIT
        loadv 9 "$RO/old.db" && mount -o remount,ro "$RO" 2>/dev/null && ro_ok=1
    fi
else
    loadv 9 "$RO/old.db" && chmod a-w "$RO/old.db" "$RO" && ro_ok=1
fi
if [ $ro_ok = 1 ]; then
    cp "$RO/old.db" "$T/old.copy"
    mkdir "$T/tmpd"
    TMPDIR=$T/tmpd $B report --db "$RO/old.db" --out "$T/rep.ro" >"$T/out" 2>"$T/err"; rc=$?
    check "report on a read-only version-9 file exits 0 with report.md (rc $rc: $(head -c 300 "$T/err"))" \
        "[ $rc -eq 0 ] && [ -s '$T/rep.ro/report.md' ] && grep -q 'read-only, of schema version 9: reading a migrated copy' '$T/err'"
    check "and the file is left as it was, version 9, nothing beside it" \
        "cmp -s '$RO/old.db' '$T/old.copy' && [ \"\$(ls '$RO')\" = old.db ] && [ \"\$(sqlite3 -readonly '$RO/old.db' 'PRAGMA user_version')\" = 9 ]"
    check "the report names the file, not the copy, and the copy is removed" \
        "grep -q '$RO/old.db' '$T/rep.ro/report.md' && ! grep -q 'ccsweep-migrate' '$T/rep.ro/report.md' '$T/out' && [ -z \"\$(ls -A '$T/tmpd')\" ]"
    $B run tests/data/schema5.yaml --db "$RO/old.db" --quiet >/dev/null 2>"$T/err"; rc=$?
    check "run into the read-only file exits 1 saying it is read-only (rc $rc: $(head -c 300 "$T/err"))" \
        "[ $rc -eq 1 ] && grep -q 'old.db: .*read-only' '$T/err' && cmp -s '$RO/old.db' '$T/old.copy'"
    if [ "$(id -u)" = 0 ]; then umount "$RO"; else chmod u+w "$RO" "$RO/old.db"; fi
else
    echo "SKIP: a read-only old file (no read-only mount or permission here)"
fi

# older versions keep their error
load "$T/e.db"
q "$T/e.db" "PRAGMA user_version = 4"
$B report --db "$T/e.db" --out "$T/rep.e" >/dev/null 2>"$T/err"; rc=$?
check "version 4 is refused, not migrated (rc $rc)" \
    "[ $rc -eq 1 ] && grep -q 'schema version 4, but this ccsweep .* reads version $CUR' '$T/err' && [ \"\$(q '$T/e.db' 'PRAGMA user_version')\" = 4 ]"
exit 0
