#!/bin/sh
# same-results.sh OLD_BIN [NEW_BIN] - are two builds' results the same? For a
# refactoring that must not change a number: sweeps sweeps/default.yaml and
# sweeps/moe-longctx.yaml with each build (2 ranks) and compares their views
# row by row (rid: run and index) and column by column (IS NOT, so NULLs
# count; REALs bit for bit), in the columns both builds' views have: the
# id-level view (result_codes from schema version 12, results before it),
# results_view, and results when both builds name its codes (version 12 on).
# Columns only one build has are listed, not compared. Then 'project --json'
# of the plans in tools/same-results.plans byte for byte (stdout, stderr and
# exit status). NEW_BIN defaults to ./ccsweep. A build finds its catalog
# beside it (see catalog.c), so OLD_BIN sits in a build tree. Exit 0 when
# everything is the same, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
old=${1:?usage: same-results.sh OLD_BIN [NEW_BIN]}
new=${2:-./ccsweep}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
bad=0
# has DB VIEW: 1 when DB has a view named VIEW
has() { sqlite3 "$1" "SELECT count(*) FROM sqlite_schema WHERE type = 'view' AND name = '$2'"; }
# codes DB: DB's id-level view
codes() { if [ "$(has "$1" result_codes)" = 1 ]; then echo result_codes; else echo results; fi; }
# compare SPEC OVIEW NVIEW: OVIEW of old.db and NVIEW of new.db, rows matched
# by rid, in every column both have; sets bad when they differ
compare() {
    oc=$(sqlite3 "$t/old.db" "SELECT name FROM pragma_table_info('$2')")
    nc=$(sqlite3 "$t/new.db" "SELECT name FROM pragma_table_info('$3')")
    common= only=
    for c in $oc; do
        case " $(echo $nc) " in *" $c "*) common="$common $c" ;; *) only="$only old:$c" ;; esac
    done
    for c in $nc; do case " $(echo $oc) " in *" $c "*) ;; *) only="$only new:$c" ;; esac; done
    cond=
    for c in $common; do cond="$cond OR x.\"$c\" IS NOT y.\"$c\""; done
    n_old=$(sqlite3 "$t/old.db" "SELECT count(*) FROM $2")
    n_new=$(sqlite3 "$t/new.db" "SELECT count(*) FROM $3")
    diff=$(sqlite3 "$t/old.db" "ATTACH '$t/new.db' AS n; SELECT count(*) FROM main.$2 x
        LEFT JOIN n.$3 y ON y.rid = x.rid WHERE ${cond# OR }")
    echo "$1: $2 vs $3: rows $n_old vs $n_new; columns compared $(echo $common | wc -w)${only:+ (only in one build:$only)}; rows differing in any: $diff"
    [ "$n_old" = "$n_new" ] && [ "$diff" = 0 ] || bad=1
}
for spec in sweeps/default.yaml sweeps/moe-longctx.yaml; do
    for side in old new; do
        eval bin=\$$side
        mpirun --oversubscribe -n 2 "$bin" run "$spec" --db "$t/$side.db" --quiet >/dev/null 2>&1 ||
            { echo "$spec: the $side build's sweep failed"; bad=1; }
    done
    compare "$spec" "$(codes "$t/old.db")" "$(codes "$t/new.db")"
    compare "$spec" results_view results_view
    [ "$(has "$t/old.db" result_codes)$(has "$t/new.db" result_codes)" = 11 ] &&
        compare "$spec" results results
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
