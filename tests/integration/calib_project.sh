#!/bin/sh
# calib_project.sh - 'ccsweep project --calib' with the committed measured
# profile of the CI machine (sweeps/calibration/ci-cpu.csv, hardware entry
# ci-cpu.yaml): the JSON carries a band and the extrapolation field, flagged
# only when an operator lies beyond the profile; bad profiles are clear errors.
set -u
BIN=./ccsweep
PROF=sweeps/calibration/ci-cpu.csv
HW=sweeps/calibration/ci-cpu.yaml
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ccsweep-calib-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }
check() { what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
# expect WHAT RC WANT FILE PATTERN: exit status WANT and FILE matching PATTERN
expect() { if [ "$2" = "$3" ] && grep -q -- "$5" "$4"; then pass "$1"; else fail "$1"; fi; }
if [ ! -x "$BIN" ]; then
    fail "calib: $BIN is not built"
    exit 1
fi
# a catalog with the profiled machine added (the shipped one is left alone)
mkdir -p $TMP/cat
cp sweeps/catalog/models.yaml sweeps/catalog/evolutions.yaml $TMP/cat/
{ cat sweeps/catalog/hardware.yaml; echo; sed -n '/^hardware:/,$p' $HW | tail -n +2; } > $TMP/cat/hardware.yaml
P="$BIN project --catalog $TMP/cat --hw ci-cpu --dtype fp32 --gbs 1 --calib $PROF --json"
num() { sed -n "s/^  \"$1\": \\([^,]*\\),\$/\\1/p" "$2"; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
inband() { [ -n "$1" ] && lt "$1" "$2" && lt "$2" "$3"; } # lo t hi

# small enough for every operator to lie inside the profile
if $P --layers 1 --hidden 512 --heads 8 --seq 128 --vocab 1024 > $TMP/in.json 2> $TMP/err; then
    t=$(num t_iter $TMP/in.json); lo=$(num t_iter_lo $TMP/in.json); hi=$(num t_iter_hi $TMP/in.json)
    check "inside the profile: band lo < t < hi" inband "$lo" "$t" "$hi"
    check "inside the profile: extrap is 0" grep -q '^  "extrap": 0.0,$' $TMP/in.json
else
    fail "project --calib (small model): $(cat $TMP/err)"
fi
# far larger GEMMs than profiled: flagged, with how far
if $P --layers 2 --hidden 8192 --heads 64 --seq 2048 --tp 2 --devices 2 > $TMP/ex.json 2> $TMP/err; then
    x=$(num extrap $TMP/ex.json)
    check "beyond the profile: extrap factor > 1 ($x)" lt 1 "$x"
    t=$(num t_iter $TMP/ex.json); lo=$(num t_iter_lo $TMP/ex.json); hi=$(num t_iter_hi $TMP/ex.json)
    check "beyond the profile: band lo < t < hi" inband "$lo" "$t" "$hi"
else
    fail "project --calib (large model): $(cat $TMP/err)"
fi
# per-operator provenance: which curves were measured, which synthetic
PP="$BIN project --catalog $TMP/cat --hw ci-cpu --dtype fp32 --calib $PROF --layers 2 --hidden 1024 --heads 16 --seq 512 --tp 2 --pp 2 --devices 4 --gbs 1"
$PP >$TMP/src.txt 2>$TMP/err
check "project --calib names the measured operator kinds" \
    grep -q "^  operator curves      measured ($PROF): .*gemm fp32.*allreduce intra" $TMP/src.txt
check "project --calib names those left synthetic (p2p between nodes)" \
    grep -q "^                       synthetic (no curve in the profile): .*p2p inter" $TMP/src.txt
$PP --json >$TMP/src.json 2>$TMP/err
js() { sqlite3 :memory: "select group_concat(json_extract(value, '\$.op') || ':' || json_extract(value, '\$.source'), ' ') from json_each(readfile('$TMP/src.json'), '\$.op_sources') where $1;"; }
check "JSON op_sources: gemm measured, from the profile" \
    [ "$(js "json_extract(value, '\$.op') = 'gemm'")" = "gemm:measured" ]
check "JSON op_sources: p2p synthetic" [ "$(js "json_extract(value, '\$.op') = 'p2p'")" = "p2p:synthetic" ]
$BIN project --catalog $TMP/cat --hw ci-cpu --dtype fp32 --layers 2 --hidden 1024 --heads 16 --seq 512 --gbs 1 --json >$TMP/nosrc.json
n=$(sqlite3 :memory: "select count(*) || ' ' || sum(json_extract(value, '\$.source') = 'synthetic') from json_each(readfile('$TMP/nosrc.json'), '\$.op_sources');")
check "without --calib every operator is synthetic ($n)" [ "${n% *}" = "${n#* }" ]

# generations scale the measured curves: two memory-wall generations are faster
$P --layers 1 --hidden 1024 --heads 16 --seq 512 > $TMP/g0.json 2> /dev/null
$P --layers 1 --hidden 1024 --heads 16 --seq 512 --gen 2 --evolution memory-wall > $TMP/g2.json 2> /dev/null
check "generation 2 projects faster than generation 0" lt "$(num t_iter $TMP/g2.json)" "$(num t_iter $TMP/g0.json)"
# a broken profile names file, line and field; exit status 1
{ head -20 $PROF; echo "gemm,fp32,64,64,sixty-four,0,1,,1e-5,3"; } > $TMP/broken.csv
$BIN project --catalog $TMP/cat --hw ci-cpu --layers 1 --hidden 512 --heads 8 --gbs 1 --calib $TMP/broken.csv \
    > /dev/null 2> $TMP/err
rc=$?
line=$(( $(wc -l < $TMP/broken.csv) ))
expect "broken profile: exit 1 naming file:line:field" $rc 1 $TMP/err "broken.csv:$line: field 'k'"
