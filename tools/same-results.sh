#!/bin/sh
# same-results.sh OLD_BIN [NEW_BIN] - are two builds' results the same? For a
# refactoring that must not change a number: sweeps sweeps/default.yaml and
# sweeps/moe-longctx.yaml with each build (2 ranks) and compares the results
# view row by row (run_id, idx) and column by column (IS NOT, so NULLs count),
# then 'project --json' of the plans in tools/same-results.plans byte for byte
# (stdout, stderr and exit status). NEW_BIN defaults to ./ccsweep. A build
# finds its catalog beside it (see catalog.c), so OLD_BIN sits in a build tree.
# Exit 0 when everything is the same, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
old=${1:?usage: same-results.sh OLD_BIN [NEW_BIN]}
new=${2:-./ccsweep}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
bad=0
for spec in sweeps/default.yaml sweeps/moe-longctx.yaml; do
    for side in old new; do
        eval bin=\$$side
        mpirun --oversubscribe -n 2 "$bin" run "$spec" --db "$t/$side.db" --quiet >/dev/null 2>&1 ||
            { echo "$spec: the $side build's sweep failed"; bad=1; }
    done
    cols=$(sqlite3 "$t/old.db" "SELECT name FROM pragma_table_info('results')")
    cond=
    for c in $cols; do cond="$cond OR x.\"$c\" IS NOT y.\"$c\""; done
    n_old=$(sqlite3 "$t/old.db" "SELECT count(*) FROM results")
    n_new=$(sqlite3 "$t/new.db" "SELECT count(*) FROM results")
    diff=$(sqlite3 "$t/old.db" "ATTACH '$t/new.db' AS n; SELECT count(*) FROM main.results x
        LEFT JOIN n.results y ON y.run_id = x.run_id AND y.idx = x.idx WHERE ${cond# OR }")
    echo "$spec: rows $n_old vs $n_new; columns $(echo $cols | wc -w); rows differing in any column: $diff"
    [ "$n_old" = "$n_new" ] && [ "$diff" = 0 ] || bad=1
    rm -f "$t"/old.db* "$t"/new.db*
done
i=0 same=0
while read -r line; do
    case $line in '' | '#'*) continue ;; esac
    i=$((i + 1))
    for side in old new; do
        eval bin=\$$side
        # shellcheck disable=SC2086 # the line is the plan's options
        "$bin" project $line --json >"$t/$side.out" 2>"$t/$side.err"
        echo $? >>"$t/$side.err"
    done
    cmp -s "$t/old.out" "$t/new.out" && cmp -s "$t/old.err" "$t/new.err" && same=$((same + 1))
done <tools/same-results.plans
echo "project --json: $same of $i plans byte-identical (stdout, stderr and exit status)"
[ "$same" = "$i" ] || bad=1
exit $bad
