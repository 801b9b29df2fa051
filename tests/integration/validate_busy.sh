#!/bin/sh
# validate_busy.sh - tools/validate.sh trusts its pre-check: with fewer idle
# cores than ranks (here more ranks than the machine has cores) it exits 3
# before measuring anything, and ALLOW_BUSY=1 is named as the way past it.
# Runs from the repository root, as 'make check' does.
. tests/integration/sweep_common.inc
need_tools "validate busy guard"

np=$(($(nproc) + 1))
NP=$np VALIDATE_DIR="$TMP/v" sh tools/validate.sh >"$TMP/out" 2>&1; rc=$?
check "validate.sh with $np ranks on $(nproc) cores exits 3 (got $rc)" [ $rc -eq 3 ]
check "... says the machine is busy and measured nothing" \
    sh -c "grep -q 'the machine is busy' '$TMP/out' && grep -q ALLOW_BUSY=1 '$TMP/out' &&
           [ ! -e '$TMP/v/profile.csv' ]"
