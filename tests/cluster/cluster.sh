#!/bin/sh
# cluster.sh - a Slurm cluster of N nodes (default 3) on one Linux machine, for
# multi-node tests of ccsweep and by hand. Every node is a network + UTS +
# mount namespace of its own: its own hostname, its own address on a private
# bridge, its own munged and slurmd (default port), a node-local scratch
# directory and /dev/shm. A head node holds the bridge, slurmctld and the
# client commands. Nothing is added to the machine's own network: the bridge
# and every link live inside the head node's namespace, so the nodes reach
# only each other and their loopback. Every file lives under one directory;
# tear-down stops every process of those namespaces by pid, which also
# removes the namespaces and their links. Run as root. `cluster.sh --help`.
set -u

usage() {
    cat <<'EOF'
usage: sh tests/cluster/cluster.sh [--dir DIR] [--nodes N] COMMAND [ARGS]

  up              create the head node and N compute nodes, start munged,
                  slurmctld and the slurmds, wait until every node is idle;
                  exit 3 when this machine cannot (not root, no namespaces,
                  packages missing), 1 when something failed (then run down)
  down            cancel the jobs, stop every daemon and process of the
                  cluster's namespaces by pid, remove DIR (KEEP=1: keep it)
  status          topology (hostnames, addresses, pids) and sinfo
  exec NODE CMD   run CMD inside NODE (head, n1, n2, ...) with SLURM_CONF set:
                  exec head sbatch ..., exec n2 hostname
  kill NODE       node failure: SIGKILL every process of NODE (slurmd, munged,
                  job steps, ranks), which takes its namespaces and link with
                  it; its node-local scratch is deleted
  revive NODE     the node returns: a fresh namespace, empty scratch, munged
                  and slurmd started again, back in service (idle)
  env             shell lines that set CLUSTER_DIR, SLURM_CONF, SHARED, SCRATCH

  --dir DIR       where the cluster keeps its files [$CCS_CLUSTER_DIR, else
                  /tmp/ccsweep-cluster]; one cluster per directory
  --nodes N       compute nodes, 1 to 9 [3] (up only; later commands read it)

Layout under DIR: shared/ is the parallel filesystem (the same files on every
node); scratch/ is node-local (each node sees its own nodes/NAME/scratch
there, the host can read them all under nodes/); log/ holds every daemon's
log. Addresses: head 10.77.0.1 (the bridge), nK 10.77.0.1K. slurmctld and
slurmd listen on the default ports 6817 and 6818, each in its own namespace.
Jobs should get TMPDIR=DIR/scratch (node-local). A node has only lo and
eth0, so Open MPI's TCP transport needs no interface setting.
EOF
}

DIR=${CCS_CLUSTER_DIR:-/tmp/ccsweep-cluster}
NODES=
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --dir) DIR=$2; shift 2 ;;
    --dir=*) DIR=${1#--dir=}; shift ;;
    --nodes) NODES=$2; shift 2 ;;
    --nodes=*) NODES=${1#--nodes=}; shift ;;
    -*) echo "cluster.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || { usage >&2; exit 2; }
cmd=$1
shift
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac
NET=10.77.0

say() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }
# cannot WHY: this machine cannot host the cluster (exit 3, the tests skip)
cannot() { echo "cluster: cannot run here: $*" >&2; exit 3; }

# node_pid NAME: the pid of the process that holds NAME's namespaces
node_pid() { cat "$DIR/nodes/$1/holder.pid" 2>/dev/null; }
# on NAME CMD...: CMD inside every namespace of NAME
on() {
    on_p=$(node_pid "$1")
    [ -n "$on_p" ] && kill -0 "$on_p" 2>/dev/null || { echo "cluster: node $1 is not up" >&2; return 1; }
    shift
    SLURM_CONF=$DIR/etc/slurm.conf nsenter -t "$on_p" -n -u -m --wd="$PWD" -- "$@"
}
compute_nodes() { i=1; while [ $i -le "$NODES" ]; do printf 'n%d ' $i; i=$((i + 1)); done; }
addr_of() { case $1 in head) echo "$NET.1" ;; n*) echo "$NET.1${1#n}" ;; esac; }

# pids_in NETNS: every process whose network namespace is NETNS (net:[inode])
pids_in() {
    for pi_d in /proc/[0-9]*; do
        [ "$(readlink "$pi_d/ns/net" 2>/dev/null)" = "$1" ] && echo "${pi_d#/proc/}"
    done
}
# kill_node_procs NAME SIGNAL: SIGNAL to every process of NAME's namespace
kill_node_procs() {
    ns=$(cat "$DIR/nodes/$1/netns" 2>/dev/null) || return 0
    [ -n "$ns" ] || return 0
    for kn_p in $(pids_in "$ns"); do kill "-$2" "$kn_p" 2>/dev/null; done
}
node_empty() {
    ns=$(cat "$DIR/nodes/$1/netns" 2>/dev/null) || return 0
    [ -z "$ns" ] || [ -z "$(pids_in "$ns")" ]
}
# wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds
wait_for() {
    wf_n=$(($1 * 5))
    shift
    while [ $wf_n -gt 0 ]; do
        "$@" && return 0
        sleep 0.2
        wf_n=$((wf_n - 1))
    done
    "$@"
}

# make_node NAME: a holder process in new network, UTS and mount namespaces,
# with NAME's hostname, /etc/hosts, node-local run/ and scratch/ directories
# bind-mounted over DIR/run and DIR/scratch, and a private /dev/shm; its link
# to the head node's bridge (none for the head itself)
make_node() {
    d=$DIR/nodes/$1
    rm -rf "$d/run" "$d/scratch"
    mkdir -p "$d/run/spool" "$d/run/pmix" "$d/scratch"
    chmod 755 "$d/run" # munged wants its socket directory searchable by all
    # the holder sets the node up from inside, then sleeps until it is killed
    unshare --net --uts --mount --propagation private sh -c '
        hostname "$1" &&
        mount --bind "$2/etc/hosts" /etc/hosts &&
        mount --bind "$3/run" "$2/run" &&
        mount --bind "$3/scratch" "$2/scratch" &&
        mount -t tmpfs -o mode=1777,size=1g tmpfs /dev/shm &&
        ip link set lo up || exit 1
        : >"$3/ready"
        exec sleep 2147483647' sh "$1" "$DIR" "$d" >"$DIR/log/holder.$1.log" 2>&1 &
    echo $! >"$d/holder.pid"
    wait_for 10 test -e "$d/ready" || die "node $1: namespaces not set up ($(cat "$DIR/log/holder.$1.log"))"
    rm -f "$d/ready"
    readlink "/proc/$(node_pid "$1")/ns/net" >"$d/netns"
    a=$(addr_of "$1")
    if [ "$1" = head ]; then
        on head ip link add br0 type bridge &&
            on head ip addr add "$a/24" dev br0 &&
            on head ip link set br0 up || die "head: no bridge (kernel without bridge support?)"
    else
        on head ip link add "$1" type veth peer name eth0 netns "$(node_pid "$1")" &&
            on head ip link set "$1" master br0 &&
            on head ip link set "$1" up &&
            on "$1" ip addr add "$a/24" dev eth0 &&
            on "$1" ip link set eth0 up || die "node $1: no link to the head node"
    fi
}

# start NAME DAEMON ARGS...: DAEMON in NAME, in the background, its pid kept
start() {
    n=$1
    shift
    # nsenter execs DAEMON: the pid of the background command is the daemon's
    SLURM_CONF=$DIR/etc/slurm.conf nsenter -t "$(node_pid "$n")" -n -u -m --wd="$DIR" -- "$@" \
        >>"$DIR/log/$1.$n.out" 2>&1 &
    echo $! >>"$DIR/nodes/$n/daemons"
}

start_munged() {
    start "$1" munged -F --socket="$DIR/run/munge.socket" --key-file="$DIR/etc/munge.key" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.$1.log" \
        --seed-file="$DIR/run/munged.seed"
    wait_for 10 test -S "$DIR/nodes/$1/run/munge.socket" || die "node $1: munged did not start: $(tail -1 "$DIR/log/munged.$1.out")"
}

node_state() { on head sinfo -h -n "$1" -o %t 2>/dev/null; }
node_idle() { [ "$(node_state "$1")" = idle ]; }

write_conf() {
    cpus=$(nproc 2>/dev/null || echo 2)
    [ "$cpus" -ge 2 ] || cpus=2
    cat >"$DIR/etc/slurm.conf" <<EOF
# written by tests/cluster/cluster.sh
ClusterName=ccsweepcluster
SlurmctldHost=head($NET.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also delays the restart of a requeued job (default 120 s).
AuthInfo=socket=$DIR/run/munge.socket,cred_expire=10
StateSaveLocation=$DIR/nodes/head/state
# node-local: DIR/run is each node's own directory
SlurmdSpoolDir=$DIR/run/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
PlugStackConfig=$DIR/etc/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
SlurmdTimeout=60
KillWait=10
MinJobAge=600
# each node declares the machine's CPUs: the nodes share its cores
SlurmdParameters=config_overrides
EOF
    for n in $(compute_nodes); do
        echo "NodeName=$n NodeAddr=$(addr_of "$n") CPUs=$cpus State=UNKNOWN" >>"$DIR/etc/slurm.conf"
    done
    echo "PartitionName=cluster Nodes=$(compute_nodes | tr ' ' ',' | sed 's/,$//') Default=YES MaxTime=INFINITE State=UP" \
        >>"$DIR/etc/slurm.conf"
    : >"$DIR/etc/plugstack.conf"
    # PMIx's client directories default to /tmp, which the nodes share here
    echo "PMIxCliTmpDirBase=$DIR/run/pmix" >"$DIR/etc/mpi.conf"
    {
        echo "127.0.0.1 localhost"
        for n in head $(compute_nodes); do echo "$(addr_of "$n") $n"; done
    } >"$DIR/etc/hosts"
}

start_compute() {
    start_munged "$1"
    start "$1" slurmd -D -f "$DIR/etc/slurm.conf" -N "$1"
}

cmd_up() {
    [ "$(id -u)" = 0 ] || cannot "not root (namespaces, slurmd)"
    [ ${#DIR} -le 60 ] || die "--dir $DIR: too long for munged's socket path (60 characters at most)"
    case ${NODES:-3} in [1-9]) ;; *) die "--nodes: 1 to 9, not $NODES" ;; esac
    NODES=${NODES:-3}
    for c in unshare nsenter ip munged slurmctld slurmd sinfo; do
        command -v "$c" >/dev/null 2>&1 || cannot "$c is not installed (Debian: util-linux iproute2 munge slurm-wlm)"
    done
    [ -e "$DIR/nodes" ] && die "$DIR already holds a cluster (cluster.sh --dir $DIR down)"
    unshare --net --uts --mount true 2>/dev/null || cannot "unshare --net --uts --mount failed (a container without CAP_SYS_ADMIN?)"
    unshare --net sh -c 'ip link add ccsbr0 type bridge' 2>/dev/null || cannot "no bridge devices (ip link add type bridge failed)"
    mkdir -p "$DIR/etc" "$DIR/log" "$DIR/run" "$DIR/scratch" "$DIR/shared" "$DIR/nodes/head/state" || exit 1
    chmod 755 "$DIR" "$DIR/run"
    echo "$NODES" >"$DIR/nodes/count"
    if command -v mungekey >/dev/null 2>&1; then
        mungekey -c -k "$DIR/etc/munge.key" >/dev/null 2>&1
    else
        dd if=/dev/urandom of="$DIR/etc/munge.key" bs=1024 count=1 2>/dev/null
    fi
    chmod 600 "$DIR/etc/munge.key"
    write_conf
    # from here on, a failure leaves things to stop: the caller runs down
    make_node head
    for n in $(compute_nodes); do make_node "$n"; done
    start_munged head
    start head slurmctld -D -i -f "$DIR/etc/slurm.conf"
    for n in $(compute_nodes); do start_compute "$n"; done
    for n in $(compute_nodes); do
        wait_for 30 node_idle "$n" || die "node $n is not idle ($(node_state "$n")): see $DIR/log"
    done
    say "up: $NODES nodes in $DIR"
}

cmd_down() {
    [ -d "$DIR/nodes" ] || { [ -n "${KEEP:-}" ] || rm -rf "$DIR"; return 0; }
    # jobs first: their slurmstepd and ranks outlive slurmd
    if [ -n "$(node_pid head)" ] && kill -0 "$(node_pid head)" 2>/dev/null; then
        ids=$(on head squeue -h -o %i 2>/dev/null)
        [ -n "$ids" ] && on head scancel $ids 2>/dev/null
        wait_for 10 no_jobs
    fi
    # a recorded pid is signalled only while it still runs in the node (a
    # daemon that died may have left its pid to an unrelated process)
    for n in $(ls "$DIR/nodes"); do
        [ -f "$DIR/nodes/$n/daemons" ] && [ -f "$DIR/nodes/$n/netns" ] || continue
        ns=$(cat "$DIR/nodes/$n/netns")
        for p in $(cat "$DIR/nodes/$n/daemons"); do
            [ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$ns" ] && kill -TERM "$p" 2>/dev/null
        done
    done
    # then whatever else still runs in a node (steps, ranks), and the holders
    for n in $(ls "$DIR/nodes"); do
        [ -f "$DIR/nodes/$n/netns" ] || continue
        wait_for 5 node_empty_but_holder "$n" >/dev/null 2>&1
        kill_node_procs "$n" KILL
        wait_for 5 node_empty "$n" || say "node $n: processes left: $(pids_in "$(cat "$DIR/nodes/$n/netns")")"
    done
    [ -n "${KEEP:-}" ] || rm -rf "$DIR"
}
no_jobs() { [ -z "$(on head squeue -h -o %i 2>/dev/null)" ]; }
# only the holder (and nothing else) is left in NAME
node_empty_but_holder() {
    ns=$(cat "$DIR/nodes/$1/netns") || return 0
    [ "$(pids_in "$ns")" = "$(node_pid "$1")" ]
}

cmd_status() {
    [ -d "$DIR/nodes" ] || die "no cluster in $DIR"
    for n in head $(compute_nodes); do
        p=$(node_pid "$n")
        if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
            printf '%-5s %-11s hostname %-5s namespaces of pid %-7s daemons %s\n' "$n" \
                "$(addr_of "$n")" "$(on "$n" hostname)" "$p" "$(tr '\n' ' ' <"$DIR/nodes/$n/daemons" 2>/dev/null)"
        else
            printf '%-5s %-11s down\n' "$n" "$(addr_of "$n")"
        fi
    done
    on head sinfo -N -o '%N %t %c' 2>/dev/null
}

cmd_kill() {
    n=${1:?kill NODE}
    case $n in n[1-9]) ;; *) die "kill: a compute node (n1..n$NODES), not '$n'" ;; esac
    kill_node_procs "$n" KILL
    wait_for 10 node_empty "$n" || die "node $n: processes survived SIGKILL"
    rm -rf "$DIR/nodes/$n/scratch" "$DIR/nodes/$n/run" "$DIR/nodes/$n/daemons"
    say "node $n killed: its processes, namespaces, link and scratch are gone"
}

cmd_revive() {
    n=${1:?revive NODE}
    node_empty "$n" || die "revive: node $n is still up"
    make_node "$n"
    start_compute "$n"
    wait_for 30 node_idle "$n" || {
        on head scontrol update NodeName="$n" State=RESUME 2>/dev/null
        wait_for 30 node_idle "$n"
    } || die "node $n did not come back ($(node_state "$n"))"
    say "node $n is back (idle)"
}

cmd_env() {
    echo "CLUSTER_DIR=$DIR; export CLUSTER_DIR"
    echo "SLURM_CONF=$DIR/etc/slurm.conf; export SLURM_CONF"
    echo "SHARED=$DIR/shared; export SHARED"
    echo "SCRATCH=$DIR/scratch; export SCRATCH"
    echo "CLUSTER_NET=$NET.0/24; export CLUSTER_NET"
}

[ "$cmd" = up ] || NODES=$(cat "$DIR/nodes/count" 2>/dev/null || echo 0)
case $cmd in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
exec)
    [ $# -ge 2 ] || die "exec NODE CMD..."
    n=$1
    shift
    on "$n" "$@"
    ;;
kill) cmd_kill "$@" ;;
revive) cmd_revive "$@" ;;
env) cmd_env ;;
*) usage >&2; exit 2 ;;
esac
