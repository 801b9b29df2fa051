#!/bin/sh
# resume_hint.sh - the command an interrupted run tells the user to paste
# works as pasted, for a spec and a database whose paths hold a space, a
# single quote and a $: each word is quoted for the shell. The test stops a
# slowed single-rank sweep with SIGTERM, runs the printed command with /bin/sh
# and checks the run completes.
. tests/integration/sweep_common.inc
need_tools "resume hint"
dir="$TMP/my study's \$dir"
mkdir -p "$dir" "$TMP/bin"
cp tests/data/sweep_medium.yaml "$dir/spec one.yaml"
db="$dir/it's a.db"
# the hint names 'ccsweep': the one built here, first on PATH
ln -s "$(pwd)/ccsweep" "$TMP/bin/ccsweep"

CCSWEEP_TEST_CHUNK_DELAY_US=50000 $BIN run "$dir/spec one.yaml" --db "$db" --chunk 2000 \
    >"$TMP/out" 2>"$TMP/err" &
job=$!
if ! wait_done "$db"; then
    kill $job 2>/dev/null; wait $job
    fail "resume hint: no batch was committed within 30 s"
    exit 0
fi
kill -TERM $job
wait $job
if [ "$(q "$db" "SELECT status FROM runs")" = complete ]; then
    skip "resume hint (the sweep finished before the signal)"
    exit 0
fi
hint=$(sed -n 's/.*finish with: //p' "$TMP/out")
check "an interrupted run prints a resume command ($hint)" [ -n "$hint" ]
PATH="$TMP/bin:$PATH" sh -c "$hint --quiet" >"$TMP/out2" 2>&1; rc=$?
check "the printed command, pasted into sh, resumes and completes the run (exit $rc)" \
    [ $rc -eq 0 -a "$(q "$db" "SELECT status || ' ' || sessions FROM runs")" = "complete 2" ]

# The Slurm template's hint ("submit the same command again: ...") quotes its
# words with its shq: what bash reads back from shq's output is the word.
eval "$(sed -n '/^shq() {/,/^}/p' tools/slurm/ccsweep.sbatch)"
ok=1
[ "$(shq results/ccsweep.db)" = results/ccsweep.db ] || { ok=0; echo "shq quotes a plain word"; }
for w in "$db" "$dir/spec one.yaml" "--where" "tp * pp <= 64" "a'b'c" "" "a-b"; do
    back=$(bash -c "printf %s $(shq "$w")")
    [ "$back" = "$w" ] || { ok=0; echo "shq: '$w' came back as '$back'"; }
done
check "the Slurm template's shq quotes paths with spaces, quotes and \$ for the shell" [ $ok = 1 ]
