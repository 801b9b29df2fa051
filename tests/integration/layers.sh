#!/bin/sh
# layers.sh - tools/check-layers.sh passes on the tree and fails on what it is
# for: an include of a higher layer's header, a module cycle inside a layer,
# a source file outside every layer, and a module the README's source tour
# does not name (each planted in a copy of the tree).
set -u
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ccsweep-layers-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

if sh tools/check-layers.sh > "$TMP/out" 2>&1; then
    pass "check-layers: the tree keeps its layers ($(tail -1 "$TMP/out"))"
else
    fail "check-layers on the tree: $(cat "$TMP/out")"
fi

# fresh copy of what the checker reads
copy() { rm -rf "$TMP/t"; mkdir -p "$TMP/t"; cp -R Makefile README.md src include "$TMP/t/"; }

copy
sed -i '1a #include "ccsweep/store/store.h"' "$TMP/t/src/util/xsum.c"
if sh tools/check-layers.sh "$TMP/t" > "$TMP/out" 2>&1; then
    fail "an upward include (util includes store) passed"
elif grep -q "src/util/xsum.c:2: layer 'util' includes ccsweep/store/store.h" "$TMP/out"; then
    pass "an upward include is refused, naming file, line and layers"
else
    fail "an upward include: unexpected message: $(cat "$TMP/out")"
fi

copy
# cost/opscale is included by cost/opmodel; opscale including opmodel closes a loop
sed -i '1a #include "ccsweep/cost/opmodel.h"' "$TMP/t/include/ccsweep/cost/opscale.h"
if sh tools/check-layers.sh "$TMP/t" > "$TMP/out" 2>&1; then
    fail "a module cycle (opscale <-> opmodel) passed"
elif grep -q "cycle" "$TMP/out" && grep -q "cost/opscale" "$TMP/out"; then
    pass "a module cycle inside a layer is refused, naming its modules"
else
    fail "a module cycle: unexpected message: $(cat "$TMP/out")"
fi

copy
printf '#include "ccsweep/util/common.h"\n' > "$TMP/t/src/stray.c"
if sh tools/check-layers.sh "$TMP/t" > "$TMP/out" 2>&1; then
    fail "a source file outside the layers passed"
elif grep -q "src/stray.c: not in a layer folder" "$TMP/out"; then
    pass "a source file outside every layer is refused"
else
    fail "a stray file: unexpected message: $(cat "$TMP/out")"
fi

copy
printf '#include "ccsweep/util/common.h"\n' > "$TMP/t/src/util/newmod.c"
if sh tools/check-layers.sh "$TMP/t" > "$TMP/out" 2>&1; then
    fail "a module the README's tour does not name passed"
elif grep -q "src/util/newmod.c: README.md's source tour names neither newmod.c nor newmod.h" "$TMP/out"; then
    pass "a module missing from the README's source tour is refused"
else
    fail "a module missing from the tour: unexpected message: $(cat "$TMP/out")"
fi
