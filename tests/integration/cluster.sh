#!/bin/sh
# cluster.sh - ccsweep on a three-node Slurm cluster that this script builds on
# this machine (tests/cluster/cluster.sh: a network, UTS and mount namespace
# per node, a private bridge, munged and slurmd per node, slurmctld on a head
# node) and tears down on exit, whatever happens. The checks are
# tests/cluster/cases.sh: sbatch -N 3 with srun and mpirun, one writer per
# node, rows bit-identical to a one-node run, keep: rules, a node killed
# mid-sweep and resumed, a graceful scancel. "SKIP: ... (why)" where the
# cluster cannot be built here (not root, no namespaces, packages missing).
# CCSWEEP=path tests another binary.
cd "$(dirname "$0")/../.." || exit 1
CHECKS="three-node cluster up|sbatch -N 3 srun --writers node|keep: rules on three nodes|mpirun on three nodes|node kill + resume|graceful stop"
skip_all() {
    printf '%s\n' "$CHECKS" | tr '|' '\n' | while read -r c; do echo "SKIP: cluster: $c ($1)"; done
    exit 0
}
CCS=${CCSWEEP:-$PWD/ccsweep}
[ -x "$CCS" ] || { echo "FAIL: cluster: no ccsweep binary at $CCS (make first)"; exit 1; }
for c in sbatch srun scontrol scancel sinfo squeue mpirun sqlite3; do
    command -v "$c" >/dev/null 2>&1 || skip_all "$c not installed (Debian: slurm-wlm openmpi-bin sqlite3)"
done
# a job inside an outer Slurm allocation must not inherit its settings
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done

# /tmp: munged's socket path under the directory must stay short
T=$(mktemp -d /tmp/ccsweep-cl.XXXXXX) || exit 1
chmod 755 "$T" # munged wants every directory above its socket searchable by all
export CCS_CLUSTER_DIR=$T/c
trap 'sh tests/cluster/cluster.sh down >/dev/null 2>&1; rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP
t0=$(date +%s)
sh tests/cluster/cluster.sh up 2>"$T/up.err"
rc=$?
[ $rc -eq 3 ] && skip_all "$(sed -n 's/^cluster: cannot run here: //p' "$T/up.err" | tail -1)"
if [ $rc -ne 0 ]; then
    echo "FAIL: cluster: three-node cluster up: $(tail -1 "$T/up.err")"
    for f in "$CCS_CLUSTER_DIR"/log/*; do [ -f "$f" ] && tail -n 3 "$f" | sed "s|^|    $(basename "$f"): |"; done
    exit 1
fi
echo "PASS: cluster: three-node cluster up in $(($(date +%s) - t0)) s"
CCSWEEP=$CCS sh tests/cluster/cases.sh
echo "cluster: the whole test took $(($(date +%s) - t0)) s"
