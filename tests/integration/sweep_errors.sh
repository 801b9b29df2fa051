#!/bin/sh
# sweep_errors.sh - every kind of spec error exits 1 with "file:line:col:" and
# the field, on every rank count, and creates no database.
. tests/integration/sweep_common.inc
need_tools "spec errors"

H='models: [gpt3-175b]
hardware: [a100-80g]'
n=0
# expect NAME LINE:COL MESSAGE SPEC-TEXT
expect() {
    n=$((n + 1))
    f="$TMP/case$n.yaml"
    printf '%s\n' "$4" >"$f"
    $BIN run "$f" --db "$TMP/case$n.db" --quiet >"$TMP/out$n" 2>"$TMP/err$n"; rc=$?
    if [ $rc -eq 1 ] && grep -qF "$f:$2: " "$TMP/err$n" && grep -qF "$3" "$TMP/err$n" &&
        [ ! -e "$TMP/case$n.db" ] && [ ! -s "$TMP/out$n" ]; then
        pass "$1: exit 1, '$f:$2: ...$3', no database"
    else
        fail "$1: exit $rc, stderr: $(cat "$TMP/err$n")"
    fi
}

expect "unknown axis" 4:3 "field 'plan.tpp': unknown axis" "$H
plan:
  tpp: 2"
expect "unknown catalog model" 1:21 "field 'models': unknown model 'gpt-5'" "models: [gpt3-175b, gpt-5]
hardware: [a100-80g]
plan: {tp: 1}"
expect "unknown catalog hardware" 2:12 "field 'hardware': unknown hardware 'tpu-v9'" "models: [gpt3-175b]
hardware: [tpu-v9]
plan: {tp: 1}"
expect "empty list" 4:7 "field 'plan.tp': expected a non-empty list" "$H
plan:
  tp: []"
expect "bad range" 4:15 "field 'plan.pp': bad range: first (16) must not exceed last (2)" "$H
plan:
  pp: {range: [16, 2]}"
expect "bad geom" 4:14 "field 'plan.tp': bad geom" "$H
plan:
  tp: {geom: [1, 64, 1]}"
expect "expression syntax error" 5:15 "field 'where': column 7: expected a number" "$H
plan:
  tp: [1, 2]
where: \"tp <= and fits\""
expect "expression type error" 5:12 "field 'where': column 4: type error: 'and' needs booleans" "$H
plan:
  tp: [1, 2]
where: \"tp and fits\""
expect "value type error" 4:11 "field 'plan.tp': expected an integer, got 'eight'" "$H
plan:
  tp: [1, eight]"
expect "unknown key" 4:1 "unknown key 'plans'" "$H
plan: {tp: 1}
plans: {pp: 2}"
expect "zip of unequal axes" 4:12 "must have the same length" "$H
plan: {tp: [1, 2], pp: [1, 2, 4]}
zip: [[tp, pp]]"
expect "grid over 2^63" 7:8 "field 'plan.mbs': the grid would hold more than 2^63-1 scenarios" "$H
plan:
  devices: {range: [1, 1048576]}
  tp: {range: [1, 1048576]}
  pp: {range: [1, 1048576]}
  mbs: {range: [1, 1048576]}"

# the same error under mpirun with two ranks: printed once, every rank exits
$MPIRUN -n 2 $BIN run "$TMP/case1.yaml" --db "$TMP/mpi.db" --quiet >/dev/null 2>"$TMP/errm"; rc=$?
check "under mpirun -n 2: exit non-zero, message printed once, no database" \
    [ $rc -ne 0 -a "$(grep -c "unknown axis" "$TMP/errm")" = 1 -a ! -e "$TMP/mpi.db" ]
$BIN run "$TMP/nope.yaml" --db "$TMP/nope.db" --quiet 2>"$TMP/errn"; rc=$?
check "missing spec file exits 1 and names it" \
    sh -c "[ $rc -eq 1 ] && grep -q 'nope.yaml: cannot open' '$TMP/errn' && [ ! -e '$TMP/nope.db' ]"

# SIGINT while the spec loads (CCSWEEP_TEST_LOAD_DELAY_US holds the run there,
# a caught signal ends the wait): exit 130 with a message, no database. The
# signal is sent once the hook says it holds the load (ccsweep's handlers are
# in place by then), so the check does not depend on timing.
printf '%s\nplan: {tp: 1}\n' "$H" >"$TMP/load.yaml"
CCSWEEP_TEST_LOAD_DELAY_US=60000000 $BIN run "$TMP/load.yaml" --db "$TMP/load.db" --quiet \
    2>"$TMP/errl" &
lpid=$!
i=0
while [ $i -lt 600 ]; do
    grep -q 'test hook: holding the load' "$TMP/errl" 2>/dev/null && break
    sleep 0.1; i=$((i + 1))
done
kill -INT $lpid
wait $lpid; rc=$?
check "SIGINT while the spec loads: exit 130, 'interrupted' named, no database (rc $rc)" \
    sh -c "[ $rc -eq 130 ] && grep -q 'interrupted by signal 2 while loading' '$TMP/errl' && [ ! -e '$TMP/load.db' ]"
