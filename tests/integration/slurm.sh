#!/bin/sh
# slurm.sh - tools/slurm/ccsweep.sbatch on a real one-node Slurm cluster that
# this script starts on localhost (munged, slurmctld, slurmd; every file under
# a temporary directory, nothing read from or written to /etc) and stops, by
# pid, on exit. Checks: a 2-task sweep job completes; a job signalled
# mid-sweep (TERM, as scancel or preemption sends it) leaves a consistent,
# interrupted run that a resubmitted job completes; a time-limit warning
# (USR1) makes the job requeue itself and finish; a step whose ranks die in
# MPI start-up is launched again, a step that fails on bad input is not; a
# job of a serving spec (workload: serve) runs to a complete run. When
# Slurm cannot run here (not root, binaries missing, a daemon does not start)
# each check prints "SKIP: ... (why)". CCSWEEP=path tests another binary.
cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
CCS=${CCSWEEP:-$REPO/ccsweep}
SBATCH_T=$REPO/tools/slurm/ccsweep.sbatch
CHECKS="sweep job completes|signalled job resumes on resubmit|time-limit warning requeues and completes|a step that dies in MPI start-up is launched again|a bad option is not launched again|serving job completes"

skip_all() {
    printf '%s\n' "$CHECKS" | tr '|' '\n' | while read -r c; do echo "SKIP: slurm: $c ($1)"; done
    exit 0
}
ok() { echo "PASS: slurm: $1"; }
bad() { echo "FAIL: slurm: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

[ "$(id -u)" = 0 ] || skip_all "not root: slurmd must run as root to launch job steps"
for c in munged slurmctld slurmd sbatch srun scontrol scancel squeue sinfo sqlite3; do
    command -v "$c" >/dev/null 2>&1 || skip_all "$c not installed (Debian: slurm-wlm munge sqlite3)"
done
[ -x "$CCS" ] || skip_all "no ccsweep binary at $CCS (make first)"
"$CCS" run --help >/dev/null 2>&1 || skip_all "'ccsweep run' is not available in this build"

# A job inside an outer Slurm allocation must not inherit its SLURM_* settings.
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

base=${TMPDIR:-/tmp}
[ ${#base} -le 60 ] || base=/tmp # munged's socket path must fit in 108 bytes
T=$(mktemp -d "$base/ccsweep-slurm.XXXXXX") || exit 1
chmod 755 "$T" # munged wants its socket directory searchable by all
PIDS=""        # daemons we started, newest first
stop_all() {
    if [ -n "$PIDS" ] && [ -f "$T/slurm.conf" ]; then
        # Jobs first: their slurmstepd processes outlive slurmd.
        ids=$(squeue -h -o %i 2>/dev/null)
        [ -n "$ids" ] && scancel $ids 2>/dev/null
        i=0
        while [ $i -lt 40 ] && [ -n "$(squeue -h -o %i 2>/dev/null)" ]; do sleep 0.25; i=$((i + 1)); done
    fi
    for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
    for p in $PIDS; do
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 40 ]; do sleep 0.25; i=$((i + 1)); done
        kill -KILL "$p" 2>/dev/null
    done
    PIDS=""
    [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"
}
trap 'stop_all' EXIT
trap 'exit 1' INT TERM HUP

# ---- munge: own key, socket, pid, log and seed files ------------------------
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log" "$T/local" "$T/work"
chmod 755 "$T/munge"
if command -v mungekey >/dev/null 2>&1; then
    mungekey -c -k "$T/munge/munge.key" >/dev/null 2>&1
else
    dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
fi
chmod 600 "$T/munge/munge.key"
SOCK=$T/munge/munge.socket
munged -F --socket="$SOCK" --key-file="$T/munge/munge.key" --pid-file="$T/munge/munged.pid" \
    --log-file="$T/log/munged.log" --seed-file="$T/munge/munged.seed" >"$T/log/munged.out" 2>&1 &
PIDS="$!"
i=0
while [ ! -S "$SOCK" ] && [ $i -lt 40 ]; do sleep 0.25; i=$((i + 1)); done
[ -S "$SOCK" ] || skip_all "munged did not start: $(tail -1 "$T/log/munged.out")"

# ---- slurm.conf: one node (this host), one partition ------------------------
node=$(slurmd -C 2>/dev/null | sed -n 's/^\(NodeName=[^ ]*.*\)$/\1/p' | head -1 | sed 's/ UpTime=.*//')
[ -n "$node" ] || skip_all "slurmd -C printed no node line"
name=$(printf '%s\n' "$node" | sed 's/^NodeName=\([^ ]*\).*/\1/')
cpus=$(printf '%s\n' "$node" | sed -n 's/.* CPUs=\([0-9]*\).*/\1/p')
[ "${cpus:-0}" -ge 2 ] || skip_all "a 2-task job needs 2 CPUs; slurmd -C reports ${cpus:-?}"
port_free() { ! (ss -Hltn 2>/dev/null | awk '{print $4}' | grep -q ":$1\$"); }
port=$((20000 + $$ % 20000))
while ! port_free $port || ! port_free $((port + 1)); do port=$((port + 2)); done
: >"$T/plugstack.conf"
cat >"$T/slurm.conf" <<EOF
ClusterName=ccsweeptest
SlurmctldHost=$name(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also delays the restart of a requeued job (default 120 s).
AuthInfo=socket=$SOCK,cred_expire=10
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
PlugStackConfig=$T/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
SchedulerType=sched/backfill
# Look at pending (requeued) jobs every second, not every 30 to 60 s.
SchedulerParameters=sched_interval=1,bf_interval=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
KillWait=10
MinJobAge=600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$name Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$T/slurm.conf"
slurmctld -D -i -f "$SLURM_CONF" >"$T/log/slurmctld.out" 2>&1 &
PIDS="$! $PIDS"
slurmd -D -f "$SLURM_CONF" -N "$name" >"$T/log/slurmd.out" 2>&1 &
PIDS="$! $PIDS"
i=0
while [ "$(sinfo -h -n "$name" -o %t 2>/dev/null)" != idle ] && [ $i -lt 80 ]; do sleep 0.25; i=$((i + 1)); done
if [ "$(sinfo -h -n "$name" -o %t 2>/dev/null)" != idle ]; then
    why=$(cat "$T/log/slurmctld.out" "$T/log/slurmd.out" 2>/dev/null | grep -i -E 'error|fatal' | tail -1)
    skip_all "slurmctld/slurmd did not bring node $name up: ${why:-no idle node after 20 s}"
fi
srun --mpi=list 2>&1 | grep -q pmix || skip_all "Slurm has no pmix MPI plugin (srun --mpi=list)"
echo "slurm: cluster up on $name (ports $port-$((port + 1))) in $T"

# ---- specs -------------------------------------------------------------------
# No where-filter, so every scenario of the grid is one row. small: a few
# thousand; big: ~700,000 (~6 s on two ranks here), so a
# signal sent once the first rows are committed lands mid-sweep.
cat >"$T/work/small.yaml" <<'EOF'
name: slurm-small
models: [gpt3-175b, llama3-70b]
hardware: [a100-80g, h100-sxm]
generations: [0, 1]
evolution: memory-wall
plan:
  devices: [256, 1024]
  tp: [1, 2, 4, 8]
  pp: [1, 2, 4, 8]
  mbs: [1, 2]
  recompute: [selective, full]
  zero: [0, 1]
  sp: [false, true]
  seq: 2048
  gbs: 1536
EOF
SMALL=$((2 * 2 * 2 * 2 * 4 * 4 * 2 * 2 * 2 * 2))
cat >"$T/work/big.yaml" <<'EOF'
name: slurm-big
models: [gpt3-175b, llama3-70b, llama3-405b, mt-nlg-530b]
hardware: [a100-80g, h100-sxm, mi300x, b200]
generations: {range: [0, 3]}
evolution: memory-wall
plan:
  devices: [256, 512, 1024, 2048, 4096]
  tp: {geom: [1, 64, 2]}
  pp: [1, 2, 4, 8, 16]
  mbs: [1, 2, 4, 8]
  recompute: [selective, full]
  zero: [0, 1, 2, 3]
  sp: [false, true]
  seq: 2048
  gbs: 1536
EOF
BIG=$((4 * 4 * 4 * 5 * 7 * 5 * 4 * 2 * 4 * 2))

# Tables runs (one per sweep), sessions (one per job that worked on a run) and
# results: results/README.md.
q() { sqlite3 -readonly "$1" "$2" 2>&1; }
rows() { q "$1" "SELECT count(*) || ' ' || count(DISTINCT idx) FROM results;"; }

submit() { # DB SBATCH-OPTIONS... SCRIPT SPEC [ccsweep options]: prints the job id
    db=$1
    shift
    CCSWEEP=$CCS CCSWEEP_DB=$db CCSWEEP_LOCAL_DIR=$T/local \
        sbatch --parsable --chdir="$T/work" "$@" >"$T/log/sbatch.out"
    src=$?
    cut -d';' -f1 "$T/log/sbatch.out"
    return $src
}
job_field() { scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
wait_job() { # JOB SECONDS: until the job is in a final state
    n=0
    while [ $n -lt $(($2 * 4)) ]; do
        case $(job_field "$1" JobState) in
        PENDING | RUNNING | REQUEUED | COMPLETING | CONFIGURING | SUSPENDED | RESIZING) ;;
        *) return 0 ;;
        esac
        sleep 0.25
        n=$((n + 1))
    done
    return 1
}
wait_rows() { # LOCAL-DB: until the sweep has committed a completed chunk there
    # (rows of a chunk cut short by a stop are dropped, so rows alone may vanish)
    n=0
    while [ $n -lt 720 ]; do
        if [ -s "$1" ]; then
            c=$(sqlite3 -readonly "$1" 'SELECT max(n_done) FROM runs;' 2>/dev/null)
            [ "${c:-0}" -gt 0 ] && return 0
        fi
        sleep 0.25
        n=$((n + 1))
    done
    return 1
}
show_log() { sed 's/^/    /' "$T/work/ccsweep-$1.out" 2>/dev/null | tail -n 15; }
elapsed() { echo "slurm: $1 took $(($(date +%s) - t0)) s"; }

# ---- 1. a 2-task sweep job ---------------------------------------------------
t0=$(date +%s)
DB1=$T/work/small.db
j1=$(submit "$DB1" --wait -n 2 -t 5 "$SBATCH_T" small.yaml); rc=$?
[ $rc -eq 0 ] || { bad "sbatch --wait of the small sweep exited $rc"; show_log "$j1"; }
check "job $j1 launched the sweep with srun --mpi=pmix" "grep -q 'srun --mpi=pmix' '$T/work/ccsweep-$j1.out'"
r=$(rows "$DB1")
tot=$(q "$DB1" "SELECT total FROM runs;")
check "job $j1: one row per scenario ($r of $SMALL; runs.total $tot)" \
    "[ '$r' = '$SMALL $SMALL' ] && [ '$tot' = $SMALL ]"
st=$(q "$DB1" "SELECT status || ' ' || ranks FROM runs;")
check "job $j1: run complete on 2 ranks ($st)" "[ '$st' = 'complete 2' ]"
v=$(q "$DB1" "SELECT slurm_job_id || ' ' || slurm_nodelist || ' ' || slurm_restart_count FROM runs;")
check "job $j1: runs records SLURM_JOB_ID, node list, restart count ($v)" "[ '$v' = '$j1 $name 0' ]"
check "job $j1: node-local copy removed after the copy-back" "[ -z \"\$(ls -A '$T/local')\" ]"
elapsed "the small sweep job"

# ---- 2. TERM mid-sweep, then resubmit ----------------------------------------
t0=$(date +%s)
DB2=$T/work/big.db
j2=$(submit "$DB2" -n 2 -t 5 "$SBATCH_T" big.yaml)
if wait_rows "$T/local/ccsweep-$j2.0/big.db"; then
    scancel -b -s TERM "$j2" # what preemption or a plain scancel sends the batch shell
else
    bad "job $j2 committed no rows within 180 s"
    show_log "$j2"
fi
wait_job "$j2" 60 || bad "job $j2 still $(job_field "$j2" JobState) 60 s after TERM"
integ=$(q "$DB2" "PRAGMA integrity_check;")
check "TERM: database copied back intact (integrity_check $integ)" "[ '$integ' = ok ]"
st=$(q "$DB2" "SELECT status FROM runs;")
check "TERM: run marked interrupted ($st)" "[ '$st' = interrupted ]"
r=$(rows "$DB2")
n=${r%% *}
check "TERM: part of the grid committed, no duplicates ($r of $BIG)" \
    "[ '${r#* }' = '$n' ] && [ '$n' -gt 0 ] && [ '$n' -lt $BIG ]"
check "TERM: graceful stop ends job $j2 COMPLETED 0:0, not FAILED ($(job_field "$j2" JobState) $(job_field "$j2" ExitCode))" \
    "[ '$(job_field "$j2" JobState)' = COMPLETED ] && [ '$(job_field "$j2" ExitCode)' = 0:0 ]"
log2=$T/work/ccsweep-$j2.out
check "TERM: no MPI abort and no killed task in the log" \
    "! grep -q -i -E 'MPI_ABORT|Killed|aborted' '$log2'"
check "TERM: the resume hints name the user's database $DB2" \
    "grep -q -- \"--db $DB2 --resume\" '$log2' && grep -q \"CCSWEEP_DB=$DB2 sbatch\" '$log2'"
check "TERM: no message of the sweep names the node-local copy" \
    "! grep -E '^ccsweep( run)?:' '$log2' | grep -q '$T/local'"
av=$(q "$DB2" "SELECT argv FROM sessions WHERE slurm_job_id = '$j2';")
check "TERM: sessions.argv names $DB2, not the scratch copy ($av)" \
    "case '$av' in *'--db $DB2 '*) ! echo '$av' | grep -q '$T/local';; *) false;; esac"
j3=$(submit "$DB2" --wait -n 2 -t 5 "$SBATCH_T" big.yaml); rc=$?
[ $rc -eq 0 ] || { bad "resubmitted job $j3 exited $rc"; show_log "$j3"; }
r=$(rows "$DB2")
check "resubmit: job $j3 completed the grid, one row per scenario ($r of $BIG)" "[ '$r' = '$BIG $BIG' ]"
st=$(q "$DB2" "SELECT count(*) || ' ' || group_concat(status) FROM runs;")
check "resubmit: the same run resumed and completed ($st)" "[ '$st' = '1 complete' ]"
ss=$(q "$DB2" "SELECT group_concat(slurm_job_id || ':' || status, ' ') FROM (SELECT * FROM sessions ORDER BY session);")
check "resubmit: sessions record both jobs ($ss)" "[ '$ss' = '$j2:interrupted $j3:complete' ]"
integ=$(q "$DB2" "PRAGMA integrity_check;")
check "resubmit: integrity_check $integ" "[ '$integ' = ok ]"
elapsed "interrupt + resubmit"

# ---- 3. time-limit warning: USR1 -> stop, requeue, resume --------------------
t0=$(date +%s)
DB3=$T/work/requeue.db
j4=$(submit "$DB3" -n 2 -t 5 "$SBATCH_T" big.yaml)
if wait_rows "$T/local/ccsweep-$j4.0/requeue.db"; then
    scancel -b -s USR1 "$j4" # what --signal=B:USR1@120 sends before the time limit
else
    bad "job $j4 committed no rows within 180 s"
    show_log "$j4"
fi
wait_job "$j4" 90 || bad "job $j4 still $(job_field "$j4" JobState) 90 s after USR1"
check "USR1: job $j4 requeued itself once and completed ($(job_field "$j4" JobState), restarts $(job_field "$j4" Restarts))" \
    "[ '$(job_field "$j4" JobState)' = COMPLETED ] && [ '$(job_field "$j4" Restarts)' = 1 ]"
r=$(rows "$DB3")
check "USR1: one row per scenario ($r of $BIG)" "[ '$r' = '$BIG $BIG' ]"
st=$(q "$DB3" "SELECT count(*) || ' ' || group_concat(status) FROM runs;")
check "USR1: one run, complete ($st)" "[ '$st' = '1 complete' ]"
ss=$(q "$DB3" "SELECT group_concat(slurm_job_id || '.' || slurm_restart_count || ':' || status, ' ') FROM (SELECT * FROM sessions ORDER BY session);")
check "USR1: sessions record SLURM_RESTART_COUNT ($ss)" "[ '$ss' = '$j4.0:interrupted $j4.1:complete' ]"
elapsed "time-limit requeue"

# ---- 4. a step that dies in MPI start-up; a bad option -----------------------
# crash-once.sh: the first launch of every task dies of SIGSEGV before it runs
# ccsweep, as the ranks of a step do when MPI_Init crashes; later launches run
# the sweep
t0=$(date +%s)
cat >"$T/work/crash-once.sh" <<EOF
#!/bin/sh
mkdir "$T/work/crashed.\$SLURM_PROCID" 2>/dev/null && kill -SEGV \$\$
exec "$CCS" "\$@"
EOF
chmod +x "$T/work/crash-once.sh"
DB4=$T/work/crash.db
j5=$(CCS=$T/work/crash-once.sh; submit "$DB4" --wait -n 2 -t 5 "$SBATCH_T" small.yaml); rc=$?
log5=$T/work/ccsweep-$j5.out
[ $rc -eq 0 ] || { bad "job $j5 exited $rc"; show_log "$j5"; }
again=$(grep -c 'in MPI start-up, before the sweep recorded a session or a row; launching it again' "$log5")
r=$(rows "$DB4")
ss=$(q "$DB4" "SELECT group_concat(status) FROM sessions;")
check "start-up crash: job $j5 $(job_field "$j5" JobState) $(job_field "$j5" ExitCode), launched again $again time(s), one session ($ss), one row per scenario ($r of $SMALL)" \
    "[ '$(job_field "$j5" JobState)' = COMPLETED ] && [ '$again' = 1 ] && [ '$ss' = complete ] && [ '$r' = '$SMALL $SMALL' ]"
DB5=$T/work/badopt.db
j6=$(submit "$DB5" --wait -n 2 -t 5 "$SBATCH_T" small.yaml --no-such-option)
log6=$T/work/ccsweep-$j6.out
launched=$(grep -c '^ccsweep.sbatch: job .*: srun ' "$log6")
check "bad option: job $j6 $(job_field "$j6" JobState) $(job_field "$j6" ExitCode), launched $launched time(s), no 'launching it again'" \
    "[ '$(job_field "$j6" JobState)' = FAILED ] && [ '$(job_field "$j6" ExitCode)' = 1:0 ] && [ '$launched' = 1 ] && ! grep -q 'launching it again' '$log6'"
elapsed "start-up crash + bad option"

# ---- 5. a serving spec -------------------------------------------------------
# The template passes --resume (or --new-run), as for a training spec: the
# job's run is new, complete, every scenario a row, the job recorded in runs
# and sessions.
t0=$(date +%s)
cat >"$T/work/serve.yaml" <<'EOF'
name: slurm-serve
workload: serve
models: [llama3-70b, mixtral-8x22b]
hardware: [h100-sxm, b200]
serve: {isl: 1000, osl: [200, 1000], concurrency: [1, 16, max], weight_dtype: fp8}
plan: {devices: 8, tp: [1, 2, 4, 8], pp: [1, 2], ep: [1, 2, 8]}
EOF
SERVE=$((2 * 2 * 2 * 3 * 4 * 2 * 3))
DB6=$T/work/serve.db
j7=$(submit "$DB6" --wait -n 2 -t 5 "$SBATCH_T" serve.yaml); rc=$?
[ $rc -eq 0 ] || { bad "sbatch --wait of the serving job exited $rc"; show_log "$j7"; }
st=$(q "$DB6" "SELECT count(*) || ' ' || group_concat(workload || ':' || status || ':' || n_rows || ':' || slurm_job_id) || ' ' || (SELECT count(*) FROM serve_results) FROM runs;")
ss=$(q "$DB6" "SELECT group_concat(slurm_job_id || ':' || status) FROM sessions;")
check "serving job $j7 $(job_field "$j7" JobState) $(job_field "$j7" ExitCode): one run, complete, one row per scenario ($st of $SERVE), its session ($ss)" \
    "[ '$(job_field "$j7" JobState)' = COMPLETED ] && [ '$st' = '1 serve:complete:$SERVE:$j7 $SERVE' ] && [ '$ss' = '$j7:complete' ]"
elapsed "the serving job"
exit 0
