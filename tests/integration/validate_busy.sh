#!/bin/sh
# validate_busy.sh - tools/validate.sh trusts its pre-check: with fewer idle
# cores than ranks (here more ranks than the machine has cores) it exits 3
# before measuring anything, and ALLOW_BUSY=1 is named as the way past it.
# The tools record their own pre-check ('# precheck:'), and ccsweep validate
# exits 3 when either file's says busy (--allow-busy shows the numbers).
# Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "validate busy guard"

np=$(($(nproc) + 1))
NP=$np VALIDATE_DIR="$TMP/v" sh tools/validate.sh >"$TMP/out" 2>&1; rc=$?
check "validate.sh with $np ranks on $(nproc) cores exits 3 (got $rc)" [ $rc -eq 3 ]
check "... says the machine is busy and measured nothing" \
    sh -c "grep -q 'the machine is busy' '$TMP/out' && grep -q ALLOW_BUSY=1 '$TMP/out' &&
           [ ! -e '$TMP/v/profile.csv' ]"

# ccsweep validate itself: a pre-check that found the machine busy, recorded
# by either tool ('# precheck: busy: ...'), is a busy machine: exit 3 naming
# it, --allow-busy shows the numbers
PROF=sweeps/calibration/ci-cpu.csv
MEAS=tests/data/validate_measured.csv
cp sweeps/calibration/ci-cpu.yaml "$TMP/p.yaml"
cp sweeps/calibration/ci-cpu.yaml "$TMP/pb.yaml"
QUIET="quiet: other processes used 3% of the 2 CPUs, 1.9 idle for 2 ranks"
BUSY="busy: other processes used 90% of the 2 CPUs, 0.2 idle for 2 ranks"
{ echo "# precheck: $QUIET"; cat $PROF; } >"$TMP/p.csv"
{ echo "# precheck: $BUSY"; cat $PROF; } >"$TMP/pb.csv"
{ echo "# precheck: $QUIET"; cat $MEAS; } >"$TMP/m.csv"
{ echo "# precheck: $BUSY"; cat $MEAS; } >"$TMP/mb.csv"
./ccsweep validate --profile "$TMP/p.csv" --measured "$TMP/m.csv" >/dev/null 2>&1; rc=$?
check "validate: quiet pre-checks report the errors (exit $rc)" [ $rc -eq 0 ]
./ccsweep validate --profile "$TMP/pb.csv" --measured "$TMP/m.csv" >"$TMP/o" 2>"$TMP/e"; rc=$?
check "validate: the profiler's busy pre-check -> exit 3 (got $rc), no error table" \
    sh -c "[ $rc -eq 3 ] && [ ! -s '$TMP/o' ] && grep -q 'before profiling (.*pb.csv) the pre-check found other processes used 90%' '$TMP/e'"
./ccsweep validate --profile "$TMP/p.csv" --measured "$TMP/mb.csv" --json >"$TMP/o" 2>"$TMP/e"; rc=$?
check "validate --json: the ground truth's busy pre-check -> exit 3 (got $rc), busy with the reason" \
    sh -c "[ $rc -eq 3 ] && grep -q '\"busy\": true' '$TMP/o' && grep -q 'before measuring the layers' '$TMP/o'"
./ccsweep validate --profile "$TMP/pb.csv" --measured "$TMP/mb.csv" --allow-busy >"$TMP/o" 2>&1; rc=$?
check "validate --allow-busy: the errors with a warning (exit $rc)" \
    sh -c "[ $rc -eq 0 ] && grep -q '^warning (--allow-busy): the machine was too busy' '$TMP/o'"

# the tools' own pre-check: with every core kept busy, groundtruth records a
# busy pre-check and validate refuses its file
loops=""
for i in $(seq "$(nproc)"); do
    sh -c 'while :; do :; done' &
    loops="$loops $!"
done
$MPIRUN -n 1 build/tools/groundtruth --hidden 128 --heads 4 --seq 64 --mbs 1 --rounds 1 \
    --out "$TMP/gt.csv" --quiet 2>"$TMP/gte"
for p in $loops; do kill "$p"; done
check "groundtruth under load: '# precheck: busy' in its file, said on stderr" \
    sh -c "grep -q '^# precheck: busy: other processes used' '$TMP/gt.csv' && grep -q 'pre-check found the machine busy' '$TMP/gte'"
./ccsweep validate --profile "$TMP/p.csv" --measured "$TMP/gt.csv" >/dev/null 2>"$TMP/e"; rc=$?
check "validate of that file exits 3 (got $rc)" [ $rc -eq 3 ]
