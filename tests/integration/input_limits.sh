#!/bin/sh
# input_limits.sh - sizes beyond the stated limits are input errors (exit 1,
# naming the option and the limit), never wrapped integers, inf or nan; and a
# where-filter that divides by zero for a scenario stops the sweep naming it.
. tests/integration/sweep_common.inc
need_tools "input limits"

# expect_bad WHAT PATTERN ARGS...: 'ccsweep project ARGS' exits 1 with PATTERN on stderr
expect_bad() {
    what=$1 pat=$2
    shift 2
    $BIN project "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$pat" "$TMP/err" && ! grep -qiE 'inf|nan' "$TMP/out"; then
        pass "$what"
    else
        fail "$what (exit $rc: $(cat "$TMP/err"))"
    fi
}
expect_bad "--hidden 1000000000 names hidden and its limit, not a wrapped ffn" \
    "--hidden: expected an integer in \[1, 1048576\], got '1000000000'" \
    --layers 1 --hidden 1000000000 --heads 1 --hw h100-sxm
expect_bad "--tp/--pp/--dp 65536: tp*cp*pp*dp over the device limit" \
    "tp\*cp\*pp\*dp = 65536\*1\*65536\*65536 is more than 16777216 devices" \
    --model gpt3-175b --hw h100-sxm --tp 65536 --pp 65536 --dp 65536
expect_bad "--tp/--pp/--cp 65536 with --devices: over the device limit, not a wrapped product" \
    "tp\*cp\*pp = 65536\*65536\*65536 is more than 16777216 devices" \
    --model gpt3-175b --hw h100-sxm --tp 65536 --pp 65536 --cp 65536 --devices 1024
expect_bad "--dp 2147483647: over the dp limit" "--dp: expected an integer in \[1, 16777216\]" \
    --model gpt3-175b --hw h100-sxm --dp 2147483647 --mbs 1048576
expect_bad "--gbs 2147483647: over the gbs limit" "--gbs: expected an integer in \[1, 1073741824\]" \
    --model gpt3-175b --hw h100-sxm --gbs 2147483647
expect_bad "--seq/--gbs/--mbs 2147483647: over the seq limit" "--seq: expected an integer in \[1, 16777216\]" \
    --model gpt3-175b --hw h100-sxm --seq 2147483647 --gbs 2147483647 --mbs 2147483647
expect_bad "--comm-compress 1e300: over the factor limit" "--comm-compress: expected a number in (0, 1e+06\]" \
    --model gpt3-175b --hw h100-sxm --comm-compress 1e300 --json
expect_bad "--net-bw-factor inf is refused" "--net-bw-factor: expected a number" \
    --model gpt3-175b --hw h100-sxm --net-bw-factor inf
expect_bad "--net-bw-factor nan is refused" "--net-bw-factor: expected a number" \
    --model gpt3-175b --hw h100-sxm --net-bw-factor nan

# at the limits: a finite answer, in both outputs
lim="--layers 100000 --hidden 1048576 --heads 1048576 --hw h100-sxm --seq 16777216 --mbs 1048576 --gbs 1073741824 --comm-compress 1e6 --net-bw-factor 1e-300"
$BIN project $lim --json >"$TMP/j" 2>"$TMP/e"; rc=$?
$BIN project $lim >"$TMP/h" 2>>"$TMP/e"; rc2=$?
check "every value at its limit: exit 0, no inf or nan in JSON or text ($rc, $rc2)" \
    sh -c "[ $rc -eq 0 -a $rc2 -eq 0 ] && ! grep -qiE 'inf|nan' '$TMP/j' '$TMP/h'"
$BIN project --help | grep -q "Limits (also in specs and catalogs): layers and --pp-first/last-layers <= 100000"
check "project --help states the limits" [ $? -eq 0 ]

# a spec value over a limit is refused at its line
cat >"$TMP/big.yaml" <<EOS
models: [gpt3-175b]
hardware: [h100-sxm]
plan:
  seq: 2147483647
EOS
$BIN run "$TMP/big.yaml" --db "$TMP/big.db" --quiet >/dev/null 2>"$TMP/err"; rc=$?
check "spec: seq over its limit exits 1 at its line, no database" \
    sh -c "[ $rc -eq 1 ] && grep -q 'big.yaml:4:8: .*plan.seq' '$TMP/err' && [ ! -e '$TMP/big.db' ]"

# where: a constant zero divisor is a spec error; a run-time one names the first scenario
printf 'models: [gpt3-175b]\nhardware: [h100-sxm]\nplan: {devices: 64, tp: [1, 2]}\nwhere: "tp / (1 - 1) > 1"\n' >"$TMP/dz.yaml"
$BIN run "$TMP/dz.yaml" --db "$TMP/dz.db" --quiet >/dev/null 2>"$TMP/err"; rc=$?
check "where: a constant zero divisor is a spec error at its line" \
    sh -c "[ $rc -eq 1 ] && grep -q 'dz.yaml:4:.*division by zero' '$TMP/err' && [ ! -e '$TMP/dz.db' ]"
cat >"$TMP/dr.yaml" <<EOS
models: [gpt3-175b]
hardware: [h100-sxm]
plan: {devices: 512, tp: [8, 1, 2, 4], pp: [1, 2]}
where: "64 / (tp - 1) > 1"
EOS
for np in 1 2; do
    $MPIRUN -n $np $BIN run "$TMP/dr.yaml" --db "$TMP/dr$np.db" --quiet >/dev/null 2>"$TMP/err"; rc=$?
    check "where: division by zero at run time on $np rank(s): exit 1 naming scenario 2 (tp 1)" \
        sh -c "[ $rc -eq 1 ] && grep -q \"field 'where': '64 / (tp - 1) > 1' divides by zero for scenario 2 (model gpt3-175b, hardware h100-sxm, generation 0, devices 512, tp 1, pp 1\" '$TMP/err'"
    check "where: the run is recorded as failed ($np rank(s))" \
        [ "$(q "$TMP/dr$np.db" "SELECT status FROM runs")" = failed ]
done
printf 'models: [gpt3-175b]\nhardware: [h100-sxm]\nplan: {devices: 512, tp: [1, 2]}\nwhere: "tp > 1 and 64 / (tp - 1) > 1"\n' >"$TMP/dg.yaml"
$BIN run "$TMP/dg.yaml" --db "$TMP/dg.db" --quiet >/dev/null 2>&1; rc=$?
check "where: a guarded division runs (tp 2 kept, tp 1 dropped)" \
    [ $rc -eq 0 -a "$(q "$TMP/dg.db" "SELECT group_concat(tp) FROM results")" = 2 ]

# hardening: inputs whose derived quantities overflow, files that
# are not regular, nesting and sizes beyond the stated limits are refused at
# their file and line, never a crash, a hang or an infinite figure
printf 'op,dtype,m,n,k,bytes,group,level,time_s,reps\ngemm,fp32,1e300,1e300,1e300,0,1,,1e-3,1\n' >"$TMP/infwork.csv"
$BIN project --model gpt3-175b --hw h100-sxm --calib "$TMP/infwork.csv" >/dev/null 2>"$TMP/err"; rc=$?
check "calib: m*n*k beyond a double is refused at its line and field (exit $rc)" \
    sh -c "[ $rc -eq 1 ] && grep -q \"infwork.csv:2: field 'm': expected a number in\" '$TMP/err'"
mkfifo "$TMP/fifo.yaml"
timeout 20 $BIN run "$TMP/fifo.yaml" --db "$TMP/fifo.db" --quiet >/dev/null 2>"$TMP/err"; rc=$?
check "spec: a FIFO is refused at once, not read (exit $rc)" \
    sh -c "[ $rc -eq 1 ] && grep -q 'fifo.yaml: not a regular file' '$TMP/err'"
timeout 20 $BIN list models --catalog "$TMP/fifo.yaml" >/dev/null 2>"$TMP/err"; rc=$?
check "catalog overlay: a FIFO is refused at once (exit $rc)" \
    sh -c "[ $rc -eq 1 ] && grep -q 'fifo.yaml: not a regular file' '$TMP/err'"
{ printf 'models: [gpt3-175b]\nhardware: [h100-sxm]\nname: '; head -c 100000 /dev/zero | tr '\0' '['; echo; } >"$TMP/deep.yaml"
timeout 20 $BIN run "$TMP/deep.yaml" --db "$TMP/deep.db" --quiet >/dev/null 2>"$TMP/err"; rc=$?
check "spec: 100,000 nested levels refused at the depth limit, at its line (exit $rc)" \
    sh -c "[ $rc -eq 1 ] && grep -q 'deep.yaml:3:.*nested deeper than 64 levels' '$TMP/err'"
mkdir -p "$TMP/ov"
cp tests/fuzz/regress/catalog/hardware-mem-gib-1e308.yaml "$TMP/ov/hardware.yaml"
$BIN list hardware --catalog "$TMP/ov" >"$TMP/out" 2>"$TMP/err"; rc=$?
check "catalog: mem_gib 1e308 is refused at its line, naming the range (exit $rc)" \
    sh -c "[ $rc -eq 1 ] && grep -q \"hardware.yaml:5:14: field 'mem_gib': must be in (0, 1048576\]\" '$TMP/err' && ! grep -qi inf '$TMP/out'"
