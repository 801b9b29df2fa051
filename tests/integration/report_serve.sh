#!/bin/sh
# report_serve.sh - the serving section of 'ccsweep report': a reduced serving
# spec (written here, a second to run) reported, every count of the section's
# summary and findings checked against SQL written out here (not the report's
# queries) over the same database; the plot data (one x per point of a line,
# legends only for lines drawn, integer ticks on every x axis, ranges from the
# data); and a database holding a training and a serving run (both parts by
# default, one with --run). Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "report_serve"
if ! command -v gnuplot >/dev/null 2>&1; then
    skip "report_serve (gnuplot is not installed; 'make deps' installs it)"
    exit 0
fi

cat >"$TMP/serve.yaml" <<'YAML'
name: serve-small
workload: serve
models: [llama3-70b, mixtral-8x22b]
hardware: [h100-sxm, mi300x]
generations: [0, 2]
evolution: memory-wall
serve:
  isl: [1000, 4000]
  osl: 200
  concurrency: [1, 16, max]
  weight_dtype: fp8
  kv_dtype: fp8
plan:
  devices: [8, 16]
  tp: [1, 2, 4, 8]
  pp: [1, 2]
  ep: [1, 2]
  attn_dp: [false, true]
YAML
DB="$TMP/s.db"
$BIN run "$TMP/serve.yaml" --db "$DB" --quiet >/dev/null 2>"$TMP/s.err"; rc=$?
$BIN report --db "$DB" --out "$TMP/s" >/dev/null 2>>"$TMP/s.err" || rc=$?
check "the reduced serving spec runs and reports (rc $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/s.err"
R=$TMP/s/report.md

# the plans, with the grouping written out: a job is model x hardware generation x
# devices x isl x osl x formats; its best plan the most tokens/s per GPU, then
# TPOT, TTFT and the simpler plan (search --serve's order); per tp the same
# within the tp
J="model, hardware, generation, devices, isl, osl, wdtype, kvdtype"
O="ORDER BY tok_s_gpu DESC, tpot, ttft, tp, pp, ep, attn_dp, idx"
PLANS="WITH ok AS (SELECT * FROM serve_results WHERE status = 0),
best AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY $J $O) AS rk FROM ok) WHERE rk = 1),
attp AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY $J, tp $O) AS rk FROM ok) WHERE rk = 1),
jobs AS (SELECT DISTINCT $J FROM serve_results)"
q() { sqlite3 "$DB" "$PLANS $1"; }
g0=$(sqlite3 "$DB" "SELECT min(generation) FROM serve_results")
g1=$(sqlite3 "$DB" "SELECT max(generation) FROM serve_results")

# summary: jobs fitting of all, per hardware generation
bad=0 n=0
q "SELECT j.hardware, j.generation, count(b.idx) || ' of ' || count(*) FROM jobs j
   LEFT JOIN best b USING (model, hardware, generation, devices, isl, osl, wdtype, kvdtype)
   GROUP BY j.hardware, j.generation" >"$TMP/exp_sum"
while IFS='|' read -r hw gen want; do
    got=$(awk -F' [|] ' -v hw="$hw" -v g="$gen" '$1 == "| " hw && $2 == g { print $3; exit }' "$R")
    n=$((n + 1))
    [ "$got" = "$want" ] || { bad=$((bad + 1)); echo "  summary $hw gen $gen: '$got', SQL: '$want'"; }
done <"$TMP/exp_sum"
check "serving summary: jobs fitting per hardware generation ($bad of $n differ)" [ $bad -eq 0 -a $n -eq 4 ]

for g in $g0 $g1; do
    want=$(q "SELECT (SELECT count(*) FROM best WHERE generation = $g) || ' ' ||
              (SELECT count(*) FROM jobs WHERE generation = $g)")
    got=$(grep -F -- "- Decode, generation $g:" "$R" | sed -n 's/.* over the \([0-9]*\) of \([0-9]*\) jobs that fit .*/\1 \2/p')
    check "'Decode, generation $g': jobs that fit, of all (report '$got', SQL '$want')" \
        [ -n "$got" -a "$got" = "$want" ]
    want=$(q "SELECT group_concat('tp ' || tp || ' (' || n || ' jobs)', ', ') FROM
              (SELECT tp, count(*) AS n FROM attp WHERE generation = $g GROUP BY tp ORDER BY tp)")
    got=$(grep -F -- "- Decode communication by tp, generation $g " "$R" | sed -e 's/^[^:]*: //' \
        -e 's/ (`queries.*//' -e 's/[0-9.]*% at //g')
    check "'Decode communication by tp, generation $g': jobs per tp (report '$got', SQL '$want')" \
        [ -n "$got" -a "$got" = "$want" ]
done
for hw in $(sqlite3 "$DB" "SELECT DISTINCT hardware FROM serve_results"); do
    want=$(q "SELECT count(*) FROM best a JOIN best b ON b.generation = $g1
        AND b.model = a.model AND b.hardware = a.hardware AND b.devices = a.devices
        AND b.isl = a.isl AND b.osl = a.osl AND b.wdtype = a.wdtype AND b.kvdtype = a.kvdtype
        WHERE a.generation = $g0 AND a.hardware = '$hw'")
    got=$(grep -F -- "- $hw, generation $g0 -> $g1 (best plans" "$R" | sed -n 's/.* over the \([0-9]*\) jobs that fit at both .*/\1/p')
    check "'$hw, generation $g0 -> $g1': jobs that fit at both (report '$got', SQL '$want')" \
        [ -n "$got" -a "$got" = "$want" ]
done
tp=$(grep -F -- "- Decode communication at tp " "$R" | sed -n 's/^- Decode communication at tp \([0-9]*\),.*/\1/p')
want=$(q "SELECT group_concat(hardware || ' ' || a || ' -> ' || b, '; ') FROM (SELECT hardware,
    sum(generation = $g0) AS a, sum(generation = $g1) AS b FROM attp WHERE tp = ${tp:-0}
    GROUP BY hardware HAVING a > 0 AND b > 0 ORDER BY min(idx))")
got=$(grep -F -- "- Decode communication at tp " "$R" | sed -e 's/^[^:]*: //' -e 's/ (`queries.*//' \
    -e 's/ [0-9.]*% -> [0-9.]*% (\([0-9]*\) -> \([0-9]*\) jobs)/ \1 -> \2/g')
check "'Decode communication at tp $tp': jobs per hardware and generation (report '$got', SQL '$want')" \
    [ -n "$tp" -a "$got" = "$want" ]
rows=$(grep -c '^| llama3-70b \|^| mixtral-8x22b ' "$R")
want=$(q "SELECT count(*) FROM jobs")
check "the table of best plans has one row per job ($rows, SQL $want)" [ "$rows" = "$want" ]

# the serving queries: each runs on the database with sqlite3, returns rows and is
# the text the report used; the report lists only those
for f in tools/queries/serve_*.sql; do
    n=$(basename "$f" .sql)
    rows=$(sqlite3 -bail "$DB" <"$f" 2>"$TMP/q.err" | wc -l)
    check "query $n.sql runs on the serving run and returns rows ($rows)" \
        [ ! -s "$TMP/q.err" -a "$rows" -gt 0 ]
    check "query $n.sql is the report's queries/$n.sql" cmp -s "$f" "$TMP/s/queries/$n.sql"
done
check "report.md of a serving run includes the serving queries only" \
    sh -c "[ \$(grep -c '^\`\`\`sql' '$R') -eq \$(ls tools/queries/serve_*.sql | wc -l) ]"
check "report.md names and embeds the three serving plots" \
    sh -c "for p in serve_tpot serve_tok_gen serve_comm_tp; do grep -q \"^### Serving [0-9]\\. .*(\\\`\$p\\\`)\" '$R' &&
        grep -q \"^!\\[.*\\](\$p.png)\" '$R' || exit 1; done"

# plot data
D=$TMP/s/data
for f in serve_tpot serve_tok_gen serve_comm_tp; do
    check "$f.png drawn" [ -s "$TMP/s/$f.png" ]
    dup=$(awk '/^#/ { next } NF == 0 { if (pb) delete seen; pb = 1; next }
        { pb = 0; if (($1) in seen) d++; seen[$1] = 1 } END { print d + 0 }' "$D/$f.dat")
    check "$f.dat: no two points of one line share an x value ($dup do)" [ "$dup" = 0 ]
    nblk=$(grep -c '^#' "$D/$f.dat")
    maxi=$(grep -o 'index [0-9]*' "$D/$f.gp" | awk '{ if ($2 > m) m = $2 } END { print m + 0 }')
    nidx=$(grep -o 'index [0-9]*' "$D/$f.gp" | wc -l)
    check "$f.gp: every line drawn has a data block with points ($nidx lines, $nblk blocks)" \
        [ "$nidx" = "$nblk" -a "$maxi" = $((nblk - 1)) ]
    dupt=$(grep '^plot ' "$D/$f.gp" | awk '{ n = split($0, a, " title "); delete s
        for (i = 2; i <= n; i++) { t = a[i]; match(t, /^\047[^\047]*\047/); t = substr(t, 1, RLENGTH); if (t in s) d++; s[t] = 1 } }
        END { print d + 0 }')
    check "$f.gp: no two lines of a panel share a legend title ($dupt do)" [ "$dupt" = 0 ]
    res=$(awk '/^plot / { p++ } /^set xtics \(/ { t++; if ($0 !~ /^set xtics \([0-9]+(, [0-9]+)*\)$/) bad++ }
        /^set xrange \[\*/ { bad++ } END { print p + 0, t + 0, bad + 0 }' "$D/$f.gp")
    set -- $res
    check "$f.gp: integer x ticks and x range from the data in every drawn panel (panels, tick lists, bad: $res)" \
        [ "$1" -gt 0 -a "$2" -ge "$1" -a "$3" = 0 ]
done

# A serving run of 120 input lengths: the request-shape figure draws a bounded
# grid of panels (a panel row per shape was a canvas of 120 x 380 px that
# cairo refuses, and the report exited 2), says which shapes it draws, and
# the table still lists every job
cat >"$TMP/isl.yaml" <<'YAML'
name: serve-isl
workload: serve
models: [llama3-8b]
hardware: [h100-sxm]
serve:
  isl: {range: [100, 219]}
  osl: 20
  concurrency: [1]
plan:
  devices: 1
  tp: 1
YAML
$BIN run "$TMP/isl.yaml" --db "$TMP/isl.db" --quiet >/dev/null 2>"$TMP/i.err"; rc=$?
$BIN report --db "$TMP/isl.db" --out "$TMP/isl" >/dev/null 2>>"$TMP/i.err" || rc=$?
check "120 input lengths: the run and its report exit 0, report.md written (rc $rc)" \
    [ $rc -eq 0 -a -s "$TMP/isl/report.md" ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/i.err"
png_hw() { od -An -tu1 -j16 -N8 "$1" | awk '{ print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8 }'; }
for f in serve_tpot serve_tok_gen serve_comm_tp; do
    dim=$([ -s "$TMP/isl/$f.png" ] && png_hw "$TMP/isl/$f.png")
    check "$f.png drawn within 4000 x 4000 px ($dim)" \
        sh -c "[ -n '$dim' ] && [ ${dim%x*} -le 4000 -a ${dim#*x} -le 4000 ]"
done
npan=$(grep -c '^plot ' "$TMP/isl/data/serve_tok_gen.gp" 2>/dev/null)
check "serve_tok_gen: at most 6 panel rows of request shapes ($npan panels), the caption says which" \
    sh -c "[ '$npan' -ge 2 -a '$npan' -le 6 ] &&
        grep -q 'the panels show $npan of the 120 request shapes (isl 100, .*, 219; osl 20)' '$TMP/isl/report.md'"
check "... and the table lists all 120 jobs" [ "$(grep -c '^| llama3-8b | h100-sxm ' "$TMP/isl/report.md")" = 120 ]

# A full disk: the report, written to a small tmpfs (a private mount
# namespace; root only), never lists a figure it did not write whole (a PNG
# ends with its IEND chunk) and exits non-zero naming what failed. The
# figures are 14-90 KiB, so at some of these sizes the disk fills inside one.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 &&
    unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs '$TMP'" 2>/dev/null; then
    cat >"$TMP/full.sh" <<'SH'
# full.sh BIN DB MNT SIZE: report DB into a tmpfs of SIZE at MNT; prints the
# exit status, then each PNG listed as written with 1 when it ends in IEND
mkdir -p "$3" && mount -t tmpfs -o size="$4" tmpfs "$3" || exit 9
"$1" report --db "$2" --out "$3/r" >"$3.out" 2>"$3.err"
echo "rc $?"
for f in $(sed -n 's/^  \(.*\.png\)$/\1/p' "$3.out"); do
    [ "$(tail -c 8 "$f" 2>/dev/null | head -c 4)" = IEND ] && echo "$f 1" || echo "$f 0"
done
SH
    bad=0 failed=0 trunc=0
    for kb in 48 80 112 144; do
        unshare -m sh "$TMP/full.sh" "$BIN" "$TMP/isl.db" "$TMP/mnt$kb" ${kb}k >"$TMP/full.res" 2>&1
        grep -q ' 0$' "$TMP/full.res" && bad=$((bad + 1))
        grep -q '^rc [1-9]' "$TMP/full.res" && [ -s "$TMP/mnt$kb.err" ] && failed=$((failed + 1))
        grep -q 'truncated' "$TMP/mnt$kb.err" && trunc=$((trunc + 1))
    done
    check "a full disk: no truncated PNG listed as written ($bad sizes did), each size fails with a message ($failed of 4), some naming a truncated figure ($trunc)" \
        [ $bad -eq 0 -a $failed -eq 4 -a $trunc -ge 1 ]
else
    skip "a full disk during report (needs root and unshare -m to mount a small tmpfs)"
fi

# a training run and a serving run in one database
cat >"$TMP/train.yaml" <<'YAML'
name: train-small
models: [bert-large]
hardware: [h100-sxm]
generations: [0]
plan:
  devices: 8
  tp: [1, 2]
  pp: 1
  mbs: 1
  gbs: 64
  seq: 512
YAML
$BIN run "$TMP/train.yaml" --db "$DB" --quiet >/dev/null 2>"$TMP/t.err"; rc=$?
$BIN report --db "$DB" --out "$TMP/both" >/dev/null 2>>"$TMP/t.err" || rc=$?
check "a training run added to the serving database reports (rc $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/t.err"
check "both parts in one report: training summary and serving section" \
    sh -c "grep -q '^## Summary' '$TMP/both/report.md' && grep -q '^## Serving: serve-small (run 1)' '$TMP/both/report.md' &&
        [ -s '$TMP/both/comm_share.png' -a -s '$TMP/both/serve_tpot.png' ]"
$BIN report --db "$DB" --run 1 --out "$TMP/one" >/dev/null 2>&1
check "--run of the serving run: the serving section alone" \
    sh -c "grep -q '^## Serving' '$TMP/one/report.md' && ! grep -q '^## Summary' '$TMP/one/report.md' &&
        ! grep -q 'comm_share.sql' '$TMP/one/report.md'"
$BIN report --db "$DB" --run 2 --out "$TMP/two" >/dev/null 2>&1
check "--run of the training run: no serving section" \
    sh -c "grep -q '^## Summary' '$TMP/two/report.md' && ! grep -q '^## Serving' '$TMP/two/report.md'"
exit 0
