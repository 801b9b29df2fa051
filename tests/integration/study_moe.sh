#!/bin/sh
# study_moe.sh - the study of mixture-of-experts and long-context models
# (sweeps/moe-longctx.yaml, 126,000 scenarios) as 'make study-moe' runs it
# (tools/study.sh with STUDY_SPEC), and its report's section on communication
# by class. Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "study_moe"
if ! command -v gnuplot >/dev/null 2>&1; then
    skip "study_moe (gnuplot is not installed; 'make deps' installs it)"
    exit 0
fi
DB="$TMP/m.db"
OUT="$TMP/rep"
STUDY_SPEC=sweeps/moe-longctx.yaml STUDY_DB="$DB" STUDY_OUT="$OUT" sh tools/study.sh 2 \
    >"$TMP/study.out" 2>&1; rc=$?
check "tools/study.sh with STUDY_SPEC=sweeps/moe-longctx.yaml exits 0 (rc $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || tail -5 "$TMP/study.out" | sed 's/^/  /'
check "the run is complete over its 126000 scenarios" \
    [ "$(sqlite3 "$DB" "SELECT status, total, n_done FROM runs")" = "complete|126000|126000" ]

# Long context needs context parallelism: llama3-405b at 131,072 tokens per
# sequence holds, per layer, about 34 s b h / t bytes of activations with
# selective recompute and sequence parallelism (Korthikanti et al. 2022,
# arXiv 2205.05198, Table 2): 34 x 131072 x 16384 / 8 = 9.1e9 bytes at tp 8, so
# the 8 layers of a pipeline stage at pp 16 (126 layers) already take 73 GB of
# an 80 GB H100 for one micro-batch, before the weights and the micro-batches
# in flight: no plan with cp = 1 fits, and cp = 16 (Llama Team 2024, arXiv
# 2407.21783, Table 4) is what fits.
cp=$(sqlite3 "$DB" "SELECT count(*), coalesce(min(cp), 0) FROM results_view
    WHERE model = 'llama3-405b' AND seq = 131072 AND hardware = 'h100-sxm' AND generation = 0")
check "llama3-405b at 128K tokens on h100-sxm fits only with cp > 1 (plans, smallest cp: $cp)" \
    sh -c "[ '${cp%%|*}' -ge 1 ] && [ '${cp##*|}' -gt 1 ]"

# the section: one row per group on the reference hardware and generation,
# classes adding up to the share
sqlite3 "$DB" <tools/queries/comm_class.sql >"$TMP/cls"
sum=$(awk -F'|' '{n++; d = $16 - ($17 + $18 + $19 + $20 + $21); if (d < 0) d = -d; if (d > 0.06) bad++}
    END {print n + 0, bad + 0}' "$TMP/cls")
check "comm_class: rows, classes not adding up to comm_pct ($sum)" \
    sh -c "[ '${sum% *}' -gt 0 ] && [ '${sum#* }' = 0 ]"
groups=$(sqlite3 "$DB" "SELECT count(*) FROM (SELECT DISTINCT m.name, r.seq FROM results r
    JOIN models m ON m.model_id = r.model_id WHERE m.experts > 0 OR r.seq > 8192)")
check "every model appears: 3 mixtures of experts x 3 sequence lengths, 3 dense x 2 long ones ($groups)" \
    [ "$groups" = 15 ]
ref=$(awk -F'|' '$1 == "h100-sxm"' "$TMP/cls" | wc -l)
rows=$(sed -n '/^On h100-sxm, every generation/,/^## /p' "$OUT/report.md" | grep '^| ' |
    grep -vc '^| model \|^|---')
check "the report lists every h100-sxm row of comm_class ($rows of $ref)" [ "$rows" -eq "$ref" -a "$ref" -gt 0 ]
mean=$(sed -n '/^## Communication by class/,/^On /p' "$OUT/report.md" | grep -c '^| \(h100-sxm\|gb200-nvl72\) | [04] |')
check "and the mean shares per hardware at generations 0 and 4 ($mean rows)" [ "$mean" = 4 ]
ep=$(awk -F'|' '$5 > 0 && $11 > 1 && $19 > 0' "$TMP/cls" | wc -l)
cpx=$(awk -F'|' '$10 > 1' "$TMP/cls" | wc -l)
check "best plans use expert parallelism ($ep rows with EP traffic) and context parallelism ($cpx)" \
    [ "$ep" -gt 0 -a "$cpx" -gt 0 ]
exit 0
