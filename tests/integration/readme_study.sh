#!/bin/sh
# readme_study.sh - README.md's "What the study shows" tells what the study's
# report says: the reduced study sweeps/paper-small.yaml is run and reported
# here, every line between the README's figure markers must be a line of that
# report (its summary table and findings, numbers included), and the rest of
# the section may hold no figure of its own (no number outside code spans,
# arXiv numbers, years and names such as mi210). A changed projection that moves a number fails
# this test until 'sh tools/readme-study.sh' rewrites the figures.
. tests/integration/sweep_common.inc
need_tools "readme study"
if ! command -v gnuplot >/dev/null 2>&1; then
    skip "readme study (gnuplot is not installed; 'make deps' installs it)"
    exit 0
fi
$MPIRUN -n 2 $BIN run sweeps/paper-small.yaml --db "$TMP/s.db" --quiet >/dev/null 2>"$TMP/run.err"; rc=$?
$BIN report --db "$TMP/s.db" --out "$TMP/out" >/dev/null 2>"$TMP/rep.err" || rc=$?
check "the reduced study runs and reports" [ $rc -eq 0 ]
[ $rc -eq 0 ] || cat "$TMP/run.err" "$TMP/rep.err" | sed 's/^/  /'

awk '/^## What the study shows/ { s = 1; next } /^## / { s = 0 } s' README.md >"$TMP/section"
begin='<!-- figures: report of sweeps/paper-small.yaml (tools/readme-study.sh) -->'
end='<!-- end of figures -->'
awk -v b="$begin" -v e="$end" '$0 == b { s = 1; next } $0 == e { s = 0 } s && NF' \
    "$TMP/section" >"$TMP/fig"
awk -v b="$begin" -v e="$end" '$0 == b { s = 1; next } $0 == e { s = 0; next } !s' \
    "$TMP/section" >"$TMP/prose"
n=$(wc -l <"$TMP/fig")
check "README's section holds the report's figures ($n lines)" [ "$n" -ge 8 ]
bad=0
while IFS= read -r line; do
    if ! grep -qxF -- "$line" "$TMP/out/report.md"; then
        [ $bad -eq 0 ] && echo "  README figure lines not in the report (run 'sh tools/readme-study.sh'):"
        echo "    $line"
        bad=$((bad + 1))
    fi
done <"$TMP/fig"
check "every README figure line is a line of the report ($bad differ)" [ $bad -eq 0 ]
check "the report's findings are all in the README" \
    sh -c "[ \$(awk '/^What this run shows/ { s = 1; next } /^## / { s = 0 } s && /^- /' '$TMP/out/report.md' |
        grep -cvxF -f '$TMP/fig') = 0 ]"
# no figure of its own outside the markers
# (names such as mi210 or future-100t start with a letter; a figure does not)
figs=$(sed -e 's/`[^`]*`//g' -e 's/arXiv [0-9.]*//g' -e 's/\b\(19\|20\)[0-9][0-9]\b//g' \
    -e 's/[A-Za-z][A-Za-z0-9._-]*//g' "$TMP/prose" | grep -n '[0-9]' || true)
check "no number in the section outside the report's figures${figs:+ (found: $figs)}" [ -z "$figs" ]

# The quick-start example of 'project' prints what the README's first
# 'project' command (its arguments read from the README) prints now.
ebegin='<!-- example: project output (tools/readme-study.sh) -->'
eend='<!-- end of example -->'
awk -v b="$ebegin" -v e="$eend" '$0 == b { s = 1; next } $0 == e { s = 0 } s' README.md |
    grep -v '^```' | grep -vxF '  ...' >"$TMP/example"
args=$(awk '/^\.\/ccsweep project /{ c = $0; while (c ~ /\\$/ && (getline l) > 0) { sub(/\\$/, "", c); c = c l }
    sub(/^\.\/ccsweep project /, "", c); print c; exit }' README.md)
check "README.md shows a ./ccsweep project command" [ -n "$args" ]
$BIN project $args >"$TMP/project.out" 2>&1
ne=$(wc -l <"$TMP/example")
stale=$(grep -cvxF -f "$TMP/project.out" "$TMP/example" || true)
check "README's project example ($ne lines) is what the command prints (${stale} stale; run 'sh tools/readme-study.sh')" \
    [ "$ne" -ge 15 -a "$stale" -eq 0 ]

# Every README block that shows command output (figures, project, list, make
# run; the rates and times of 'make run' aside) is what tools/readme-study.sh
# writes from the commands now.
sh tools/readme-study.sh --check >"$TMP/rs.out" 2>&1; rc=$?
check "README's output blocks are what the commands print (tools/readme-study.sh --check exit $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || head -40 "$TMP/rs.out"
