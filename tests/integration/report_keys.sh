#!/bin/sh
# report_keys.sh - the keys of the report's line figures stay inside their
# panels: tests/data/sweep_sizes.yaml over four generations puts 17 entries of
# up to 28 characters ("gen 0, 256 devices, seq 8192") in each key of a
# three-hardware figure, which six rows per column laid out in three columns,
# past the panel's right edge. Read back from the SVG that gnuplot draws: each
# key's box (the grey #bbbbbb rectangle) must lie within the plot border (the
# black rectangle) of its panel.
# Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "report_keys"
if ! command -v gnuplot >/dev/null 2>&1; then
    skip "report_keys (gnuplot is not installed; 'make deps' installs it)"
    exit 0
fi

sed 's/^generations: \[0, 2\]$/generations: [0, 1, 2, 3]/' tests/data/sweep_sizes.yaml >"$TMP/g4.yaml"
$BIN run "$TMP/g4.yaml" --db "$TMP/g4.db" --quiet >/dev/null 2>"$TMP/err"; rc=$?
$BIN report --db "$TMP/g4.db" --out "$TMP/r" --format png,svg >/dev/null 2>>"$TMP/err" || rc=$?
check "the four-generation sizes sweep runs and reports in png and svg (rc $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || sed 's/^/  /' "$TMP/err"
n=$(grep -c "title 'gen 3, 256 devices, seq 8192'" "$TMP/r/data/comm_share.gp")
check "comm_share: its panels hold the 28-character titles ($n panels)" [ "$n" -ge 4 ]

# "KEYS BAD": key boxes in the SVG, and those that are not inside the plot
# border of the panel their top-left corner is in (0.5 px of rounding allowed)
cat >"$TMP/keyfit.awk" <<'AWK'
function rect(s, a,   t, n, p, i) {
    t = s; sub(/.*d='M/, "", t); sub(/ Z.*/, "", t); gsub(/[ML]/, "", t)
    n = split(t, p, /[ ,]+/)
    a["x1"] = a["x2"] = p[1] + 0; a["y1"] = a["y2"] = p[2] + 0
    for (i = 1; i < n; i += 2) {
        if (p[i] + 0 < a["x1"]) a["x1"] = p[i] + 0
        if (p[i] + 0 > a["x2"]) a["x2"] = p[i] + 0
        if (p[i + 1] + 0 < a["y1"]) a["y1"] = p[i + 1] + 0
        if (p[i + 1] + 0 > a["y2"]) a["y2"] = p[i + 1] + 0
    }
}
/<path stroke='black' +d='M[^']* Z/ {
    rect($0, r); nb++; bx1[nb] = r["x1"]; bx2[nb] = r["x2"]; by1[nb] = r["y1"]; by2[nb] = r["y2"]
}
/<path stroke='rgb\(187, 187, 187\)' +d='M[^']* Z/ {
    rect($0, r); nk++; kx1[nk] = r["x1"]; kx2[nk] = r["x2"]; ky1[nk] = r["y1"]; ky2[nk] = r["y2"]
}
END {
    bad = 0
    for (k = 1; k <= nk; k++) {
        for (b = 1; b <= nb; b++)
            if (kx1[k] >= bx1[b] && kx1[k] < bx2[b] && ky1[k] >= by1[b] && ky1[k] < by2[b])
                break
        if (b > nb || kx2[k] > bx2[b] + 0.5 || ky2[k] > by2[b] + 0.5)
            bad++
    }
    print nk + 0, bad
}
AWK
for f in comm_share dp_hidden forced_tp fixed_plan; do
    set -- $(awk -f "$TMP/keyfit.awk" "$TMP/r/$f.svg")
    check "$f: every key box lies inside its panel ($2 of $1 past the edge)" [ "$1" -ge 2 -a "$2" = 0 ]
done
