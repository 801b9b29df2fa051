#!/bin/sh
# report_counts.sh - every count of report.md's summary and findings, checked
# against SQL written out here (not the report's queries) over the same
# database, for sweeps with more than one group per model: the shipped
# sweeps/moe-longctx.yaml (3 sequence lengths per model, a device count per
# model) and tests/data/sweep_sizes.yaml (2 device counts x 2 sequence lengths
# per model). A group is one model x hardware generation x devices x gbs x seq:
# the unit of equal work, the only one within which plans compare. Also checks
# the plot data the report writes in DIR/data/: one x per point of a drawn
# line, legends only for what is drawn, integer ticks on the TP axis.
# Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "report_counts"
if ! command -v gnuplot >/dev/null 2>&1; then
    skip "report_counts (gnuplot is not installed; 'make deps' installs it)"
    exit 0
fi

# The plans, with the grouping written out: fitting rows without a what-if
# mitigation, ranked within (model, hardware generation, devices, gbs, seq) as
# results/README.md's "Best plan" says (tokens/s, then memory, then the plan),
# and the TP+DP plan: pp = 1, the smallest tp, then the same order.
PLANS="WITH ok AS (
  SELECT r.*, h.name AS hw, h.generation AS gen FROM result_codes r JOIN hardware h ON h.hw_id = r.hw_id
  WHERE r.status = 0 AND r.tp_overlap = 0 AND r.innet_reduce = 0 AND r.comm_compress = 1
    AND r.net_bw_factor = 1),
o AS (SELECT *, row_number() OVER (PARTITION BY model_id, hw_id, devices, gbs, seq
      ORDER BY tokens_per_s DESC, mem_total, tp, cp, ep, pp, vpp, mbs, sp, zero, recompute,
        flash_attn, dp_overlap, dtype, idx) AS brk FROM ok),
f AS (SELECT *, row_number() OVER (PARTITION BY model_id, hw_id, devices, gbs, seq
      ORDER BY tp, brk) AS frk FROM o WHERE pp = 1),
pl AS (SELECT 'best' AS plan, * FROM o WHERE brk = 1
       UNION ALL SELECT 'tp+dp', * FROM o WHERE rid IN (SELECT rid FROM f WHERE frk = 1)),
grp AS (SELECT DISTINCT model_id, devices, gbs, seq FROM result_codes)"

counts() { # $1: db, $2: report dir, $3: label
    DB=$1 R=$2/report.md L=$3
    q() { sqlite3 "$DB" "$PLANS $1"; }
    # what varies within one model names the groups
    dims=$(sqlite3 "$DB" "SELECT max(d) > 1, max(g) > 1, max(s) > 1 FROM (SELECT model_id,
        count(DISTINCT devices) AS d, count(DISTINCT gbs) AS g, count(DISTINCT seq) AS s
        FROM result_codes GROUP BY model_id)")
    word="model x hardware"
    [ "${dims%%|*}" = 1 ] && word="$word x devices"
    x=${dims#*|}; [ "${x%%|*}" = 1 ] && word="$word x gbs"
    [ "${dims##*|}" = 1 ] && word="$word x seq"
    word="$word groups"
    ngrp=$(q "SELECT count(*) FROM grp")
    nmod=$(sqlite3 "$DB" "SELECT count(*) FROM models")

    # summary table: groups and models fitting per hardware generation
    bad=0 n=0
    q "SELECT h.name, h.generation,
         (SELECT count(*) FROM pl WHERE plan = 'best' AND hw_id = h.hw_id),
         (SELECT count(*) FROM pl WHERE plan = 'tp+dp' AND hw_id = h.hw_id),
         (SELECT count(DISTINCT model_id) FROM pl WHERE plan = 'best' AND hw_id = h.hw_id),
         (SELECT count(DISTINCT model_id) FROM pl WHERE plan = 'tp+dp' AND hw_id = h.hw_id)
       FROM hardware h ORDER BY h.hw_id" >"$TMP/exp_sum"
    while IFS='|' read -r hw gen gb gt mb mt; do
        want="$gb / $gt of $ngrp groups ($mb / $mt of $nmod models)"
        got=$(awk -F' [|] ' -v hw="$hw" -v g="$gen" '$1 == "| " hw && $2 == g { print $4; exit }' "$R")
        n=$((n + 1))
        if [ "$got" != "$want" ]; then
            bad=$((bad + 1))
            echo "  $L summary $hw gen $gen: '$got', SQL: '$want'"
        fi
    done <"$TMP/exp_sum"
    check "$L: summary counts of groups and models per hardware generation ($bad of $n differ)" \
        [ $bad -eq 0 -a $n -gt 0 ]

    g0=$(sqlite3 "$DB" "SELECT min(generation) FROM hardware")
    g1=$(sqlite3 "$DB" "SELECT max(generation) FROM hardware")
    # findings: communication share, groups and groups at 40% or more
    for k in best tp+dp; do
        lead="Best plan"; [ $k = tp+dp ] && lead="TP+DP (memory-forced TP)"
        for g in $g0 $g1; do
            want=$(q "SELECT count(*) || ' ' || sum(round(100 * comm_fraction, 2) >= 40)
                      FROM pl WHERE plan = '$k' AND gen = $g")
            line=$(grep -F -- "- $lead, generation $g: communication is" "$R")
            got=$(echo "$line" | sed -n "s/.* over \([0-9]*\) $word; .*; \([0-9]*\) groups at 40% or more .*/\1 \2/p")
            check "$L: '$lead, generation $g': groups, at 40% or more (report '$got', SQL '$want')" \
                [ -n "$got" -a "$got" = "$want" ]
        done
    done
    # findings: the first generation's plans kept on the last one
    for k in best tp+dp; do
        lead="Best"; [ $k = tp+dp ] && lead="TP+DP"
        want=$(q "SELECT sum(round(100 * b.comm_fraction, 2) >= 40) || ' ' || count(*)
            FROM pl a JOIN ok b ON b.model_id = a.model_id AND b.hw = a.hw AND b.gen = $g1
              AND b.devices = a.devices AND b.gbs = a.gbs AND b.seq = a.seq AND b.tp = a.tp
              AND b.cp = a.cp AND b.ep = a.ep AND b.pp = a.pp AND b.dp = a.dp AND b.vpp = a.vpp
              AND b.mbs = a.mbs AND b.dtype = a.dtype AND b.sp = a.sp AND b.zero = a.zero
              AND b.recompute = a.recompute AND b.flash_attn = a.flash_attn
              AND b.dp_overlap = a.dp_overlap AND b.cp_comm = a.cp_comm
              AND b.capacity_factor = a.capacity_factor
              AND b.pp_first_layers IS a.pp_first_layers AND b.pp_last_layers IS a.pp_last_layers
            WHERE a.plan = '$k' AND a.gen = $g0")
        got=$(grep -F -- "- $lead plans of generation $g0 kept unchanged" "$R" |
            sed -n "s/.*; \([0-9]*\) of \([0-9]*\) $word reach 40% or more.*/\1 \2/p")
        check "$L: '$lead plans kept': at 40% or more of groups (report '$got', SQL '$want')" \
            [ -n "$got" -a "$got" = "$want" ]
    done
    # findings: DP communication hidden at the first generation, exposed at the last,
    # on the report's hardware (the run's first)
    ref=$(sqlite3 "$DB" "SELECT name FROM hardware ORDER BY hw_id LIMIT 1")
    for k in best tp+dp; do
        lead="Best plan"; [ $k = tp+dp ] && lead="TP+DP"
        want=$(q ", d AS (SELECT plan, model_id, devices, gbs, seq, gen,
                   round(100 * (1 - t_dp_comm_exposed / t_dp_comm), 2) AS h
                 FROM pl WHERE hw = '$ref' AND t_dp_comm > 0)
            SELECT count(*) || ' ' || coalesce(sum(b.h < 50), 0)
            FROM d a LEFT JOIN d b ON b.plan = a.plan AND b.model_id = a.model_id
              AND b.devices = a.devices AND b.gbs = a.gbs AND b.seq = a.seq AND b.gen = $g1
            WHERE a.plan = '$k' AND a.gen = $g0 AND a.h >= 50")
        line=$(grep -F -- "- $lead on $ref: of the " "$R")
        got=$(echo "$line" | sed -n "s/.* of the \([0-9]*\) $word whose DP communication .*, \([0-9]*\) have less .*/\1 \2/p")
        [ "${want%% *}" = 0 ] && [ -z "$line" ] && got=$want
        check "$L: '$lead on $ref': DP hidden, then exposed (report '$got', SQL '$want')" \
            [ -n "$got" -a "$got" = "$want" ]
    done
    # findings: memory-forced TP on the report's hardware
    for g in $g0 $g1; do
        want=$(q ", t AS (SELECT g.model_id, g.devices, g.gbs, g.seq,
                   (SELECT min(tp) FROM ok WHERE ok.model_id = g.model_id AND ok.devices = g.devices
                      AND ok.gbs = g.gbs AND ok.seq = g.seq AND hw = '$ref' AND gen = $g AND pp = 1) AS nopp,
                   (SELECT min(tp) FROM ok WHERE ok.model_id = g.model_id AND ok.devices = g.devices
                      AND ok.gbs = g.gbs AND ok.seq = g.seq AND hw = '$ref' AND gen = $g) AS anypp
                 FROM grp g)
            SELECT coalesce(max(nopp), 0) || ' ' || sum(nopp IS NULL) || ' ' || coalesce(max(anypp), 0) FROM t")
        got=$(grep -F -- "- Memory-forced TP on $ref, generation $g:" "$R" |
            sed -n "s/.* reaches \([0-9]*\) (.*) and \([0-9]*\) $word fit no TP+DP plan; .* reaches \([0-9]*\) .*/\1 \2 \3/p")
        check "$L: 'Memory-forced TP on $ref, generation $g': largest tp, groups without (report '$got', SQL '$want')" \
            [ -n "$got" -a "$got" = "$want" ]
    done
}

plots() { # $1: report dir, $2: label
    D=$1/data L=$2
    # every data block of a line figure is one drawn line (or one set of
    # no-fit marks): no two points of it share an x value
    for f in comm_share dp_hidden fixed_plan forced_tp; do
        dup=$(awk 'BEGIN { b = 0 } /^#/ { next } NF == 0 { if (prev_blank) { b++; delete seen }; prev_blank = 1; next }
            { prev_blank = 0; if (($1) in seen) d++; seen[$1] = 1 } END { print d + 0 }' "$D/$f.dat")
        check "$L: $f.dat: no two points of one line share an x value ($dup do)" [ "$dup" = 0 ]
        # the x range is the data's, not gnuplot's whole decades
        bad=$(grep -c "^set xrange \[\*" "$D/$f.gp")
        check "$L: $f.gp: the x axis range is set from the data ($bad panels are not)" [ "$bad" = 0 ]
        # legend: one title per line of a panel, no two alike
        dupt=$(grep '^plot ' "$D/$f.gp" | awk '{ n = split($0, a, " title "); delete s
            for (i = 2; i <= n; i++) { t = a[i]; match(t, /^\047[^\047]*\047/); t = substr(t, 1, RLENGTH); if (t in s) d++; s[t] = 1 } }
            END { print d + 0 }')
        check "$L: $f.gp: no two lines of a panel share a legend title ($dupt do)" [ "$dupt" = 0 ]
    done
    # the TP axis: integer ticks only
    frac=$(awk '/^set logscale y 2/ { n++; getline; if ($0 !~ /^set ytics \([0-9, ]*\)$/) bad++ }
        END { print n + 0, bad + 0 }' "$D/forced_tp.gp")
    check "$L: forced_tp.gp: every TP panel has integer ticks (panels, without: $frac)" \
        sh -c "[ '${frac% *}' -gt 0 ] && [ '${frac#* }' = 0 ]"
    # breakdown: each legend class drawn has a non-zero share in its panel's
    # block, and '* no fitting plan' is said only under a panel with a '*'
    res=$(awk -v dat="$D/breakdown.dat" '
        BEGIN { b = 0; while ((getline l < dat) > 0) { if (l == "") { if (pb) b++; pb = 1; continue }
                  pb = 0; rows[b] = rows[b] "\n" l } }
        /^set xlabel/ { star = ($0 ~ /no fitting plan/) }
        /^unset xlabel/ { star = 0 }
        /^plot / { n = split($0, c, /, /); for (i = 1; i <= n; i++) {
                   if (match(c[i], /index [0-9]+/)) blk = substr(c[i], RSTART + 6, RLENGTH - 6) + 0
                   if (!match(c[i], /using [0-9]+/)) continue
                   col = substr(c[i], RSTART + 6, RLENGTH - 6) + 0; nz = 0
                   m = split(rows[blk], L, "\n"); for (j = 1; j <= m; j++) {
                       if (L[j] == "") continue; s = L[j]; sub(/^"[^"]*"/, "x", s); split(s, v, " ")
                       if (v[col] + 0 > 0) nz = 1 }
                   if (!nz) empty++ }
                   has = (rows[blk] ~ /\*"/); if (has != star) starbad++; panels++ }
        END { print panels + 0, empty + 0, starbad + 0 }' "$D/breakdown.gp")
    set -- $res
    check "$L: breakdown: legend classes without a share ($2) and wrong '* no fitting plan' notes ($3), of $1 panels" \
        [ "$1" -gt 0 -a "$2" = 0 -a "$3" = 0 ]
}

$MPIRUN -n 2 $BIN run tests/data/sweep_sizes.yaml --db "$TMP/s.db" --quiet >/dev/null 2>"$TMP/s.err"; rc=$?
$BIN report --db "$TMP/s.db" --out "$TMP/s" >/dev/null 2>>"$TMP/s.err" || rc=$?
check "the multi-size sweep runs and reports (rc $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/s.err"
counts "$TMP/s.db" "$TMP/s" sizes
plots "$TMP/s" sizes

$MPIRUN -n 2 $BIN run sweeps/moe-longctx.yaml --db "$TMP/m.db" --quiet >/dev/null 2>"$TMP/m.err"; rc=$?
$BIN report --db "$TMP/m.db" --out "$TMP/m" >/dev/null 2>>"$TMP/m.err" || rc=$?
check "sweeps/moe-longctx.yaml runs and reports (rc $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/m.err"
counts "$TMP/m.db" "$TMP/m" moe-longctx
plots "$TMP/m" moe-longctx
exit 0
