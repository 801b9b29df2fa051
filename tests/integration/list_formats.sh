#!/bin/sh
# list_formats.sh - 'ccsweep list KIND --csv | --json': as many entries as the
# table, the same names in the same order, numbers in SI units. Runs from the
# repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "list formats"

for kind in models hardware evolutions stacks; do
    $BIN list $kind >"$TMP/$kind.txt" && $BIN list $kind --csv >"$TMP/$kind.csv" &&
        $BIN list $kind --json >"$TMP/$kind.json"; rc=$?
    check "list $kind, --csv and --json exit 0" [ $rc -eq 0 ]
    names=$(tail -n +2 "$TMP/$kind.txt" | awk '{ print $1 }' | tr '\n' ' ')
    check "list $kind --csv: a header and the table's names in order" \
        [ "$(tail -n +2 "$TMP/$kind.csv" | cut -d, -f1 | tr '\n' ' ')" = "$names" -a \
          "$(head -1 "$TMP/$kind.csv" | cut -d, -f1)" = name ]
    check "list $kind --json: the same names" \
        [ "$(sqlite3 -batch :memory: "SELECT group_concat(value ->> 'name', ' ') || ' ' FROM
              json_each(readfile('$TMP/$kind.json'))")" = "$names" ]
done
check "hardware in SI: h100-sxm has 80 GiB in bytes and 989 TFLOP/s bf16 in FLOP/s" \
    [ "$(grep '^h100-sxm,' "$TMP/hardware.csv" | cut -d, -f3,6)" = "989000000000000,85899345920" ]
check "models: llama3-70b's parameters as an integer in JSON" \
    [ "$(sqlite3 -batch :memory: "SELECT typeof(value ->> 'params') FROM json_each(readfile('$TMP/models.json'))
          WHERE value ->> 'name' = 'llama3-70b'")" = integer ]
$BIN list models --csv --json >/dev/null 2>"$TMP/e.err"; rc=$?
check "--csv with --json is refused (exit 1)" [ $rc -eq 1 ] && grep -q "give one" "$TMP/e.err"
