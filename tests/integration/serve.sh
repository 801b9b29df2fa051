#!/bin/sh
# serve.sh - the 'serve' command as a user runs it: help, bad input exits 1,
# --json carries the documented keys, concurrency and generations move the
# outputs the way the model says.
cd "$(dirname "$0")/../.." || exit 1
B=./ccsweep
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ok() { echo "PASS: $1"; }
bad() { echo "FAIL: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
jget() { sqlite3 :memory: "select json_extract(readfile('$1'), '\$.$2');"; }
lt() { [ "$(sqlite3 :memory: "select $1 < $2;")" = 1 ]; }

$B serve --help >"$T/help" 2>&1; rc=$?
check "serve --help exits 0 and names --isl" "[ $rc -eq 0 ] && grep -q -- '--isl' '$T/help'"
$B --help | grep -q serve && ok "ccsweep --help lists serve" || bad "ccsweep --help lists serve"
$B serve --model llama3-70b --hw h100-sxm --tp 3 --isl 10 --osl 10 2>"$T/e"; rc=$?
check "tp not dividing the heads exits 1 with a reason" "[ $rc -eq 1 ] && grep -q heads '$T/e'"
$B serve --model llama3-70b --hw h100 --isl 10 --osl 10 2>"$T/e"; rc=$?
check "unknown hardware exits 1 with a suggestion" "[ $rc -eq 1 ] && grep -q h100-sxm '$T/e'"
$B serve --model llama3-70b --hw h100-sxm --isl 10 --osl 10 --weight-dtype fp5 2>/dev/null
check "bad --weight-dtype exits 1" "[ $? -eq 1 ]"
$B serve --model llama3-70b --hw h100-sxm --osl 10 2>/dev/null
check "missing --isl exits 1" "[ $? -eq 1 ]"
$B serve --model llama3-70b --hw h100-sxm --isl 10 --osl 10 --concurrency 4 --max-throughput \
    2>/dev/null
check "--concurrency with --max-throughput exits 1" "[ $? -eq 1 ]"

A="--model llama3-70b --hw h100-sxm --tp 4 --isl 1000 --osl 1000 --weight-dtype fp8 --kv-dtype fp8 --json"
$B serve $A --concurrency 8 >"$T/c8.json"; rc=$?
$B serve $A --concurrency 256 >"$T/c256.json"
$B serve $A >"$T/max.json"
$B serve $A --concurrency 8 --gen 2 >"$T/g2.json"
check "serve --json exits 0" "[ $rc -eq 0 ]"
missing=""
for k in ttft tpot tok_s_gpu tok_s_system kv_tokens max_concurrency share_compute share_memory \
         share_comm comm_exposed_share step_bytes_weights step_bytes_kv_read status; do
    n=$(sqlite3 :memory: "select count(*) from json_each(readfile('$T/c8.json')) where key='$k';")
    [ "$n" = 1 ] || missing="$missing $k"
done
check "serve --json has every documented key (missing:$missing)" "[ -z \"$missing\" ]"
check "more concurrency: TPOT not lower" "lt $(jget "$T/c8.json" tpot) $(jget "$T/c256.json" tpot)"
check "more concurrency: more tokens/s per GPU" \
    "lt $(jget "$T/c8.json" tok_s_gpu) $(jget "$T/c256.json" tok_s_gpu)"
check "the offline point runs at the memory-bound maximum" \
    "[ $(jget "$T/max.json" concurrency) = $(jget "$T/max.json" max_concurrency) ]"
check "a later generation decodes faster" "lt $(jget "$T/g2.json" tpot) $(jget "$T/c8.json" tpot)"
$B serve --model llama3-405b --hw h100-sxm --tp 1 --isl 10 --osl 10 --json >"$T/oom.json"
check "a plan that does not fit is oom" "[ \"$(jget "$T/oom.json" status)\" = oom ]"

# --requests N: a finite run, simulated iteration by iteration
$B serve $A --requests 0 2>/dev/null
check "--requests 0 exits 1" "[ $? -eq 1 ]"
$B serve $A --requests 10 --concurrency 4 2>"$T/e"; rc=$?
check "--requests with --concurrency exits 1 with a reason" \
    "[ $rc -eq 1 ] && grep -q -- '--qps' '$T/e'"
$B serve $A --requests 20000 >"$T/long.json"; rc=$?
check "serve --requests exits 0 and reports requests" \
    "[ $rc -eq 0 ] && [ \"$(jget "$T/long.json" requests)\" = 20000 ]"
check "a run's iterations are at least requests x osl / concurrency, at most 4M" \
    "[ \"\$(sqlite3 :memory: \"select $(jget "$T/long.json" iterations) >= 20000 * 1000 / $(jget "$T/long.json" concurrency) and $(jget "$T/long.json" iterations) <= 4000000;\")\" = 1 ]"
# a long run is mostly steady state: its rate within 5% of the steady state's
check "a long run's tokens/s is within 5% of the steady state's" \
    "[ \"\$(sqlite3 :memory: \"select abs($(jget "$T/long.json" tok_s_gpu) / $(jget "$T/max.json" tok_s_gpu) - 1) < 0.05;\")\" = 1 ]"
# all queued at once, the mean request waits for the prompts ahead of it
check "a queued run's mean TTFT exceeds the steady state's" \
    "lt $(jget "$T/max.json" ttft) $(jget "$T/long.json" ttft)"
# requests 1000 s apart each run alone: the first token is the prompt's own prefill
$B serve $A --requests 5 --qps 0.001 >"$T/sparse.json"
check "sparse requests: TTFT is the prompt alone" \
    "[ \"\$(sqlite3 :memory: \"select abs($(jget "$T/sparse.json" ttft) / $(jget "$T/sparse.json" t_prefill) - 1) < 1e-9;\")\" = 1 ]"

# --qps: a rate the replica serves comes out served; one past it says it saturates
$B serve $A --qps 1 >"$T/q1.json"; rc=$?
check "a rate it serves: exit 0, not saturated, served as offered" \
    "[ $rc -eq 0 ] && [ $(jget "$T/q1.json" saturated) = 0 ] && [ \"\$(sqlite3 :memory: \"select abs($(jget "$T/q1.json" served_qps) - 1) < 1e-9;\")\" = 1 ]"
$B serve $A --qps 1e9 >"$T/qinf.json"; rc=$?
check "a rate past the replica's: exit 0, saturated, served below the offer" \
    "[ $rc -eq 0 ] && [ $(jget "$T/qinf.json" saturated) = 1 ] && lt $(jget "$T/qinf.json" served_qps) 1e9"
A_TEXT=$(echo "$A" | sed 's/ --json//')
$B serve $A_TEXT --qps 1e9 >"$T/qinf.txt"
served=$(jget "$T/qinf.json" served_qps)
check "the text says the rate saturates the replica and what it serves" \
    "grep -q 'the rate saturates the replica: 1e+09 requests/s offered per replica, $(printf %.4g "$served") served' '$T/qinf.txt'"
$B serve $A_TEXT --qps 1 >"$T/q1.txt"
check "a rate it serves says nothing of saturation" "! grep -q saturates '$T/q1.txt'"

# a run past the simulation's limit: exit 1 naming it, not the steady state's figures
# (llama3-8b on one h100-sxm holds 4 requests of 100 + 100000 tokens: 400 need
# at least 400 x 100000 / 4 = 10M iterations)
$B serve --model llama3-8b --hw h100-sxm --isl 100 --osl 100000 --requests 400 >"$T/cap.out" 2>"$T/cap.err"
rc=$?
check "a run past 4M iterations exits 1 naming the limit, no figures" \
    "[ $rc -eq 1 ] && grep -q '4000000 engine iterations' '$T/cap.err' && [ ! -s '$T/cap.out' ]"
