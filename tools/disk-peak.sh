#!/bin/sh
# disk-peak.sh [BIN] [SPEC] - the disk a sweep needs: the peak of database +
# WAL bytes, sampled every 20 ms during a 2-rank sweep of SPEC (default
# sweeps/default.yaml) by BIN (default ./ccsweep), against the final size.
bin=${1:-./ccsweep}; spec=${2:-sweeps/default.yaml}; d=$(mktemp -d); db=$d/w.db
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$(dirname "$0")/.." || exit 1; mpirun --oversubscribe -n 2 $bin run $spec --db $db --quiet >/dev/null 2>&1 &
job=$!; peak=0; wpeak=0
while kill -0 $job 2>/dev/null; do
  a=$(stat -c %s $db 2>/dev/null || echo 0); w=$(stat -c %s $db-wal 2>/dev/null || echo 0)
  t=$((a + w)); [ $t -gt $peak ] && peak=$t; [ $w -gt $wpeak ] && wpeak=$w; sleep 0.02
done
f=$(stat -c %s $db)
echo "final $f bytes; peak database+WAL $peak bytes ($(awk "BEGIN { printf \"%.2f\", $peak / $f }")x); peak WAL $wpeak bytes"
rm -rf $d
