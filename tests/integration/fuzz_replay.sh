#!/bin/sh
# fuzz_replay.sh - replay every fuzz harness (tests/fuzz) over its seed corpus
# and the regression inputs of crashes the fuzzers found, with the normal
# build (and under ASan/UBSan with 'make check SANITIZE=1'): each must run
# through every input without crashing. 'make fuzz' runs the fuzzers proper.
cd "$(dirname "$0")/../.." || exit 1
# every harness in tests/fuzz (the Makefile's FUZZERS builds replay_NAME for each)
for f in $(ls tests/fuzz/fuzz_*.c | sed 's|.*/fuzz_\(.*\)\.c$|\1|'); do
    bin=${CCS_BUILD:-build}/tests/replay_$f
    if [ ! -x "$bin" ]; then
        echo "FAIL: fuzz replay $f ($bin is not built)"
        continue
    fi
    if [ ! -d tests/fuzz/regress/$f ]; then
        echo "FAIL: fuzz replay $f (tests/fuzz/regress/$f is missing: libFuzzer needs it)"
        continue
    fi
    out=$("$bin" tests/fuzz/corpus/$f tests/fuzz/regress/$f 2>&1); rc=$?
    if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q "^replayed [1-9][0-9]* inputs"; then
        echo "PASS: fuzz replay $f: $(printf '%s\n' "$out" | grep '^replayed') (seeds and regressions)"
    else
        echo "FAIL: fuzz replay $f (exit $rc): $(printf '%s\n' "$out" | tail -5)"
    fi
done
