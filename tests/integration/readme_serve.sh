#!/bin/sh
# readme_serve.sh - README.md's "What the serving study shows" tells what the
# serving study's report says: sweeps/serve.yaml (about a second) is run and
# reported here, every line between the README's serving figure markers must be
# a line of the report's serving section (its summary table and findings,
# numbers included), every finding of the report must be in the README, and the
# rest of the section may hold no figure of its own (no number outside code
# spans; names such as h100-sxm or fp8 start with a letter). A changed
# projection that moves a number fails this test until 'sh tools/readme-serve.sh'
# rewrites the figures.
. tests/integration/sweep_common.inc
need_tools "readme serve"
if ! command -v gnuplot >/dev/null 2>&1; then
    skip "readme serve (gnuplot is not installed; 'make deps' installs it)"
    exit 0
fi
$BIN run sweeps/serve.yaml --db "$TMP/s.db" --quiet >/dev/null 2>"$TMP/run.err"; rc=$?
$BIN report --db "$TMP/s.db" --out "$TMP/out" >/dev/null 2>"$TMP/rep.err" || rc=$?
check "the serving study runs and reports" [ $rc -eq 0 ]
[ $rc -eq 0 ] || cat "$TMP/run.err" "$TMP/rep.err" | sed 's/^/  /'

awk '/^### What the serving study shows/ { s = 1; next } /^##/ { s = 0 } s' README.md >"$TMP/section"
begin='<!-- serving figures: report of sweeps/serve.yaml (tools/readme-serve.sh) -->'
end='<!-- end of serving figures -->'
awk -v b="$begin" -v e="$end" '$0 == b { s = 1; next } $0 == e { s = 0 } s && NF' \
    "$TMP/section" >"$TMP/fig"
awk -v b="$begin" -v e="$end" '$0 == b { s = 1; next } $0 == e { s = 0; next } !s' \
    "$TMP/section" >"$TMP/prose"
n=$(wc -l <"$TMP/fig")
check "README's serving section holds the report's figures ($n lines)" [ "$n" -ge 8 ]
bad=0
while IFS= read -r line; do
    if ! grep -qxF -- "$line" "$TMP/out/report.md"; then
        [ $bad -eq 0 ] && echo "  README serving lines not in the report (run 'sh tools/readme-serve.sh'):"
        echo "    $line"
        bad=$((bad + 1))
    fi
done <"$TMP/fig"
check "every README serving figure line is a line of the report ($bad differ)" [ $bad -eq 0 ]
awk '/^What the serving run shows/ { s = 1; next } /^##/ { s = 0 } s && /^- /' \
    "$TMP/out/report.md" >"$TMP/findings"
missing=$(grep -cvxF -f "$TMP/fig" "$TMP/findings" || true)
check "the report's serving findings ($(wc -l <"$TMP/findings")) are all in the README ($missing missing)" \
    [ -s "$TMP/findings" -a "$missing" = 0 ]
figs=$(sed -e 's/`[^`]*`//g' -e 's/[A-Za-z][A-Za-z0-9._-]*//g' "$TMP/prose" | grep -n '[0-9]' || true)
check "no number in the serving section outside the report's figures${figs:+ (found: $figs)}" [ -z "$figs" ]
