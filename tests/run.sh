#!/bin/sh
# run.sh [--unit-only] TEST_BIN... - run the cmocka unit tests, then every
# tests/integration/*.sh, and end with one summary line "N passed, N failed, N skipped".
# Integration scripts report each check on its own line: "PASS: what", "FAIL: what"
# or "SKIP: what (why)"; a script that exits non-zero without a FAIL line counts one failure.
unit_only=0
[ "$1" = "--unit-only" ] && { unit_only=1; shift; }
pass=0 fail=0 skip=0
failed=""
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    pass=$((pass + ${p:-0}))
    f=${f:-0}
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    [ "$f" -gt 0 ] && failed="$failed $(basename "$t")"
    fail=$((fail + f))
done
if [ $unit_only -eq 0 ]; then
    for s in tests/integration/*.sh; do
        [ -f "$s" ] || continue
        echo "== $s"
        out=$(sh "$s" 2>&1); rc=$?
        printf '%s\n' "$out"
        p=$(printf '%s\n' "$out" | grep -c '^PASS: ')
        f=$(printf '%s\n' "$out" | grep -c '^FAIL: ')
        k=$(printf '%s\n' "$out" | grep -c '^SKIP: ')
        [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && { f=1; echo "FAIL: $s exited with status $rc"; }
        [ "$f" -gt 0 ] && failed="$failed $(basename "$s")"
        pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + k))
    done
fi
[ -n "$failed" ] && echo "failing:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
