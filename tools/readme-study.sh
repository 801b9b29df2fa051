#!/bin/sh
# readme-study.sh - rewrite every README.md block that shows what a command
# prints: the figures of "What the study shows" from a fresh run of the
# reduced study sweeps/paper-small.yaml and its report (the report's summary
# table and its findings, line for line, between the README's figure markers),
# the quick-start 'project' example, the 'list' blocks and the 'make run'
# example. tests/integration/readme_study.sh (and project.sh for 'list') fail
# when a block differs from what the commands print now; run this after a
# change that moves the projected numbers, and read the new blocks before
# committing. (The serving sections' examples are their own.)
# Usage: sh tools/readme-study.sh [--check] [NP]   (NP ranks, default 2)
#   --check: rewrite a copy and compare it with README.md instead (the rates
#   and times of the 'make run' example aside); exit 1 with the diff when a
#   block is stale.
set -eu
cd "$(dirname "$0")/.." || exit 1
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
np=${1:-2}
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_base_warn_component_unused=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ccsweep-readme-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
R=$TMP/R.md # the README being rewritten, copied over README.md at the end
cp README.md "$R"
. tools/readme_block.inc
# put_block BEGIN END FILE: the lines between the markers BEGIN and END of
# the copy being rewritten become FILE's
put_block() { readme_block "$1" "$2" "$3" "$R"; }
mpirun --oversubscribe -n "$np" ./ccsweep run sweeps/paper-small.yaml --db "$TMP/s.db" --quiet >/dev/null
./ccsweep report --db "$TMP/s.db" --out "$TMP/out" >/dev/null
# the summary table and the findings of the report
awk '/^## Summary/ { s = 1; next }
     /^What this run shows/ { s = 2; next }
     /^## / { s = 0 }
     s == 1 && /^\|/ { print }
     s == 2 && /^- / { if (!b++) print ""; print }' "$TMP/out/report.md" >"$TMP/fig"
[ -s "$TMP/fig" ] || { echo "readme-study: the report has no summary or findings" >&2; exit 2; }
begin='<!-- figures: report of sweeps/paper-small.yaml (tools/readme-study.sh) -->'
end='<!-- end of figures -->'
put_block "$begin" "$end" "$TMP/fig"

# The quick-start example of 'project': the first lines of what the README's
# first 'project' command (its arguments read from the README) prints now.
ebegin='<!-- example: project output (tools/readme-study.sh) -->'
eend='<!-- end of example -->'
grep -qxF "$ebegin" "$R" && grep -qxF "$eend" "$R" ||
    { echo "readme-study: README.md lacks the example markers" >&2; exit 1; }
args=$(awk '/^\.\/ccsweep project /{ c = $0; while (c ~ /\\$/ && (getline l) > 0) { sub(/\\$/, "", c); c = c l }
    sub(/^\.\/ccsweep project /, "", c); print c; exit }' "$R")
[ -n "$args" ] || { echo "readme-study: README.md has no ./ccsweep project command" >&2; exit 1; }
{
    echo '```'
    ./ccsweep project $args | head -22
    echo '  ...'
    echo '```'
} >"$TMP/example"
put_block "$ebegin" "$eend" "$TMP/example"

# The 'list' blocks: the first lines of each list (as many as the README
# shows when its block goes on with '...'), or all of it.
for w in hardware models stacks; do
    awk -v c="\$ ./ccsweep list $w" -v out="$TMP/list-$w" -v cmd="./ccsweep list $w" '
        $0 == c { print; n = 0; s = 1; next }
        s && ($0 == "..." || $0 ~ /^\$ / || $0 == "```") {
            if ($0 == "...") { c2 = cmd " | head -n " n } else { c2 = cmd }
            while ((c2 | getline l) > 0) print l
            close(c2); s = 0; print; next }
        s { n++; next }
        { print }' "$R" >"$TMP/new.md"
    mv "$TMP/new.md" "$R"
done

# The 'make run' example: tools/run-default.sh on 2 ranks, its run line, the
# last progress line, the summary, and the head of the second query.
rbegin='<!-- example: make run output (tools/readme-study.sh) -->'
grep -qxF "$rbegin" "$R" ||
    { echo "readme-study: README.md lacks the make run example marker" >&2; exit 1; }
CCSWEEP_RUN_DB="$TMP/d.db" sh tools/run-default.sh 2 >"$TMP/run.out" 2>&1
# (mpirun passes stdout and stderr on separately: lines are put in order here)
sed "s|$TMP/d.db|results/ccsweep.db|g" "$TMP/run.out" | awk '
    /^\+ mpirun / { cmd = $0; next }
    /^ccsweep: run [0-9]+:/ { start = $0; next }
    /^ccsweep: [0-9]+\/[0-9]+ / { last = $0; next }
    /^ccsweep run: run [0-9]+ complete/ { done = $0; next }
    /^# best plan for gpt3-175b/ { t = $0; q = 1; next }
    q == 1 && /^  hardware / { th = $0; q = 2; next }
    q == 2 && /^  [a-z]/ && !/^  ---/ { row = $0; q = 3; next }
    /^plans with a global batch/ { other = $0 }
    END { print cmd; print start; print last; print done; print ""; print t; print th; print row
          print "  ..."; print other }' | sed 's/ *$//' >"$TMP/run.ex"
{
    echo '```'
    cat "$TMP/run.ex"
    echo '```'
} >"$TMP/example"
put_block "$rbegin" "$eend" "$TMP/example"

if [ $check = 0 ]; then
    cp "$R" README.md
    echo "readme-study: README.md's figures, project, list and make run examples rewritten; review with git diff README.md"
    exit 0
fi
# what varies from run to run: rates, times, the ETA
norm() { sed -E 's|[0-9]+/s|N/s|g; s|in [0-9.]+ s |in T s |; s|ETA [0-9:]+|ETA T|' "$1"; }
norm README.md >"$TMP/a.md"
norm "$R" >"$TMP/b.md"
if ! diff -u "$TMP/a.md" "$TMP/b.md" >"$TMP/d"; then
    echo "readme-study: README.md blocks differ from what the commands print now (- README, + now):"
    cat "$TMP/d"
    exit 1
fi
echo "readme-study: README.md's output blocks are what the commands print"
