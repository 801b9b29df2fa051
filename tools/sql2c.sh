#!/bin/sh
# sql2c.sh FILE.sql... - emit C arrays holding each file's text line by line
# (q_NAME[], NULL-terminated), so that 'ccsweep report' runs and writes exactly
# the queries shipped in tools/queries/. Line-by-line literals stay within
# C11's guaranteed 4095-byte string literal length.
set -eu
for f in "$@"; do
    name=$(basename "$f" .sql)
    echo "static const char *const q_$name[] = {"
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n",/' "$f"
    echo "    NULL};"
    echo
done
