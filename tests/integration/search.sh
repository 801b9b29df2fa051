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
where: "not invalid and not (sp and tp == 1) and not ((zero > 0 or dp_overlap) and dp == 1)"
EOF
$MPIRUN -n 2 $BIN run "$TMP/space.yaml" --db "$TMP/s.db" --quiet >/dev/null 2>"$TMP/run.err"; rc=$?
check "sweep of the search space exits 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/run.err"

$BIN search --model gpt3-175b --hw h100-sxm --devices 1024 --top 5 --json >"$TMP/s1.json" 2>"$TMP/s1.err"; rc=$?
check "search --json exits 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/s1.err"

stored=$(q "$TMP/s.db" "SELECT count(*) FROM results WHERE status != 1")
fit=$(q "$TMP/s.db" "SELECT count(*) FROM results WHERE status = 0")
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
want=$(q "$TMP/s.db" "SELECT $(echo $F | sed 's/ / || '"'|'"' || /g') || '|' || recompute
    FROM best_plan WHERE model = 'gpt3-175b' AND hardware = 'h100-sxm' AND generation = 0
      AND devices = 1024")
check "search's best plan is best_plan's ($got)" [ -n "$want" -a "$got" = "$want" ]
tok=$(jq1 "$TMP/s1.json" '$.top[0].tokens_per_s')
mem=$(jq1 "$TMP/s1.json" '$.top[0].mem_total')
check "with the same tokens/s and memory as the stored row" \
    [ "$(q "$TMP/s.db" "SELECT abs(tokens_per_s / $tok - 1) < 1e-12 AND abs(mem_total / $mem - 1) < 1e-12
        FROM best_plan WHERE devices = 1024")" = 1 ]
# the top 5 are the view's first five ranks, in order
want5=$(q "$TMP/s.db" "SELECT group_concat(v, ' ') FROM (SELECT printf('%.12e', r.tokens_per_s) AS v
    FROM plan_rank k JOIN results r ON r.run_id = k.run_id AND r.idx = k.idx
    WHERE k.rk <= 5 ORDER BY k.rk)")
got5=$(sqlite3 -batch :memory: "SELECT group_concat(printf('%.12e', value ->> 'tokens_per_s'), ' ')
    FROM json_each(json_extract(readfile('$TMP/s1.json'), '\$.top'))")
check "the top 5 are plan_rank's ranks 1-5 (tokens/s $got5)" [ -n "$want5" -a "$got5" = "$want5" ]

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
p="$p --dp-overlap $(echo none last-microbatch bucketed | cut -d' ' -f$(($(jq1 "$TMP/g2.json" '$.top[0].plan.dp_overlap') + 1)))"
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
check "search --help exits 0 and ccsweep --help lists search" \
    sh -c "$BIN search --help >/dev/null && $BIN --help | grep -q '^  search '"
check "search -h is --help" sh -c "$BIN search -h | grep -q '^usage: ccsweep search'"
