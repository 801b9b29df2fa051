#!/bin/sh
# project.sh - the 'project' and 'list' commands as a user runs them.
# Prints PASS/FAIL lines; JSON is read back with sqlite3's json functions.
cd "$(dirname "$0")/../.." || exit 1
B=./ccsweep
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ok() { echo "PASS: $1"; }
bad() { echo "FAIL: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
jget() { sqlite3 :memory: "select json_extract(readfile('$1'), '\$.$2');"; }

ARGS="--devices 1024 --tp 8 --pp 8 --gbs 1536 --mbs 1 --seq 2048 --recompute selective --sp --json"
$B project --model gpt3-175b --hw a100-80g $ARGS >"$T/a.json"; rc_a=$?
$B project --model gpt3-175b --hw h100-sxm $ARGS >"$T/h.json"
$B project --model gpt3-175b --hw a100-80g --gen 2 $ARGS >"$T/g.json"
check "project --json exits 0" "[ $rc_a -eq 0 ]"
missing=""
for k in t_iter_s t_compute_s t_comm_s t_comm_exposed_s t_tp_comm_s t_dp_comm_s t_dp_comm_exposed_s \
         t_pp_comm_s t_bubble_s comm_fraction mem_per_device_bytes fits model_flops mfu tokens_per_s \
         status reason regions; do
    n=$(sqlite3 :memory: "select count(*) from json_each(readfile('$T/a.json')) where key='$k';")
    [ "$n" = 1 ] || missing="$missing $k"
done
check "project --json has every documented key (missing:$missing)" "[ -z \"$missing\" ]"
check "status ok for the issue's gpt3-175b plan" "[ \"$(jget "$T/a.json" status)\" = ok ]"
nreg=$(sqlite3 :memory: "select count(*) from json_each(readfile('$T/a.json'), '\$.regions') where json_extract(value,'\$.name') is not null and json_extract(value,'\$.time_s') > 0;")
check "regions array lists named, timed regions ($nreg)" "[ $nreg -ge 10 ]"
cmp_lt() { sqlite3 :memory: "select $1 < $2;"; }
ta=$(jget "$T/a.json" t_iter_s); th=$(jget "$T/h.json" t_iter_s); tg=$(jget "$T/g.json" t_iter_s)
ca=$(jget "$T/a.json" comm_fraction); ch=$(jget "$T/h.json" comm_fraction); cg=$(jget "$T/g.json" comm_fraction)
check "h100-sxm is faster than a100-80g ($th < $ta s)" "[ $(cmp_lt $th $ta) = 1 ]"
check "h100-sxm has a larger comm_fraction ($ch > $ca)" "[ $(cmp_lt $ca $ch) = 1 ]"
check "--gen 2 is faster ($tg < $ta s)" "[ $(cmp_lt $tg $ta) = 1 ]"
check "--gen 2 has a larger comm_fraction ($cg > $ca)" "[ $(cmp_lt $ca $cg) = 1 ]"
sum=$(sqlite3 :memory: "select abs(json_extract(j,'\$.t_compute_s') + json_extract(j,'\$.t_comm_exposed_s') + json_extract(j,'\$.t_bubble_s') - json_extract(j,'\$.t_iter_s')) < 1e-9 * json_extract(j,'\$.t_iter_s') from (select readfile('$T/a.json') j);")
check "t_iter = compute + exposed comm + bubble" "[ \"$sum\" = 1 ]"

$B project --model gpt3-175b --hw a100-80g --devices 64 --tp 8 --pp 8 --gbs 64 >"$T/human.txt" 2>&1
check "human output is a table with the iteration time" "grep -q '^  iteration' \"$T/human.txt\""
$B project --layers 24 --hidden 2048 --heads 16 --hw mi210 --tp 2 --json >"$T/adhoc.json"
check "ad-hoc model projects" "[ \"$(jget "$T/adhoc.json" status)\" = ok ]"
$B project --model gpt3-175b --hw a100-80g --dp 2 --tp 5 --pp 8 --json >"$T/inv.json"
check "invalid plan is reported with its reason" \
    "[ \"$(jget "$T/inv.json" status)\" = invalid ] && grep -q 'tp does not divide' \"$T/inv.json\""

# bad input: exit status 1 and a message naming what is wrong
expect1() {
    desc=$1; pat=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"; rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$pat" "$T/err"; then ok "$desc"; else bad "$desc (rc $rc: $(cat "$T/err"))"; fi
}
expect1 "unknown model" "unknown model 'gpt5'" $B project --model gpt5 --hw a100-80g
expect1 "unknown hardware" "unknown hardware 'tpu'" $B project --model gpt3-175b --hw tpu
expect1 "non-integer --tp" "--tp: expected an integer" $B project --model gpt3-175b --hw a100-80g --tp x
expect1 "negative --pp" "--pp: expected an integer" $B project --model gpt3-175b --hw a100-80g --pp -2
expect1 "devices not divisible" "not a multiple of tp" $B project --model gpt3-175b --hw a100-80g --devices 10 --tp 8
expect1 "missing --hw" "--hw NAME is required" $B project --model gpt3-175b
expect1 "unknown option" "unknown or incomplete option" $B project --model gpt3-175b --hw a100-80g --frobnicate
expect1 "bad --recompute" "expected none, selective or full" $B project --model gpt3-175b --hw a100-80g --recompute some
expect1 "unknown evolution" "unknown rule" $B project --model gpt3-175b --hw a100-80g --gen 1 --evolution nope
expect1 "unknown command" "unknown command" $B frobnicate
mkdir -p "$T/cat"; cp sweeps/catalog/*.yaml "$T/cat/"
sed -i 's/^    mem_gbps: 2039$/    mem_gbps: fast/' "$T/cat/hardware.yaml"
line=$(grep -n '^    mem_gbps: fast' "$T/cat/hardware.yaml" | cut -d: -f1)
expect1 "bad catalog entry names file, line and field" "hardware.yaml:$line:.*field 'mem_gbps'" \
    $B project --model gpt3-175b --hw a100-80g --catalog "$T/cat"

$B list models >"$T/models"; $B list hardware >"$T/hw"; $B list evolutions >"$T/evo"
check "list models names the catalog" "grep -q '^llama3-405b' \"$T/models\" && grep -q '^future-100t' \"$T/models\""
check "list hardware names the catalog" "grep -q '^mi300x' \"$T/hw\" && grep -q '^b200' \"$T/hw\""
check "list evolutions has memory-wall" "grep -q '^memory-wall' \"$T/evo\""
check "--help and --version exit 0" "$B --help >/dev/null && $B --version >/dev/null && $B project --help >/dev/null && $B list --help >/dev/null"
exit 0
