#!/bin/sh
# report_crafted.sh - 'ccsweep report' on a crafted database: a hardware or
# model name holding a newline and a gnuplot system("...") command must not
# run anything (the marker file stays absent); names read back from the
# database are validated again and the report refuses the file (exit 1).
. tests/integration/sweep_common.inc
need_tools "report on a crafted database"
if ! command -v gnuplot >/dev/null 2>&1; then
    skip "report on a crafted database (gnuplot is not installed)"
    exit 0
fi
DB="$TMP/good.db"
$BIN run tests/data/sweep_small.yaml --db "$DB" --quiet >/dev/null 2>&1
$BIN report --db "$DB" --out "$TMP/good" >/dev/null 2>&1; rc=$?
check "the untouched database reports (exit $rc)" [ $rc -eq 0 ]

MARK="$TMP/pwned"
for tbl in hardware models; do
    cp "$DB" "$TMP/$tbl.db"
    if [ $tbl = hardware ]; then old=a100-80g; else old=llama3-8b; fi
    q "$TMP/$tbl.db" "UPDATE $tbl SET name = '$old' || char(10) || 'system(\"touch $MARK\")' || char(10) || '#' WHERE name = '$old'"
    $BIN report --db "$TMP/$tbl.db" --out "$TMP/out-$tbl" >/dev/null 2>"$TMP/err"; rc=$?
    check "crafted $tbl name: no command ran (no marker file)" [ ! -e "$MARK" ]
    check "crafted $tbl name: exit 1, the name is refused and shown without its newline" \
        sh -c "[ $rc -eq 1 ] && grep -q \"not a catalog name\" '$TMP/err' && grep -q \"'$old?system\" '$TMP/err'"
    check "crafted $tbl name: no report written" [ ! -e "$TMP/out-$tbl/report.md" ]
done
cp "$DB" "$TMP/evo.db"
q "$TMP/evo.db" "UPDATE hardware SET evolution = 'x\`touch $MARK\`' WHERE evolution IS NOT NULL"
$BIN report --db "$TMP/evo.db" --out "$TMP/out-evo" >/dev/null 2>"$TMP/err"; rc=$?
check "crafted evolution name with backquotes: exit 1, no command ran" \
    sh -c "[ $rc -eq 1 ] && [ ! -e '$MARK' ] && grep -q 'evolution name' '$TMP/err'"

# a spec name (a YAML string may hold a newline) and a where text holding a
# newline and '|': report.md's title and run table keep each on its line
cp "$DB" "$TMP/name.db"
q "$TMP/name.db" "UPDATE runs SET name = 'small' || char(10) || '# injected heading', where_expr = 'tp > 1' || char(10) || '| x | y |'"
$BIN report --db "$TMP/name.db" --out "$TMP/out-name" >/dev/null 2>"$TMP/err"; rc=$?
check "a spec name and where text with a newline: exit 0, the title stays one line, no injected heading or row" \
    sh -c "[ $rc -eq 0 ] && head -1 '$TMP/out-name/report.md' | grep -q '^# ccsweep report: small # injected heading (run 1)\$' && ! grep -q '^# injected' '$TMP/out-name/report.md' && ! grep -q '^| x | y |' '$TMP/out-name/report.md' && grep -q 'tp > 1 \\\\| x \\\\| y \\\\|' '$TMP/out-name/report.md'"
