#!/bin/sh
# store_guard.sh - what protects committed rows: one writer per database file
# (concurrent --resume, concurrent new sweeps, stale lock recovery), resume
# refusing changed catalog entries or calibration profiles, a damaged file
# that must not be appended to, a --db that is not a regular file, and a
# full disk.
. tests/integration/sweep_common.inc
need_tools "database guards"
SMALL=tests/data/sweep_small.yaml
MEDIUM="$TMP/long.yaml"
# the medium grid with four generations: a few seconds, long enough to overlap
sed 's/^generations: .*/generations: [0, 1, 2, 3]/' tests/data/sweep_medium.yaml >"$MEDIUM"


# 1. two new sweeps into one new file: one writer, the other names it
$BIN run "$MEDIUM" --db "$TMP/new.db" --quiet >"$TMP/a.out" 2>&1 &
a=$!
if wait_writer "$TMP/new.db"; then
    $BIN run "$MEDIUM" --db "$TMP/new.db" --quiet >"$TMP/b.out" 2>&1; rcb=$?
    wait $a; rca=$?
    check "two new sweeps into one file: the first completes, the second exits 1" \
        [ $rca -eq 0 -a $rcb -eq 1 ]
    check "the second writer's message names the holder (host, pid, start time)" \
        grep -q "another ccsweep is writing to this database: pid $a on host $(hostname), since 20" "$TMP/b.out"
    check "one run in the file, complete with every row" \
        [ "$(q "$TMP/new.db" "SELECT count(*) || ' ' || status || ' ' || (n_done = total) || ' ' || ((SELECT count(*) FROM results) = total) FROM runs")" = "1 complete 1 1" ]
    check "the writer row is released at the end" [ "$(q "$TMP/new.db" "SELECT count(*) FROM writer")" = 0 ]
else
    kill $a 2>/dev/null; wait $a
    fail "no writer row appeared within 30 s"
fi

# 1b. the same, started at the same instant: creating the schema races too
$BIN run "$MEDIUM" --db "$TMP/race.db" --quiet >"$TMP/a.out" 2>&1 &
a=$!
$BIN run "$MEDIUM" --db "$TMP/race.db" --quiet >"$TMP/b.out" 2>&1 &
b=$!
wait $a; rca=$?
wait $b; rcb=$?
check "two sweeps started together on a new file: one exits 0, the other 1 ($rca, $rcb)" \
    [ $((rca + rcb)) -eq 1 -a $((rca * rcb)) -eq 0 ]
check "the refused one names the writer, no 'already exists' error" \
    sh -c "cat '$TMP/a.out' '$TMP/b.out' | grep -q 'another ccsweep is writing to this database' && ! cat '$TMP/a.out' '$TMP/b.out' | grep -q 'already exists'"
check "one complete run in the raced file" \
    [ "$(q "$TMP/race.db" "SELECT count(*) || ' ' || status FROM runs")" = "1 complete" ]

# 2. two --resume of one interrupted run at the same time
$BIN run "$MEDIUM" --db "$TMP/res.db" --quiet >/dev/null 2>&1 &
a=$!
wait_done "$TMP/res.db" && kill -TERM $a
wait $a
total=$(q "$TMP/res.db" "SELECT total FROM runs")
if [ "$(q "$TMP/res.db" "SELECT status FROM runs")" != interrupted ]; then
    skip "concurrent --resume (the sweep finished before SIGTERM)"
else
    $BIN run "$MEDIUM" --db "$TMP/res.db" --resume --quiet >"$TMP/a.out" 2>&1 &
    a=$!
    wait_writer "$TMP/res.db"
    $BIN run "$MEDIUM" --db "$TMP/res.db" --resume --quiet >"$TMP/b.out" 2>&1; rcb=$?
    wait $a; rca=$?
    check "two concurrent --resume: one completes (rc $rca), the other exits 1 (rc $rcb)" \
        [ $rca -eq 0 -a $rcb -eq 1 ]
    check "the refused --resume names the holder" grep -q "pid $a on host" "$TMP/b.out"
    check "after concurrent --resume: complete, one row per index, integrity ok" \
        [ "$(q "$TMP/res.db" "SELECT status || ' ' || n_done || ' ' || (SELECT count(DISTINCT idx) || ' ' || count(*) FROM results) || ' ' || (SELECT group_concat(integrity_check) FROM pragma_integrity_check) FROM runs")" = "complete $total $total $total ok" ]
fi

# 3. a stale lock: the writer row of a process that no longer runs is taken over;
#    one from another host is refused with the way to clear it
$BIN run $SMALL --db "$TMP/stale.db" --quiet >/dev/null 2>&1
sh -c 'exit 0' &
dead=$!
wait $dead
q "$TMP/stale.db" "INSERT INTO writer VALUES (1, '$(hostname)', $dead, 0, '2026-01-01T00:00:00Z', 1)"
$BIN run $SMALL --db "$TMP/stale.db" --new-run --quiet >"$TMP/s.out" 2>&1; rc=$?
check "a stale writer row of a dead pid on this host is recovered (rc $rc)" \
    sh -c "[ $rc -eq 0 ] && grep -q 'taking over the writer lock of pid $dead' '$TMP/s.out' && [ \"\$(sqlite3 '$TMP/stale.db' 'SELECT count(*) FROM runs WHERE status = \"complete\"')\" = 2 ]"
q "$TMP/stale.db" "INSERT INTO writer VALUES (1, 'node-elsewhere', 4242, 0, '2026-01-01T00:00:00Z', 1)"
$BIN run $SMALL --db "$TMP/stale.db" --new-run --quiet >"$TMP/s.out" 2>&1; rc=$?
check "a writer row of another host is refused with exit 1 naming it and how to clear it" \
    sh -c "[ $rc -eq 1 ] && grep -q 'pid 4242 on host node-elsewhere, since 2026-01-01T00:00:00Z' '$TMP/s.out' && grep -q 'DELETE FROM writer' '$TMP/s.out'"

# 4. --resume after a catalog entry or a calibration profile changed
cp -r sweeps/catalog "$TMP/cat"
$BIN run $SMALL --db "$TMP/cat.db" --catalog "$TMP/cat" --quiet >/dev/null 2>&1
# make the run unfinished, as an interruption would leave it
q "$TMP/cat.db" "UPDATE runs SET status = 'interrupted', n_done = 0; DELETE FROM chunks; DELETE FROM results WHERE idx >= 100"
sed -i '/name: mi300x/,/mem_gbps/ s/mem_gbps: .*/mem_gbps: 1234/' "$TMP/cat/hardware.yaml"
$BIN run $SMALL --db "$TMP/cat.db" --catalog "$TMP/cat" --resume --quiet >"$TMP/c.out" 2>&1; rc=$?
check "--resume after a hardware catalog entry changed exits 1 naming it" \
    sh -c "[ $rc -eq 1 ] && grep -q \"hardware 'mi300x' has changed since the run started\" '$TMP/c.out'"
check "the refused --resume added nothing" \
    [ "$(q "$TMP/cat.db" "SELECT status || ' ' || (SELECT count(*) FROM results) || ' ' || sessions FROM runs")" = "interrupted 100 1" ]
cp sweeps/catalog/hardware.yaml "$TMP/cat/hardware.yaml"
$BIN run $SMALL --db "$TMP/cat.db" --catalog "$TMP/cat" --resume --quiet >/dev/null 2>&1; rc=$?
check "with the catalog restored the same --resume completes the run" \
    [ $rc -eq 0 -a "$(q "$TMP/cat.db" "SELECT status || ' ' || (n_done = total) FROM runs")" = "complete 1" ]
awk 'BEGIN { print "op,dtype,m,n,k,bytes,group,level,time_s,reps"
    for (m = 256; m <= 8192; m *= 2) printf "gemm,bf16,%d,%d,4096,0,1,,%.6e,10\n", m, m, 2 * m * m * 4096 / 1.5e14 + 8e-6 }' >"$TMP/prof.csv"
cat >"$TMP/cal.yaml" <<EOS
models: [gpt3-175b]
hardware: [a100-80g]
plan: {devices: 512, tp: [2, 8], pp: 8}
calibration: {a100-80g: prof.csv}
EOS
$BIN run "$TMP/cal.yaml" --db "$TMP/cal.db" --quiet >/dev/null 2>&1; rc0=$?
q "$TMP/cal.db" "UPDATE runs SET status = 'interrupted'; DELETE FROM chunks"
sed -i 's/,10$/,11/' "$TMP/prof.csv"
$BIN run "$TMP/cal.yaml" --db "$TMP/cal.db" --resume --quiet >"$TMP/c.out" 2>&1; rc=$?
check "--resume after the calibration profile changed exits 1 naming it" \
    sh -c "[ $rc0 -eq 0 -a $rc -eq 1 ] && grep -q \"calibration 'a100-80g' has changed\" '$TMP/c.out'"

# 5. a damaged file is not appended to
$BIN run $SMALL --db "$TMP/bad.db" --quiet >/dev/null 2>&1
pages=$(q "$TMP/bad.db" "PRAGMA page_count")
psz=$(q "$TMP/bad.db" "PRAGMA page_size")
head -c "$psz" /dev/zero | tr '\000' '\377' |
    dd of="$TMP/bad.db" bs="$psz" seek=$((pages / 2)) conv=notrunc 2>/dev/null
cp "$TMP/bad.db" "$TMP/bad.copy"
$BIN run $SMALL --db "$TMP/bad.db" --quiet >/dev/null 2>"$TMP/d.out"; rc=$?
check "a sweep into a damaged database exits 1 saying so" \
    sh -c "[ $rc -eq 1 ] && grep -q 'the database is damaged: PRAGMA quick_check says' '$TMP/d.out'"
check "the damaged database is left byte for byte as it was" cmp -s "$TMP/bad.db" "$TMP/bad.copy"

# 6. --db naming what is not a regular file is refused before SQLite opens it
#    (on a character device it created PATH-journal beside it, then failed
#    with "disk I/O error", exit 2); a device node of our own, /dev/null if
#    this user cannot make one
dev="$TMP/null"
mknod "$dev" c 1 3 2>/dev/null || dev=/dev/null
$BIN run $SMALL --db "$dev" --quiet >"$TMP/n.out" 2>&1; rc=$?
check "--db a character device: exit 1 (rc $rc), the message names the path and what it is" \
    sh -c "[ $rc -eq 1 ] && grep -q '$dev: is a character device, not a database file' '$TMP/n.out'"
check "--db a character device: no $dev-journal, -wal or -shm created beside it" \
    sh -c "[ ! -e '$dev-journal' -a ! -e '$dev-wal' -a ! -e '$dev-shm' ]"
mkdir "$TMP/dir.db"
$BIN run $SMALL --db "$TMP/dir.db" --quiet >"$TMP/n.out" 2>&1; rc=$?
check "--db a directory: exit 1 (rc $rc) naming it" \
    sh -c "[ $rc -eq 1 ] && grep -q '$TMP/dir.db: is a directory, not a database file' '$TMP/n.out'"

# 7. a full disk: a small tmpfs holds the database
mkdir "$TMP/mnt"
if mount -t tmpfs -o size=8m tmpfs "$TMP/mnt" 2>/dev/null; then
    trap 'umount "$TMP/mnt" 2>/dev/null; rm -rf "$TMP"' EXIT
    M=tests/data/sweep_medium.yaml
    $BIN run $M --db "$TMP/mnt/full.db" --quiet >"$TMP/f.out" 2>&1; rc=$?
    check "disk full: exit 2, a message that says so and how to resume" \
        sh -c "[ $rc -eq 2 ] && grep -q 'the disk holding $TMP/mnt/full.db is full' '$TMP/f.out' && grep -q -- '--db $TMP/mnt/full.db --resume' '$TMP/f.out'"
    check "disk full: integrity_check ok" [ "$(q "$TMP/mnt/full.db" "PRAGMA integrity_check")" = ok ]
    check "disk full: n_done equals the committed chunks, at most the total, nothing filtered" \
        [ "$(q "$TMP/mnt/full.db" "SELECT n_done = (SELECT coalesce(sum(hi - lo), 0) FROM chunks) AND n_done <= total AND coalesce(n_filtered, 0) = 0 FROM runs")" = 1 ]
    rows=$(q "$TMP/mnt/full.db" "SELECT count(*) FROM results")
    check "disk full: the summary reports the $rows rows committed" \
        sh -c "[ $rows -gt 0 ] && grep -q 'failed: .* $rows rows' '$TMP/f.out'"
    # a --resume that stops on the full disk again (a little more room):
    # counters and rows stay equal, as each batch commits both
    mount -o remount,size=10m "$TMP/mnt" 2>/dev/null
    $BIN run $M --db "$TMP/mnt/full.db" --resume --quiet >"$TMP/f2.out" 2>&1; rc=$?
    check "disk full again on --resume (exit $rc): n_done equals the committed chunks and n_rows the rows" \
        [ "$(q "$TMP/mnt/full.db" "SELECT n_done = (SELECT coalesce(sum(hi - lo), 0) FROM chunks) AND n_rows = (SELECT count(*) FROM results) FROM runs")" = 1 ]
    sqlite3 "$TMP/mnt/full.db" ".backup '$TMP/moved.db'"
    umount "$TMP/mnt"
    $BIN run $M --db "$TMP/moved.db" --resume --quiet >/dev/null 2>"$TMP/r.out"; rc=$?
    $BIN run $M --db "$TMP/ref.db" --quiet >/dev/null 2>&1
    result_rows "$TMP/ref.db" >"$TMP/ref.rows"
    result_rows "$TMP/moved.db" >"$TMP/moved.rows"
    check "disk full: moved to a larger disk, --resume completes with the rows of an uninterrupted run" \
        sh -c "[ $rc -eq 0 ] && cmp -s '$TMP/ref.rows' '$TMP/moved.rows'"
else
    skip "disk full (cannot mount a small tmpfs here: needs root with CAP_SYS_ADMIN)"
fi

# 8. one writer per file whatever the workload: a serving run beside a
#    training run is refused, here beside one without file locks
#    (--db-locking none), where only the writer row stands between them; and a
#    training run beside a serving run. The holder completes with every row,
#    the file intact. Each job of the serving run and each chunk of the
#    training run waits 50 ms (CCSWEEP_TEST_CHUNK_DELAY_US): both last seconds.
#    The file is polled read-only: a read-write sqlite3 would checkpoint the
#    WAL on close under the lock-free writer.
cat >"$TMP/serve.yaml" <<'YAML'
name: guard-serve
workload: serve
models: [llama3-8b, llama3-70b]
hardware: [h100-sxm, b200]
serve: {isl: [500, 1000], osl: [100, 200, 400, 800, 1600], concurrency: [16, max]}
plan: {devices: 8, tp: [1, 2, 4, 8]}
YAML
CCSWEEP_TEST_CHUNK_DELAY_US=50000 $BIN run tests/data/sweep_medium.yaml --db "$TMP/mix.db" \
    --db-locking none --chunk 4000 --quiet >"$TMP/a.out" 2>&1 &
a=$!
if wait_writer "$TMP/mix.db"; then
    $BIN run "$TMP/serve.yaml" --db "$TMP/mix.db" --quiet >"$TMP/b.out" 2>&1; rcb=$?
    wait $a; rca=$?
    check "a serving run beside a --db-locking none training run exits 1 naming it (rc $rcb), the training run completes (rc $rca)" \
        sh -c "[ $rca -eq 0 -a $rcb -eq 1 ] && grep -q 'another ccsweep is writing to this database: pid $a on host' '$TMP/b.out'"
    grep -q "pid $a on host" "$TMP/b.out" || sed "s/^/  b: /" "$TMP/b.out"
    check "after it: integrity_check ok, one run, complete with every row, no serving row" \
        [ "$(q "$TMP/mix.db" "SELECT (SELECT group_concat(integrity_check) FROM pragma_integrity_check) || ' ' || count(*) || ' ' || status || ' ' || ((SELECT count(*) FROM results) = total) || ' ' || (SELECT count(*) FROM serve_results) FROM runs")" = "ok 1 complete 1 0" ]
else
    kill $a 2>/dev/null; wait $a
    fail "no writer row of the training run appeared within 30 s"
fi
CCSWEEP_TEST_CHUNK_DELAY_US=50000 $BIN run "$TMP/serve.yaml" --db "$TMP/mix2.db" --quiet \
    >"$TMP/a.out" 2>&1 &
a=$!
if wait_writer "$TMP/mix2.db"; then
    $BIN run $SMALL --db "$TMP/mix2.db" --quiet >"$TMP/b.out" 2>&1; rcb=$?
    wait $a; rca=$?
    check "a training run beside a serving run exits 1 naming it (rc $rcb), the serving run completes (rc $rca)" \
        sh -c "[ $rca -eq 0 -a $rcb -eq 1 ] && grep -q 'another ccsweep is writing to this database: pid $a on host' '$TMP/b.out'"
    grep -q "pid $a on host" "$TMP/b.out" || sed "s/^/  b: /" "$TMP/b.out"
    check "after it: integrity_check ok, the serving run complete with every row, no training row, no writer row" \
        [ "$(q "$TMP/mix2.db" "SELECT (SELECT group_concat(integrity_check) FROM pragma_integrity_check) || ' ' || group_concat(workload || ':' || status) || ' ' || ((SELECT count(*) FROM serve_results) = sum(total)) || ' ' || (SELECT count(*) FROM result_rows) || ' ' || (SELECT count(*) FROM writer) FROM runs")" = "ok serve:complete 1 0 0" ]
else
    kill $a 2>/dev/null; wait $a
    fail "no writer row of the serving run appeared within 30 s"
fi
