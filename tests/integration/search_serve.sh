#!/bin/sh
# search_serve.sh - 'ccsweep search --serve' as a user runs it: help, bad
# input exits 1, and against 'ccsweep serve' of the same plans: the winner
# meets the limits, one more request in flight breaks one (or is more than
# the KV cache holds), the top plans come in tokens/s-per-GPU order, a tighter
# limit never finds more tokens/s, an impossible one finds no plan, and under
# mpirun the table is printed once. Runs from the repository root.
. tests/integration/sweep_common.inc
need_tools "search --serve"

jq1() { sqlite3 -batch :memory: "SELECT json_extract(readfile('$1'), '$2')"; }
le() { [ "$(sqlite3 :memory: "select $1 <= $2;")" = 1 ]; }

$BIN search --serve --help >"$TMP/help" 2>&1; rc=$?
check "search --serve --help exits 0 and names --ttft-max" \
    sh -c "[ $rc -eq 0 ] && grep -q -- '--ttft-max' '$TMP/help' && grep -q -- '--tpot-max' '$TMP/help'"
$BIN search --help | grep -q -- '--serve'
check "search --help names --serve" [ $? -eq 0 ]
$BIN search --serve --model llama3-70b --hw h100-sxm --devices 8 --osl 100 2>"$TMP/e"
check "missing --isl exits 1" sh -c "[ $? -eq 1 ] && grep -q -- '--isl' '$TMP/e'"
$BIN search --serve --model llama3-70b --hw h100 --devices 8 --isl 100 --osl 100 2>"$TMP/e"
check "unknown hardware exits 1 with a suggestion" sh -c "[ $? -eq 1 ] && grep -q h100-sxm '$TMP/e'"
$BIN search --serve --model llama3-70b --hw h100-sxm --devices 8 --isl 100 --osl 100 \
    --tpot-max -3 2>/dev/null
check "negative --tpot-max exits 1" [ $? -eq 1 ]
$BIN search --serve --model llama3-70b --hw h100-sxm --devices 8 --isl 100 --osl 100 --gbs 8 \
    2>"$TMP/e"
check "an option of the training search exits 1" sh -c "[ $? -eq 1 ] && grep -q -- 'gbs' '$TMP/e'"

J="--model llama3-70b --hw h100-sxm --devices 8 --isl 1000 --osl 1000 --weight-dtype fp8 --kv-dtype fp8"
$BIN search --serve $J --ttft-max 1000 --tpot-max 20 --top 5 --json >"$TMP/s.json"; rc=$?
check "search --serve --json exits 0" [ $rc -eq 0 ]
n=$(sqlite3 :memory: "select count(*) from json_each(readfile('$TMP/s.json'), '\$.top')")
check "five plans found ($n)" [ "$n" = 5 ]
tp=$(jq1 "$TMP/s.json" '$.top[0].tp'); pp=$(jq1 "$TMP/s.json" '$.top[0].pp')
c=$(jq1 "$TMP/s.json" '$.top[0].concurrency'); cmax=$(jq1 "$TMP/s.json" '$.top[0].max_concurrency')
tps=$(jq1 "$TMP/s.json" '$.top[0].tok_s_gpu')
tp=${tp%.0}; pp=${pp%.0}; c=${c%.0}; cmax=${cmax%.0}
check "the winner meets TPOT <= 20 ms and TTFT <= 1 s" \
    sh -c "[ \"\$(sqlite3 :memory: \"select tpot <= 0.020 and ttft <= 1.0 from (select
        json_extract(readfile('$TMP/s.json'), '\$.top[0].tpot') tpot,
        json_extract(readfile('$TMP/s.json'), '\$.top[0].ttft') ttft)\")\" = 1 ]"
$BIN serve $J --tp "$tp" --pp "$pp" --concurrency "$c" --json >"$TMP/at.json"
check "'serve' of the winning plan gives its tokens/s per GPU" \
    [ "$(jq1 "$TMP/at.json" '$.tok_s_gpu')" = "$tps" ]
if [ "$c" -lt "$cmax" ]; then
    $BIN serve $J --tp "$tp" --pp "$pp" --concurrency $((c + 1)) --json >"$TMP/up.json"
    if le "$(jq1 "$TMP/up.json" '$.tpot')" 0.020 && le "$(jq1 "$TMP/up.json" '$.ttft')" 1.0; then
        fail "one more request in flight breaks a limit"
    else
        pass "one more request in flight breaks a limit"
    fi
else
    pass "the winner runs at the most its KV cache holds"
fi
order=$(sqlite3 :memory: "select count(*) from json_each(readfile('$TMP/s.json'), '\$.top') a
    join json_each(readfile('$TMP/s.json'), '\$.top') b on b.key = a.key + 1
    where json_extract(b.value, '\$.tok_s_gpu') > json_extract(a.value, '\$.tok_s_gpu')")
check "the top plans come in tokens/s-per-GPU order" [ "$order" = 0 ]
$BIN search --serve $J --ttft-max 1000 --tpot-max 10 --json >"$TMP/tight.json"
check "a tighter TPOT limit finds no more tokens/s per GPU" \
    le "$(jq1 "$TMP/tight.json" '$.top[0].tok_s_gpu')" "$tps"
$BIN search --serve $J --tpot-max 0.001 >"$TMP/none.txt"; rc=$?
check "an impossible limit: exit 0, no plan" sh -c "[ $rc -eq 0 ] && grep -q 'no plan meets' '$TMP/none.txt'"
$BIN search --serve --model deepseek-v3 --hw h200 --devices 8 --isl 1000 --osl 1000 \
    --weight-dtype fp8 --kv-dtype fp8 --json >"$TMP/moe.json"
n=$(sqlite3 :memory: "select count(*) from json_each(readfile('$TMP/moe.json'), '\$.top')
    where json_extract(value, '\$.attn_dp') = 1")
check "a mixture of experts is also tried with attention data parallelism" [ "$n" -ge 1 ]
$MPIRUN -n 2 $BIN search --serve $J --tpot-max 20 >"$TMP/mpi.txt" 2>/dev/null
check "under mpirun -n 2 the table is printed once" [ "$(grep -c 'limits:' "$TMP/mpi.txt")" = 1 ]
