#!/bin/sh
# validate.sh - 'make validate': measure this machine's operators (tools/profiler),
# run real Transformer layers (tools/groundtruth, configurations in
# tools/validate-configs.txt), and compare the operator-model projections with
# them (ccsweep validate). Everything lands in $VALIDATE_DIR (results/validate).
# Targets: mean |error| <= 10%, every configuration <= 15% (exit 2 otherwise).
# Other load on the machine: both tools time a probe GEMM between phases and
# rounds and measure again what ran while it was slow; when the machine stays
# too busy (or the two tools ran under different load) this says so and exits
# 3 without reporting a model error (ccsweep validate --help).
#   NP=2 ranks (one per core), PROFILE_BUDGET=110 s, up to ROUNDS=8 measured
#   ground-truth rounds within GT_BUDGET=110 s: about four minutes in all.
set -eu
cd "$(dirname "$0")/.."
NP=${NP:-2}
DIR=${VALIDATE_DIR:-results/validate}
BUDGET=${PROFILE_BUDGET:-110}
ROUNDS=${ROUNDS:-8}
GT_BUDGET=${GT_BUDGET:-110}
mkdir -p "$DIR"
# one BLAS thread per rank: the ranks are the devices (do not touch OPENBLAS_CORETYPE)
export OPENBLAS_NUM_THREADS=1
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
over=""
[ "$(nproc)" -lt "$NP" ] && over="--oversubscribe"
# other work on the machine skews every timing. The pre-check is trusted:
# when the other processes leave fewer idle cores than the NP ranks need, the
# machine is busy and this exits 3 before measuring (as the tools' probes
# would later); ALLOW_BUSY=1 measures anyway, for a look at noisy numbers.
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat 2>/dev/null; }
b0=$(busy); sleep 1; b1=$(busy)
if [ -n "$b0" ] && [ -n "$b1" ]; then
    pct=$(echo "$b0 $b1" | awk '{d = $4 - $2; print (d > 0 ? int(100 * ($3 - $1) / d) : 0)}')
    idle=$(awk -v p="$pct" -v n="$(nproc)" 'BEGIN { printf "%.1f", n * (100 - p) / 100 }')
    if awk -v i="$idle" -v np="$NP" 'BEGIN { exit !(i < np) }'; then
        echo "the machine is busy: other processes use ${pct}% of the $(nproc) CPUs," \
            "${idle} idle for $NP ranks"
        if [ "${ALLOW_BUSY:-0}" != 1 ]; then
            echo "not measuring: the comparison would report the load, not the model."
            echo "Run 'make validate' again when the machine is quiet (ALLOW_BUSY=1 measures anyway)."
            exit 3
        fi
        echo "ALLOW_BUSY=1: measuring anyway; the timings will be noisy"
    elif [ "$pct" -gt 15 ]; then
        echo "warning: other processes use ${pct}% of the CPUs: timings will be noisy"
    fi
fi
start=$(date +%s)
echo "== profiler: $NP ranks, budget ${BUDGET} s -> $DIR/profile.csv"
mpirun -np "$NP" $over build/tools/profiler --budget "$BUDGET" --out "$DIR/profile.csv" \
    --hw-out "$DIR/profile.yaml" --hw-name ci-cpu --quiet
if grep -q '^# interference: busy' "$DIR/profile.csv"; then
    echo "the machine was too busy to profile: $(sed -n 's/^# interference: //p' "$DIR/profile.csv")"
    echo "not measuring the layers: the comparison would report the load, not the model."
    echo "Run 'make validate' again when the machine is quiet."
    exit 3
fi
echo "== ground truth: $(grep -vc '^#' tools/validate-configs.txt) configurations, up to $ROUNDS rounds in ${GT_BUDGET} s -> $DIR/measured.csv"
mpirun -np "$NP" $over build/tools/groundtruth --config tools/validate-configs.txt \
    --rounds "$ROUNDS" --budget "$GT_BUDGET" --out "$DIR/measured.csv" --quiet
echo "== validate"
rc=0
./ccsweep validate --profile "$DIR/profile.csv" --measured "$DIR/measured.csv" \
    --hw-entry "$DIR/profile.yaml" --sweep sweeps/validate-cpu.yaml --regions \
    --max-mean 10 --max-err 15 || rc=$?
echo "== make validate took $(( $(date +%s) - start )) s"
exit $rc
