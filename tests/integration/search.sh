#!/bin/sh
# search.sh - 'ccsweep search' against a sweep of the same plan space: for
# gpt3-175b on 1024 h100-sxm (generation 0) a 'ccsweep run' over every tp, pp,
# vpp, mbs, recompute, sp, ZeRO, dp_overlap and flash-attention value the
# search enumerates stores every structurally valid plan; the search must
# project as many plans, find as many that fit, and return the plan the
# best_plan view picks, with the same numbers. Also: the same answer under
# mpirun -n 2 as on one process, the top K in best order, --gen and the
# error cases. Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "search"

jq1() { # jq1 FILE PATH: one value of a JSON file (sqlite3's JSON functions)
    sqlite3 -batch :memory: "SELECT json_extract(readfile('$1'), '$2')"
}

# The plan space of the search for this job, as a sweep: tp and pp over the
# divisors of 1024 that can divide 96 heads and 96 layers (the others are
# invalid either way), vpp over the divisors of 96, mbs over the divisors of
# gbs 1536; plans the search skips as redundant (sp without tp, ZeRO or DP
# overlap without dp) left out by the filter.
cat >"$TMP/space.yaml" <<'EOF'
name: search-space
models: [gpt3-175b]
hardware: [h100-sxm]
generations: [0]
plan:
  devices: 1024
  tp: [1, 2, 4, 8, 16, 32]
  pp: [1, 2, 4, 8, 16, 32, 64]
  vpp: [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96]
  mbs: [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1536]
  gbs: model
  seq: model
  recompute: [none, selective, full]
  sp: [false, true]
  zero: [0, 1, 2, 3]
  dp_overlap: [none, last-microbatch, bucketed]
  flash_attn: [false, true]
where: "not invalid and not (sp and tp == 1) and not ((zero > 0 or dp_overlap != none) and dp == 1)"
EOF
$MPIRUN -n 2 $BIN run "$TMP/space.yaml" --db "$TMP/s.db" --quiet >/dev/null 2>"$TMP/run.err"; rc=$?
check "sweep of the search space exits 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/run.err"

$BIN search --model gpt3-175b --hw h100-sxm --devices 1024 --top 5 --json >"$TMP/s1.json" 2>"$TMP/s1.err"; rc=$?
check "search --json exits 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/s1.err"

stored=$(q "$TMP/s.db" "SELECT count(*) FROM results WHERE status != 'invalid'")
fit=$(q "$TMP/s.db" "SELECT count(*) FROM results WHERE status = 'ok'")
check "search projects every plan the sweep stores ($(jq1 "$TMP/s1.json" '$.plans') vs $stored)" \
    [ "$stored" -gt 0 -a "$(jq1 "$TMP/s1.json" '$.plans')" = "$stored" ]
check "search counts as many fitting plans ($(jq1 "$TMP/s1.json" '$.plans_fit') vs $fit)" \
    [ "$fit" -gt 0 -a "$(jq1 "$TMP/s1.json" '$.plans_fit')" = "$fit" ]
check "the job is the model's: gbs 1536, seq 2048 from the catalog" \
    [ "$(jq1 "$TMP/s1.json" '$.gbs')|$(jq1 "$TMP/s1.json" '$.seq')" = \
      "$(q "$TMP/s.db" "SELECT gbs || '|' || seq FROM models WHERE name = 'gpt3-175b'")" ]

# the best plan: every plan field and the projected numbers
F="tp pp dp vpp mbs sp zero flash_attn dp_overlap"
got=""
for f in $F; do got="$got$(jq1 "$TMP/s1.json" "\$.top[0].plan.$f")|"; done
got="$got$(jq1 "$TMP/s1.json" '$.top[0].plan.recompute')"
# (best_plan reads results: dp_overlap as its word, as the JSON has it)
want=$(q "$TMP/s.db" "SELECT $(echo $F | sed 's/\([a-z_]*\)/b.\1/g; s/ / || '"'|'"' || /g') || '|' || b.recompute
    FROM best_plan b WHERE b.model = 'gpt3-175b'
      AND b.hardware = 'h100-sxm' AND b.generation = 0 AND b.devices = 1024")
check "search's best plan is best_plan's ($got)" [ -n "$want" -a "$got" = "$want" ]
tok=$(jq1 "$TMP/s1.json" '$.top[0].tokens_per_s')
mem=$(jq1 "$TMP/s1.json" '$.top[0].mem_total')
check "with the same tokens/s and memory as the stored row" \
    [ "$(q "$TMP/s.db" "SELECT abs(tokens_per_s / $tok - 1) < 1e-12 AND abs(mem_total / $mem - 1) < 1e-12
        FROM best_plan WHERE devices = 1024")" = 1 ]
# the top 5 are the view's first five distinct answers, in order: plans whose
# every output is the same (the CSV's output columns) count once
$BIN search --model gpt3-175b --hw h100-sxm --devices 1024 --top 1 --csv >"$TMP/h.csv"
outs=$(head -1 "$TMP/h.csv" | sed 's/.*,status,//; s/,same_plans.*//')
want5=$(q "$TMP/s.db" "SELECT group_concat(v, ' ') FROM (SELECT printf('%.12e', tokens_per_s) AS v
    FROM (SELECT min(k.rk) AS rk, r.tokens_per_s FROM plan_rank k
          JOIN result_codes r ON r.rid = k.rid
          GROUP BY $outs) ORDER BY rk LIMIT 5)")
got5=$(sqlite3 -batch :memory: "SELECT group_concat(printf('%.12e', value ->> 'tokens_per_s'), ' ')
    FROM json_each(json_extract(readfile('$TMP/s1.json'), '\$.top'))")
check "the top 5 are plan_rank's first 5 distinct answers (tokens/s $got5)" [ -n "$want5" -a "$got5" = "$want5" ]
same0=$(q "$TMP/s.db" "SELECT count(*) - 1 FROM results r JOIN best_plan b USING (run_id)
    WHERE $(echo "$outs" | sed 's/\([a-z_0-9]*\)/r.\1 IS b.\1/g; s/,/ AND /g')")
check "the best answer counts every other plan with its outputs ($same0)" \
    [ "$(jq1 "$TMP/s1.json" '$.top[0].same_plans')" = "$same0" ]

# the same answer on two ranks
$MPIRUN -n 2 $BIN search --model gpt3-175b --hw h100-sxm --devices 1024 --top 5 --json \
    >"$TMP/s2.json" 2>"$TMP/s2.err"; rc=$?
check "search under mpirun -n 2 exits 0 and reports 2 ranks" \
    [ $rc -eq 0 -a "$(jq1 "$TMP/s2.json" '$.ranks')" = 2 ]
check "mpirun -n 2 finds the same plans and counts as one process" \
    [ "$(jq1 "$TMP/s2.json" '$.top')|$(jq1 "$TMP/s2.json" '$.plans')" = \
      "$(jq1 "$TMP/s1.json" '$.top')|$(jq1 "$TMP/s1.json" '$.plans')" ]
$MPIRUN -n 2 $BIN search --model gpt3-175b --hw h100-sxm --devices 1024 --top 3 >"$TMP/h2.out" 2>&1
check "the table is printed once under mpirun -n 2" [ "$(grep -c '^gpt3-175b on h100-sxm' "$TMP/h2.out")" = 1 ]

# a later generation is a different job: faster, and the same best as project
$BIN search --model gpt3-175b --hw h100-sxm --devices 1024 --gen 2 --top 1 --json >"$TMP/g2.json"
check "generation 2's best plan is faster than generation 0's" \
    awk -v a="$(jq1 "$TMP/g2.json" '$.top[0].t_iter')" -v b="$(jq1 "$TMP/s1.json" '$.top[0].t_iter')" \
    'BEGIN { exit !(a > 0 && a < b) }'
p="--tp $(jq1 "$TMP/g2.json" '$.top[0].plan.tp') --pp $(jq1 "$TMP/g2.json" '$.top[0].plan.pp')
   --vpp $(jq1 "$TMP/g2.json" '$.top[0].plan.vpp') --mbs $(jq1 "$TMP/g2.json" '$.top[0].plan.mbs')
   --recompute $(jq1 "$TMP/g2.json" '$.top[0].plan.recompute') --zero $(jq1 "$TMP/g2.json" '$.top[0].plan.zero')"
[ "$(jq1 "$TMP/g2.json" '$.top[0].plan.sp')" = 1 ] && p="$p --sp"
[ "$(jq1 "$TMP/g2.json" '$.top[0].plan.flash_attn')" = 1 ] && p="$p --flash-attn"
p="$p --dp-overlap $(jq1 "$TMP/g2.json" '$.top[0].plan.dp_overlap')"
$BIN project --model gpt3-175b --hw h100-sxm --devices 1024 --gen 2 $p --json >"$TMP/p2.json"
check "project of that plan gives the same t_iter" \
    [ "$(jq1 "$TMP/p2.json" '$.t_iter')" = "$(jq1 "$TMP/g2.json" '$.top[0].t_iter')" ]

# context parallelism, beyond what a sweep holds: more plans, some with cp > 1,
# and a best plan at least as fast
$BIN search --model gpt3-175b --hw h100-sxm --devices 1024 --top 50 --max-cp 4 --json >"$TMP/cp.json"
ncp=$(sqlite3 -batch :memory: "SELECT count(*) FROM json_each(json_extract(readfile('$TMP/cp.json'), '\$.top'))
    WHERE value -> '\$.plan' ->> 'cp' > 1")
check "--max-cp 4: more plans, cp > 1 among the best 50 ($ncp), a best plan no slower" \
    awk -v p4="$(jq1 "$TMP/cp.json" '$.plans')" -v p1="$(jq1 "$TMP/s1.json" '$.plans')" -v n="$ncp" \
        -v t4="$(jq1 "$TMP/cp.json" '$.top[0].tokens_per_s')" -v t1="$tok" \
        'BEGIN { exit !(p4 > p1 && n > 0 && t4 >= t1) }'

# narrowing: listed axis values, a memory limit, a filter; CSV
$BIN search --model llama3-70b --hw h100-sxm --devices 512 --top 10 --json >"$TMP/l.json"
$BIN search --model llama3-70b --hw h100-sxm --devices 512 --top 10 --tp 8 --max-mem-frac 0.85 \
    --json >"$TMP/l8.json"
cnt() { # cnt FILE WHERE: top entries of a search's JSON matching WHERE
    sqlite3 -batch :memory: "SELECT count(*) FROM json_each(json_extract(readfile('$1'), '\$.top'))
        WHERE $2"
}
distinct=$(sqlite3 -batch :memory: "SELECT count(DISTINCT value ->> 'tokens_per_s' || '/' ||
    (value ->> 'mem_total') || '/' || (value ->> 'dp_bytes')) FROM
    json_each(json_extract(readfile('$TMP/l.json'), '\$.top'))")
check "llama3-70b on 512 h100-sxm: 10 distinct answers ($distinct)" [ "$distinct" = 10 ]
cap=$(jq1 "$TMP/l8.json" '$.top[0].mem_cap')
check "--tp 8 --max-mem-frac 0.85: every plan (of $cap bytes) tp 8 within 0.85 of memory" \
    [ "$(cnt "$TMP/l8.json" "value -> '\$.plan' ->> 'tp' = 8 AND value ->> 'mem_total' <= 0.85 * $cap")" = 10 ]
check "... fewer plans, and the best no faster than the open search's" \
    awk -v a="$(jq1 "$TMP/l8.json" '$.top[0].tokens_per_s')" -v b="$(jq1 "$TMP/l.json" '$.top[0].tokens_per_s')" \
        -v pa="$(jq1 "$TMP/l8.json" '$.plans')" -v pb="$(jq1 "$TMP/l.json" '$.plans')" \
        'BEGIN { exit !(a <= b && pa < pb) }'
$BIN search --model llama3-70b --hw h100-sxm --devices 512 --top 5 --json \
    --where 'pp >= 4 and comm_fraction < 0.15' --recompute none,full --zero 1,2 >"$TMP/lw.json"
check "--where and listed values hold for every plan, and drops are counted" \
    [ "$(cnt "$TMP/lw.json" "value -> '\$.plan' ->> 'pp' >= 4 AND value ->> 'comm_fraction' < 0.15
        AND value -> '\$.plan' ->> 'recompute' IN ('none', 'full')
        AND value -> '\$.plan' ->> 'zero' IN (1, 2)")|$(jq1 "$TMP/lw.json" '$.plans_filtered' | cut -c1)" = "5|$(jq1 "$TMP/lw.json" '$.plans_filtered' | cut -c1)" \
      -a "$(jq1 "$TMP/lw.json" '$.plans_filtered')" -gt 0 ]
# dp_overlap is a mode compared with its names: bucketed plans (code 2) are
# the ones '== bucketed' keeps, 'last-microbatch' quoted for its '-'
for mode in bucketed last-microbatch; do
    $BIN search --model llama3-8b --hw h100-sxm --devices 8 --top 3 --json \
        --where "dp_overlap == '$mode'" >"$TMP/dpov.json" 2>&1
    check "--where \"dp_overlap == '$mode'\": the 3 best plans are $mode" \
        [ "$(cnt "$TMP/dpov.json" "value -> '\$.plan' ->> 'dp_overlap' = '$mode'")" = 3 ]
done
# A --where that drops every plan says so, and "fit" still counts the plans
# that fit memory: after projection (it names t_iter) all of them, before it
# (it names plan fields only) none is projected
$BIN search --model llama3-8b --hw h100-sxm --devices 8 --top 1 --json >"$TMP/w0.json"
$BIN search --model llama3-8b --hw h100-sxm --devices 8 --top 1 --json \
    --where 't_iter < 0' >"$TMP/w1.json"
fit0=$(jq1 "$TMP/w0.json" '$.plans_fit')
counts=$(for k in plans_fit plans_filtered plans_kept; do jq1 "$TMP/w1.json" "\$.$k"; done | tr '\n' ' ')
check "--where 't_iter < 0': the $fit0 plans that fit without it fit, all dropped, none kept (fit, dropped, kept: $counts)" \
    [ "$fit0" -gt 0 -a "$counts" = "$fit0 $fit0 0 " -a "$(jq1 "$TMP/w0.json" '$.plans_kept')" = "$fit0" ]
$BIN search --model llama3-8b --hw h100-sxm --devices 8 --where 't_iter < 0' >"$TMP/w1.out" 2>&1
check "... its text names --where and the plans that fit, not 'no plan fits' ($(grep 'no plan' "$TMP/w1.out"))" \
    sh -c "grep -q \"no plan passes --where 't_iter < 0': it drops all $(jq1 "$TMP/w1.json" '$.plans_fit') plans that fit memory\" '$TMP/w1.out' &&
        ! grep -q 'no plan fits' '$TMP/w1.out'"
$BIN search --model llama3-8b --hw h100-sxm --devices 8 --where 'tp > 100' >"$TMP/w2.out" 2>&1
check "--where 'tp > 100' drops every plan before projection, and says so" \
    grep -q "no plan passes --where 'tp > 100': it drops all $(jq1 "$TMP/w0.json" '$.plans') plans before projection" "$TMP/w2.out"
$BIN search --model llama3-70b --hw h100-sxm --devices 512 --top 4 --csv >"$TMP/l.csv"
check "--csv: a header and 4 rows of as many fields" \
    [ "$(awk -F, 'NR == 1 { n = NF } NF == n { k++ } END { print NR "/" k }' "$TMP/l.csv")" = 5/5 ]

# errors: exit 1 with a message naming the problem
expect() { # expect WHAT PATTERN CMD...
    what=$1 pat=$2; shift 2
    "$@" >/dev/null 2>"$TMP/e.err"; got=$?
    if [ $got -eq 1 ] && grep -q -e "$pat" "$TMP/e.err"; then
        pass "$what exits 1"
    else
        fail "$what exits 1 with '$pat' (got $got: $(head -c 200 "$TMP/e.err"))"
    fi
}
expect "search without --devices" "--devices are required" $BIN search --model gpt3-175b --hw h100-sxm
expect "an unknown model" "unknown model 'gpt9'" $BIN search --model gpt9 --hw h100-sxm --devices 8
expect "--top 0" "--top" $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --top 0
expect "--devices x" "--devices" $BIN search --model gpt3-175b --hw h100-sxm --devices x
# the same bounds as 'ccsweep project' (CCS_MAX_*): one past each is refused
expect "--devices 16777217" "--devices: expected an integer in \[1, 16777216\]" \
    $BIN search --model gpt3-175b --hw h100-sxm --devices 16777217
expect "--seq 16777217" "--seq: expected an integer in \[1, 16777216\]" \
    $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --seq 16777217
expect "--gbs 1073741825" "--gbs: expected an integer in \[1, 1073741824\]" \
    $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --gbs 1073741825
expect "--where with a syntax error" "--where: column" \
    $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --where 'pp >='
expect "--where dp_overlap (a mode, not a boolean)" "got a dp_overlap mode" \
    $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --where 'dp_overlap'
expect "--where 'dp_overlap == true'" "cannot compare a dp_overlap mode with a boolean" \
    $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --where 'dp_overlap == true'
# a --where undefined for a plan is an error, as a sweep's is, not a drop
expect "--where dividing by zero for dp 1" "'gbs / (dp - 1) > 1' divides by zero for .* plans; the first: .* dp 1" \
    $BIN search --model llama3-8b --hw h100-sxm --devices 8 --where 'gbs / (dp - 1) > 1'
expect "... under mpirun -n 2" "'gbs / (dp - 1) > 1' divides by zero" \
    $MPIRUN -n 2 $BIN search --model llama3-8b --hw h100-sxm --devices 8 --where 'gbs / (dp - 1) > 1'
expect "... after projection" "'t_iter / (dp - 1) > 1' divides by zero" \
    $BIN search --model llama3-8b --hw h100-sxm --devices 8 --where 't_iter / (dp - 1) > 1'
expect "--zero 4" "--zero: stage 4" $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --zero 4
expect "--tp 0" "--tp: 0 is not a positive" $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --tp 0
expect "--recompute some" "--recompute" $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --recompute some
expect "--max-mem-frac 1.5" "--max-mem-frac" $BIN search --model gpt3-175b --hw h100-sxm --devices 8 --max-mem-frac 1.5
check "search --help exits 0 and ccsweep --help lists search" \
    sh -c "$BIN search --help >/dev/null && $BIN --help | grep -q '^  search '"
check "search -h is --help" sh -c "$BIN search -h | grep -q '^usage: ccsweep search'"
