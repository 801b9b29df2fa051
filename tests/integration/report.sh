#!/bin/sh
# report.sh - 'ccsweep report' end to end: a small sweep (spec written here) run
# twice into one database, the report of its latest run (valid PNGs, report.md
# naming and embedding every plot, the summary table), every tools/queries/*.sql
# run with sqlite3 (no error, rows returned, identical to the report's copy),
# the run comparison of two identical runs, and the error cases (exit 1 for bad
# input, 2 without gnuplot). Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "report"
if ! command -v gnuplot >/dev/null 2>&1; then
    skip "report (gnuplot is not installed; 'make deps' installs it)"
    exit 0
fi

# 3-model hidden-size ladder at 8 layers, bert-large, a small mixture of experts
# (the section on communication by class) and gpt3-175b (fits no plan
# at generation 0: exercises the "no fitting plan" paths), 2 devices, 2
# generations, tp x pp x mbs plans on 32 devices (dp derived: every plan of a
# model is the same job, as plans compare; ep for the mixture of experts) and
# the four mitigations one at a time.
cat >"$TMP/small.yaml" <<'EOF'
name: report-small
models:
  - bert-large
  - {name: lad-1024, layers: 8, hidden: 1024, heads: 8, vocab: 32000, max_pos: 2048, seq: 2048, gbs: 64}
  - {name: lad-2048, layers: 8, hidden: 2048, heads: 16, vocab: 32000, max_pos: 2048, seq: 2048, gbs: 64}
  - {name: lad-4096, layers: 8, hidden: 4096, heads: 32, vocab: 32000, max_pos: 2048, seq: 2048, gbs: 64}
  - {name: moe-tiny, layers: 4, hidden: 1024, heads: 8, vocab: 32000, max_pos: 2048, seq: 2048, gbs: 64,
     experts: 4, top_k: 2}
  - gpt3-175b
hardware: [mi210, h100-sxm]
generations: [0, 2]
evolution: memory-wall
plan:
  devices: 32
  tp: [1, 2, 4, 8]
  ep: [1, 4]     # the mixture of experts only: on the dense models ep 4 is invalid
  pp: [1, 2, 4]
  mbs: [1, 2]
  gbs: 64
  seq: 2048
  recompute: selective
  sp: true
  tp_overlap:    [false, true,  false, false, false]
  comm_compress: [1,     1,     0.5,   1,     1]
  innet_reduce:  [false, false, false, true,  false]
  net_bw_factor: [1,     1,     1,     1,     2]
zip:
  - [tp_overlap, comm_compress, innet_reduce, net_bw_factor]
where: "not invalid"
scenario_name: "{model}/{hardware}/g{gen}/tp{tp}-pp{pp}-mbs{mbs}"
EOF
DB="$TMP/r.db"
OUT="$TMP/out"
$BIN run "$TMP/small.yaml" --db "$DB" --quiet >/dev/null 2>"$TMP/run1.err"; rc1=$?
$MPIRUN -n 2 $BIN run "$TMP/small.yaml" --db "$DB" --new-run --quiet >/dev/null 2>"$TMP/run2.err"; rc2=$?
check "two runs of the small spec exit 0" [ $rc1 -eq 0 -a $rc2 -eq 0 ]

$BIN report --db "$DB" --out "$OUT" >"$TMP/rep.out" 2>"$TMP/rep.err"; rc=$?
check "report exits 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/rep.err"
check "report defaults to the latest run (2)" grep -q '^# ccsweep report: report-small (run 2)' "$OUT/report.md"

PLOTS="comm_share breakdown ccr dp_hidden mitigations forced_tp fixed_plan"
bad=""
for p in $PLOTS; do
    f="$OUT/$p.png"
    magic=$(head -c 8 "$f" 2>/dev/null | od -An -tx1 | tr -d ' \n')
    size=$(wc -c <"$f" 2>/dev/null || echo 0)
    [ "$magic" = 89504e470d0a1a0a ] && [ "$size" -gt 10000 ] || bad="$bad $p($size bytes)"
    if command -v file >/dev/null 2>&1; then
        file "$f" | grep -q 'PNG image data, [0-9]* x [0-9]*' || bad="$bad $p(file)"
    fi
done
check "seven valid PNG files: magic bytes, more than 10 kB${bad:+ (bad:$bad)}" [ -z "$bad" ]
miss=""
for p in $PLOTS; do
    grep -q "^## [0-9]\. .*(\`$p\`)" "$OUT/report.md" || miss="$miss $p(title)"
    grep -q "^!\[.*\]($p.png)" "$OUT/report.md" || miss="$miss $p(embed)"
done
check "report.md names and embeds every plot${miss:+ (missing:$miss)}" [ -z "$miss" ]
check "report.md has the summary table, per hardware generation" \
    sh -c "grep -q '^| hardware | gen | HBM GiB |' '$OUT/report.md' &&
           [ \$(grep -c '^| mi210 | [02] | ' '$OUT/report.md') -ge 2 ]"
# (a training run's: the serving queries serve_*.sql only in reports of serving runs)
check "report.md includes the queries it used" \
    sh -c "[ \$(grep -c '^\`\`\`sql' '$OUT/report.md') -eq \$(ls tools/queries/*.sql | grep -vc '/serve_') ]"

# canned queries: each one runs on the test database, returns rows (the serving
# queries none: tests/integration/report_serve.sh runs them on a serving run),
# and is the text the report used
nq=0
for f in tools/queries/*.sql; do
    n=$(basename "$f" .sql)
    nq=$((nq + 1))
    head -1 "$f" | grep -q "^-- $n.sql - " || fail "$n.sql starts with a comment saying what it answers"
    rows=$(sqlite3 -bail "$DB" <"$f" 2>"$TMP/q.err" | wc -l); qrc=$?
    want=0; case $n in serve_*) want=-1 ;; esac
    if [ $qrc -eq 0 ] && [ ! -s "$TMP/q.err" ] && [ "$rows" -gt $want ]; then
        pass "query $n.sql runs and returns $rows rows"
    else
        fail "query $n.sql runs and returns rows ($rows rows: $(head -c 200 "$TMP/q.err"))"
    fi
    cmp -s "$f" "$OUT/queries/$n.sql" || fail "tools/queries/$n.sql differs from the report's queries/$n.sql"
done
check "the report wrote one query file per tools/queries file ($nq)" \
    [ "$(ls "$OUT"/queries/*.sql | wc -l)" -eq $nq -a $nq -ge 11 ]
diffs=$(sqlite3 "$DB" <tools/queries/run_diff.sql | awk -F'|' '$1 == 1 && $2 == 2 && $3 == 1 {r += $8; c += $12 + $10 + $11} END {print r + 0, c + 0}')
total=$(q "$DB" "SELECT count(*) FROM results WHERE run_id = 2")
check "run_diff: two identical runs, every scenario matched, nothing changed ($diffs of $total)" \
    [ "$diffs" = "$total 0" ]
# the TP+DP plan is the smallest fitting tp without pipeline parallelism
sel=$(sqlite3 "$DB" <tools/queries/comm_share.sql | awk -F'|' '$1 == "tp+dp" {print $4 "|" $2 "|" $3 "|" $6}' | sort)
ref=$(q "$DB" "SELECT model, hardware, generation, min(tp) FROM results
    WHERE run_id = 2 AND status = 'ok' AND pp = 1 AND tp_overlap = 0 AND innet_reduce = 0
      AND comm_compress = 1 AND net_bw_factor = 1 GROUP BY model_id, hw_id" | sort)
check "TP+DP plans use the smallest tp that fits with pp = 1 ($(echo "$ref" | wc -l) groups)" \
    [ -n "$ref" -a "$sel" = "$ref" ]
# communication by class: the classes of each best plan add up to its share,
# the expert-parallel one is the all-to-all time over the iteration, and the
# report's rows are the query's
cls=$(sqlite3 "$DB" <tools/queries/comm_class.sql | awk -F'|' '{n++; d = $16 - ($17 + $18 + $19 + $20 + $21); if (d < 0) d = -d; if (d > 0.06) bad++; if ($11 > 1) ep++} END {print n + 0, bad + 0, ep + 0}')
check "comm_class: one row per mixture-of-experts group, classes adding up to comm_pct (rows, mismatches, with ep > 1: $cls)" \
    [ "$(echo "$cls" | cut -d' ' -f1,2)" = "4 0" ]
ep=$(q "$DB" "SELECT count(*) FROM plan_rank k JOIN results r ON r.rid = k.rid
    WHERE k.run_id = 2 AND k.rk = 1 AND r.model = 'moe-tiny'")
check "comm_class: the query's rows are the best plans of moe-tiny ($ep groups)" [ "$ep" = 4 ]
rows=$(sed -n '/^## Communication by class/,/^## Queries/p' "$OUT/report.md" | grep -c '^| moe-tiny ')
check "report: the section on communication by class lists moe-tiny at every generation of the reference hardware ($rows)" \
    [ "$rows" = 2 ]
$BIN report --db "$DB" --run 1 --hw h100-sxm --out "$TMP/out1" >/dev/null 2>&1; rc=$?
check "--run 1 --hw h100-sxm exits 0 and reports run 1 on h100-sxm" \
    sh -c "[ $rc -eq 0 ] && grep -q '^# ccsweep report: report-small (run 1)' '$TMP/out1/report.md' &&
           grep -q 'one hardware: \*\*h100-sxm\*\*' '$TMP/out1/report.md'"

# errors: bad input exits 1 with a message naming the problem, and writes nothing
expect() { # expect WHAT RC PATTERN CMD...
    what=$1 want=$2 pat=$3; shift 3
    "$@" >/dev/null 2>"$TMP/e.err"; got=$?
    if [ $got -eq "$want" ] && grep -q -e "$pat" "$TMP/e.err"; then
        pass "$what exits $want"
    else
        fail "$what exits $want with '$pat' (got $got: $(head -c 200 "$TMP/e.err"))"
    fi
}
expect "a missing database" 1 "nothing.db: cannot open: No such file" \
    $BIN report --db "$TMP/nothing.db" --out "$TMP/none"
check "nothing written for a missing database" [ ! -e "$TMP/none" ]
echo "plain text, not sqlite" >"$TMP/text.db"
expect "a file that is not a database" 1 "text.db: not a ccsweep database" \
    $BIN report --db "$TMP/text.db" --out "$TMP/none"
sqlite3 "$TMP/other.db" "CREATE TABLE t (x); INSERT INTO t VALUES (1);"
expect "an SQLite database of another program" 1 "other.db: not a ccsweep database" \
    $BIN report --db "$TMP/other.db" --out "$TMP/none"
cp "$DB" "$TMP/v99.db"
q "$TMP/v99.db" "PRAGMA user_version = 99"
expect "another schema version" 1 "schema version 99" $BIN report --db "$TMP/v99.db" --out "$TMP/none"
expect "an unknown run" 1 "no run 99 (runs in the database: 1, 2)" \
    $BIN report --db "$DB" --run 99 --out "$TMP/none"
sed -e 's/^name: report-small/name: report-empty/' -e 's/^where: .*/where: "tp > 1000"/' \
    "$TMP/small.yaml" >"$TMP/empty.yaml"
$BIN run "$TMP/empty.yaml" --db "$DB" --quiet >/dev/null 2>&1
expect "an empty run (the where-filter kept nothing)" 1 "run 3 ('report-empty', complete) has no result rows" \
    $BIN report --db "$DB" --out "$TMP/none"
expect "an unknown --hw" 1 "no hardware 'tpu' in run 2 (it has: mi210, h100-sxm)" \
    $BIN report --db "$DB" --run 2 --hw tpu --out "$TMP/none"
expect "no --db" 1 "--db PATH is required" $BIN report --out "$TMP/none"
expect "a bad --run" 1 "expected an integer" $BIN report --db "$DB" --run x
check "nothing written by any failed report" [ ! -e "$TMP/none" ]
CCSWEEP_GNUPLOT=/nonexistent/gnuplot
export CCSWEEP_GNUPLOT
expect "gnuplot missing" 2 "gnuplot not found" $BIN report --db "$DB" --run 2 --out "$TMP/nognuplot"
unset CCSWEEP_GNUPLOT
# figures for papers: --format png,pdf,svg draws each plot in every format
$BIN report --db "$DB" --run 2 --out "$TMP/fmt" --format png,pdf,svg >/dev/null 2>"$TMP/fmt.err"; rc=$?
bad=""
for p in $PLOTS; do
    [ "$(head -c 5 "$TMP/fmt/$p.pdf" 2>/dev/null)" = "%PDF-" ] || bad="$bad $p.pdf"
    grep -q '<svg' "$TMP/fmt/$p.svg" 2>/dev/null || bad="$bad $p.svg"
    [ "$(head -c 8 "$TMP/fmt/$p.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || bad="$bad $p.png"
    grep -q "^Figure: \[png\]($p.png) \[pdf\]($p.pdf) \[svg\]($p.svg)" "$TMP/fmt/report.md" || bad="$bad $p(links)"
done
check "--format png,pdf,svg: a PDF, an SVG and a PNG of every plot, linked from report.md${bad:+ (bad:$bad)}" \
    [ $rc -eq 0 -a -z "$bad" ]
$BIN report --db "$DB" --run 2 --out "$TMP/pdf" --format pdf >/dev/null 2>&1; rc=$?
check "--format pdf alone: PDFs only, no PNG" \
    sh -c "[ $rc -eq 0 ] && [ -s '$TMP/pdf/comm_share.pdf' ] && ! ls '$TMP/pdf'/*.png >/dev/null 2>&1"
expect "an unknown --format" 1 "--format: expected a comma-separated list of png, pdf and svg, got 'png,gif'" \
    $BIN report --db "$DB" --run 2 --out "$TMP/none" --format png,gif

# every panel has its legend: each plotted panel's key names its generations
S="$TMP/fmt/comm_share.svg"
panels=$(grep -c "title 'gen 2'" "$OUT/data/comm_share.gp")
keys=$(grep -c '>gen 2<' "$S")
check "comm_share: a legend in each of its $panels panels ($keys)" [ "$panels" -ge 4 -a "$keys" -eq "$panels" ]
panels=$(grep -c "title 'gen 2'" "$OUT/data/fixed_plan.gp")
keys=$(grep -c '>gen 2<' "$TMP/fmt/fixed_plan.svg")
check "fixed_plan: a legend in each of its $panels panels ($keys)" [ "$panels" -ge 2 -a "$keys" -eq "$panels" ]
# a model that fits no plan is marked, not dropped: gpt3-175b fits nothing at generation 0 on mi210
gp3=$(q "$DB" "SELECT params / 1e9 FROM models WHERE run_id = 2 AND name = 'gpt3-175b'")
marked=$(awk -v x="$gp3" 'BEGIN { RS = ""; n = 0 } { split($0, l, "\n"); for (i in l) { split(l[i], f, " "); if (f[2] < 1 && (f[1] - x) ^ 2 < 1e-6 * x * x) n++ } } END { print n }' "$OUT/data/comm_share.dat")
check "comm_share: models without a fitting plan get an x marker and a key entry ($marked marks for gpt3-175b)" \
    sh -c "[ '$marked' -ge 1 ] && grep -q \"title 'no fitting plan'\" '$OUT/data/comm_share.gp' && grep -q '>no fitting plan<' '$S'"
# tp labels: one per distinct point, none printed twice at the same place
dups=$(awk 'NF == 3' "$OUT/data/ccr.dat" | sort | uniq -d | wc -l)
check "ccr: at most one 'tp N' label set, no label point twice ($dups)" \
    [ "$(grep -c 'with labels' "$OUT/data/ccr.gp")" -le 1 -a "$dups" -eq 0 ]
# identical bars are explained
check "mitigations: report.md says why compression and 2x links save the same" \
    grep -q 'save the same time for .* both halve its bandwidth term' "$OUT/report.md"
check "mitigations: the plot says it too" grep -q "set label 98 .collectives x0.5 bytes and links x2.0 bandwidth: equal" "$OUT/data/mitigations.gp"
$BIN report --help >/dev/null; rc=$?
check "report --help exits 0" [ $rc -eq 0 ]
