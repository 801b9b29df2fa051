#!/bin/sh
# writer_pairs.sh - two writers on one database, under every --db-locking
# mode: a training run (T), a serving run (S), a training run of two writer
# groups whose rank 0 merges the other's shard (G), and a report migrating a
# file of an older schema (R). The first holds the file (T, S, G: its writer
# row is in the file, and each chunk or job waits 30 ms,
# CCSWEEP_TEST_CHUNK_DELAY_US; R: its migration transaction is open and held,
# CCSWEEP_TEST_MIGRATE_DELAY_US) when the second starts. Every pair ends with
# PRAGMA integrity_check ok, version 12, no writer row, every run complete
# with all its rows (none lost, none twice), the first writer done, and the
# second either done (it waited for the file) or refused with exit 1 and a
# message that names the holder or the lock, having added no run. Each file
# starts as the version-11 fixture (tests/data/schema11.sql, one training run
# of 24 rows), which the first writer migrates.
. tests/integration/sweep_common.inc
need_tools "writer pairs"

cat >"$TMP/serve.yaml" <<'YAML'
name: pair-serve
workload: serve
models: [llama3-8b, llama3-70b]
hardware: [h100-sxm, b200]
serve: {isl: [500, 1000], osl: [100, 200, 400, 800, 1600], concurrency: [16, max]}
plan: {devices: 8, tp: [1, 2, 4, 8]}
YAML
SMALL=tests/data/sweep_small.yaml
sqlite3 "$TMP/fixture.db" <tests/data/schema11.sql

# start W MODE DB SLOW OUT: writer W on DB in the background (pid in $!),
# --db-locking MODE; slowed to about 1.2 s when SLOW is 1 (T: 36 chunks, G:
# 18 per writer group, S: 40 jobs, R: its migration held); output to OUT.out
# and OUT.err
start() {
    w=$1 mode=$2 db=$3 slow=$4 out=$5
    d=0 m=0
    [ "$slow" = 1 ] && d=30000 m=1200000
    case $w in
    T) CCSWEEP_TEST_CHUNK_DELAY_US=$d $BIN run $SMALL --db "$db" --db-locking "$mode" \
        --chunk 16 --new-run --quiet >"$out.out" 2>"$out.err" & ;;
    S) CCSWEEP_TEST_CHUNK_DELAY_US=$d $BIN run "$TMP/serve.yaml" --db "$db" \
        --db-locking "$mode" --new-run --quiet >"$out.out" 2>"$out.err" & ;;
    G) CCSWEEP_TEST_CHUNK_DELAY_US=$((2 * d)) $MPIRUN -n 2 $BIN run $SMALL --db "$db" \
        --db-locking "$mode" --writers 2 --chunk 16 --new-run --quiet >"$out.out" 2>"$out.err" & ;;
    R) CCSWEEP_TEST_MIGRATE_DELAY_US=$m \
        $BIN report --db "$db" --out "$out.rep" >"$out.out" 2>"$out.err" & ;;
    esac
}
# holding W MODE DB OUT: wait (up to 30 s) until writer W holds DB: R says
# so; a run's writer row is in the file (read-only: a read-write sqlite3
# would checkpoint the WAL on close), or under exclusive locking the file is
# locked (a run holds the lock from its first statement to its end)
holding() {
    i=0
    while [ $i -lt 600 ]; do
        if [ "$1" = R ]; then
            grep -q 'test hook: holding the migration' "$4.err" 2>/dev/null && return 0
        else
            got=$(sqlite3 -readonly "$3" "SELECT count(*) FROM writer" 2>&1)
            [ "$got" = 1 ] && return 0
            [ "$2" = exclusive ] && case $got in *locked*) return 0 ;; esac
        fi
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}
# pair A B MODE: A holds a copy of the fixture, B starts; checks the file
pair() {
    a=$1 b=$2 mode=$3 name="$1 then $2 ($3)"
    db="$TMP/$1$2-$3.db"
    cp "$TMP/fixture.db" "$db"
    start "$a" "$mode" "$db" 1 "$TMP/a"
    pa=$!
    if ! holding "$a" "$mode" "$db" "$TMP/a"; then
        kill $pa 2>/dev/null
        wait $pa
        fail "$name: $a did not hold the file within 30 s ($(head -c 300 "$TMP/a.err"))"
        return
    fi
    start "$b" "$mode" "$db" 0 "$TMP/b"
    wait $!; rb=$?
    kill -0 $pa 2>/dev/null; alive=$? # 0: the first still ran when the second ended
    wait $pa; ra=$?
    # the runs each writer that ended 0 added (R adds none), the fixture's
    want=1
    for w in "$a:$ra" "$b:$rb"; do
        case $w in [TSG]:0) want=$((want + 1)) ;; esac
    done
    state=$(sqlite3 -readonly "$db" "SELECT (SELECT group_concat(integrity_check) FROM pragma_integrity_check),
        (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM writer), count(*),
        sum(status = 'complete' AND n_rows = total AND n_done = total AND n_rows = CASE workload
            WHEN 'serve' THEN (SELECT count(*) FROM serve_results s WHERE s.run_id = runs.run_id)
            ELSE (SELECT count(*) FROM result_rows WHERE rid >> 40 = runs.run_id) END)
        FROM runs" 2>&1)
    refused=0
    grep -q -e 'another ccsweep is writing to this database' -e 'database is locked' \
        "$TMP/b.err" && refused=1
    # a writer holding its writer row (a run's, or a migration's) refuses a
    # second writer, unless a file lock makes that one wait for the first's
    # end (exclusive locking; a migration's transaction under normal)
    must_refuse=0
    case $a$mode in [TSG]normal | [TSG]none | Rnone) must_refuse=1 ;; esac
    if [ $must_refuse = 1 ] && [ $rb = 0 ] && [ $alive != 0 ]; then
        skip "$name: $a ended before $b opened the file (a loaded machine?)"
    elif [ $must_refuse = 1 ] && [ $rb = 0 ]; then
        fail "$name: $b wrote while $a held the file"
    elif [ "$ra" -ne 0 ]; then
        fail "$name: the first writer, $a, exited $ra ($(head -c 300 "$TMP/a.err"))"
    elif [ "$rb" -ne 0 ] && [ "$rb" -ne 1 -o $refused = 0 ]; then
        fail "$name: $b exited $rb without naming the holder or the lock ($(head -c 300 "$TMP/b.err"))"
    elif [ "$state" != "ok|12|0|$want|$want" ]; then
        fail "$name: integrity, version, writer rows, runs, complete runs with all their rows: $state (want ok|12|0|$want|$want)"
    else
        pass "$name: $a exit $ra, $b exit $rb$([ $rb = 1 ] && echo ' (refused)'), integrity ok, $want runs complete with every row"
    fi
}

# each unordered pair once, the one that holds first (R first: a report
# second finds the file migrated and only reads it); WRITER_PAIRS and
# WRITER_MODES pick some, to look at one
for mode in ${WRITER_MODES:-normal exclusive none}; do
    for p in ${WRITER_PAIRS:-TT TS TG SS GS GG RT RS RG RR}; do
        [ $p = RR ] && [ $mode != normal ] && continue # a report takes no --db-locking
        pair "$(echo $p | cut -c1)" "$(echo $p | cut -c2)" $mode
    done
done
