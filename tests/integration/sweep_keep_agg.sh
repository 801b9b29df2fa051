#!/bin/sh
# sweep_keep_agg.sh - keep: {..., aggregate: [FIELDS]}: per group, the stored
# count of the scenarios the rule ranks and each field's count, min, max and
# sum are an SQL GROUP BY over the unreduced sweep with the same where filter
# (counts, min and max exactly, sum and mean within 1e-12 relative: SQL sums
# in doubles, ccsweep exactly); the same bytes whatever the rank count, chunk
# size and writer count, with best 0 (no rows kept), and after a SIGKILL of
# the writer or a SIGTERM, resumed; under keep.by best, the comm_share view's
# per-group counts and comm_fraction range; bad rules are input errors.
. tests/integration/sweep_common.inc
need_tools "keep: aggregates"
BASE=tests/data/sweep_medium.yaml
FIELDS="t_iter, comm_fraction, mfu"

# spec_with FILE KEEP: the medium grid with a filter and a keep rule; FILE.full
# without the rule
spec_with() {
    cp "$BASE" "$1"
    echo 'where: "tp <= 4"' >>"$1"
    cp "$1" "$1.full"
    echo "keep: $2" >>"$1"
}

# stats DB: every aggregate row, bit for bit (the exact sum included)
stats() {
    q "$1" "SELECT field, g0, g1, g2, g3, g4, g5, g6, g7, scenarios, n, quote(min), quote(max),
            quote(sum), hex(sum_exact) FROM keep_groups WHERE run_id = 1 ORDER BY field, gkey"
}

# versus DB FULL: groups of DB that match FULL's GROUP BY, and how many each has
versus() {
    sel=""
    for f in t_iter comm_fraction mfu; do
        [ -n "$sel" ] && sel="$sel UNION ALL "
        sel="$sel SELECT '$f' AS field, model, hardware, generation, devices, count(*) AS c,
            count($f) AS n, min($f) AS mn, max($f) AS mx, sum($f) AS s FROM f.results_view
            WHERE run_id = 1 AND status != 'invalid' GROUP BY 2, 3, 4, 5"
    done
    q "$1" "ATTACH '$2' AS f; WITH w AS ($sel)
        SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM keep_stats WHERE run_id = 1),
          sum(k.scenarios = w.c AND k.n = w.n AND k.min IS w.mn AND k.max IS w.mx
              AND abs(k.sum - w.s) <= 1e-12 * abs(w.s)
              AND abs(k.mean - w.s / w.n) <= 1e-12 * abs(w.s / w.n))
        FROM w JOIN keep_stats k ON k.run_id = 1 AND k.field = w.field AND k.g0 = w.model
          AND k.g1 = w.hardware AND k.g2 = w.generation AND k.g3 = w.devices"
}

spec_with "$TMP/k.yaml" "{best: 1, by: t_iter, per: [model, hardware, generation, devices], aggregate: [$FIELDS]}"
$BIN run "$TMP/k.yaml.full" --db "$TMP/full.db" --quiet >/dev/null 2>&1
$BIN run "$TMP/k.yaml" --db "$TMP/ref.db" --quiet >/dev/null 2>&1
v=$(versus "$TMP/ref.db" "$TMP/full.db")
set -- $(echo "$v" | tr '|' ' ')
check "1 rank: the aggregates of all $1 groups x fields equal the SQL GROUP BY over the full sweep ($v)" \
    sh -c "[ '${1:-0}' -gt 0 ] && [ '$1' = '$2' ] && [ '$1' = '${3:-}' ]"
check "the axes are named in keep_axes" \
    [ "$(q "$TMP/ref.db" "SELECT group_concat(axis, ',') FROM (SELECT axis FROM keep_axes WHERE run_id = 1 ORDER BY pos)")" = "model,hardware,generation,devices" ]
stats "$TMP/ref.db" >"$TMP/ref.stats"
for run in "2 0" "4 97" "2 5000" "1 13" "3 0 --writers 2" "4 41 --writers 3"; do
    set -- $run
    np=$1 ch=$2
    shift 2
    rm -f "$TMP"/k.db*
    if [ "$ch" = 0 ]; then chopt=""; else chopt="--chunk $ch"; fi
    $MPIRUN -n "$np" $BIN run "$TMP/k.yaml" --db "$TMP/k.db" --quiet $chopt "$@" >/dev/null 2>&1
    stats "$TMP/k.db" >"$TMP/got.stats"
    check "$np rank(s)${chopt:+, $chopt}${1:+, $*}: the same aggregate rows, bit for bit" \
        sh -c "[ \"\$(sqlite3 '$TMP/k.db' 'SELECT status FROM runs')\" = complete ] && cmp -s '$TMP/ref.stats' '$TMP/got.stats'"
done

# best 0: the aggregates only
spec_with "$TMP/z.yaml" "{best: 0, by: t_iter, per: [model, hardware, generation, devices], aggregate: [$FIELDS]}"
$MPIRUN -n 2 $BIN run "$TMP/z.yaml" --db "$TMP/z.db" --quiet --chunk 500 >/dev/null 2>&1
stats "$TMP/z.db" >"$TMP/z.stats"
check "best 0: no result row, the same aggregate rows" \
    sh -c "[ \"\$(sqlite3 '$TMP/z.db' 'SELECT count(*) FROM result_rows; SELECT status || n_rows FROM runs')\" = '0
complete0' ] && cmp -s '$TMP/ref.stats' '$TMP/z.stats'"

# keep.by best: the groups and plans of best.h, as the comm_share view counts them
spec_with "$TMP/b.yaml" "{best: 1, aggregate: [comm_fraction, hidden_fraction]}"
$MPIRUN -n 2 $BIN run "$TMP/b.yaml" --db "$TMP/b.db" --quiet --chunk 300 >/dev/null 2>&1
v=$(q "$TMP/b.db" "ATTACH '$TMP/full.db' AS f;
    SELECT (SELECT count(*) FROM f.comm_share), (SELECT count(*) FROM keep_stats WHERE field = 'comm_fraction'),
      sum(k.scenarios = c.plans AND k.min IS c.comm_fraction_min AND k.max IS c.comm_fraction_max
          AND abs(k.mean - c.comm_fraction_avg) <= 1e-12 * c.comm_fraction_avg
          AND abs(h.mean - c.hidden_fraction_avg) <= 1e-12 * abs(c.hidden_fraction_avg))
    FROM f.comm_share c JOIN keep_stats k ON k.field = 'comm_fraction' AND k.g0 = c.model
      AND k.g1 = c.hardware AND k.g2 = c.generation AND k.g3 = c.devices AND k.g4 = c.gbs AND k.g5 = c.seq
    JOIN keep_stats h ON h.field = 'hidden_fraction' AND h.g0 = k.g0 AND h.g1 = k.g1
      AND h.g2 = k.g2 AND h.g3 = k.g3 AND h.g4 = k.g4 AND h.g5 = k.g5")
set -- $(echo "$v" | tr '|' ' ')
check "keep.by best: per best.h group, the plans and comm_fraction range of comm_share ($v)" \
    sh -c "[ '${1:-0}' -gt 0 ] && [ '$1' = '$2' ] && [ '$1' = '${3:-}' ]"

# SIGKILL of the writer (rank 0), or SIGTERM, mid-run, then --resume
spec_with "$TMP/r.yaml" "{best: 2, by: t_iter, per: [model, hardware, generation, devices, tp], aggregate: [$FIELDS]}"
sed 's/^generations: .*/generations: [0, 1, 2, 3, 4, 5, 6, 7]/; s/^  mbs: .*/  mbs: [1, 2, 4, 8]/' "$TMP/r.yaml" >"$TMP/r2.yaml"
$MPIRUN -n 2 $BIN run "$TMP/r2.yaml" --db "$TMP/rref.db" --quiet >/dev/null 2>&1
stats "$TMP/rref.db" >"$TMP/rref.stats"
for how in KILL TERM; do
    rm -f "$TMP"/i.db*
    CCSWEEP_TEST_CHUNK_DELAY_US=20000 $MPIRUN -n 2 $BIN run "$TMP/r2.yaml" --db "$TMP/i.db" \
        --quiet --chunk 500 >/dev/null 2>&1 & # 20 ms per chunk: stopped mid-way
    job=$!
    if ! wait_done "$TMP/i.db"; then
        kill $job 2>/dev/null; wait $job
        fail "SIG$how: no batch was committed within 30 s"
        continue
    fi
    if [ $how = KILL ]; then
        pid=$(rank_pid "$TMP/i.db" 0)
        [ -n "$pid" ] && kill -KILL "$pid"
    else
        kill -TERM $job
    fi
    wait $job
    st=$(q "$TMP/i.db" "SELECT status FROM runs")
    if [ "$st" = complete ]; then
        skip "SIG$how: the sweep finished first"
        continue
    fi
    part=$(q "$TMP/i.db" "SELECT (SELECT sum(hi - lo) FROM chunks WHERE run_id = 1) || '|' ||
        (SELECT sum(scenarios) FROM keep_groups WHERE field = 't_iter')")
    $MPIRUN -n 3 $BIN run "$TMP/r2.yaml" --db "$TMP/i.db" --resume --quiet >/dev/null 2>&1
    stats "$TMP/i.db" >"$TMP/i.stats"
    check "SIG$how mid-run ($st; scenarios done|counted: $part), resumed on 3 ranks: the aggregate rows of an uninterrupted run" \
        sh -c "[ \"\$(sqlite3 '$TMP/i.db' 'SELECT status FROM runs')\" = complete ] && cmp -s '$TMP/rref.stats' '$TMP/i.stats'"
done

# rank 0 killed right after the first shard's merge committed: the resume
# merges that shard again, its aggregates must not count twice
rm -f "$TMP"/m.db*
$MPIRUN -n 4 -x CCSWEEP_TEST_KILL_AFTER_MERGE=1 $BIN run "$TMP/k.yaml" --db "$TMP/m.db" --quiet --writers 4 >/dev/null 2>&1
$MPIRUN -n 2 $BIN run "$TMP/k.yaml" --db "$TMP/m.db" --resume --quiet >/dev/null 2>&1
stats "$TMP/m.db" >"$TMP/m.stats"
check "killed after a shard's merge, resumed: the aggregate rows of an uninterrupted run" \
    sh -c "[ \"\$(sqlite3 '$TMP/m.db' 'SELECT status FROM runs')\" = complete ] && cmp -s '$TMP/ref.stats' '$TMP/m.stats'"

# bad rules: exit 1 naming the field, the line and what was expected
bad() { # bad LABEL KEEP PATTERN
    printf 'models: [llama3-8b]\nhardware: [a100-80g]\nplan: {devices: 8}\nkeep: %s\n' "$2" >"$TMP/bad.yaml"
    $BIN run "$TMP/bad.yaml" --db "$TMP/bad.db" --quiet >"$TMP/bad.out" 2>&1; rc=$?
    check "$1: exit 1 ($rc), '$(head -c 200 "$TMP/bad.out")'" \
        sh -c "[ $rc -eq 1 ] && grep -q -- \"$3\" '$TMP/bad.out' && [ ! -e '$TMP/bad.db' ]"
}
bad "an unknown aggregate field" "{best: 1, by: t_iter, aggregate: [t_iter, nonsense]}" \
    "bad.yaml:4:.*field 'keep.aggregate': expected a field such as t_iter, comm_fraction or mfu, got 'nonsense'"
bad "a field listed twice" "{by: t_iter, aggregate: [mfu, mfu]}" \
    "bad.yaml:4:.*field 'keep.aggregate': 'mfu' is listed twice"
bad "an empty list" "{by: t_iter, aggregate: []}" \
    "bad.yaml:4:.*field 'keep.aggregate': expected a list of 1 to 8 fields"
bad "best 0 without aggregate" "{best: 0, by: t_iter}" \
    "bad.yaml:4:.*field 'keep.best': expected 1 to 1000 plans per group (0 only with keep.aggregate)"
bad "best -1 with aggregate" "{best: -1, by: t_iter, aggregate: [mfu]}" \
    "bad.yaml:4:.*field 'keep.best': expected 0 (the aggregates only) to 1000 plans per group"
