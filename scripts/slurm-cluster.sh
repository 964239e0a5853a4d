#!/usr/bin/env bash
# A real Slurm cluster on this one machine, for trying tutti under srun and sbatch on a
# laptop and for tests/slurm: slurmctld and two slurmd daemons, emulated nodes n1 and
# n2, listening on loopback only, with every file (config, state, logs, pid files)
# under DIR.
#
#   scripts/slurm-cluster.sh start DIR   write DIR/slurm.conf, start the daemons, wait
#                                        until both nodes are idle (at most 30 s)
#   scripts/slurm-cluster.sh env DIR     print the line to eval so that srun, sbatch,
#                                        squeue and scontrol use this cluster
#   scripts/slurm-cluster.sh stop DIR    stop the daemons started in DIR, by the PIDs in
#                                        their pid files, and wait until they are gone
#
# For example:
#   dir=$(mktemp -d) && scripts/slurm-cluster.sh start "$dir" && eval "$(scripts/slurm-cluster.sh env "$dir")"
#   srun -N 2 -n 4 build/bin/tutti examples/lua/01_all_reduce.lua
#   scripts/slurm-cluster.sh stop "$dir"
#
# start and stop are idempotent: start with the daemons already up only waits for the
# nodes; stop with nothing running does nothing. Each node claims 8 CPUs whatever the
# machine has, so that 8 tasks fit on a laptop. Authentication is auth/none (no munge),
# which is only sound on a machine where every user is trusted; this is a cluster for
# trying and testing, not for sharing. The ports are the first three free ones from
# SLURM_CLUSTER_PORT (default 17000) upward, so that two clusters (two developers,
# two test runs) can run side by side. Needs Debian's slurm-wlm (scripts/dev.sh
# installs it); the daemons run as the user who starts them.
set -euo pipefail

usage() {
  echo "usage: scripts/slurm-cluster.sh start|stop|env DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
command=$1
dir=$2
[ -n "$dir" ] || usage
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
conf=$dir/slurm.conf
nodes=(n1 n2)

die() {
  echo "slurm-cluster.sh: $*" >&2
  exit 1
}

# The PID in a pid file, printed only when that process is alive and is the daemon the
# file belongs to (a stale file may name a PID reused by something else).
live_pid() {
  local file=$1 daemon=$2 pid
  [ -s "$file" ] || return 1
  pid=$(cat "$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$daemon" ] || return 1
  echo "$pid"
}

port_in_use() {
  ss -Htln "sport = :$1" | grep -q .
}

# The first port from $1 up whose next two are free as well.
free_ports() {
  local port=$1
  while [ "$port" -lt $(($1 + 1000)) ]; do
    if ! port_in_use "$port" && ! port_in_use $((port + 1)) && ! port_in_use $((port + 2)); then
      echo "$port"
      return 0
    fi
    port=$((port + 3))
  done
  die "no three free ports in $1..$(($1 + 999)); set SLURM_CLUSTER_PORT to another base"
}

write_conf() {
  local port user
  port=$(free_ports "${SLURM_CLUSTER_PORT:-17000}")
  user=$(id -un)
  mkdir -p "$dir/state" "$dir/log" "$dir/spool" "$dir/tmp/n1" "$dir/tmp/n2"
  cat >"$conf" <<EOF
# Written by scripts/slurm-cluster.sh: two emulated nodes on loopback.
ClusterName=tutti
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/none
CredType=cred/none
# Daemons bind to the addresses named here, never to every interface.
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
# Each slurmd needs its own PMIx directory when several share a host.
TmpFS=$dir/tmp/%n
# No cgroups, no systemd: processes are tracked through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
# A request that can never run fails at once instead of pending forever.
EnforcePartLimits=ALL
# Fast teardown: a killed step's tasks get SIGKILL 2 s after SIGTERM.
KillWait=2
MinJobAge=300
ReturnToService=2
SlurmdTimeout=30
# Eight CPUs per node whatever this machine has, so that eight tasks fit anywhere.
SlurmdParameters=config_overrides
NodeName=n[1-2] NodeAddr=127.0.0.1 NodeHostname=localhost Port=[$((port + 1))-$((port + 2))] CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=60 State=UP OverSubscribe=YES
EOF
}

# Waits, at most 30 s, until sinfo shows both nodes idle (or allocated or mixed).
wait_for_nodes() {
  local i states
  for ((i = 0; i < 300; i++)); do
    states=$(SLURM_CONF=$conf timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null || true)
    if [ "$(grep -cE ' (idle|alloc|mix)$' <<<"$states")" -eq ${#nodes[@]} ]; then
      return 0
    fi
    sleep 0.1
  done
  die "the nodes did not come up within 30 s (sinfo: ${states:-no answer}); see $dir/log/"
}

start() {
  local program
  for program in slurmctld slurmd srun sinfo; do
    command -v "$program" >/dev/null || die "$program is missing; install Debian's slurm-wlm (scripts/dev.sh does)"
  done
  [ -f "$conf" ] || write_conf
  if ! live_pid "$dir/slurmctld.pid" slurmctld >/dev/null; then
    # -i: start afresh even if state from an earlier run is in DIR/state.
    slurmctld -f "$conf" -i || die "slurmctld did not start; see $dir/log/slurmctld.log"
  fi
  local node
  for node in "${nodes[@]}"; do
    if ! live_pid "$dir/slurmd-$node.pid" slurmd >/dev/null; then
      slurmd -f "$conf" -N "$node" || die "slurmd -N $node did not start; see $dir/log/slurmd-$node.log"
    fi
  done
  wait_for_nodes
}

# Sends SIGTERM to each daemon by its PID, then waits at most 10 s for them to end,
# and SIGKILLs whichever is left.
stop() {
  local pids=() file daemon pid i
  for file in "$dir"/slurmd-*.pid "$dir/slurmctld.pid"; do
    daemon=slurmd
    [ "$(basename "$file")" = slurmctld.pid ] && daemon=slurmctld
    if pid=$(live_pid "$file" "$daemon"); then
      pids+=("$pid")
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  for ((i = 0; i < 100; i++)); do
    local alive=()
    for pid in "${pids[@]}"; do
      [ -d "/proc/$pid" ] && alive+=("$pid")
    done
    [ ${#alive[@]} -eq 0 ] && return 0
    sleep 0.1
  done
  for pid in "${alive[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}

case "$command" in
  start) start ;;
  stop) stop ;;
  env)
    [ -f "$conf" ] || die "no cluster in $dir; run scripts/slurm-cluster.sh start $dir first"
    echo "export SLURM_CONF=$conf"
    ;;
  *) usage ;;
esac
