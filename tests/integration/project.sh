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
for k in t_iter t_compute t_comm t_comm_exposed t_tp_comm t_dp_comm t_dp_comm_exposed \
         t_pp_comm t_bubble comm_fraction mem_total fits model_flops mfu tokens_per_s \
         status reason regions; do
    n=$(sqlite3 :memory: "select count(*) from json_each(readfile('$T/a.json')) where key='$k';")
    [ "$n" = 1 ] || missing="$missing $k"
done
check "project --json has every documented key (missing:$missing)" "[ -z \"$missing\" ]"
check "status ok for the issue's gpt3-175b plan" "[ \"$(jget "$T/a.json" status)\" = ok ]"
nreg=$(sqlite3 :memory: "select count(*) from json_each(readfile('$T/a.json'), '\$.regions') where json_extract(value,'\$.name') is not null and json_extract(value,'\$.time') > 0;")
check "regions array lists named, timed regions ($nreg)" "[ $nreg -ge 10 ]"
cmp_lt() { sqlite3 :memory: "select $1 < $2;"; }
ta=$(jget "$T/a.json" t_iter); th=$(jget "$T/h.json" t_iter); tg=$(jget "$T/g.json" t_iter)
ca=$(jget "$T/a.json" comm_fraction); ch=$(jget "$T/h.json" comm_fraction); cg=$(jget "$T/g.json" comm_fraction)
check "h100-sxm is faster than a100-80g ($th < $ta s)" "[ $(cmp_lt $th $ta) = 1 ]"
check "h100-sxm has a larger comm_fraction ($ch > $ca)" "[ $(cmp_lt $ca $ch) = 1 ]"
check "--gen 2 is faster ($tg < $ta s)" "[ $(cmp_lt $tg $ta) = 1 ]"
check "--gen 2 has a larger comm_fraction ($cg > $ca)" "[ $(cmp_lt $ca $cg) = 1 ]"
sum=$(sqlite3 :memory: "select abs(json_extract(j,'\$.t_compute') + json_extract(j,'\$.t_comm_exposed') + json_extract(j,'\$.t_bubble') - json_extract(j,'\$.t_iter')) < 1e-9 * json_extract(j,'\$.t_iter') from (select readfile('$T/a.json') j);")
check "t_iter = compute + exposed comm + bubble" "[ \"$sum\" = 1 ]"

$B project --model gpt3-175b --hw a100-80g --devices 64 --tp 8 --pp 8 --gbs 64 >"$T/human.txt" 2>&1
check "human output is a table with the iteration time" "grep -q '^  iteration' \"$T/human.txt\""
$B project --layers 24 --hidden 2048 --heads 16 --hw mi210 --tp 2 --gbs 8 --json >"$T/adhoc.json"
check "ad-hoc model projects" "[ \"$(jget "$T/adhoc.json" status)\" = ok ]"
$B project --model gpt3-175b --hw a100-80g --dp 2 --tp 5 --pp 8 --json >"$T/inv.json"
check "invalid plan is reported with its reason" \
    "[ \"$(jget "$T/inv.json" status)\" = invalid ] && grep -q 'tp does not divide' \"$T/inv.json\""
$B project --model gpt3-175b --hw a100-80g --dp 2 --tp 5 --pp 8 >"$T/inv.txt"
check "invalid plan: no '(0 micro-batches)' in the plan line" \
    "grep -q '^  plan .*mbs 1, vpp' '$T/inv.txt' && ! grep -q 'micro-batches' '$T/inv.txt'"
check "valid plan: the plan line counts its micro-batches" "grep -q '(64 micro-batches)' '$T/human.txt'"

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
expect1 "unknown option" "unknown option '--frobnicate' (see 'ccsweep project --help')" $B project --model gpt3-175b --hw a100-80g --frobnicate
expect1 "mistyped project flag: did you mean" "unknown option '--modle'; did you mean '--model'?" $B project --modle gpt3-175b --hw a100-80g
$B project --modle gpt3-175b --hw a100-80g >/dev/null 2>"$T/err"
check "mistyped project flag: one line, not the usage ($(wc -l <"$T/err") lines)" "[ $(wc -l <"$T/err") -eq 1 ]"
expect1 "option without its value" "option '--tp' needs a value" $B project --model gpt3-175b --hw a100-80g --tp
expect1 "mistyped run flag: did you mean" "unknown option '--detial'; did you mean '--detail'?" $B run sweeps/default.yaml --detial
expect1 "mistyped model name: did you mean" "unknown model 'gpt3-175'; did you mean 'gpt3-175b'?" $B project --model gpt3-175 --hw a100-80g
expect1 "mistyped hardware name: did you mean" "unknown hardware 'h100'; did you mean 'h100-sxm'?" $B project --model gpt3-175b --hw h100
expect1 "mistyped subcommand: did you mean" "unknown command 'porject'; did you mean 'project'?" $B porject
expect1 "list foo: names the bad list and the valid ones" "unknown list 'foo' (expected models, hardware, evolutions or stacks)" $B list foo
expect1 "list model: did you mean" "did you mean 'models'?" $B list model
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
check "list hardware has an fp16 column; v100 shows fp16 125 and no bf16" \
    "head -1 '$T/hw' | grep -q 'fp16 TF/s' && grep -q '^v100 *125.0 *- ' '$T/hw'"
check "list evolutions has memory-wall" "grep -q '^memory-wall' \"$T/evo\""
check "--help and --version exit 0" "$B --help >/dev/null && $B --version >/dev/null && $B project --help >/dev/null && $B list --help >/dev/null"
$B project --model gpt3-175b -h >"$T/h.out" 2>"$T/h.err"; rc=$?
check "project -h is --help (exit 0, the usage on stdout)" \
    "[ $rc -eq 0 ] && grep -q '^usage: ccsweep project' '$T/h.out' && [ ! -s '$T/h.err' ]"
$B project -h >"$T/h2.out"
check "project -h and --help print the same" "$B project --help | cmp -s - '$T/h2.out'"

# JSON: counts are exact integers; keys are the database's column names
check "JSON params is the exact integer 174604259328" "grep -q '^  \"params\": 174604259328,\$' '$T/a.json'"
check "JSON region counts are integers (\"count\": 1152)" "grep -q '\"count\": 1152,\$' '$T/a.json'"
cat >"$T/one.yaml" <<EOF
name: one
models: [gpt3-175b]
hardware: [a100-80g]
plan: {devices: 1024, tp: 8, pp: 8, gbs: 1536, mbs: 1, seq: 2048, recompute: selective, sp: true}
EOF
if $B run "$T/one.yaml" --db "$T/one.db" --quiet >/dev/null 2>"$T/err"; then
    cols=$(sqlite3 "$T/one.db" "select group_concat(name, ' ') from pragma_table_info('results_view');")
    # every numeric JSON key must be a column holding the same number
    diff=""
    nokey=""
    for k in $(sqlite3 :memory: "select key from json_each(readfile('$T/a.json')) where type in ('integer','real');"); do
        case " $cols " in
        *" $k "*)
            same=$(sqlite3 "$T/one.db" "select abs(json_extract(readfile('$T/a.json'), '\$.$k') - $k) <= 1e-12 * abs($k) from results_view;")
            [ "$same" = 1 ] || diff="$diff $k" ;;
        *) nokey="$nokey $k" ;;
        esac
    done
    check "every numeric JSON key is a results_view column (not:$nokey)" "[ -z '$nokey' ]"
    check "and holds the database's value (differ:$diff)" "[ -z '$diff' ]"
    nokey=""
    for k in $(sqlite3 :memory: "select key from json_each(readfile('$T/a.json'), '\$.plan');") status reason reason_text model hardware; do
        case " $cols " in *" $k "*) ;; *) nokey="$nokey $k" ;; esac
    done
    check "plan keys and names are results_view columns too (not:$nokey)" "[ -z '$nokey' ]"
    # and the other way: every results_view column is a JSON key, but for the
    # row's identity in the database (run, index, key, name, rowid)
    keys=" $(sqlite3 :memory: "select group_concat(key, ' ') from (select key from json_each(readfile('$T/a.json')) union all select key from json_each(readfile('$T/a.json'), '\$.plan'));") "
    nojson=""
    for c in $cols; do
        case "$c" in run_id|idx|key|scenario|rid) continue ;; esac
        case "$keys" in *" $c "*) ;; *) nojson="$nojson $c" ;; esac
    done
    check "every results_view column is a JSON key (not:$nojson)" "[ -z '$nojson' ]"
else
    bad "one-scenario sweep for the JSON/database comparison: $(cat "$T/err")"
fi

# a context- and expert-parallel plan: project --json and a one-scenario sweep
# give the same numbers, plan included
MOE="--model mixtral-8x7b --hw h100-sxm --devices 256 --tp 2 --cp 2 --cp-comm allgather --ep 8 --pp 2 --seq 16384 --gbs 256 --capacity-factor 1.25 --sp --recompute selective --flash-attn"
$B project $MOE --json >"$T/moe.json"
cat >"$T/moe.yaml" <<EOF
models: [mixtral-8x7b]
hardware: [h100-sxm]
plan: {devices: 256, tp: 2, cp: 2, cp_comm: allgather, ep: 8, pp: 2, seq: 16384, gbs: 256,
       capacity_factor: 1.25, sp: true, recompute: selective, flash_attn: true}
EOF
if $B run "$T/moe.yaml" --db "$T/moe.db" --quiet >/dev/null 2>"$T/err"; then
    diff=""
    for k in $(sqlite3 :memory: "select fullkey from json_tree(readfile('$T/moe.json')) where type in ('integer','real') and (path = '\$' or path = '\$.plan');"); do
        c=${k##*.}
        same=$(sqlite3 "$T/moe.db" "select abs(json_extract(readfile('$T/moe.json'), '$k') - $c) <= 1e-12 * abs($c) from results_view;")
        [ "$same" = 1 ] || diff="$diff $c"
    done
    check "cp/ep plan: every number of project --json is the sweep's (differ:$diff)" "[ -z '$diff' ]"
    row=$(sqlite3 "$T/moe.db" "select cp, cp_comm, ep, capacity_factor, t_cp_comm > 0, t_ep_comm > 0, cp_bytes > 0, ep_bytes > 0 from results_view")
    check "cp/ep plan: the database holds cp 2 allgather, ep 8, factor 1.25 and their traffic ($row)" \
        "[ '$row' = '2|allgather|8|1.25|1|1|1|1' ]"
else
    bad "one-scenario cp/ep sweep: $(cat "$T/err")"
fi

# under a launcher, commands other than run print once
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
n=$(mpirun --oversubscribe -n 2 $B project --model gpt3-175b --hw a100-80g 2>&1 | grep -c '^  iteration')
check "mpirun -n 2 ccsweep project prints once ($n)" "[ $n -eq 1 ]"
n=$(mpirun --oversubscribe -n 2 $B list models 2>&1 | grep -c '^gpt3-175b ')
check "mpirun -n 2 ccsweep list prints once ($n)" "[ $n -eq 1 ]"
n=$(mpirun --oversubscribe -n 2 $B project --model gpt5 --hw a100-80g 2>&1 | grep -c "unknown model")
check "mpirun -n 2: an error is printed once ($n)" "[ $n -eq 1 ]"
# catalog overlays: a directory with only hardware.yaml adds one GPU to the built-in catalog
mkdir -p "$T/mycat"
awk '/^  - name: a100-80g/{p=1} /^  - name: h100-sxm/{p=0} p' sweeps/catalog/hardware.yaml |
    sed 's/name: a100-80g/name: my-gpu/; s/^    mem_gib: 80$/    mem_gib: 96/' >"$T/entry.yaml"
{ echo "hardware:"; cat "$T/entry.yaml"; } >"$T/mycat/hardware.yaml"
$B list hardware --catalog "$T/mycat" >"$T/hw2" 2>&1
check "--catalog DIR with one GPU adds it to the built-in hardware" \
    "grep -q '^my-gpu .* 96 ' '$T/hw2' && grep -q '^h100-sxm' '$T/hw2'"
$B project --model gpt3-175b --hw my-gpu --catalog "$T/mycat" --devices 64 --tp 8 --pp 8 --gbs 64 >"$T/my.txt" 2>&1
check "project --hw my-gpu from the overlay" "grep -q '^  iteration' '$T/my.txt'"
# a second overlay (one file) overrides the first by name; the environment path comes before --catalog
{ echo "hardware:"; sed 's/^    mem_gib: 96$/    mem_gib: 128/' "$T/entry.yaml"; } >"$T/my2.yaml"
$B list hardware --catalog "$T/mycat" --catalog "$T/my2.yaml" >"$T/hw3" 2>&1
check "repeated --catalog: the later overlay wins (my-gpu 128 GiB)" \
    "grep -q '^my-gpu .* 128 ' '$T/hw3' && [ \$(grep -c '^my-gpu ' '$T/hw3') -eq 1 ]"
CCSWEEP_CATALOG_PATH="$T/my2.yaml" $B list hardware >"$T/hw4" 2>&1
check "CCSWEEP_CATALOG_PATH overlays without --catalog" "grep -q '^my-gpu .* 128 ' '$T/hw4'"
CCSWEEP_CATALOG_PATH="$T/my2.yaml" $B list hardware --catalog "$T/mycat" >"$T/hw5" 2>&1
check "--catalog overrides CCSWEEP_CATALOG_PATH" "grep -q '^my-gpu .* 96 ' '$T/hw5'"
{ echo "hardware:"; sed 's/^    mem_gib: 96$/    mem_gib: 160/; s/name: my-gpu/name: a100-80g/' "$T/entry.yaml"; } >"$T/a100.yaml"
$B project --model gpt3-175b --hw a100-80g --catalog "$T/a100.yaml" >"$T/a160.txt" 2>&1
check "an overlay entry overrides a built-in one by name (a100-80g with 160 GiB)" \
    "grep -q 'of 160.00 GiB per device' '$T/a160.txt'"
mkdir -p "$T/emptycat"
expect1 "an empty overlay directory is an error naming it" "emptycat: a catalog overlay directory needs" \
    $B list hardware --catalog "$T/emptycat"

# software stacks: --stack and --attn-kernel, errors naming what is wrong
S="--layers 24 --hidden 2048 --heads 16 --ffn 8192 --vocab 50368 --hw a100-80g --devices 8 --dp 8 --gbs 64 --mbs 8 --seq 8192 --zero 3 --flash-attn --dp-overlap bucketed --json"
$B project $S >"$T/s0.json"; rc0=$?
$B project $S --stack llm-foundry >"$T/s1.json"; rc1=$?
$B project $S --stack llm-foundry --attn-kernel fa2 >"$T/s2.json"; rc2=$?
check "--stack: exit 0 ($rc0 $rc1 $rc2)" "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ]"
check "--json names the stack and its kernel" "[ \"$(jget "$T/s1.json" stack) $(jget "$T/s1.json" attention_kernel) $(jget "$T/s0.json" stack)\" = 'llm-foundry fa-triton megatron-core' ]"
t0=$(jget "$T/s0.json" t_iter); t1=$(jget "$T/s1.json" t_iter); t2=$(jget "$T/s2.json" t_iter)
# at 8k tokens attention dominates: the Triton kernel (A100: 78 TFLOP/s causal d 128) is slower
# than FlashAttention-2 (182), which is slower than the default's 0.85 x GEMM rate
check "llm-foundry with Triton slower than with FA2, slower than the default ($t1 > $t2 > $t0)" "[ $(cmp_lt $t2 $t1) = 1 ] && [ $(cmp_lt $t0 $t2) = 1 ]"
$B project $S --stack nosuch >/dev/null 2>"$T/se.txt"; rc=$?
check "--stack nosuch: exit 1 with a suggestion" "[ $rc -eq 1 ] && grep -q \"unknown stack 'nosuch'\" \"$T/se.txt\" && grep -q 'list stacks' \"$T/se.txt\""
$B project $S --attn-kernel fa9 >/dev/null 2>"$T/se.txt"; rc=$?
check "--attn-kernel fa9: exit 1 naming the kernels" "[ $rc -eq 1 ] && grep -q \"unknown kernel 'fa9'\" \"$T/se.txt\""
printf 'stacks:\n  - name: mine\n    attention_kernel: fa2\n    comm_units: -3\n' >"$T/bad-stack.yaml"
$B project $S --catalog "$T/bad-stack.yaml" --stack mine >/dev/null 2>"$T/se.txt"; rc=$?
check "a stack with comm_units -3: exit 1 naming file, line and field" "[ $rc -eq 1 ] && grep -q 'bad-stack.yaml:4' \"$T/se.txt\" && grep -q 'comm_units' \"$T/se.txt\""
printf 'stacks:\n  - name: mine\n    attention_kernel: flash9\n' >"$T/bad-stack.yaml"
$B project $S --catalog "$T/bad-stack.yaml" --stack mine >/dev/null 2>"$T/se.txt"; rc=$?
check "a stack with an unknown kernel: exit 1 listing the kernels" "[ $rc -eq 1 ] && grep -q \"unknown value 'flash9'\" \"$T/se.txt\" && grep -q \"'triton'\" \"$T/se.txt\""
printf 'stacks:\n  - name: mine\n    attention_kernel: fa2\n    comm_units: 22.7\n' >"$T/ok-stack.yaml"
$B project $S --catalog "$T/ok-stack.yaml" --stack mine >"$T/s3.json"; rc=$?
check "an overlay stack: exit 0, used by name" "[ $rc -eq 0 ] && [ \"$(jget "$T/s3.json" stack)\" = mine ]"
$B list stacks >"$T/ls.txt" 2>&1; rc=$?
check "list stacks: every catalog stack with its kernel" "[ $rc -eq 0 ] && grep -q '^llm-foundry *fa-triton' \"$T/ls.txt\" && grep -q '^megatron-core *gemm-rel' \"$T/ls.txt\""
# the README's list blocks are the commands' output (their first lines when
# the block goes on with '...', else all of it; tools/readme-study.sh writes them)
for w in hardware models stacks; do
    sed -n "/^\$ .\/ccsweep list $w\$/,/^\(\.\.\.\|\`\`\`\)\$/p" README.md >"$T/block-$w"
    sed '1d;$d' "$T/block-$w" >"$T/readme-$w"
    n=$(wc -l <"$T/readme-$w")
    if [ "$(tail -n 1 "$T/block-$w")" = "..." ]; then
        $B list $w | head -n "$n" >"$T/now-$w"
    else
        $B list $w >"$T/now-$w"
    fi
    check "README's 'ccsweep list $w' block ($n lines) is the command's output" "[ $n -ge 3 ] && cmp -s \"$T/readme-$w\" \"$T/now-$w\""
done
# an invalid plan's reason carries its numbers
$B project --model gpt3-175b --hw h100-sxm --devices 1024 --tp 8 --pp 8 --mbs 5 >"$T/inv.out"
check "the batch reason names gbs, mbs and dp" \
    "grep -qF 'invalid: gbs is not divisible by mbs * dp (gbs 1536, mbs 5 x dp 16 = 80)' '$T/inv.out'"
$B project --model gpt3-175b --hw h100-sxm --devices 1024 --tp 8 --pp 8 --mbs 5 --json >"$T/inv.json"
check "--json: reason_detail with the numbers" \
    "grep -qF '\"reason_detail\": \"gbs is not divisible by mbs * dp (gbs 1536' '$T/inv.json'"
exit 0
