#!/bin/sh
# compare_runs.sh - 'ccsweep compare --db A --db B': stored runs side by side.
# Two sweeps of tests/data/sweep_sizes.yaml (A: a100-80g, h100-sxm, mi300x at
# generations 0 and 2; B: h100-sxm with twice the inter-node bandwidth, and
# b200, at generations 0 and 1) share the h100-sxm generation-0 groups: every
# number compare prints for them (text and JSON) is the best_plan view's, read
# here with SQL over the two files, and so are the groups only one run holds.
# --across pairs groups of other hardware at equal work; --run picks runs; bad
# inputs exit 1 with the reason.
# Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "compare_runs"

A="$TMP/a.db" B="$TMP/b.db"
sed 's/^name: sizes$/name: sizes-b/; s/^hardware: .*/hardware: [h100-sxm, b200]/; s/^generations: .*/generations: [0, 1]/' \
    tests/data/sweep_sizes.yaml >"$TMP/b.yaml"
{ echo 'hardware:'; awk '/^  - name: h100-sxm$/ { on = 1; print; next } on && /^  - name:/ { exit }
    on { sub(/inter_gbps: .*/, "inter_gbps: 100"); print }' sweeps/catalog/hardware.yaml; } >"$TMP/h100.yaml"
$BIN run tests/data/sweep_sizes.yaml --db "$A" --quiet >/dev/null 2>"$TMP/err"; rc=$?
$BIN run "$TMP/b.yaml" --db "$B" --catalog "$TMP/h100.yaml" --quiet >/dev/null 2>>"$TMP/err" || rc=$?
check "two sweeps, the second with an h100-sxm of twice the inter-node bandwidth (rc $rc)" \
    sh -c "[ $rc -eq 0 ] && grep -q 'inter_gbps: 100' '$TMP/h100.yaml'"

# the groups both runs hold, as SQL pairs them: equal model, devices, gbs, seq,
# hardware, generation, stack
K="model, hardware, generation, devices, gbs, seq, stack"
both() { # both DB1 DB2 RUN1 RUN2 USING SELECT
    sqlite3 -batch "$1" "ATTACH '$2' AS o; SELECT $6 FROM (SELECT * FROM best_plan WHERE run_id = $3) a
        JOIN (SELECT * FROM o.best_plan WHERE run_id = $4) x USING ($5) ORDER BY a.model, a.devices,
        a.gbs, a.seq, a.hardware, a.generation, a.stack"
}
want=$(both "$A" "$B" 1 1 "$K" "a.model, a.hardware, a.generation, a.devices, a.gbs, a.seq, a.stack,
    a.t_iter, x.t_iter, a.mfu, x.mfu, a.comm_fraction, x.comm_fraction, a.tp, x.tp, a.pp, x.pp, a.dp, x.dp,
    a.t_iter / x.t_iter")
$BIN compare --db "$A" --db "$B" --json >"$TMP/c.json" 2>"$TMP/err"; rc=$?
check "compare --db A --db B --json exits 0 (rc $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/err"
J="json_extract(g.value, '\$"
got=$(sqlite3 -batch :memory: "SELECT ${J}.model'), ${J}.hardware'), ${J}.generation'), ${J}.devices'),
    ${J}.gbs'), ${J}.seq'), ${J}.stack'), ${J}.runs[0].t_iter'), ${J}.runs[1].t_iter'),
    ${J}.runs[0].mfu'), ${J}.runs[1].mfu'), ${J}.runs[0].comm_fraction'), ${J}.runs[1].comm_fraction'),
    ${J}.runs[0].plan.tp'), ${J}.runs[1].plan.tp'), ${J}.runs[0].plan.pp'), ${J}.runs[1].plan.pp'),
    ${J}.runs[0].plan.dp'), ${J}.runs[1].plan.dp'), ${J}.runs[1].speedup')
    FROM json_each(readfile('$TMP/c.json'), '\$.groups') g")
n=$(printf '%s\n' "$want" | grep -c .)
check "JSON: the paired groups are the ones both files hold, with best_plan's t_iter, MFU, exposed comm, plan and speed-up ($n groups)" \
    [ "$n" -ge 8 -a "$got" = "$want" ]
wdp=$(both "$A" "$B" 1 1 "$K" "a.dp_overlap, x.dp_overlap")
gdp=$(sqlite3 -batch :memory: "SELECT ${J}.runs[0].plan.dp_overlap'), ${J}.runs[1].plan.dp_overlap')
    FROM json_each(readfile('$TMP/c.json'), '\$.groups') g")
check "JSON: each plan's dp_overlap is best_plan's word ($(printf '%s\n' "$wdp" | sort -u | tr '\n' ' '))" \
    [ -n "$wdp" -a "$gdp" = "$wdp" ]
check "JSON: the paired groups are h100-sxm generation 0 only" \
    [ "$(printf '%s\n' "$want" | cut -d'|' -f2,3 | sort -u)" = "h100-sxm|0" ]
check "JSON: paired counts them" [ "$(sqlite3 :memory: "SELECT json_extract(readfile('$TMP/c.json'), '\$.paired')")" = "$n" ]
check "twice the inter-node bandwidth is faster somewhere (a speed-up above 1)" \
    [ "$(printf '%s\n' "$want" | awk -F'|' '$NF > 1.0000001' | wc -l)" -ge 1 ]

# groups only one run holds: listed with their run
only() { # only DB1 DB2: groups of DB1's run 1 that DB2's run 1 lacks
    sqlite3 -batch "$1" "ATTACH '$2' AS o; SELECT $K FROM best_plan WHERE run_id = 1 EXCEPT
        SELECT $K FROM o.best_plan WHERE run_id = 1 ORDER BY 1, 4, 5, 6, 2, 3, 7"
}
for i in 0 1; do
    if [ $i = 0 ]; then want=$(only "$A" "$B"); else want=$(only "$B" "$A"); fi
    got=$(sqlite3 -batch :memory: "SELECT ${J}.model'), ${J}.hardware'), ${J}.generation'), ${J}.devices'),
        ${J}.gbs'), ${J}.seq'), ${J}.stack') FROM json_each(readfile('$TMP/c.json'), '\$.only_in') g
        WHERE ${J}.run') = $i")
    check "JSON: the groups only run $((i + 1)) holds ($(printf '%s\n' "$want" | grep -c .))" \
        [ -n "$want" -a "$got" = "$want" ]
done

# the text: each paired block's t_iter, speed-up, MFU and exposed comm as printed
$BIN compare --db "$A" --db "$B" >"$TMP/c.txt"
want=$(both "$A" "$B" 1 1 "$K" "a.model || ', ' || a.devices || ' devices, gbs ' || a.gbs || ', seq ' || a.seq
    || ', ' || a.hardware || ' g' || a.generation || ' ' || a.stack, printf('%.4f s', a.t_iter),
    printf('%.4f s', x.t_iter), printf('%.2fx', a.t_iter / x.t_iter), printf('%.1f%%', 100 * a.mfu),
    printf('%.1f%%', 100 * x.mfu), printf('%.1f%%', 100 * a.comm_fraction), printf('%.1f%%', 100 * x.comm_fraction)")
got=$(awk '/^[a-z]/ && !/^only in/ { if (k != "") print k "|" t "|" s "|" m "|" c; k = $0; t = s = m = c = "" }
    /^  t_iter / { t = $2 " " $3 "|" $4 " " $5 } /^  speed-up / { s = $3 } /^  MFU / { m = $2 "|" $3 }
    /^  comm exposed / { c = $3 "|" $4 } END { if (k != "") print k "|" t "|" s "|" m "|" c }' "$TMP/c.txt")
check "text: every paired block's t_iter, speed-up, MFU and exposed comm are best_plan's" \
    [ -n "$want" -a "$got" = "$want" ]
check "text: names the fairness condition and counts the groups of each run" \
    sh -c "grep -q 'plans compare fairly only at equal work' '$TMP/c.txt' &&
           grep -q '^  $n groups paired ($n in every run); $(only "$A" "$B" | grep -c .) only in \[1\] a.db run 1; $(only "$B" "$A" | grep -c .) only in \[2\] b.db run 1$' '$TMP/c.txt'"

# --across hw,gen: a100-80g generation 0 against mi300x generation 2, at equal work
for h in "a100-80g 0 a1" "mi300x 2 m2"; do
    set -- $h
    sed "s/^hardware: .*/hardware: [$1]/; s/^generations: .*/generations: [$2]/" tests/data/sweep_sizes.yaml >"$TMP/$3.yaml"
    $BIN run "$TMP/$3.yaml" --db "$TMP/$3.db" --quiet >/dev/null 2>&1
done
W="model, devices, gbs, seq, stack"
want=$(both "$TMP/a1.db" "$TMP/m2.db" 1 1 "$W" "a.model, a.devices, a.gbs, a.seq, a.hardware, x.hardware,
    x.generation, a.t_iter, x.t_iter, a.mfu, x.mfu, a.t_iter / x.t_iter")
$BIN compare --db "$TMP/a1.db" --db "$TMP/m2.db" --across hw,gen --json >"$TMP/x.json"; rc=$?
got=$(sqlite3 -batch :memory: "SELECT ${J}.model'), ${J}.devices'), ${J}.gbs'), ${J}.seq'),
    ${J}.runs[0].hardware'), ${J}.runs[1].hardware'), ${J}.runs[1].generation'), ${J}.runs[0].t_iter'),
    ${J}.runs[1].t_iter'), ${J}.runs[0].mfu'), ${J}.runs[1].mfu'), ${J}.runs[1].speedup')
    FROM json_each(readfile('$TMP/x.json'), '\$.groups') g")
check "--across hw,gen: a100-80g g0 and mi300x g2 paired at equal work, best_plan's numbers ($(printf '%s\n' "$want" | grep -c .) groups)" \
    [ $rc -eq 0 -a -n "$want" -a "$got" = "$want" ]
$BIN compare --db "$A" --db "$B" --across hw >/dev/null 2>"$TMP/e"; rc=$?
check "--across hw on a run of three hardware: exit 1, the two groups named" \
    sh -c "[ $rc -eq 1 ] && grep -q 'more than one group of .*a100-80g g0 .* and h100-sxm g0' '$TMP/e'"
$BIN compare --db "$TMP/a1.db" --db "$TMP/m2.db" --across hw,gen --model llama3-70b --seq 8192 --json >"$TMP/f.json"
check "--model and --seq keep only that work" \
    [ "$(sqlite3 :memory: "SELECT group_concat(DISTINCT json_extract(g.value, '\$.model') || ' ' || json_extract(g.value, '\$.seq')) FROM json_each(readfile('$TMP/f.json'), '\$.groups') g")" = "llama3-70b 8192" ]

# --run: two runs of one file (the same sweep again: every group paired, speed-up 1)
$BIN run tests/data/sweep_sizes.yaml --db "$A" --new-run --quiet >/dev/null 2>&1
$BIN compare --db "$A" --run 1 --run 2 --json >"$TMP/r.json"; rc=$?
check "--db A --run 1 --run 2: every group paired, none alone, speed-up 1" \
    [ $rc -eq 0 -a "$(sqlite3 :memory: "SELECT json_extract(readfile('$TMP/r.json'), '\$.paired') || ' ' ||
        json_array_length(readfile('$TMP/r.json'), '\$.only_in') || ' ' || (SELECT count(*) FROM
        json_each(readfile('$TMP/r.json'), '\$.groups') g WHERE json_extract(g.value, '\$.runs[1].speedup') != 1)")" = \
      "$(q "$A" "SELECT count(*) FROM best_plan WHERE run_id = 1") 0 0" ]
$BIN compare --db "$A" --db "$B" --json >"$TMP/l.json"
check "without --run, each file's latest training run (run 2 of A)" \
    [ "$(sqlite3 :memory: "SELECT json_extract(readfile('$TMP/l.json'), '\$.runs[0].run_id')")" = 2 ]

# One name, two models: groups pair on the model's definition, not its name.
# A llama3-8b of 16 layers has 8030261248 - 16 x 218112000 = 4540469248
# parameters (a Llama 3 8B layer: q and o 2 x 4096^2 = 33554432, k and v
# 2 x 4096 x 1024 = 8388608, SwiGLU 3 x 4096 x 14336 = 176160768, two norms
# 8192: 218112000; arXiv 2407.21783 Table 3), so its plans do no equal work
# with the catalog's 8.03B llama3-8b and must not pair with them.
printf 'name: def\nmodels: [llama3-8b]\nhardware: [h100-sxm]\nplan:\n  devices: 64\n  gbs: 256\n  seq: 2048\n  tp: [1, 2, 4, 8]\n  pp: [1, 2]\nwhere: "not invalid and fits"\n' >"$TMP/def.yaml"
{ echo 'models:'; awk '/^  - name: llama3-8b$/ { on = 1; print; next } on && /^  - name:/ { exit }
    on { sub(/layers: 32/, "layers: 16"); print }' sweeps/catalog/models.yaml; } >"$TMP/l16.yaml"
$BIN run "$TMP/def.yaml" --db "$TMP/d32.db" --quiet >/dev/null 2>&1; rc=$?
$BIN run "$TMP/def.yaml" --db "$TMP/d16.db" --catalog "$TMP/l16.yaml" --quiet >/dev/null 2>&1 || rc=$?
check "two runs of llama3-8b, one of 16 layers (rc $rc; params $(q "$TMP/d32.db" "SELECT params FROM models") and $(q "$TMP/d16.db" "SELECT params FROM models"))" \
    [ $rc -eq 0 -a "$(q "$TMP/d32.db" "SELECT params FROM models")|$(q "$TMP/d16.db" "SELECT params FROM models")" = "8030261248.0|4540469248.0" ]
$BIN compare --db "$TMP/d32.db" --db "$TMP/d16.db" --json >"$TMP/d.json"; rc=$?
check "compare: the 8.03B and the 4.54B llama3-8b do not pair (paired, only in: $(sqlite3 :memory: "SELECT json_extract(readfile('$TMP/d.json'), '\$.paired') || ' ' || json_array_length(readfile('$TMP/d.json'), '\$.only_in')"))" \
    [ $rc -eq 0 -a "$(sqlite3 :memory: "SELECT json_extract(readfile('$TMP/d.json'), '\$.paired') || ' ' ||
        (SELECT group_concat(g, ' ') FROM (SELECT json_extract(value, '\$.run') || ':' ||
         json_extract(value, '\$.params') AS g FROM json_each(readfile('$TMP/d.json'), '\$.only_in') ORDER BY g))")" = \
      "0 0:8030261248 1:4540469248" ]
$BIN compare --db "$TMP/d32.db" --db "$TMP/d16.db" >"$TMP/d.txt"
check "... and the text says why: one name, another model ($(grep 'not paired' "$TMP/d.txt"))" \
    sh -c "grep -q '^  0 groups paired' '$TMP/d.txt' &&
        grep -q 'llama3-8b is another model in another run: \\[1\\] 8.03B parameters (32 layers, hidden 4096); \\[2\\] 4.54B parameters (16 layers, hidden 4096); not paired' '$TMP/d.txt' &&
        grep -q '^  llama3-8b (4.54B), 64 devices' '$TMP/d.txt'"
check "... and the JSON names it in other_models" \
    [ "$(sqlite3 :memory: "SELECT json_extract(readfile('$TMP/d.json'), '\$.other_models')")" = '["llama3-8b"]' ]

expect() { # expect WHAT PATTERN CMD...
    what=$1 pat=$2; shift 2
    "$@" >/dev/null 2>"$TMP/e.err"; got=$?
    if [ $got -eq 1 ] && grep -q -e "$pat" "$TMP/e.err"; then pass "$what exits 1"; else
        fail "$what exits 1 with '$pat' (got $got: $(head -c 300 "$TMP/e.err"))"; fi
}
printf 'workload: serve\nmodels: llama3-8b\nhardware: h100-sxm\nserve: {isl: 100, osl: 100}\nplan: {tp: [1, 2]}\n' >"$TMP/sv.yaml"
$BIN run "$TMP/sv.yaml" --db "$A" --quiet >/dev/null 2>&1
$BIN run "$TMP/sv.yaml" --db "$TMP/sv.db" --quiet >/dev/null 2>&1
echo "plain text, not sqlite" >"$TMP/text.db"
sqlite3 "$TMP/other.db" "CREATE TABLE runs (run_id INTEGER)"
expect "a missing file" "nope.db: cannot open" $BIN compare --db "$TMP/nope.db" --db "$B"
expect "a file that is not a database" "text.db: not a ccsweep database" $BIN compare --db "$A" --db "$TMP/text.db"
expect "an SQLite file of another program" "other.db: not a ccsweep database" $BIN compare --db "$A" --db "$TMP/other.db"
expect "a run that is not there" "b.db: no run 7 (runs in the database: 1)" $BIN compare --db "$A" --db "$B" --run 7
expect "a serving run" "run 3 ('serve') is a serving run" $BIN compare --db "$A" --run 3 --db "$B"
expect "a file of serving runs only" "no training run to compare (runs in the database: 1 (serving))" \
    $BIN compare --db "$TMP/sv.db" --db "$B"
expect "one stored run" "give two or more" $BIN compare --db "$A"
expect "--run before any --db" "after the --db it belongs to" $BIN compare --run 1 --db "$A" --db "$B"
# a run id past 2^63 - 1 is an error naming what was typed, not clamped to 2^63 - 1
expect "a 20-digit --run" "--run: expected a run id (a positive integer) after the --db it belongs to, got '99999999999999999999'" \
    $BIN compare --db "$A" --run 99999999999999999999 --db "$B"
expect "the same run twice" "run 1 is named twice" $BIN compare --db "$B" --db "$B"
expect "--db with a projection option" "--hw projects plans" $BIN compare --db "$A" --db "$B" --hw h100-sxm
expect "--across without --db" "give it with --db" $BIN compare --model gpt3-175b --hw mi300x --gen 0,2 --devices 8 --across hw
expect "--across with another name" "expected a comma-separated list of hw, gen and stack" \
    $BIN compare --db "$A" --db "$B" --across model
check "compare --help names --db, --run and --across" \
    sh -c "$BIN compare --help | grep -q -e '--db PATH' && $BIN compare --help | grep -q -e '--run ID' &&
           $BIN compare --help | grep -q -e '--across LIST'"
