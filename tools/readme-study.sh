#!/bin/sh
# readme-study.sh - rewrite the figures of README.md's "What the study shows"
# from a fresh run of the reduced study sweeps/paper-small.yaml and its report:
# the report's summary table and its findings, line for line, between the
# README's figure markers. tests/integration/readme_study.sh fails when the
# README's figures differ from that report; run this after a change that
# moves the projected numbers, and read the new figures before committing.
# Usage: sh tools/readme-study.sh [NP]   (NP ranks, default 2)
set -eu
cd "$(dirname "$0")/.." || exit 1
np=${1:-2}
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_base_warn_component_unused=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ccsweep-readme-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
. tools/readme_block.inc
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
readme_block "$begin" "$end" "$TMP/fig"
echo "readme-study: README.md figures rewritten ($(wc -l <"$TMP/fig") lines); review with git diff README.md"

# The quick-start example of 'project': the first lines of what the README's
# first 'project' command (its arguments read from the README) prints now.
ebegin='<!-- example: project output (tools/readme-study.sh) -->'
eend='<!-- end of example -->'
grep -qxF "$ebegin" README.md && grep -qxF "$eend" README.md ||
    { echo "readme-study: README.md lacks the example markers" >&2; exit 1; }
args=$(awk '/^\.\/ccsweep project /{ c = $0; while (c ~ /\\$/ && (getline l) > 0) { sub(/\\$/, "", c); c = c l }
    sub(/^\.\/ccsweep project /, "", c); print c; exit }' README.md)
[ -n "$args" ] || { echo "readme-study: README.md has no ./ccsweep project command" >&2; exit 1; }
{
    echo '```'
    ./ccsweep project $args | head -22
    echo '  ...'
    echo '```'
} >"$TMP/example"
readme_block "$ebegin" "$eend" "$TMP/example"
echo "readme-study: README.md project example rewritten"
