#!/bin/sh
# study.sh [NP] - 'make study': the study of Pati et al. 2023 (sweeps/paper.yaml)
# with mpirun on NP local ranks (default: all cores) into results/paper.db, then
# 'ccsweep report' into results/paper-report/ (report.md and PNG plots). Each call
# adds a run to the database (earlier runs are kept: tools/queries/run_diff.sql
# compares the last two); the report shows the new one.
# Environment: STUDY_SPEC picks another study (make study-moe:
# sweeps/moe-longctx.yaml; make study-serve: sweeps/serve.yaml), into results/NAME.db and results/NAME-report for
# sweeps/NAME.yaml; STUDY_DB, STUDY_OUT override the database and report paths.
set -u
cd "$(dirname "$0")/.." || exit 1
np=${1:-$(nproc 2>/dev/null || echo 2)}
spec=${STUDY_SPEC:-sweeps/paper.yaml}
name=$(basename "$spec" .yaml)
db=${STUDY_DB:-results/$name.db}
out=${STUDY_OUT:-results/$name-report}
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# quiet Open MPI's transport probing on machines without high-speed NICs
export OMPI_MCA_btl_base_warn_component_unused=${OMPI_MCA_btl_base_warn_component_unused:-0}

start=$(date +%s)
echo "+ mpirun --oversubscribe -n $np ./ccsweep run $spec --db $db --new-run"
mpirun --oversubscribe -n "$np" ./ccsweep run "$spec" --db "$db" --new-run || exit $?
echo "+ ./ccsweep report --db $db --out $out"
./ccsweep report --db "$db" --out "$out" || exit $?
end=$(date +%s)

echo
echo "study: $((end - start)) s; report: $(pwd)/$out/report.md"
echo "database: $(pwd)/$db ($(du -h "$db" | cut -f1)); canned queries: tools/queries/*.sql, e.g."
echo "  sqlite3 -header -column $db < tools/queries/summary.sql"
echo
# the summary table and the findings of the report (a serving run's: its section's)
if grep -q '^## Summary' "$out/report.md"; then
    sed -n '/^## Summary/,/^## 1\./p' "$out/report.md" | sed '1d;$d'
else
    sed -n '/^### Serving summary/,/^### Serving 1\./p' "$out/report.md" | sed '1d;$d'
fi
