#!/bin/sh
# schema.sh - results/schema.sql is the schema of a new database: the tables,
# views and trigger that store_open creates (src/store/store_schema.c), as
# 'sqlite3 DB .schema' prints them, under a header of generated lines. Fails
# with the difference when the code and the checked-in file disagree.
# After a schema change, regenerate the file (from the repository root, with
# ./ccsweep built) and commit it with the change:
#     sh tests/integration/schema.sh --update
. tests/integration/sweep_common.inc
need_tools "results/schema.sql"
WANT=results/schema.sql

# gen DB: the text of schema.sql for the database DB
gen() {
    cat <<EOF
-- results/schema.sql - the schema of a new ccsweep database, as
-- 'sqlite3 DB .schema' prints it (generated from the code; do not edit).
-- PRAGMA user_version = $(q "$1" "PRAGMA user_version"), application_id = $(q "$1" "PRAGMA application_id")
-- tests/integration/schema.sh fails when this file differs from what the
-- code creates; regenerate it with: sh tests/integration/schema.sh --update
-- Columns, units and views are described in results/README.md.
EOF
    sqlite3 -batch "$1" .schema
}

# a new database: the schema as store_open creates it (a run adds rows only)
$BIN run tests/data/sweep_small.yaml --db "$TMP/new.db" --quiet >"$TMP/run.out" 2>&1; rc=$?
if [ $rc -ne 0 ]; then
    cat "$TMP/run.out"
    fail "a sweep into a new database (exit $rc)"
    exit 1
fi
gen "$TMP/new.db" >"$TMP/schema.sql"
if [ "${1:-}" = --update ]; then
    cp "$TMP/schema.sql" "$WANT"
    echo "schema.sh: wrote $WANT"
    exit 0
fi
if [ ! -f "$WANT" ]; then
    fail "$WANT is missing: regenerate it with sh tests/integration/schema.sh --update"
elif diff -u "$WANT" "$TMP/schema.sql" >"$TMP/diff"; then
    pass "$WANT is the schema of a new database"
else
    cat "$TMP/diff"
    fail "$WANT differs from the schema of a new database (diff above: - the file, + the code);" \
        "if the code is right, regenerate it with sh tests/integration/schema.sh --update"
fi
