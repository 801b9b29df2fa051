#!/bin/sh
# sweep_keep.sh - keep: {best: K, by: FIELD, per: [...]}: the stored rows are
# exactly those an SQL window query picks from the unreduced sweep (K best by
# (by, idx) per group, invalid plans never kept), whatever the rank count and
# chunk size, with the same column values; and a run interrupted by SIGTERM,
# or whose writer (rank 0) is killed with SIGKILL, ends after --resume with
# the same rows.
. tests/integration/sweep_common.inc
need_tools "keep: best-K reduction"
BASE=tests/data/sweep_medium.yaml

# spec_with FILE KEEP [WHERE]: the medium grid with a keep rule (and a filter)
spec_with() {
    cp "$BASE" "$1"
    echo "keep: $2" >>"$1"
    [ -n "${3:-}" ] && echo "where: \"$3\"" >>"$1"
    sed "/^keep:/d" "$1" >"$1.full"
}

# expect DB-FULL K ORDER PARTITION: the window query over the full results
expect() {
    q "$1" "SELECT idx FROM (SELECT idx, row_number() OVER (PARTITION BY $4 ORDER BY $3, idx) AS rk
            FROM result_codes WHERE run_id = 1 AND status != 1) WHERE rk <= $2 ORDER BY idx"
}
# full_rows DB-FULL IDX-FILE: the full run's rows of those indices
full_rows() {
    cols=$(q "$1" "SELECT group_concat(name) FROM pragma_table_info('results') WHERE name NOT IN ('run_id', 'rid')")
    q "$1" "SELECT $cols FROM results WHERE run_id = 1 AND idx IN ($(paste -sd, "$2")) ORDER BY idx"
}
kept_rows() {
    cols=$(q "$1" "SELECT group_concat(name) FROM pragma_table_info('results') WHERE name NOT IN ('run_id', 'rid')")
    q "$1" "SELECT $cols FROM results WHERE run_id = 1 ORDER BY idx"
}

# case LABEL K BY ORDER PARTITION PER [WHERE]
case_keep() {
    label=$1 k=$2 by=$3 order=$4 part=$5 per=$6 where=${7:-}
    spec_with "$TMP/k.yaml" "{best: $k, by: $by, per: [$per]}" "$where"
    rm -f "$TMP"/full.db*
    $BIN run "$TMP/k.yaml.full" --db "$TMP/full.db" --quiet >/dev/null 2>&1
    expect "$TMP/full.db" "$k" "$order" "$part" >"$TMP/want.idx"
    full_rows "$TMP/full.db" "$TMP/want.idx" >"$TMP/want.rows"
    n=$(wc -l <"$TMP/want.idx")
    for run in "1 0" "2 0" "4 97" "2 5000" "1 13"; do
        set -- $run
        rm -f "$TMP"/k.db*
        if [ "$2" = 0 ]; then ch=""; else ch="--chunk $2"; fi
        $MPIRUN -n "$1" $BIN run "$TMP/k.yaml" --db "$TMP/k.db" --quiet $ch >/dev/null 2>&1
        q "$TMP/k.db" "SELECT idx FROM results ORDER BY idx" >"$TMP/got.idx"
        kept_rows "$TMP/k.db" >"$TMP/got.rows"
        check "$label: $1 rank(s)${ch:+, $ch}: the $n rows of the SQL window query, same values" \
            sh -c "[ $n -gt 0 ] && cmp -s '$TMP/want.idx' '$TMP/got.idx' && cmp -s '$TMP/want.rows' '$TMP/got.rows' && [ \"\$(sqlite3 '$TMP/k.db' 'SELECT status || n_rows FROM runs')\" = complete$n ]"
    done
}

case_keep "best 1 by t_iter per model, hardware, generation" 1 t_iter t_iter \
    "model_id, hw_id" "model, hardware, generation"
case_keep "best 3 by -mfu per hardware, devices, tp; fits" 3 -mfu "mfu DESC" \
    "hw_id, devices, tp" "hardware, generation, devices, tp" "fits"

# keep: {best: K} ranks by the one definition of best (best.h) in its group:
# the stored rows are the full run's plan_rank ranks 1..K
spec_with "$TMP/kb.yaml" "{best: 2}"
rm -f "$TMP"/full.db* "$TMP"/kb.db*
$BIN run "$TMP/kb.yaml.full" --db "$TMP/full.db" --quiet >/dev/null 2>&1
q "$TMP/full.db" "SELECT idx FROM plan_rank WHERE run_id = 1 AND rk <= 2 ORDER BY idx" >"$TMP/want.idx"
full_rows "$TMP/full.db" "$TMP/want.idx" >"$TMP/want.rows"
n=$(wc -l <"$TMP/want.idx")
for run in "1 0" "2 97"; do
    set -- $run
    rm -f "$TMP"/kb.db*
    if [ "$2" = 0 ]; then ch=""; else ch="--chunk $2"; fi
    $MPIRUN -n "$1" $BIN run "$TMP/kb.yaml" --db "$TMP/kb.db" --quiet $ch >/dev/null 2>&1
    q "$TMP/kb.db" "SELECT idx FROM results ORDER BY idx" >"$TMP/got.idx"
    kept_rows "$TMP/kb.db" >"$TMP/got.rows"
    check "best 2 by best (the default): $1 rank(s)${ch:+, $ch}: plan_rank's first $n rows of each group" \
        sh -c "[ $n -gt 0 ] && cmp -s '$TMP/want.idx' '$TMP/got.idx' && cmp -s '$TMP/want.rows' '$TMP/got.rows'"
done
check "keep: {best: 2} leaves best_plan as it is in the full run" \
    [ "$(q "$TMP/kb.db" "SELECT group_concat(idx) FROM (SELECT idx FROM best_plan ORDER BY idx)")" = \
      "$(q "$TMP/full.db" "SELECT group_concat(idx) FROM (SELECT idx FROM best_plan ORDER BY idx)")" ]

# SIGTERM mid-run, then --resume: the same rows as an uninterrupted run
spec_with "$TMP/r.yaml" "{best: 2, by: t_iter, per: [model, hardware, generation, devices, tp]}"
sed 's/^generations: .*/generations: [0, 1, 2, 3, 4, 5, 6, 7]/; s/^  mbs: .*/  mbs: [1, 2, 4, 8]/' "$TMP/r.yaml" >"$TMP/r2.yaml"
$MPIRUN -n 2 $BIN run "$TMP/r2.yaml" --db "$TMP/ref.db" --quiet >/dev/null 2>&1
kept_rows "$TMP/ref.db" >"$TMP/ref.rows"
CCSWEEP_TEST_CHUNK_DELAY_US=20000 $MPIRUN -n 2 $BIN run "$TMP/r2.yaml" --db "$TMP/int.db" \
    --quiet --chunk 500 >/dev/null 2>&1 & # 20 ms per chunk: stopped mid-way
job=$!
if wait_done "$TMP/int.db"; then
    kill -TERM $job
    wait $job
    st=$(q "$TMP/int.db" "SELECT status FROM runs")
    if [ "$st" = complete ]; then
        skip "keep: resume (the sweep finished before SIGTERM)"
    else
        $MPIRUN -n 3 $BIN run "$TMP/r2.yaml" --db "$TMP/int.db" --resume --quiet >/dev/null 2>&1
        kept_rows "$TMP/int.db" >"$TMP/int.rows"
        check "keep: interrupted ($st), resumed on 3 ranks: the rows of an uninterrupted run" \
            sh -c "[ \"\$(sqlite3 '$TMP/int.db' 'SELECT status FROM runs')\" = complete ] && cmp -s '$TMP/ref.rows' '$TMP/int.rows'"
    fi
else
    kill $job 2>/dev/null; wait $job
    fail "keep: no batch was committed within 30 s"
fi

# SIGKILL of the writer (rank 0) mid-run, then --resume: the same rows
$MPIRUN -n 2 $BIN run "$TMP/r2.yaml" --db "$TMP/kill.db" --quiet --chunk 500 >/dev/null 2>&1 &
job=$!
if wait_done "$TMP/kill.db"; then
    pid=""
    for p in $(pgrep -f "ccsweep run $TMP/r2.yaml --db $TMP/kill.db"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=0" && pid=$p
    done
    [ -n "$pid" ] && kill -KILL "$pid"
    wait $job
    st=$(q "$TMP/kill.db" "SELECT status FROM runs")
    if [ -z "$pid" ] || [ "$st" = complete ]; then
        skip "keep: SIGKILL of the writer (the sweep finished first)"
    else
        $MPIRUN -n 2 $BIN run "$TMP/r2.yaml" --db "$TMP/kill.db" --resume --quiet >/dev/null 2>&1
        kept_rows "$TMP/kill.db" >"$TMP/kill.rows"
        check "keep: writer killed ($st), resumed: the rows of an uninterrupted run" \
            sh -c "[ \"\$(sqlite3 '$TMP/kill.db' 'SELECT status FROM runs')\" = complete ] && cmp -s '$TMP/ref.rows' '$TMP/kill.rows'"
    fi
else
    kill $job 2>/dev/null; wait $job
    fail "keep: no batch was committed within 30 s (SIGKILL test)"
fi

# a bad rule is an input error naming the field
printf 'models: [llama3-8b]\nhardware: [a100-80g]\nplan: {devices: 8}\nkeep: {best: 2, by: nonsense}\n' >"$TMP/bad.yaml"
$BIN run "$TMP/bad.yaml" --db "$TMP/bad.db" --quiet >"$TMP/bad.out" 2>&1; rc=$?
check "keep: an unknown by field exits 1 naming it" \
    sh -c "[ $rc -eq 1 ] && grep -q \"keep.by': unknown field 'nonsense'\" '$TMP/bad.out'"
