#!/bin/sh
# bench.sh - 'make bench': how fast the engine sweeps, against the raw SQLite
# insert rate that bounds it. Prints numbers; asserts nothing about timing.
#   1. projections/s on one core (decode + project + filter, no output)
#   2. raw insert rate of the same rows (store_put of precomputed rows, no
#      projection, no MPI; batches of 10k rows, WAL, synchronous=NORMAL)
#   3. end-to-end sweep rate with 1 rank on one core (mpirun's default
#      binding), 1 rank with a second core for its writer thread, 2 ranks, and
#      its ratio to (2)
#   4. the same spec without its where-filter (every scenario stored): 1 rank
#      on one and on two cores, 2 and 4 ranks with 1 and 2 writers
#      (--writers 2), in turns, the speed-up, rank 0's CPU per stored row (its
#      writer thread's share), and whether the rows are equal
#   5. a keep: rule (best plan per model x hardware x generation x devices):
#      rank 0's CPU per row received and per kept row, end to end 1 and 2 ranks,
#      and with keep.aggregate of three fields beside it, in turns
#   5b. --detail: the sweep rate with and without it, in turns, and the bytes
#      of the region rows per stored scenario
#   6. what these costs project for 1e9 scenarios on 64 nodes x 64 cores
#   7. peak RSS of rank 0 for a 100k and a 10M scenario sweep
#   8. 'ccsweep search' wall time for typical questions, 1 process and 2 ranks
#   9. with BASE=DIR (a built checkout of another version, e.g. a git worktree):
#      SPEC on 1 rank by that version and by this one, interleaved, best of 3,
#      bound to one core and with two
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
# one rank bound to one core (mpirun's default), one rank with a second core
# for its writer thread (--bind-to none), two ranks
for run in "1 core" "1 none" "2 core"; do
    set -- $run
    np=$1 bind=$2
    rm -f "$TMP"/e2e.db*
    out=$(mpirun --oversubscribe --bind-to "$bind" -n $np ./ccsweep run $SPEC --db "$TMP/e2e.db" --quiet 2>/dev/null)
    secs=$(echo "$out" | sed -n 's/.* scenarios in \([0-9.]*\) s .*/\1/p')
    rows=$(echo "$out" | sed -n 's/.* \([0-9]*\) rows (ok.*/\1/p')
    scen=$(echo "$out" | sed -n 's/.* \([0-9]*\)\/[0-9]* scenarios in.*/\1/p')
    awk -v n=$np -v b="$bind" -v s="$secs" -v r="$rows" -v c="$scen" -v raw="$raw" 'BEGIN {
        printf "end to end, %d rank%s, binding %-8s %.0f scenarios/s, %.0f rows/s (%d scenarios, %d rows, %.2f s); %.2f of the raw insert rate\n",
            n, (n > 1 ? "s" : " "), b ":", c / s, r / s, c, r, s, (r / s) / raw }'
done

# e2e SPEC NP [OPTIONS]: "secs scenarios rows" of one run into a fresh database
e2e() {
    spec=$1 np=$2
    shift 2
    rm -f "$TMP"/e2e.db*
    out=$(mpirun --oversubscribe -n "$np" ./ccsweep run "$spec" --db "$TMP/e2e.db" --quiet "$@" 2>/dev/null)
    echo "$out" | sed -n 's/.* \([0-9]*\)\/[0-9]* scenarios in \([0-9.]*\) s .*, \([0-9]*\) rows (ok.*/\2 \1 \3/p'
}
rows_md5() {
    cols=$(sqlite3 "$1" "SELECT group_concat(name) FROM pragma_table_info('results') WHERE name NOT IN ('run_id', 'rid')")
    sqlite3 "$1" "SELECT $cols FROM results ORDER BY idx" | md5sum | cut -c1-12
}

echo "-- $SPEC without its where-filter (every scenario stored); rank 0's CPU per stored row"
echo "   (its inserts, its share of the projection, and with 2 writers the merge of the other shard)"
sed '/^where:/d' $SPEC >"$TMP/unfiltered.yaml"
# ranks x writers x binding (core: mpirun's default for up to 2 ranks, each
# rank on one core; none: rank 0's writer thread may use the other core;
# default: more ranks than cores, mpirun binds none), two rounds in turns, the
# faster of each
CONFIGS="1:1:core 1:1:none 2:1:core 2:2:core 4:1:default 4:2:default"
for round in 1 2; do
    for cfg in $CONFIGS; do
        np=${cfg%%:*} rest=${cfg#*:}
        nw=${rest%%:*} bind=${rest#*:}
        rm -f "$TMP"/e2e.db*
        opt="--bind-to $bind"
        [ "$bind" = default ] && opt="" # more ranks than cores: mpirun binds none
        mpirun --oversubscribe $opt -n "$np" ./ccsweep run "$TMP/unfiltered.yaml" \
            --db "$TMP/e2e.db" --progress 100000 --verbose --writers "$nw" >"$TMP/out" 2>"$TMP/err"
        r=$(sed -n 's/.* \([0-9]*\)\/[0-9]* scenarios in \([0-9.]*\) s .*, \([0-9]*\) rows (ok.*/\2 \1 \3/p' "$TMP/out")
        cpu=$(sed -n 's/^ccsweep: rank 0 CPU \([0-9.]*\) s.*/\1/p' "$TMP/err")
        wcpu=$(sed -n 's/^ccsweep: rank 0 writer thread CPU \([0-9.]*\) s.*/\1/p' "$TMP/err")
        key=${np}_${nw}_$bind
        t=$(echo "$r" | cut -d' ' -f1)
        eval "prev=\${t_$key:-}"
        if [ -z "$prev" ] || awk -v a="$t" -v b="$prev" 'BEGIN { exit !(a < b) }'; then
            eval "t_$key=\$t"
            eval "line_$key=\"\$r \$cpu \${wcpu:-0} \$(rows_md5 \"\$TMP/e2e.db\")\""
        fi
    done
done
for cfg in $CONFIGS; do
    np=${cfg%%:*} rest=${cfg#*:}
    nw=${rest%%:*} bind=${rest#*:}
    eval "line=\$line_${np}_${nw}_$bind"
    echo "$line" | awk -v n=$np -v w=$nw -v b="$bind" '{ printf "end to end, %d rank%s x %d writer%s, binding %-8s %.0f scenarios/s (%d scenarios, %d rows, %.2f s), rank 0 CPU %.2f s = %.2f us per row (writer thread %.2f s), rows md5 %s\n", n, (n > 1 ? "s" : ""), w, (w > 1 ? "s" : " "), b ":", $2 / $1, $2, $3, $1, $4, $4 * 1e6 / $3, $5, $6 }'
done
awk -v a="$t_1_1_core" -v u="$t_1_1_none" -v b="$t_2_1_core" -v w="$t_2_2_core" -v c="$t_4_1_default" -v d="$t_4_2_default" 'BEGIN {
    printf "speed-up over 1 rank on one core: 1 rank on two cores %.2fx, 2 ranks %.2fx, 2 ranks x 2 writers %.2fx, 4 ranks (oversubscribed) %.2fx, 4 ranks x 2 writers %.2fx\n", a / u, a / b, a / w, a / c, a / d }'

echo "-- keep: {best: 1, by: t_iter, per: [model, hardware, generation, devices]} on $SPEC"
(cat $SPEC; echo "keep: {best: 1, by: t_iter, per: [model, hardware, generation, devices]}") >"$TMP/keep.yaml"
km=$($B keep "$TMP/keep.yaml" "$TMP/keep.db" 65536)
echo "rank 0 under keep:           $km"
(cat $SPEC; echo "keep: {best: 1, by: t_iter, per: [model, hardware, generation, devices], aggregate: [t_iter, comm_fraction, mfu]}") >"$TMP/agg.yaml"
for np in 1 2; do
    e2e "$TMP/keep.yaml" $np | awk -v n=$np '{ printf "end to end, %d rank%s:        %.0f scenarios/s (%d scenarios, %d rows kept, %.2f s)\n", n, (n > 1 ? "s" : " "), $2 / $1, $2, $3, $1 }'
    e2e "$TMP/agg.yaml" $np | awk -v n=$np '{ printf "  + aggregate [t_iter, comm_fraction, mfu]: %.0f scenarios/s (%.2f s)\n", $2 / $1, $1 }'
done

echo "-- --detail on $SPEC, 1 rank, in turns with a run without it"
for run in plain detail plain detail; do
    opt=""
    [ $run = detail ] && opt=--detail
    rm -f "$TMP"/e2e.db*
    ./ccsweep run $SPEC --db "$TMP/e2e.db" --quiet $opt >"$TMP/out" 2>"$TMP/err"
    r=$(sed -n 's/.* \([0-9]*\)\/[0-9]* scenarios in \([0-9.]*\) s .*, \([0-9]*\) rows (ok.*/\2 \1 \3/p' "$TMP/out")
    rg=$(sqlite3 "$TMP/e2e.db" "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'region_rows'" 2>/dev/null)
    echo "$r" | awk -v k=$run -v b="${rg:-0}" '{ printf "%-7s %.0f scenarios/s (%d rows, %.2f s)%s\n", k, $2 / $1, $3, $1, (k == "detail" ? sprintf(", region rows %.0f bytes per stored row", b / $3) : "") }'
done

# 1e9 scenarios on 64 nodes x 64 cores (4095 computing ranks), from the CPU
# costs above: every scenario stored by one writer, or reduced by keep.
p_us=$(echo "$proj" | sed -n 's/.*, \([0-9.]*\) us CPU each.*/\1/p')
w_us=$(echo "$ins" | sed -n 's/.*, \([0-9.]*\) us CPU per row,.*/\1/p')
bpr=$(echo "$ins" | sed -n 's/.*, \([0-9]*\) bytes per row.*/\1/p')
sent=$(echo "$km" | sed -n 's/.* pass where, \([0-9]*\) sent to rank 0.*/\1/p')
scen=$(echo "$km" | sed -n 's/.*(\([0-9]*\) scenarios,.*/\1/p')
recv_us=$(echo "$km" | sed -n 's/.*, \([0-9.]*\) us CPU per row received.*/\1/p')
awk -v p="$p_us" -v w="$w_us" -v b="$bpr" -v s="$sent" -v r="$recv_us" -v t="$scen" 'BEGIN {
    n = 1e9; cores = 4095
    printf "1e9 scenarios, 64x64 cores:  projection %.1f s of %d cores; one writer storing every row %.0f s (%.0f GB);\n", n * p * 1e-6 / cores, cores, n * w * 1e-6, n * b / 1e9
    printf "                             with the keep rule above, rank 0 receives about %.0f rows (%.2e per scenario) at %.2f us: %.1f s\n", n * s / t, s / t, r, n * s / t * r * 1e-6 }'

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
        --progress 1000 --verbose >"$TMP/out" 2>"$TMP/err"
    rss=$(sed -n 's/^ccsweep: rank 0 peak RSS \(.*\)/\1/p' "$TMP/err")
    sum=$(sed -n 's/^ccsweep run: run 1 complete: \([0-9]*\)\/.* in \([0-9.]*\) s (\([0-9]*\/s\).*, \([0-9]*\) rows .*/\1 scenarios, \4 rows, \2 s, \3/p' "$TMP/out")
    echo "rank 0 peak RSS, 2 ranks, $sum: $rss"
done

# One question, every valid plan: wall time of the whole command (catalog,
# enumeration, projection, ranking, output), best of three.
search_time() { # search_time LAUNCH ARGS...
    best=""
    for i in 1 2 3; do
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>&1 || { echo "failed"; return; }
        t1=$(date +%s.%N)
        best=$(awk -v a="$t0" -v b="$t1" -v m="$best" 'BEGIN { d = b - a; print (m == "" || d < m) ? d : m }')
    done
    printf '%.3f s' "$best"
}
for q in "gpt3-175b h100-sxm 1024" "llama3-70b h100-sxm 512" "megatron-1t a100-80g 3072"; do
    set -- $q
    plans=$(./ccsweep search --model $1 --hw $2 --devices $3 --json 2>/dev/null |
        sed -n 's/^  "plans": \([0-9]*\),$/\1/p')
    one=$(search_time ./ccsweep search --model $1 --hw $2 --devices $3)
    two=$(search_time mpirun --oversubscribe -n 2 ./ccsweep search --model $1 --hw $2 --devices $3)
    echo "search $1 on $3 $2 ($plans plans): $one on 1 process, $two with mpirun -n 2"
done
plans=$(./ccsweep search --model gpt3-175b --hw h100-sxm --devices 1024 --max-cp 8 --json 2>/dev/null |
    sed -n 's/^  "plans": \([0-9]*\),$/\1/p')
one=$(search_time ./ccsweep search --model gpt3-175b --hw h100-sxm --devices 1024 --max-cp 8)
two=$(search_time mpirun --oversubscribe -n 2 ./ccsweep search --model gpt3-175b --hw h100-sxm --devices 1024 --max-cp 8)
echo "search gpt3-175b on 1024 h100-sxm with cp up to 8 ($plans plans): $one on 1 process, $two with mpirun -n 2"

# Another version side by side: each build runs its own checkout's SPEC (the
# spec format may differ between versions) into a fresh database, in turns so
# that both see the same load; the best of three of each. "sweep" is the time
# ccsweep reports for the sweep, "command" the whole mpirun (start-up and the
# final checkpoint included).
if [ -n "${BASE:-}" ]; then
    if [ ! -x "$BASE/ccsweep" ] || [ ! -f "$BASE/$SPEC" ]; then
        echo "BASE=$BASE: no built ccsweep with $SPEC there" >&2
        exit 1
    fi
    best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }'; }
    run_in() { # run_in DIR BIND: "sweep_secs scenarios command_secs"
        rm -f "$TMP"/side.db*
        t0=$(date +%s.%N)
        out=$(cd "$1" && mpirun --bind-to "$2" -n 1 ./ccsweep run $SPEC --db "$TMP/side.db" --quiet 2>/dev/null)
        t1=$(date +%s.%N)
        echo "$out" | sed -n 's/.* \([0-9]*\)\/[0-9]* scenarios in \([0-9.]*\) s .*/\2 \1/p' |
            awk -v a="$t0" -v b="$t1" '{ print $1, $2, b - a }'
    }
    # bound to one core (mpirun's default), and with a second core for the
    # writer thread of this build (the base's single thread gains nothing)
    for bind in core none; do
        bs="" bc="" ts="" tc="" n=0
        for i in 1 2 3; do
            set -- $(run_in "$BASE" $bind)
            bs=$(best "$bs" "$1") bc=$(best "$bc" "$3") n=$2
            set -- $(run_in . $bind)
            ts=$(best "$ts" "$1") tc=$(best "$tc" "$3")
        done
        echo "-- $SPEC, 1 rank, --bind-to $bind, BASE=$BASE against this build (interleaved, best of 3)"
        awk -v n="$n" -v bs="$bs" -v bc="$bc" -v ts="$ts" -v tc="$tc" 'BEGIN {
            printf "base:       %.0f scenarios/s (sweep %.2f s, command %.2f s)\n", n / bs, bs, bc
            printf "this build: %.0f scenarios/s (sweep %.2f s, command %.2f s)\n", n / ts, ts, tc
            printf "speed-up:   %.2fx the sweep, %.2fx the command\n", bs / ts, bc / tc }'
    done
fi
