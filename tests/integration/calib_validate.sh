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

# interference: the tools record probe times and a verdict; validate compares them
{ echo "# probe_s: 0.0100 0.0101 0.0100 0.0102"; echo "# interference: none"; cat $PROF; } > $TMP/pq.csv
{ echo "# probe_s: 0.0101 0.0100 0.0102"; echo "# interference: none"; cat $MEAS; } > $TMP/mq.csv
{ echo "# probe_s: 0.0140 0.0141 0.0142"; echo "# interference: none"; cat $MEAS; } > $TMP/mslow.csv
{ echo "# probe_s: 0.0100 0.0160 0.0170 0.0150 0.0180"; echo "# interference: busy"; cat $MEAS; } > $TMP/mbusy.csv
cp sweeps/calibration/ci-cpu.yaml $TMP/pq.yaml
$BIN validate --profile $TMP/pq.csv --measured $TMP/mq.csv > $TMP/q.out 2> $TMP/err; rc=$?
expect "interference: quiet, matching probes -> the errors are reported" $rc 0 $TMP/q.out \
    '^interference: probe median 10.1 ms profiling (4 probes.*: quiet$'
$BIN validate --profile $TMP/pq.csv --measured $TMP/mslow.csv > $TMP/s.out 2> $TMP/err; rc=$?
expect "interference: probes 40% apart -> exit 3, saying the load differed" $rc 3 $TMP/err \
    'too busy to measure: the probe took 10.1 ms while profiling and 14.1 ms while measuring the layers (40% apart)'
check "interference: no error table when too busy" [ ! -s $TMP/s.out ]
$BIN validate --profile $TMP/pq.csv --measured $TMP/mbusy.csv > /dev/null 2> $TMP/err; rc=$?
expect "interference: a ground truth measured under load -> exit 3" $rc 3 $TMP/err \
    'while measuring the layers (.*mbusy.csv) the probe ran a median 60% and at worst 80% slower'
$BIN validate --profile $TMP/pq.csv --measured $TMP/mbusy.csv --max-err 50 --allow-busy > $TMP/a.out 2>&1; rc=$?
expect "interference: --allow-busy reports the numbers with a warning" $rc 0 $TMP/a.out \
    '^warning (--allow-busy): the machine was too busy to measure'
$BIN validate --profile $TMP/pq.csv --measured $TMP/mslow.csv --json > $TMP/b.json 2> /dev/null; rc=$?
check "interference: --json says busy with the reasons, exit 3" \
    sh -c "[ $rc = 3 ] && grep -q '\"busy\": true' $TMP/b.json && grep -q '40% apart' $TMP/b.json"

# extrapolation factors are shown with two decimals (no '1.0x' for 1.04x) and
# count only beyond the tolerance
$V > $TMP/x.out 2>&1
check "validate: extrapolation factors with two decimals below 10x" \
    sh -c "grep -q ' [0-9]\.[0-9][0-9]x\$' $TMP/x.out && ! grep -q ' [0-9]\.[0-9]x\$' $TMP/x.out"
check "validate: the extrapolation tolerance is stated" grep -q '^(extrap: .* above 1.10x the configuration counts as extrapolated)' $TMP/x.out
# GEMM shape terms: printed; a profile too thin to fit them says so instead of silent zeros
check "validate: GEMM shape terms printed" grep -q '^GEMM shape terms (fp32), FLOP equivalents: ' $TMP/x.out
awk -F, '/^gemm,/ { if (++g > 6) next } { print }' $PROF > $TMP/thin.csv
cp sweeps/calibration/ci-cpu.yaml $TMP/thin.yaml
$BIN validate --profile $TMP/thin.csv --measured $MEAS > $TMP/t.out 2>&1
check "validate: a profile whose GEMMs cannot separate traffic says 'none fitted'" \
    grep -q '^GEMM shape terms (fp32): none fitted' $TMP/t.out
