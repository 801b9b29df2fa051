#!/bin/sh
# disk-peak.sh [BIN] [SPEC] [OPTION...] - the disk a sweep needs: the peak of
# the bytes in the database's directory (the database, its -wal and -shm, the
# shards of --writers and theirs), sampled every 20 ms during a 2-rank sweep
# of SPEC (default sweeps/default.yaml) by BIN (default ./ccsweep) with
# OPTIONs, against the final size. The sampling can miss the last instant, the
# checkpoint at close, when the database reaches its final size while the WAL
# is still there; "final + peak WAL" is that instant (the WAL file only grows
# until the file closes), the figure to plan with.
bin=${1:-./ccsweep}; spec=${2:-sweeps/default.yaml}; [ $# -gt 2 ] && shift 2 || set --
d=$(mktemp -d); db=$d/w.db
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$(dirname "$0")/.." || exit 1
mpirun --oversubscribe -n 2 $bin run $spec --db $db --quiet "$@" >/dev/null 2>&1 &
job=$!; peak=0; wpeak=0
while kill -0 $job 2>/dev/null; do
  t=$(find $d -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  w=$(stat -c %s $db-wal 2>/dev/null || echo 0)
  [ $t -gt $peak ] && peak=$t; [ $w -gt $wpeak ] && wpeak=$w; sleep 0.02
done
f=$(stat -c %s $db)
awk "BEGIN { printf \"final %d bytes; peak sampled %d bytes (%.2fx); peak WAL %d bytes; final + peak WAL %.2fx\n\", $f, $peak, $peak / $f, $wpeak, ($f + $wpeak) / $f }"
rm -rf $d
