#!/bin/sh
# cases.sh - ccsweep across the nodes of a cluster that tests/cluster/cluster.sh
# started (CCS_CLUSTER_DIR, or --dir DIR): the topology; multi-node sweeps
# through tools/slurm/ccsweep.sbatch (srun --mpi=pmix, and Open MPI's mpirun
# started by the template or on a hostfile) with one writer per node whose
# rows equal a one-node run of the same spec column by column, keep: rules
# too; a shard directory on node-local scratch refused; a node killed
# mid-sweep, the job requeued, and the resume on all three nodes after the
# node returned equal to an uninterrupted run; a graceful scancel of a
# multi-node job. Prints PASS/FAIL lines and each case's time.
#   sh tests/cluster/cluster.sh up && sh tests/cluster/cases.sh; sh tests/cluster/cluster.sh down
set -u
cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
CL="sh $REPO/tests/cluster/cluster.sh"
[ "${1:-}" = --dir ] && { CCS_CLUSTER_DIR=$2; shift 2; }
export CCS_CLUSTER_DIR=${CCS_CLUSTER_DIR:-/tmp/ccsweep-cluster}
eval "$($CL env)" || exit 1
CCS=${CCSWEEP:-$REPO/ccsweep}
SBATCH_T=$REPO/tools/slurm/ccsweep.sbatch
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_base_warn_component_unused=0
REF=$CLUSTER_DIR/ref # the one-node runs, on this machine (outside the cluster)
mkdir -p "$REF"

ok() { echo "PASS: cluster: $1"; }
bad() { echo "FAIL: cluster: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
t0=$(date +%s)
elapsed() { echo "cluster: $1 took $(($(date +%s) - t0)) s"; t0=$(date +%s); }

head_do() { $CL exec head "$@"; }
q() { sqlite3 -readonly "$1" "$2" 2>&1; }

# ---- specs -------------------------------------------------------------------
# small: tests/data/sweep_small.yaml (576 scenarios); keep: the same with a
# keep: rule; mid: sweep_medium.yaml without its last two plan axes (38400)
cp tests/data/sweep_small.yaml "$SHARED/small.yaml"
(cat tests/data/sweep_small.yaml; echo "keep: {best: 2, by: t_iter, per: [model, hardware]}") >"$SHARED/keep.yaml"
sed -e '/^  comm_compress:/d' -e '/^  net_bw_factor:/d' -e 's/^name: medium/name: cluster-mid/' \
    tests/data/sweep_medium.yaml >"$SHARED/mid.yaml"

# ---- helpers -----------------------------------------------------------------
submit() { # DB [VAR=VALUE...] SBATCH-OPTIONS... : prints the job id
    sb_db=$1
    shift
    sb_env=
    while :; do case ${1:-} in *=*) sb_env="$sb_env $1"; shift ;; *) break ;; esac; done
    # TMPDIR: the node-local scratch, where the template keeps its copy.
    # Open MPI's TCP over the cluster subnet only (a node also has its
    # loopback): Open MPI 4.1 otherwise tries every address it finds, and
    # on this emulated network its simultaneous connects to one peer fail
    # with EINPROGRESS and can crash the TCP BTL
    env TMPDIR="$SCRATCH" CCSWEEP="$CCS" CCSWEEP_DB="$sb_db" \
        OMPI_MCA_btl_tcp_if_include=$CLUSTER_NET OMPI_MCA_oob_tcp_if_include=$CLUSTER_NET $sb_env \
        $CL exec head sbatch --parsable --chdir="$SHARED" "$@" 2>"$CLUSTER_DIR/log/sbatch.err" | cut -d';' -f1
}
job_field() { head_do scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
job_final() {
    case $(job_field "$1" JobState) in
    PENDING | RUNNING | REQUEUED | COMPLETING | CONFIGURING | SUSPENDED | RESIZING | '') return 1 ;;
    esac
}
# until CMD... succeeds, polled every 0.3 s for at most SECONDS
poll() {
    p_n=$(($1 * 10 / 3))
    shift
    while [ $p_n -gt 0 ]; do
        "$@" && return 0
        sleep 0.3
        p_n=$((p_n - 1))
    done
    "$@"
}
wait_job() { poll "$2" job_final "$1"; }
state() { echo "$(job_field "$1" JobState) $(job_field "$1" ExitCode)"; }
log_of() { echo "$SHARED/ccsweep-$1.out"; }
show_log() { sed 's/^/    /' "$(log_of "$1")" 2>/dev/null | tail -n 25; }
# committed chunks in a database on rank 0's node-local scratch (n1)
committed() { [ -s "$1" ] && [ "$(sqlite3 -readonly "$1" 'SELECT max(n_done) > 0 FROM runs;' 2>/dev/null)" = 1 ]; }
shard_of() { for f in "$SHARED/$1".*.run1.w"$2".shard; do echo "$f"; return; done; }
wal_written() { [ -s "$(shard_of "$1" "$2")-wal" ]; }
shards_left() { ls "$SHARED" | grep -c '\.shard$'; }

# the results view without rid and run_id: a fingerprint of a run's rows
COLS=
fingerprint() { q "$1" "SELECT $COLS FROM results ORDER BY idx;" | md5sum | cut -c1-12; }
# same_rows DB REF: rows of DB's results view that differ from REF's in any
# column (IS NOT: NULLs count), joined on the scenario (idx and key), plus
# rows missing on either side; 0 when the runs are bit-identical
# (the views are copied into indexed temporary tables first: a join of the
# two views would scan one for every row of the other)
same_rows() {
    sr_cond=
    for c in $(echo "$COLS" | tr ',' ' '); do sr_cond="$sr_cond OR x.$c IS NOT y.$c"; done
    sqlite3 -readonly "$1" "ATTACH '$2' AS r;
        CREATE TEMP TABLE x AS SELECT $COLS FROM main.results; CREATE INDEX temp.xi ON x(idx, key);
        CREATE TEMP TABLE y AS SELECT $COLS FROM r.results; CREATE INDEX temp.yi ON y(idx, key);
        SELECT (SELECT count(*) FROM x LEFT JOIN y ON y.idx = x.idx AND y.key = x.key WHERE ${sr_cond# OR })
             + (SELECT count(*) FROM y WHERE NOT EXISTS (SELECT 1 FROM x WHERE x.idx = y.idx AND x.key = y.key));" 2>&1
}
# compare LABEL DB REF: one row per scenario, bit-identical to the one-node run
compare() {
    cp_n=$(q "$2" "SELECT count(*) || ' ' || count(DISTINCT idx) FROM results;")
    cp_t=$(q "$3" "SELECT count(*) FROM results;")
    cp_d=$(same_rows "$2" "$3")
    check "$1: $cp_n rows (distinct idx), as the one-node run's $cp_t; rows differing in any column: $cp_d; md5 $(fingerprint "$2") vs $(fingerprint "$3")" \
        "[ '$cp_n' = '$cp_t $cp_t' ] && [ '$cp_d' = 0 ]"
}
reference() { # NAME: the one-node run of SHARED/NAME.yaml, one rank, here
    rm -f "$REF/$1".db*
    "$CCS" run "$SHARED/$1.yaml" --db "$REF/$1.db" --quiet >/dev/null 2>"$REF/$1.err" ||
        bad "one-node reference run of $1.yaml failed: $(tail -1 "$REF/$1.err")"
}

# ---- 0. topology -------------------------------------------------------------
$CL status | sed 's/^/    /'
topo=$(head_do srun -N 3 --ntasks-per-node=1 sh -c 'echo $(hostname)=$(ip -4 -o addr show eth0 | sed "s/.* inet \([0-9.]*\).*/\1/")' 2>&1 | sort | tr '\n' ' ')
check "srun -N 3: one task per node, each with its hostname and address ($topo)" \
    "[ '$topo' = 'n1=10.77.0.11 n2=10.77.0.12 n3=10.77.0.13 ' ]"
check "the machine's own network has no cluster address or link" \
    "! ip -o addr | grep -q '10\.77\.0\.' && ! ip -o link | grep -q -w br0"
head_do srun -w n2 -N 1 sh -c "echo n2 >'$SCRATCH/mark'" 2>/dev/null
v=$(head_do srun -N 3 --ntasks-per-node=1 sh -c "echo \$(hostname):\$(cat '$SCRATCH/mark' 2>/dev/null || echo none)" 2>&1 | sort | tr '\n' ' ')
check "scratch is node-local, the shared directory is shared ($v)" \
    "[ '$v' = 'n1:none n2:n2 n3:none ' ] && [ -e '$CLUSTER_DIR/nodes/n2/scratch/mark' ]"
rm -f "$CLUSTER_DIR/nodes/n2/scratch/mark"
elapsed "topology"

# ---- one-node references -----------------------------------------------------
for s in small keep mid; do reference $s; done
COLS=$(q "$REF/small.db" "SELECT group_concat(name) FROM pragma_table_info('results') WHERE name NOT IN ('rid', 'run_id');")
elapsed "one-node reference runs (576, 576 keep, 38400 scenarios)"

# run_ok LABEL JOB DB RANKS WRITERS: the job completed the run on RANKS ranks
# over three nodes with WRITERS writers, their shards merged and removed
run_ok() {
    ro_st=$(state "$2")
    ro_r=$(q "$3" "SELECT status || ' ' || ranks || ' ' || slurm_nodelist FROM runs;")
    ro_w=$(sed -n 's/^ccsweep: run 1: .* on \([0-9]*\) ranks, \([0-9]*\) writers.*/\1 ranks \2 writers/p' "$(log_of "$2")")
    ro_m=$(grep -c 'merging shard' "$(log_of "$2")")
    check "$1: job $2 $ro_st; run '$ro_r'; $ro_w; $ro_m shards merged, $(shards_left) left" \
        "[ '$ro_st' = 'COMPLETED 0:0' ] && [ '$ro_r' = 'complete $4 n[1-3]' ] && [ '$ro_w' = '$4 ranks $5 writers' ] && [ $ro_m = $(($5 - 1)) ] && [ $(shards_left) = 0 ]"
    [ "$ro_st" = 'COMPLETED 0:0' ] || show_log "$2"
}

# ---- 1. sbatch -N 3, srun --mpi=pmix, one writer per node ---------------------
# no --shard-dir: the shards go beside CCSWEEP_DB, on the shared directory
j=$(submit "$SHARED/small.db" -N 3 -n 6 -t 5 "$SBATCH_T" small.yaml --writers node)
wait_job "$j" 120 || bad "job $j still $(state "$j") after 120 s"
run_ok "sbatch -N 3 srun --writers node" "$j" "$SHARED/small.db" 6 3
compare "sbatch -N 3 srun --writers node" "$SHARED/small.db" "$REF/small.db"
elapsed "sbatch -N 3 (srun, 576 scenarios)"

j=$(submit "$SHARED/keep.db" -N 3 -n 6 -t 5 "$SBATCH_T" keep.yaml --writers node --shard-dir "$SHARED")
wait_job "$j" 120 || bad "job $j still $(state "$j") after 120 s"
run_ok "keep: best 2 per model, hardware, -N 3 --writers node" "$j" "$SHARED/keep.db" 6 3
compare "keep: best 2 per model, hardware, -N 3 --writers node" "$SHARED/keep.db" "$REF/keep.db"
elapsed "sbatch -N 3 keep: (srun)"

# ---- 2. mpirun: from the template, and on a hostfile -------------------------
j=$(submit "$SHARED/mpirun.db" CCSWEEP_LAUNCH=mpirun -N 3 -n 6 -t 5 "$SBATCH_T" small.yaml --writers node --shard-dir "$SHARED")
wait_job "$j" 120 || bad "job $j still $(state "$j") after 120 s"
check "CCSWEEP_LAUNCH=mpirun: the template launched mpirun" "grep -q ': mpirun ' '$(log_of "$j")'"
run_ok "sbatch -N 3 mpirun --writers node" "$j" "$SHARED/mpirun.db" 6 3
compare "sbatch -N 3 mpirun --writers node" "$SHARED/mpirun.db" "$REF/small.db"
elapsed "sbatch -N 3 (mpirun from the template)"

printf 'n1 slots=2\nn2 slots=2\nn3 slots=2\n' >"$SHARED/hosts"
cat >"$SHARED/hostfile.sh" <<EOF
#!/bin/sh
# the database on the shared directory (its locks work here), written directly
mpirun --hostfile $SHARED/hosts -n 6 --map-by node $CCS run $SHARED/mid.yaml --db $SHARED/hostfile.db --writers node --shard-dir $SHARED
EOF
j=$(submit "$SHARED/unused.db" -N 3 -n 6 -t 5 -o "$SHARED/ccsweep-%j.out" "$SHARED/hostfile.sh")
wait_job "$j" 120 || bad "job $j still $(state "$j") after 120 s"
# --map-by node: ranks 0, 3 on n1, 1, 4 on n2, 2, 5 on n3: writer groups of non-consecutive ranks
run_ok "mpirun --hostfile --map-by node, 38400 scenarios" "$j" "$SHARED/hostfile.db" 6 3
compare "mpirun --hostfile --map-by node, 38400 scenarios" "$SHARED/hostfile.db" "$REF/mid.db"
elapsed "mpirun --hostfile (38400 scenarios)"

# ---- 3. shards on node-local scratch: rank 0 cannot merge them ---------------
j=$(submit "$SHARED/local.db" -N 3 -n 6 -t 5 "$SBATCH_T" small.yaml --writers node --shard-dir "$SCRATCH")
wait_job "$j" 120 || bad "job $j still $(state "$j") after 120 s"
check "--shard-dir on node-local scratch: job $j $(state "$j"), refused before the sweep (shard not visible from rank 0)" \
    "[ '$(job_field "$j" JobState)' = FAILED ] && grep -q 'not visible from rank 0' '$(log_of "$j")' && [ \"\$(q '$SHARED/local.db' 'SELECT count(*) FROM results;')\" = 0 ]"
elapsed "node-local --shard-dir refused"

# ---- 4. a node dies mid-sweep ------------------------------------------------
# Every chunk waits 0.3 s (CCSWEEP_TEST_CHUNK_DELAY_US): ~8 s of sweep, so the
# kill lands mid-way. Ranks 4, 5 on n3 are writer 3 (shard w2).
DB=$SHARED/fail.db
j=$(submit "$DB" CCSWEEP_TEST_CHUNK_DELAY_US=300000 CCSWEEP_SNAPSHOT_AFTER=2 -N 3 -n 6 -t 5 \
    "$SBATCH_T" mid.yaml --writers node --shard-dir "$SHARED" --chunk 250)
local_db=$CLUSTER_DIR/nodes/n1/scratch/ccsweep-$j.0/fail.db
if poll 120 committed "$local_db" && poll 60 wal_written fail.db 2; then
    $CL kill n3
    # what slurmctld does itself SlurmdTimeout after the node stops answering
    head_do scontrol update NodeName=n3 State=DOWN Reason="node killed by the test"
else
    bad "node kill: job $j committed nothing on n1 or n3 within the time allowed"
    show_log "$j"
fi
requeued() { [ "$(job_field "$j" JobState)" = PENDING ] && [ "$(job_field "$j" Restarts)" = 1 ]; }
poll 90 requeued
check "node kill: job $j requeued by Slurm (NODE_FAIL, --requeue), waiting for 3 nodes ($(state "$j"), restarts $(job_field "$j" Restarts))" requeued
check "node kill: n3's namespaces, link and scratch are gone" \
    "[ ! -e '$CLUSTER_DIR/nodes/n3/scratch' ] && ! head_do ip link show n3 >/dev/null 2>&1"
# Open MPI's ranks wait for the dead ones (the template copies the hung
# sweep's rows); should they abort instead, the usual copy-back does it
how=$(grep -o -E 'committed rows copied to|database copied back to' "$(log_of "$j")" | head -1)
check "node kill: rank 0's committed rows reached $DB (the template: '${how:-nothing} ...')" "[ -n '$how' ]"
integ=$(q "$DB" "PRAGMA integrity_check;")
r=$(q "$DB" "SELECT count(*) || ' ' || count(DISTINCT idx) FROM results;")
n=${r%% *}
total=$(q "$REF/mid.db" "SELECT count(*) FROM results;")
check "node kill: $DB intact ($integ), part of the grid, no duplicates ($r of $total)" \
    "[ '$integ' = ok ] && [ '${r#* }' = '$n' ] && [ '$n' -lt $total ]"
sh2=$(shard_of fail.db 2)
dead=$(q "$sh2" "SELECT count(*) FROM results;")
s2=$(q "$sh2" "PRAGMA integrity_check;")
check "node kill: the dead node's shard on the shared directory is intact ($s2) with $dead committed rows" \
    "[ '$s2' = ok ] && [ '${dead:-0}' -ge 0 ]"
elapsed "node kill until the requeue"
$CL revive n3
wait_job "$j" 120 || bad "job $j still $(state "$j") 120 s after n3 returned"
st=$(state "$j")
nodes=$(q "$DB" "SELECT group_concat(slurm_restart_count || ':' || slurm_nodelist || ':' || status, ' ') FROM (SELECT * FROM sessions ORDER BY session);")
check "node returned: the requeued job $j resumed on all three nodes and completed ($st; sessions $nodes)" \
    "[ '$st' = 'COMPLETED 0:0' ] && case '$nodes' in *'1:n[1-3]:complete') true;; *) false;; esac"
[ "$st" = 'COMPLETED 0:0' ] || show_log "$j"
# the restart merges the shards the killed attempt left before it resumes
m=$(sed -n '/(restart 1)/,/resuming run 1/p' "$(log_of "$j")" | grep -c "merging shard $sh2 ")
check "node returned: the resume merged the dead node's shard ($m: $(basename "$sh2")) and removed it" \
    "[ '$m' = 1 ] && [ ! -e '$sh2' ] && [ $(shards_left) = 0 ]"
compare "node kill + resume" "$DB" "$REF/mid.db"
c=$(q "$DB" "SELECT status || ' n_done ' || n_done || ' n_rows ' || n_rows || ' = ' || (SELECT count(*) FROM results) || ' = ' || (n_ok + n_invalid + n_oom) FROM runs;")
integ=$(q "$DB" "PRAGMA integrity_check;")
check "node kill + resume: one run, counted once ($c), integrity_check $integ" \
    "[ '$c' = 'complete n_done $total n_rows $total = $total = $total' ] && [ '$integ' = ok ]"
lo=$(q "$REF/mid.db" "SELECT 2 * $total / 3;")
echo "cluster: the dead node's range [$lo, $total): ${dead:-0} rows committed in its shard on the shared directory (merged), $((total - lo - ${dead:-0})) recomputed by the resume"
elapsed "node return + resume"

# ---- 5. graceful stop of a multi-node job ------------------------------------
DB=$SHARED/term.db
j=$(submit "$DB" CCSWEEP_TEST_CHUNK_DELAY_US=300000 -N 3 -n 6 -t 5 "$SBATCH_T" mid.yaml --writers node --shard-dir "$SHARED" --chunk 250)
if poll 120 committed "$CLUSTER_DIR/nodes/n1/scratch/ccsweep-$j.0/term.db"; then
    head_do scancel -b -s TERM "$j"
else
    bad "graceful stop: job $j committed no rows within the time allowed"
    show_log "$j"
fi
wait_job "$j" 120 || bad "job $j still $(state "$j") 120 s after TERM"
st=$(state "$j")
rs=$(q "$DB" "SELECT status FROM runs;")
r=$(q "$DB" "SELECT count(*) || ' ' || count(DISTINCT idx) FROM results;")
check "graceful stop: scancel -b -s TERM ends job $j $st, run $rs, shards merged ($r rows of $total, $(shards_left) shards left)" \
    "[ '$st' = 'COMPLETED 0:0' ] && [ '$rs' = interrupted ] && [ $(shards_left) = 0 ] && [ '${r%% *}' = '${r#* }' ]"
# (the last launch: one the template launched again after a crash in MPI
# start-up follows the crashed one's messages in the log)
last_launch() { awk '/launching it again/ { n = 0 } { l[n++] = $0 } END { for (i = 0; i < n; i++) print l[i] }' "$1"; }
check "graceful stop: no MPI abort and no killed task in the log" \
    "! last_launch '$(log_of "$j")' | grep -q -i -E 'MPI_ABORT|Killed|aborted'"
j2=$(submit "$DB" -N 3 -n 6 -t 5 "$SBATCH_T" mid.yaml --writers node --shard-dir "$SHARED")
wait_job "$j2" 120 || bad "job $j2 still $(state "$j2") after 120 s"
ss=$(q "$DB" "SELECT group_concat(slurm_job_id || ':' || status, ' ') FROM (SELECT * FROM sessions ORDER BY session);")
[ "$(state "$j2")" = "COMPLETED 0:0" ] || show_log "$j2"
check "graceful stop: resubmitted job $j2 resumed the run ($(state "$j2"); sessions $ss)" \
    "[ '$(state "$j2")' = 'COMPLETED 0:0' ] && [ '$ss' = '$j:interrupted $j2:complete' ]"
compare "graceful stop + resume" "$DB" "$REF/mid.db"
elapsed "graceful stop + resume"
echo "cluster: steps the template launched again after a crash in MPI start-up: $(cat "$SHARED"/ccsweep-*.out | grep -c 'in MPI start-up.*launching it again')"
exit 0
