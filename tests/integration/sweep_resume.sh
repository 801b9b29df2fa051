#!/bin/sh
# sweep_resume.sh - interruptions: a worker rank or the writer (rank 0) killed
# with SIGKILL (the job dies), SIGTERM to mpirun, SIGTERM to a single-rank
# run. Each leaves a consistent database (PRAGMA integrity_check), and --resume
# then completes the run with exactly one row per index, equal to an
# uninterrupted run's rows.
. tests/integration/sweep_common.inc
need_tools "interrupt and resume"
SPEC=tests/data/sweep_medium.yaml

$MPIRUN -n 2 $BIN run $SPEC --db "$TMP/ref.db" --quiet >/dev/null 2>&1
total=$(q "$TMP/ref.db" "SELECT total FROM runs")
result_rows "$TMP/ref.db" >"$TMP/ref.rows"
check "reference run complete ($total scenarios)" \
    [ "$(q "$TMP/ref.db" "SELECT status FROM runs")" = complete -a "$(wc -l <"$TMP/ref.rows")" = "$total" ]

# after_resume DB LABEL: resume with mpirun -n $3 and compare with the reference
after_resume() {
    $MPIRUN -n "$3" $BIN run $SPEC --db "$1" --resume --quiet >"$TMP/resume.out" 2>&1; rc=$?
    check "$2: --resume on $3 rank(s) exits 0 and marks the run complete" \
        [ $rc -eq 0 -a "$(q "$1" "SELECT status || ' ' || n_done || ' ' || sessions FROM runs")" = "complete $total 2" ]
    check "$2: exactly one row per index after resume" \
        [ "$(q "$1" "SELECT count(*) || ' ' || count(DISTINCT idx) FROM results")" = "$total $total" ]
    result_rows "$1" >"$TMP/got.rows"
    check "$2: resumed rows equal the uninterrupted run's rows" cmp -s "$TMP/ref.rows" "$TMP/got.rows"
}

# 1. SIGKILL to worker rank 1 once a first batch is committed: the job dies
$MPIRUN -n 2 $BIN run $SPEC --db "$TMP/kill.db" --quiet >/dev/null 2>&1 &
job=$!
if wait_done "$TMP/kill.db"; then
    pid=$(rank_pid "$TMP/kill.db" 1)
    [ -n "$pid" ] && kill -KILL "$pid"
    wait $job; rc=$?
    st=$(q "$TMP/kill.db" "SELECT status FROM runs")
    if [ -z "$pid" ] || [ "$st" = complete ]; then
        skip "SIGKILL to a worker (the sweep finished before the kill)"
    else
        check "SIGKILL to worker rank 1 ends the job with a non-zero status ($rc)" [ $rc -ne 0 ]
        check "after SIGKILL: PRAGMA integrity_check is ok" [ "$(q "$TMP/kill.db" "PRAGMA integrity_check")" = ok ]
        check "after SIGKILL: run left unfinished ($st), committed rows kept" \
            [ "$st" != complete -a "$(q "$TMP/kill.db" "SELECT count(*) > 0 FROM results")" = 1 ]
        after_resume "$TMP/kill.db" "SIGKILL" 2
    fi
else
    kill $job 2>/dev/null; wait $job
    fail "SIGKILL test: no batch was committed within 30 s"
fi

# 1b. SIGKILL to rank 0, the writer, once a first batch is committed: its
#     open transaction is lost, the committed ones stay
$MPIRUN -n 2 $BIN run $SPEC --db "$TMP/wkill.db" --quiet >/dev/null 2>&1 &
job=$!
if wait_done "$TMP/wkill.db"; then
    pid=$(rank_pid "$TMP/wkill.db" 0)
    [ -n "$pid" ] && kill -KILL "$pid"
    wait $job; rc=$?
    st=$(q "$TMP/wkill.db" "SELECT status FROM runs")
    if [ -z "$pid" ] || [ "$st" = complete ]; then
        skip "SIGKILL to the writer (the sweep finished before the kill)"
    else
        check "SIGKILL to the writer (rank 0) ends the job with a non-zero status ($rc)" [ $rc -ne 0 ]
        check "after SIGKILL of the writer: PRAGMA integrity_check is ok, run left unfinished ($st)" \
            [ "$(q "$TMP/wkill.db" "PRAGMA integrity_check")" = ok -a "$st" != complete ]
        after_resume "$TMP/wkill.db" "SIGKILL of the writer" 2
    fi
else
    kill $job 2>/dev/null; wait $job
    fail "SIGKILL of the writer: no batch was committed within 30 s"
fi

# 2. SIGTERM to mpirun (each chunk waits 50 ms, CCSWEEP_TEST_CHUNK_DELAY_US:
# the sweep lasts seconds, so the signal lands mid-way however fast it is)
CCSWEEP_TEST_CHUNK_DELAY_US=50000 $MPIRUN -n 2 $BIN run $SPEC --db "$TMP/term.db" --quiet \
    --chunk 2000 >/dev/null 2>&1 &
job=$!
if wait_done "$TMP/term.db"; then
    kill -TERM $job
    wait $job; rc=$?
    st=$(q "$TMP/term.db" "SELECT status FROM runs")
    if [ "$st" = complete ]; then
        skip "SIGTERM to mpirun (the sweep finished before the signal)"
    else
        check "SIGTERM to mpirun: non-zero exit ($rc), run marked interrupted" [ $rc -ne 0 -a "$st" = interrupted ]
        check "after SIGTERM: PRAGMA integrity_check is ok" [ "$(q "$TMP/term.db" "PRAGMA integrity_check")" = ok ]
        check "after SIGTERM: counts describe exactly the committed chunks" \
            [ "$(q "$TMP/term.db" "SELECT n_done = (SELECT sum(hi - lo) FROM chunks) AND n_rows = (SELECT count(*) FROM results) FROM runs")" = 1 ]
        # resuming with a different spec is refused while this run is unfinished
        $BIN run tests/data/sweep_small.yaml --db "$TMP/term.db" --resume --quiet >/dev/null 2>"$TMP/err"; rc=$?
        check "--resume with a different spec exits 1 naming the conflict" \
            sh -c "[ $rc -eq 1 ] && grep -q 'different spec' '$TMP/err'"
        after_resume "$TMP/term.db" "SIGTERM" 1
    fi
else
    kill $job 2>/dev/null; wait $job
    fail "SIGTERM test: no batch was committed within 30 s"
fi

# 3. SIGTERM to a single-rank run (no mpirun): exit 128+15
$BIN run $SPEC --db "$TMP/one.db" --quiet >/dev/null 2>&1 &
job=$!
if wait_done "$TMP/one.db"; then
    kill -TERM $job
    wait $job; rc=$?
    st=$(q "$TMP/one.db" "SELECT status FROM runs")
    if [ "$st" = complete ]; then
        skip "SIGTERM to a single rank (the sweep finished before the signal)"
    else
        check "SIGTERM to a single rank: exit 143, run interrupted" [ $rc -eq 143 -a "$st" = interrupted ]
        after_resume "$TMP/one.db" "single-rank SIGTERM" 2
    fi
else
    kill $job 2>/dev/null; wait $job
    fail "single-rank SIGTERM test: no batch was committed within 30 s"
fi
