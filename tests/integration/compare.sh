#!/bin/sh
# compare.sh - 'ccsweep compare': each column's best plan is the one 'ccsweep
# search' finds for that configuration, --fixed projects the first column's
# plan unchanged elsewhere (as 'ccsweep project' does), stacks are columns,
# the shares of t_iter add up, and the job is the same in every column.
# Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "compare"

jq1() { sqlite3 -batch :memory: "SELECT json_extract(readfile('$1'), '$2')"; }

$BIN compare --model gpt3-175b --hw mi300x --gen 0,2 --devices 256 --json >"$TMP/c.json" 2>"$TMP/c.err"; rc=$?
check "compare gpt3-175b on mi300x generations 0 and 2 exits 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/c.err"
for i in 0 1; do
    g=$(jq1 "$TMP/c.json" "\$.columns[$i].generation")
    $BIN search --model gpt3-175b --hw mi300x --gen "$g" --devices 256 --top 1 --json >"$TMP/s$i.json"
    check "column $i (generation $g) holds search's best plan" \
        [ "$(jq1 "$TMP/c.json" "\$.columns[$i].best.tokens_per_s")|$(jq1 "$TMP/c.json" "\$.columns[$i].best.plan")" = \
          "$(jq1 "$TMP/s$i.json" '$.top[0].tokens_per_s')|$(jq1 "$TMP/s$i.json" '$.top[0].plan')" ]
    check "column $i: the shares of t_iter add up to 1" \
        awk -v s="$(sqlite3 -batch :memory: "SELECT sum(value) FROM json_each(json_extract(readfile('$TMP/c.json'), '\$.columns[$i].share'))")" \
        'BEGIN { exit !(s > 0.999999 && s < 1.000001) }'
done
check "both columns train the same job (gbs, seq of the model)" \
    [ "$(jq1 "$TMP/c.json" '$.columns[0].best.plan.gbs')|$(jq1 "$TMP/c.json" '$.columns[1].best.plan.gbs')" = \
      "$(jq1 "$TMP/c.json" '$.gbs')|$(jq1 "$TMP/c.json" '$.gbs')" ]
check "generation 2 is faster (speed-up above 1)" \
    awk -v s="$(jq1 "$TMP/c.json" '$.columns[1].speedup')" 'BEGIN { exit !(s > 1) }'

# --fixed: the first column's plan, projected at generation 2 as project does
$BIN compare --model gpt3-175b --hw mi300x --gen 0,2 --devices 256 --fixed --json >"$TMP/f.json"
check "--fixed: the same plan in both columns" \
    [ "$(jq1 "$TMP/f.json" '$.columns[1].best.plan')" = "$(jq1 "$TMP/c.json" '$.columns[0].best.plan')" ]
P='$.columns[0].best.plan'
p="--tp $(jq1 "$TMP/f.json" "$P.tp") --pp $(jq1 "$TMP/f.json" "$P.pp") --vpp $(jq1 "$TMP/f.json" "$P.vpp")
   --mbs $(jq1 "$TMP/f.json" "$P.mbs") --recompute $(jq1 "$TMP/f.json" "$P.recompute")
   --zero $(jq1 "$TMP/f.json" "$P.zero")
   --dp-overlap $(jq1 "$TMP/f.json" "$P.dp_overlap")"
[ "$(jq1 "$TMP/f.json" "$P.sp")" = 1 ] && p="$p --sp"
[ "$(jq1 "$TMP/f.json" "$P.flash_attn")" = 1 ] && p="$p --flash-attn"
$BIN project --model gpt3-175b --hw mi300x --gen 2 --devices 256 $p --json >"$TMP/p.json"
check "--fixed: column 2's t_iter is project's for that plan at generation 2" \
    [ "$(jq1 "$TMP/p.json" '$.t_iter')" = "$(jq1 "$TMP/f.json" '$.columns[1].best.t_iter')" ]

# stacks as columns, narrowed like search
$BIN compare --model llama3-8b --hw h100-sxm --devices 64 --stack megatron-core,pytorch-fsdp2 --tp 1,2 \
    --json >"$TMP/st.json"; rc=$?
check "two stacks: two columns named by stack, every plan tp <= 2" \
    [ $rc -eq 0 -a "$(jq1 "$TMP/st.json" '$.columns[0].stack')|$(jq1 "$TMP/st.json" '$.columns[1].stack')" = \
      "megatron-core|pytorch-fsdp2" -a "$(jq1 "$TMP/st.json" '$.columns[0].best.plan.tp')" -le 2 -a \
      "$(jq1 "$TMP/st.json" '$.columns[1].best.plan.tp')" -le 2 ]
$BIN compare --model gpt3-175b --hw mi300x --gen 0,2 --devices 256 >"$TMP/c.txt"
check "the text names the fairness condition" grep -q "plans compare fairly only at equal work" "$TMP/c.txt"
# a --where that drops every plan of a column: the cells say so, and the
# counts still say how many plans fit memory
$BIN compare --model llama3-8b --hw h100-sxm,a100-80g --devices 8 --where 't_iter < 0' >"$TMP/w.txt"
check "--where dropping every plan: 'none passes --where', plans that fit counted ($(grep 'plans/' "$TMP/w.txt"))" \
    sh -c "grep -q 'none passes --where' '$TMP/w.txt' && ! grep -q 'no plan fits' '$TMP/w.txt' &&
        grep -Eq '^  plans/fit/kept +[0-9]+/[1-9][0-9]*/0 +[0-9]+/[1-9][0-9]*/0\$' '$TMP/w.txt'"

expect() { # expect WHAT PATTERN CMD...
    what=$1 pat=$2; shift 2
    "$@" >/dev/null 2>"$TMP/e.err"; got=$?
    if [ $got -eq 1 ] && grep -q -e "$pat" "$TMP/e.err"; then pass "$what exits 1"; else
        fail "$what exits 1 with '$pat' (got $got: $(head -c 200 "$TMP/e.err"))"; fi
}
expect "one configuration" "give two or more" $BIN compare --model gpt3-175b --hw mi300x --devices 8
expect "an unknown hardware" "unknown hardware 'mi999'" $BIN compare --model gpt3-175b --hw mi300x,mi999 --devices 8
expect "an unknown stack" "unknown" $BIN compare --model gpt3-175b --hw mi300x --stack megatron-core,nope --devices 8
expect "a --where dividing by zero" "'t_iter / (dp - 1) < 0' divides by zero for" \
    $BIN compare --model llama3-8b --hw h100-sxm,a100-80g --devices 8 --where 't_iter / (dp - 1) < 0'
check "compare -h prints its usage" sh -c "$BIN compare -h | grep -q '^usage: ccsweep compare'"
