#!/bin/sh
# calib_nccl_import.sh - tools/nccl_import on sample nccl-tests logs in
# tests/data (the documented table: size count type redop [root] time algbw busbw
# #wrong, out-of-place then in-place; times in us), and the imported profile used
# by 'ccsweep project --calib'.
set -u
IMP=${CCS_BUILD:-build}/tools/nccl_import
BIN=./ccsweep
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ccsweep-nccl-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }
check() { what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
# expect WHAT RC WANT FILE PATTERN: exit status WANT and FILE matching PATTERN
expect() { if [ "$2" = "$3" ] && grep -q -- "$5" "$4"; then pass "$1"; else fail "$1"; fi; }
if [ ! -x "$IMP" ] || [ ! -x "$BIN" ]; then
    fail "nccl_import: $IMP or $BIN is not built"
    exit 1
fi
D=tests/data
rows() { grep -c "^$1," "$2"; }

# all_reduce_perf, 8 ranks on one host: 11 sizes, fp32, intra, 20 iterations
$IMP $D/all_reduce_perf_8gpu.log > $TMP/ar.csv
check "all_reduce_perf: 11 rows" [ "$(rows allreduce $TMP/ar.csv)" = 11 ]
check "all_reduce_perf: group 8 intra fp32, 20 reps" \
    [ "$(grep -c '^allreduce,fp32,0,0,0,[0-9]*,8,intra,.*,20$' $TMP/ar.csv)" = 11 ]
# 1 MiB out-of-place 19.98 us; in-place 19.68 us
check "all_reduce_perf: out-of-place time in seconds" \
    grep -q '^allreduce,fp32,0,0,0,1048576,8,intra,1.998000e-05,20$' $TMP/ar.csv
$IMP --in-place $D/all_reduce_perf_8gpu.log > $TMP/ar_ip.csv
check "all_reduce_perf --in-place: in-place column" \
    grep -q '^allreduce,fp32,0,0,0,1048576,8,intra,1.968000e-05,20$' $TMP/ar_ip.csv

# all_gather_perf over two hosts: bf16, group 16, inter-node
$IMP $D/all_gather_perf_16gpu_2nodes.log > $TMP/ag.csv
check "all_gather_perf: 16 ranks on 2 hosts -> group 16 inter, bf16" \
    [ "$(grep -c '^allgather,bf16,0,0,0,[0-9]*,16,inter,' $TMP/ag.csv)" = 11 ]
$IMP $D/reduce_scatter_perf_8gpu.log > $TMP/rs.csv
check "reduce_scatter_perf: fp16 group 8 intra" \
    [ "$(grep -c '^reducescatter,fp16,0,0,0,[0-9]*,8,intra,' $TMP/rs.csv)" = 11 ]
$IMP $D/sendrecv_perf_2nodes.log > $TMP/p2p.csv
check "sendrecv_perf: p2p group 2 inter" \
    [ "$(grep -c '^p2p,fp32,0,0,0,[0-9]*,2,inter,' $TMP/p2p.csv)" = 11 ]
# an older release: no root column, no Group in the rank lines, 50 iterations
$IMP $D/all_reduce_perf_legacy.log > $TMP/legacy.csv
check "legacy all_reduce_perf (12 columns): 11 rows, group 4, 50 reps" \
    [ "$(grep -c '^allreduce,fp32,0,0,0,[0-9]*,4,intra,.*,50$' $TMP/legacy.csv)" = 11 ]

# several logs into one profile, appended
$IMP --out $TMP/all.csv $D/all_reduce_perf_8gpu.log $D/all_gather_perf_16gpu_2nodes.log
$IMP --append --out $TMP/all.csv $D/sendrecv_perf_2nodes.log
check "several logs and --append: one header, 33 rows" \
    [ "$(grep -c '^op,' $TMP/all.csv)" = 1 -a "$(grep -c '^[a-z0-9]*,[a-z0-9]*,0,0,0,' $TMP/all.csv)" = 33 ]

# errors
cp $D/all_reduce_perf_8gpu.log $TMP/mystery.log
$IMP $TMP/mystery.log > /dev/null 2> $TMP/err; rc=$?
expect "unknown operation: exit 1, asks for --op" $rc 1 $TMP/err "--op"
$IMP --op allreduce $TMP/mystery.log > $TMP/m.csv
check "--op names the operation" [ "$(rows allreduce $TMP/m.csv)" = 11 ]
sed 's/^     4194304       1048576     float     sum      -1    43.91/     4194304       1048576     float     sum      -1    fast/' \
    $D/all_reduce_perf_8gpu.log > $TMP/all_reduce_bad.log
$IMP $TMP/all_reduce_bad.log > /dev/null 2> $TMP/err; rc=$?
expect "bad time field: exit 1 naming file, line and field" $rc 1 $TMP/err \
    "all_reduce_bad.log:18: field 'time'"
grep -v '^#  Rank' $D/all_reduce_perf_8gpu.log > $TMP/all_reduce_norank.log
$IMP $TMP/all_reduce_norank.log > /dev/null 2> $TMP/err; rc=$?
expect "no rank lines: exit 1, asks for --group" $rc 1 $TMP/err "--group"
$IMP --group 8 $TMP/all_reduce_norank.log > $TMP/g.csv
check "--group without rank lines" [ "$(grep -c ',8,intra,' $TMP/g.csv)" = 11 ]

# a log cut off mid-line (a job killed while it ran): exit 1 and the profile
# untouched, whether appended to or written
{ head -n 23 $D/all_reduce_perf_8gpu.log; sed -n 24p $D/all_reduce_perf_8gpu.log | cut -c1-60; } \
    > $TMP/all_reduce_cut.log
cp $TMP/all.csv $TMP/all.before
$IMP --append --out $TMP/all.csv $TMP/all_reduce_cut.log > /dev/null 2> $TMP/err; rc=$?
expect "truncated log with --append: exit 1 naming the line" $rc 1 $TMP/err "all_reduce_cut.log:24:"
check "truncated log with --append: the profile is unchanged" cmp -s $TMP/all.csv $TMP/all.before
check "truncated log with --append: no temporary file left beside it" \
    [ "$(ls $TMP | grep -c '^all\.csv.')" = 0 ]
cp $TMP/all.csv $TMP/keep.csv
$IMP --out $TMP/keep.csv $TMP/all_reduce_cut.log > /dev/null 2>&1; rc=$?
check "truncated log with --out: exit 1, the existing file unchanged" \
    sh -c "[ $rc -eq 1 ] && cmp -s $TMP/keep.csv $TMP/all.before"
$IMP --out $TMP/new.csv $TMP/all_reduce_cut.log > /dev/null 2>&1; rc=$?
check "truncated log with --out: exit 1, no new file" sh -c "[ $rc -eq 1 ] && [ ! -e $TMP/new.csv ]"
# a time beyond a double (1e400 us would be written as inf)
sed 's/^     4194304       1048576     float     sum      -1    43.91/     4194304       1048576     float     sum      -1    1e400/' \
    $D/all_reduce_perf_8gpu.log > $TMP/all_reduce_huge.log
$IMP $TMP/all_reduce_huge.log > $TMP/huge.csv 2> $TMP/err; rc=$?
expect "time 1e400: exit 1 naming file, line and field" $rc 1 $TMP/err \
    "all_reduce_huge.log:18: field 'time'"
check "time 1e400: no inf written" sh -c "! grep -qi inf $TMP/huge.csv"

# the imported curves drive a projection: TP all-reduces of llama3-8b on 8 H100s
if $BIN project --model llama3-8b --hw h100-sxm --tp 8 --devices 8 --calib $TMP/ar.csv \
        --json > $TMP/p.json 2> $TMP/err; then
    lo=$(sed -n 's/^  "t_iter_lo": \(.*\),$/\1/p' $TMP/p.json)
    hi=$(sed -n 's/^  "t_iter_hi": \(.*\),$/\1/p' $TMP/p.json)
    check "project --calib with imported all-reduce curves: a band (lo < hi)" \
        awk -v a="$lo" -v b="$hi" 'BEGIN { exit !(a + 0 > 0 && a + 0 < b + 0) }'
else
    fail "project --calib with an imported profile: $(cat $TMP/err)"
fi
