#!/bin/sh
# calib_validate.sh - 'ccsweep validate' on a small ground-truth sample measured
# on the CI machine (tests/data/validate_measured.csv, tools/groundtruth) and the
# committed profile: the table, the in-range / extrapolated split, JSON, the
# sweep's profiling-cost reduction, exit codes and input errors.
set -u
BIN=./ccsweep
PROF=sweeps/calibration/ci-cpu.csv
MEAS=tests/data/validate_measured.csv
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ccsweep-val-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }
check() { what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
# expect WHAT RC WANT FILE PATTERN: exit status WANT and FILE matching PATTERN
expect() { if [ "$2" = "$3" ] && grep -q -- "$5" "$4"; then pass "$1"; else fail "$1"; fi; }
if [ ! -x "$BIN" ]; then
    fail "validate: $BIN is not built"
    exit 1
fi
V="$BIN validate --profile $PROF --measured $MEAS"
n=$(grep -vc '^#' $MEAS); n=$((n - 1))

$V > $TMP/out 2> $TMP/err; rc=$?
check "validate: exit 0 without targets" [ $rc = 0 ]
check "validate: one row per configuration ($n)" \
    [ "$(grep -c '^h[0-9]*-s[0-9]*-b[0-9]*-t[0-9] ' $TMP/out)" = "$n" ]
check "validate: in-range summary" grep -q '^inside the profiled range  *[0-9]* configs: mean' $TMP/out
check "validate: extrapolated summary" grep -q '^extrapolated  *[0-9]* configs: mean' $TMP/out
check "validate: the profiling wall time from the profile" grep -q '^profiling wall time: [0-9.]* s' $TMP/out

$V --json > $TMP/out.json 2> $TMP/err
check "validate --json: a projection per configuration" [ "$(grep -c '"projected_s"' $TMP/out.json)" -ge "$n" ]
check "validate --json: the in-range summary" grep -q '"inside"' $TMP/out.json
$V --max-err 0.001 > /dev/null 2>&1; rc=$?
check "validate: a missed target exits 2" [ $rc = 2 ]

if [ -f sweeps/validate-cpu.yaml ]; then
    $V --sweep sweeps/validate-cpu.yaml > $TMP/sw 2> $TMP/err; rc=$?
    expect "validate --sweep: profiling-cost reduction line" $rc 0 $TMP/sw 'profiling-cost reduction [0-9]*x'
fi

# input errors: exit 1, naming file, line and field
sed '2,$ s/^\([^,]*\),512,/\1,five-twelve,/' $MEAS > $TMP/bad.csv
$BIN validate --profile $PROF --measured $TMP/bad.csv > /dev/null 2> $TMP/err; rc=$?
expect "validate: bad measured field -> exit 1 with file:line:field" $rc 1 $TMP/err \
    "bad.csv:[0-9]*: field 'hidden'"
grep -v '^#' $MEAS | sed '1 s/,total_s//' > $TMP/nocol.csv
$BIN validate --profile $PROF --measured $TMP/nocol.csv > /dev/null 2> $TMP/err; rc=$?
expect "validate: missing column -> exit 1" $rc 1 $TMP/err "lacks the column 'total_s'"
$BIN validate --measured $MEAS > /dev/null 2>&1; rc=$?
check "validate: --profile required -> exit 1" [ $rc = 1 ]
