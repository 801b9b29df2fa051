#!/bin/sh
# sweep_writers.sh - several writers (--writers, --ranks-per-writer): each
# writer group stores its part of the grid in a shard that rank 0 merges at
# the end. The merged database holds the same rows (every results column but
# run_id and rid), plans, regions, chunk record and counts as a run with one
# writer, for 1, 2 and 4 ranks and 1 or 2 writers, under --detail and keep:
# too. A writer rank killed with SIGKILL, or rank 0 killed while merging (a
# half-merged state), then --resume, gives exactly one row per scenario, the
# same rows. Bad writer options exit 1 before the database is touched.
. tests/integration/sweep_common.inc
need_tools "several writers"
SPEC=tests/data/sweep_medium.yaml

# what a database must share with the one-writer run: rows, plans, regions,
# chunk records, counts and status (under keep: the plans table also holds
# the plans of rows dropped later, which depend on the chunking, as with one
# writer and several ranks)
summary() {
    cols=$(q "$1" "SELECT group_concat(name) FROM pragma_table_info('results') WHERE name NOT IN ('run_id', 'rid')")
    q "$1" "SELECT $cols FROM results ORDER BY idx" | md5sum | cut -c1-12
    if [ "$(q "$1" "SELECT spec_text LIKE '%keep:%' FROM runs")" = 1 ]; then
        echo "keep"
    else
        q "$1" "SELECT * FROM plans ORDER BY pid" | md5sum | cut -c1-12
    fi
    q "$1" "SELECT * FROM regions ORDER BY run_id, idx, region" | md5sum | cut -c1-12
    q "$1" "SELECT count(*), count(DISTINCT idx) FROM results"
    q "$1" "SELECT lo, hi FROM chunks"
    q "$1" "SELECT status, n_done, n_rows, n_ok, n_invalid, n_oom, n_filtered FROM runs"
}
shards_left() { ls "${1:-$TMP}" | grep -c '\.shard$'; }

# 1. the same database for 1/2/4 ranks x 1/2 writers (and both options)
matrix() { # matrix LABEL SPEC RUNS [OPTIONS]: RUNS is "NP OPTION VALUE;..."
    label=$1 spec=$2 runs=$3
    shift 3
    rm -f "$TMP"/ref.db*
    $BIN run "$spec" --db "$TMP/ref.db" --quiet "$@" >/dev/null 2>&1
    summary "$TMP/ref.db" >"$TMP/ref.sum"
    IFS=';'
    for run in $runs; do
        unset IFS
        set -- $run "$@"
        np=$1
        shift
        rm -f "$TMP"/w.db*
        $MPIRUN -n "$np" $BIN run "$spec" --db "$TMP/w.db" --quiet "$@" >/dev/null 2>"$TMP/err"; rc=$?
        summary "$TMP/w.db" >"$TMP/w.sum"
        check "$label: $np ranks $1 $2: exit 0, the same rows, plans, regions, chunks and counts as 1 rank, no shard left" \
            sh -c "[ $rc -eq 0 ] && cmp -s '$TMP/ref.sum' '$TMP/w.sum' && [ $(shards_left) -eq 0 ]"
        shift 2
    done
    [ "$(sed -n 4p "$TMP/ref.sum")" != "0|0" ] || fail "$label: the reference run stored no row"
}
# the medium grid without its last two plan axes: 38400 scenarios
sed -e '/^  comm_compress:/d' -e '/^  net_bw_factor:/d' $SPEC >"$TMP/mid.yaml"
matrix "38400 scenarios" "$TMP/mid.yaml" "2 --writers 1;2 --writers 2;4 --writers 1;4 --writers 2"
matrix "small" tests/data/sweep_small.yaml "4 --ranks-per-writer 1;3 --writers node"
matrix "small --detail" tests/data/sweep_small.yaml "2 --writers 2;4 --writers 2" --detail
(cat tests/data/sweep_small.yaml; echo "keep: {best: 2, by: t_iter, per: [model, hardware]}") >"$TMP/keep.yaml"
matrix "keep best 2 per model, hardware" "$TMP/keep.yaml" "2 --writers 2;4 --ranks-per-writer 1"
# with 2 writers the shard really holds a part: writer 2's progress and the merge are reported
rm -f "$TMP"/w.db*
$MPIRUN -n 2 $BIN run "$TMP/mid.yaml" --db "$TMP/w.db" --writers 2 --progress 1000 >/dev/null 2>"$TMP/err"
check "2 writers: rank 0 reports its share (half) as writer 1 of 2 and merges writer 2's shard" \
    sh -c "grep -q '^ccsweep: writer 1 of 2: 19200/19200' '$TMP/err' && grep -q 'merging shard .*w.db.[0-9a-f]*.run1.w1.shard' '$TMP/err'"

# the kills: the medium grid with a third micro-batch size (230400
# scenarios), long enough that they land mid-run; its reference on 1 rank
sed -e 's/^name: medium/name: writers/' -e 's/^  mbs: \[1, 2\]/  mbs: [1, 2, 4]/' $SPEC >"$TMP/big.yaml"
SPEC=$TMP/big.yaml
rm -f "$TMP"/ref.db*
$BIN run $SPEC --db "$TMP/ref.db" --quiet >/dev/null 2>&1
total=$(q "$TMP/ref.db" "SELECT total FROM runs")
summary "$TMP/ref.db" >"$TMP/ref.sum"

# wait_wal SHARD: wait (up to 30 s) until the shard's writer has written to its WAL
# shard DB W: writer W's shard of run 1 of DB (DB.TAG.run1.wW.shard), or DB.none
shard() { for f in "$1".*.run1.w"$2".shard; do [ -e "$f" ] && { echo "$f"; return; }; done; echo "$1.none"; }
wait_shard_wal() {
    i=0
    while [ $i -lt 600 ]; do
        [ -s "$(shard "$1" "$2")-wal" ] && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}
wait_wal() {
    i=0
    while [ $i -lt 600 ]; do
        [ -s "$1-wal" ] && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}
# resumed LABEL DB NP [OPTIONS]: --resume completes the run as the reference
resumed() {
    label=$1 db=$2 np=$3
    shift 3
    $MPIRUN -n "$np" $BIN run "$SPEC" --db "$db" --resume --quiet "$@" >/dev/null 2>"$TMP/err"; rc=$?
    summary "$db" >"$TMP/got.sum"
    check "$label: --resume on $np ranks${*:+ $*}: exit 0, exactly one row per scenario, the reference's rows and counts" \
        sh -c "[ $rc -eq 0 ] && [ \"\$(sed -n 4p '$TMP/got.sum')\" = '$total|$total' ] && cmp -s '$TMP/ref.sum' '$TMP/got.sum'"
    check "$label: the shards were merged and removed" [ "$(shards_left "$(dirname "$db")")" -eq 0 ]
}

# 2. SIGKILL to writer 2 (rank 2 of 4, --writers 2) once its shard holds a
#    commit; the resume merges the shard left and writes new ones
for again in "4 --writers 2"; do
    rm -f "$TMP"/kill.db*
    # each chunk waits 100 ms (CCSWEEP_TEST_CHUNK_DELAY_US), so the sweep lasts
    # seconds and writer 2 commits (at least once a second) before the kill
    CCSWEEP_TEST_CHUNK_DELAY_US=100000 $MPIRUN -n 4 $BIN run "$SPEC" --db "$TMP/kill.db" \
        --quiet --writers 2 --chunk 2000 >/dev/null 2>&1 &
    job=$!
    # the shard is locked while it is written: watch the database and the
    # shard's WAL, then give its writer a commit's time
    if wait_done "$TMP/kill.db" && wait_shard_wal "$TMP/kill.db" 1 && sleep 1.5; then
        pid=$(rank_pid "$TMP/kill.db" 2)
        [ -n "$pid" ] && kill -KILL "$pid"
        wait $job; rc=$?
        st=$(q "$TMP/kill.db" "SELECT status FROM runs")
        if [ -z "$pid" ] || [ "$st" = complete ]; then
            skip "SIGKILL to writer 2 (the sweep finished before the kill)"
        else
            sh1=$(shard "$TMP/kill.db" 1)
            n=$(q "$sh1" "SELECT count(*) FROM results")
            check "SIGKILL to writer 2: the job fails ($rc), the database and writer 2's shard are intact" \
                sh -c "[ $rc -ne 0 ] && [ \"\$(sqlite3 '$TMP/kill.db' 'PRAGMA integrity_check')\" = ok ] && [ \"\$(sqlite3 '$sh1' 'PRAGMA integrity_check')\" = ok ]"
            if [ "${n:-0}" -gt 0 ]; then
                pass "SIGKILL to writer 2: its shard holds $n committed rows to merge"
            else
                skip "SIGKILL to writer 2: its shard had no commit yet (the resume recomputes its part)"
            fi
            set -- $again
            resumed "SIGKILL to writer 2" "$TMP/kill.db" "$@"
        fi
    else
        kill $job 2>/dev/null; wait $job
        fail "SIGKILL to writer 2: no batch was committed within 30 s"
    fi
done

# 2b. SIGUSR1 to mpirun, which forwards it to every rank (SIGTERM would be
#     followed by SIGKILL after odls_base_sigkill_timeout, 1 s, which can cut
#     the merge short; the resume then merges): every group stops, rank 0
#     merges what the shards committed and marks the run interrupted with
#     counts of exactly its completed chunks; --resume with one writer
#     completes it
rm -f "$TMP"/term.db*
$MPIRUN -n 4 $BIN run "$SPEC" --db "$TMP/term.db" --quiet --writers 2 >/dev/null 2>&1 &
job=$!
if wait_done "$TMP/term.db"; then
    kill -USR1 $job
    wait $job; rc=$?
    st=$(q "$TMP/term.db" "SELECT status FROM runs")
    if [ "$st" = complete ]; then
        skip "SIGUSR1 with 2 writers (the sweep finished before the signal)"
    else
        check "SIGUSR1 with 2 writers: exit $rc, run interrupted, shards merged, counts are the completed chunks'" \
            sh -c "[ $rc -ne 0 ] && [ '$st' = interrupted ] && [ $(shards_left) -eq 0 ] && [ \"\$(sqlite3 '$TMP/term.db' 'SELECT n_done = (SELECT sum(hi - lo) FROM chunks) AND n_rows = (SELECT count(*) FROM results) FROM runs')\" = 1 ]"
        resumed "SIGUSR1 with 2 writers" "$TMP/term.db" 2
    fi
else
    kill $job 2>/dev/null; wait $job
    fail "SIGUSR1 with 2 writers: no batch was committed within 30 s"
fi

# 3. rank 0 killed right after the first of three shard merges committed
#    (CCSWEEP_TEST_KILL_AFTER_MERGE): one shard merged but not removed, two not merged
rm -f "$TMP"/merge.db*
$MPIRUN -n 4 -x CCSWEEP_TEST_KILL_AFTER_MERGE=1 $BIN run "$SPEC" --db "$TMP/merge.db" --quiet --writers 4 >/dev/null 2>&1; rc=$?
check "SIGKILL while merging: the job fails ($rc), the database is intact and unfinished, the 3 shards are left" \
    sh -c "[ $rc -ne 0 ] && [ \"\$(sqlite3 '$TMP/merge.db' 'PRAGMA integrity_check')\" = ok ] && [ \"\$(sqlite3 '$TMP/merge.db' 'SELECT status FROM runs')\" = running ] && [ $(shards_left) -eq 3 ]"
mkdir "$TMP/h"
cp "$TMP"/merge.db "$TMP"/merge.db.*.run1.w*.shard "$TMP/h/"
resumed "SIGKILL while merging" "$TMP/merge.db" 2
# moved to another directory: the shards carry the old path's tag, so they are
# another database's to the moved file; it recomputes what they held and
# leaves them as they were
$MPIRUN -n 4 $BIN run "$SPEC" --db "$TMP/h/merge.db" --resume --quiet --writers 4 >/dev/null 2>"$TMP/err"; rc=$?
summary "$TMP/h/merge.db" >"$TMP/got.sum"
check "moved while merging, resumed by 4 writers elsewhere: exit 0, the reference's rows and counts, the old shards untouched" \
    sh -c "[ $rc -eq 0 ] && cmp -s '$TMP/ref.sum' '$TMP/got.sum' && [ $(shards_left "$TMP/h") -eq 3 ] && ! grep -q 'merging shard' '$TMP/err'"

# 3b. --staged-from (the Slurm template's working copy): the shards are named
#     after the user's database, so the next attempt, whose working copy has
#     another path (a scratch directory per job and restart), merges what a
#     killed attempt left
mkdir -p "$TMP/a" "$TMP/b" "$TMP/st"
$MPIRUN -n 4 -x CCSWEEP_TEST_KILL_AFTER_MERGE=1 $BIN run "$SPEC" --db "$TMP/a/st.db" --staged-from "$TMP/st/st.db" \
    --quiet --writers 4 --shard-dir "$TMP/st" >/dev/null 2>&1
n_left=$(shards_left "$TMP/st")
sqlite3 "$TMP/a/st.db" "VACUUM INTO '$TMP/b/st.db'" # the copy back, staged again
$MPIRUN -n 2 $BIN run "$SPEC" --db "$TMP/b/st.db" --staged-from "$TMP/st/st.db" --resume --shard-dir "$TMP/st" >/dev/null 2>"$TMP/err"; rc=$?
summary "$TMP/b/st.db" >"$TMP/got.sum"
check "--staged-from: a resume from another working copy merges the $n_left shards a killed attempt left, the reference's rows" \
    sh -c "[ $rc -eq 0 ] && [ $n_left -eq 3 ] && [ \$(grep -c 'merging shard $TMP/st/st.db' '$TMP/err') -eq 3 ] && cmp -s '$TMP/ref.sum' '$TMP/got.sum' && [ $(shards_left "$TMP/st") -eq 0 ]"

# 4. shards of another run under the same name (the database was deleted) are not merged
rm -f "$TMP"/merge.db*
$MPIRUN -n 4 -x CCSWEEP_TEST_KILL_AFTER_MERGE=1 $BIN run tests/data/sweep_small.yaml --db "$TMP/merge.db" --quiet --writers 4 >/dev/null 2>&1
rm -f "$TMP/merge.db" "$TMP/merge.db-wal" "$TMP/merge.db-shm"
$MPIRUN -n 2 $BIN run "$SPEC" --db "$TMP/merge.db" --quiet >/dev/null 2>"$TMP/err"; rc=$?
summary "$TMP/merge.db" >"$TMP/got.sum"
check "stale shards of another spec's run 1: removed with a warning, not merged; the rows are the reference's" \
    sh -c "[ $rc -eq 0 ] && grep -q 'not a shard of run 1 .*another spec; removed' '$TMP/err' && cmp -s '$TMP/ref.sum' '$TMP/got.sum' && [ $(shards_left) -eq 0 ]"

# 5. bad options: exit 1 with a message, nothing written
SPEC=tests/data/sweep_medium.yaml
bad() { # bad LABEL PATTERN NP OPTIONS...
    label=$1 pat=$2 np=$3
    shift 3
    rm -f "$TMP"/bad.db*
    $MPIRUN -n "$np" $BIN run $SPEC --db "$TMP/bad.db" --quiet "$@" >/dev/null 2>"$TMP/err"; rc=$?
    check "$label: exit 1 naming the problem, no database created" \
        sh -c "[ $rc -eq 1 ] && grep -q -- '$pat' '$TMP/err' && [ ! -e '$TMP/bad.db' ]"
}
bad "--writers 0" "--writers: expected a positive number of writers or .node., got .0." 1 --writers 0
bad "--writers two" "--writers: expected .* got .two." 1 --writers two
bad "--ranks-per-writer 0" "--ranks-per-writer: expected a positive number of ranks, got .0." 2 --ranks-per-writer 0
bad "--writers 3 on 2 ranks" "--writers 3: more writers than MPI ranks (2)" 2 --writers 3
bad "--writers with --ranks-per-writer" "give --writers or --ranks-per-writer, not both" 2 --writers 2 --ranks-per-writer 1
bad "--shard-dir that is a file" "--shard-dir $SPEC: not a directory" 2 --writers 2 --shard-dir $SPEC
