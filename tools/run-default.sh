#!/bin/sh
# run-default.sh [NP] - 'make run': sweep sweeps/default.yaml with mpirun on NP
# local ranks (default: all cores) into results/ccsweep.db, then show where the
# database is and run two example queries on the new run. Each call adds a run;
# earlier runs in the database are kept. CCSWEEP_RUN_DB=PATH writes another
# database instead (tools/readme-study.sh: the README's example of this output).
set -u
cd "$(dirname "$0")/.." || exit 1
np=${1:-$(nproc 2>/dev/null || echo 2)}
db=${CCSWEEP_RUN_DB:-results/ccsweep.db}
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
echo "+ mpirun --oversubscribe -n $np ./ccsweep run sweeps/default.yaml --db $db --new-run"
mpirun --oversubscribe -n "$np" ./ccsweep run sweeps/default.yaml --db "$db" --new-run || exit $?

run=$(sqlite3 "$db" "SELECT max(run_id) FROM runs")
# Plans compare only at equal model, hardware generation, devices, global batch
# and sequence (best_plan, comm_share: results/README.md, "Best plan"); both
# tables show the batch, which is the model's own (gbs: model in the spec).
t1="exposed communication share of the best plan that fits on 2048 H100s, by generation (-: no plan fits)"
q1="WITH s AS (SELECT model, max(params) AS params, max(gbs) AS gbs, max(seq) AS seq,
    max(CASE generation WHEN 0 THEN best_comm_fraction END) AS g0,
    max(CASE generation WHEN 1 THEN best_comm_fraction END) AS g1,
    max(CASE generation WHEN 2 THEN best_comm_fraction END) AS g2,
    max(CASE generation WHEN 3 THEN best_comm_fraction END) AS g3
  FROM comm_share WHERE run_id = $run AND hardware = 'h100-sxm' AND devices = 2048 GROUP BY model)
SELECT model, round(params / 1e9) AS params_b, gbs, seq,
  iif(g0 IS NULL, '-', printf('%.0f%%', 100 * g0)) AS gen0,
  iif(g1 IS NULL, '-', printf('%.0f%%', 100 * g1)) AS gen1,
  iif(g2 IS NULL, '-', printf('%.0f%%', 100 * g2)) AS gen2,
  iif(g3 IS NULL, '-', printf('%.0f%%', 100 * g3)) AS gen3
FROM s ORDER BY params;"
t2="best plan for gpt3-175b on 1024 devices, per hardware and generation"
q2="SELECT hardware, generation AS gen, gbs, tp, pp, dp, mbs, recompute, sp,
  round(t_iter, 2) AS t_iter_s, round(tokens_per_s) AS tokens_per_s,
  round(100 * mfu, 1) AS mfu_pct, round(100 * comm_fraction, 1) AS comm_pct
FROM best_plan WHERE run_id = $run AND model = 'gpt3-175b' AND devices = 1024
ORDER BY hardware, generation;"
q3="SELECT count(*) FROM results r JOIN models m ON m.model_id = r.model_id
WHERE r.run_id = $run AND r.gbs <> m.gbs"

echo
echo "database: $(pwd)/$db (run $run; schema, views and more queries: results/README.md)"
show() {
    echo
    echo "# $1"
    echo "\$ sqlite3 -header -column $db \"$2\""
    echo
    sqlite3 -header -column "$db" "$2" | sed 's/^/  /'
}
show "$t1" "$q1"
show "$t2" "$q2"
other=$(sqlite3 "$db" "$q3")
echo
echo "plans with a global batch other than their model's: $other"
[ "$other" = 0 ] || exit 2
