#!/bin/sh
# readme-serve.sh - rewrite the figures of README.md's "What the serving study
# shows" from a fresh run of the serving study sweeps/serve.yaml (about a second)
# and its report: the serving summary table and the findings of the report's
# serving section, line for line, between the README's serving figure markers.
# tests/integration/readme_serve.sh fails when they differ from that report; run
# this after a change that moves the projected serving numbers, and read the new
# figures before committing.
# Usage: sh tools/readme-serve.sh
set -eu
cd "$(dirname "$0")/.." || exit 1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ccsweep-readme-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
. tools/readme_block.inc
./ccsweep run sweeps/serve.yaml --db "$TMP/s.db" --quiet >/dev/null
./ccsweep report --db "$TMP/s.db" --out "$TMP/out" >/dev/null
# the summary table and the findings of the serving section
awk '/^### Serving summary/ { s = 1; next }
     /^What the serving run shows/ { s = 2; next }
     /^##/ { s = 0 }
     s == 1 && /^\|/ { print }
     s == 2 && /^- / { if (!b++) print ""; print }' "$TMP/out/report.md" >"$TMP/fig"
[ -s "$TMP/fig" ] || { echo "readme-serve: the report has no serving summary or findings" >&2; exit 2; }
begin='<!-- serving figures: report of sweeps/serve.yaml (tools/readme-serve.sh) -->'
end='<!-- end of serving figures -->'
readme_block "$begin" "$end" "$TMP/fig"
echo "readme-serve: README.md serving figures rewritten ($(wc -l <"$TMP/fig") lines); review with git diff README.md"
