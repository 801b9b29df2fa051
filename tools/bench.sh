#!/bin/sh
# bench.sh - 'make bench': how fast the engine sweeps, against the raw SQLite
# insert rate that bounds it. Prints numbers; asserts nothing about timing.
#   1. projections/s on one core (decode + project + filter, no output)
#   2. raw insert rate of the same rows (store_put of precomputed rows, no
#      projection, no MPI; batches of 10k rows, WAL, synchronous=NORMAL)
#   3. end-to-end sweep rate with 1 and 2 ranks, and its ratio to (2)
#   4. peak RSS of rank 0 for a 100k and a 10M scenario sweep
set -u
cd "$(dirname "$0")/.." || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
SPEC=sweeps/default.yaml
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ccsweep-bench-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
B=build/tools/sweepbench
field() { sed -n "s/^$1 \([0-9]*\).*/\1/p"; }

echo "== ccsweep engine benchmark ($(nproc) cores, $(sqlite3 --version | cut -d' ' -f1) sqlite3 CLI)"
echo "-- $SPEC"
proj=$($B project $SPEC)
echo "projection, 1 core:          $proj"
ins=$($B insert $SPEC "$TMP/raw.db")
echo "raw insert of the same rows: $ins"
raw=$(echo "$ins" | field insert_rows_per_s)
for np in 1 2; do
    rm -f "$TMP"/e2e.db*
    out=$(mpirun --oversubscribe -n $np ./ccsweep run $SPEC --db "$TMP/e2e.db" --quiet 2>/dev/null)
    secs=$(echo "$out" | sed -n 's/.* scenarios in \([0-9.]*\) s .*/\1/p')
    rows=$(echo "$out" | sed -n 's/.* \([0-9]*\) rows (ok.*/\1/p')
    scen=$(echo "$out" | sed -n 's/.* \([0-9]*\)\/[0-9]* scenarios in.*/\1/p')
    awk -v n=$np -v s="$secs" -v r="$rows" -v c="$scen" -v raw="$raw" 'BEGIN {
        printf "end to end, %d rank%s:        %.0f scenarios/s, %.0f rows/s (%d scenarios, %d rows, %.2f s); %.2f of the raw insert rate\n",
            n, (n > 1 ? "s" : " "), c / s, r / s, c, r, s, (r / s) / raw }'
done

# Rank 0 memory: one study at ~100k and ~10M scenarios. Rank 0's RSS is its
# own getrusage peak, printed by ccsweep at the end of the run. The where-filter
# keeps the plans that fit, so the 10M run stays well under a minute.
mk() {
    cat >"$TMP/rss-$1.yaml" <<EOS
name: rss-$1
models: [gpt3-175b, llama3-70b, megatron-1t, future-2t]
hardware: [a100-80g, h100-sxm, mi210, mi300x]
generations: {range: [0, 4]}
plan:
  devices: {range: [256, 2048, 256]}
  tp: {geom: [1, 8, 2]}
  pp: [1, 2, 4, 8, 16]
  recompute: [selective, full]
  sp: [false, true]
  mbs: {range: [1, $2]}
where: "fits"
EOS
}
mk 100k 2   # 4 x 4 x 5 x 8 x 4 x 5 x 2 x 2 x 2 = 102400 scenarios
mk 10m 192  # the same with 192 micro-batch sizes = 9830400 scenarios
for s in 100k 10m; do
    rm -f "$TMP"/rss.db*
    mpirun --oversubscribe -n 2 ./ccsweep run "$TMP/rss-$s.yaml" --db "$TMP/rss.db" \
        --progress 1000 >"$TMP/out" 2>"$TMP/err"
    rss=$(sed -n 's/^ccsweep: rank 0 peak RSS \(.*\)/\1/p' "$TMP/err")
    sum=$(sed -n 's/^ccsweep run: run 1 complete: \([0-9]*\)\/.* in \([0-9.]*\) s (\([0-9]*\/s\).*, \([0-9]*\) rows .*/\1 scenarios, \4 rows, \2 s, \3/p' "$TMP/out")
    echo "rank 0 peak RSS, 2 ranks, $sum: $rss"
done
