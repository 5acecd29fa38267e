#!/usr/bin/env bash
# A real single-node Slurm on this machine (slurmctld + slurmd on localhost), for tests and
# for trying the templates of deploy/slurm/ without a cluster.
#
#   bash deploy/slurm/local-slurm.sh install        # apt-get install slurmctld slurmd slurm-client munge (root)
#   bash deploy/slurm/local-slurm.sh start [DIR]    # start munged, slurmctld, slurmd; print SLURM_CONF=...
#   bash deploy/slurm/local-slurm.sh status [DIR]   # exit 0 when the node is up
#   bash deploy/slurm/local-slurm.sh stop [DIR]     # stop what start started (by the pids in DIR)
#
# DIR (default $DG_SLURM_DIR, else /tmp/distgraph-slurm) holds slurm.conf, the state, the logs and the pid files.
# Clients find the cluster through SLURM_CONF=DIR/slurm.conf (printed by start as the last
# line); /etc/slurm is not touched. Needs root (munged runs as user munge, the daemons as root)
# and Debian's packages (Slurm 22.05 on bookworm). Exit status 3 means "cannot run here"
# (not root, no packages): callers skip on it. Accounting is off: poll squeue, not sacct.
# DG_SLURM_PORT (default 6817; slurmd uses the next port) runs a second cluster beside a first;
# DG_SLURM_WATCH_PID=PID makes start leave a watcher that stops the cluster when PID ends.
set -euo pipefail

cmd=${1:-}
D=${2:-${DG_SLURM_DIR:-/tmp/distgraph-slurm}}
CONF=$D/slurm.conf

die() { echo "local-slurm: $*" >&2; exit "${2:-1}"; }
need_root() { [ "$(id -u)" = 0 ] || die "needs root (munged and slurmd); not root here" 3; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

up() { SLURM_CONF=$CONF timeout 10 sinfo -h -o '%T' 2>/dev/null | grep -Eq '^(idle|mixed|allocated|completing)'; }

case "$cmd" in
install)
  need_root
  command -v apt-get >/dev/null || die "no apt-get: install slurmctld, slurmd, slurm-client and munge yourself" 3
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
     && command -v munged >/dev/null; then exit 0; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null || die "apt-get update failed" 3
  apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null \
    || die "apt-get install of slurm failed" 3
  ;;
start)
  need_root
  for b in slurmctld slurmd sbatch munged; do
    command -v "$b" >/dev/null || die "$b not found: run '$0 install' (Debian: slurmctld slurmd slurm-client munge)" 3
  done
  if alive "$D/slurmctld.pid" && alive "$D/slurmd.pid" && up; then echo "SLURM_CONF=$CONF"; exit 0; fi
  mkdir -p "$D/state" "$D/slurmd" /run/munge /etc/munge /var/log/munge /var/lib/munge
  # munge: one key, the daemon as user munge (it refuses root); reuse a running one.
  [ -f /etc/munge/munge.key ] || dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
  chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge
  chmod 400 /etc/munge/munge.key
  if ! [ -S /run/munge/munge.socket.2 ] || ! munge -n </dev/null >/dev/null 2>&1; then
    rm -f /run/munge/munged.pid
    runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
    for _ in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
    cp /run/munge/munged.pid "$D/munged.pid"   # ours: stop ends it
  fi
  # The node's CPUs: all online ones, at least 2 (the tests run 2-task jobs). Not plain nproc:
  # it honours OMP_NUM_THREADS (tests/run.sh sets it to 1) and the CPU affinity of whoever
  # runs this (under taskset -c 0 the node would get 1 CPU and a 2-task job would pend forever
  # with Reason=PartitionConfig). slurmd, which inherits that affinity, would count fewer CPUs
  # than configured and drain the node: config_overrides makes it take slurm.conf's count.
  HN=$(hostname -s); CPUS=$(nproc --all); [ "$CPUS" -ge 2 ] || CPUS=2
  MEM=$(awk '/MemTotal/ {print int($2/1024*0.8)}' /proc/meminfo)
  # Job ids that no earlier cluster on this machine used (a fresh state directory would start
  # at 1 again): MPICH under srun names its /dev/shm segment after JOBID.STEPID, and the ranks
  # of job 1 step 1 of a new cluster would attach to the segment that killed ranks of an earlier
  # cluster's job 1 step 1 left there (MPI_Init fails, "Message ... truncated"). Real clusters
  # never reuse an id; requeues, which do, are cleaned by dg_clean_shm (dg-job.sh).
  FIRST_JOB=$(( $(date +%s) % 60000 * 1000 + 1 ))
  cat > "$CONF" <<CONF
ClusterName=distgraph
SlurmctldHost=$HN
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SlurmUser=root
SlurmdUser=root
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/slurmd
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
SlurmctldPort=${DG_SLURM_PORT:-6817}
SlurmdPort=$(( ${DG_SLURM_PORT:-6817} + 1 ))
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
FirstJobId=$FIRST_JOB
JobRequeue=1
MinJobAge=300
SchedulerParameters=defer_batch
SlurmdParameters=config_overrides
NodeName=$HN CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=$HN Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  export SLURM_CONF=$CONF
  alive "$D/slurmctld.pid" || /usr/sbin/slurmctld -c -f "$CONF"
  alive "$D/slurmd.pid" || /usr/sbin/slurmd -f "$CONF"
  for _ in $(seq 150); do up && break; sleep 0.2; done
  up || { tail -5 "$D/slurmctld.log" "$D/slurmd.log" >&2 || true; die "the node did not come up in 30 s (logs in $D)"; }
  # DG_SLURM_WATCH_PID: stop this cluster when that process ends, even if it is killed
  # (a test run that dies must not leave daemons behind).
  if [ -n "${DG_SLURM_WATCH_PID:-}" ] && ! alive "$D/watch.pid"; then
    SELF=$(readlink -f "$0")
    setsid nohup bash -c "while kill -0 $DG_SLURM_WATCH_PID 2>/dev/null; do sleep 2; done; exec bash '$SELF' stop '$D'" \
      >/dev/null 2>&1 </dev/null &
    echo $! > "$D/watch.pid"
  fi
  echo "SLURM_CONF=$CONF"
  ;;
status)
  up && { echo "up (SLURM_CONF=$CONF)"; exit 0; }
  echo "down"; exit 1
  ;;
stop)
  if [ -f "$D/watch.pid" ] && [ "$(cat "$D/watch.pid")" != "$$" ]; then
    kill "$(cat "$D/watch.pid")" 2>/dev/null || true
  fi
  rm -f "$D/watch.pid"
  if alive "$D/slurmctld.pid" && up; then   # end this cluster's jobs first: their steps outlive slurmd
    SLURM_CONF=$CONF scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 50); do [ -z "$(SLURM_CONF=$CONF squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  # batch scripts and steps of this cluster that outlived slurmd (process groups of the
  # scripts under $D/slurmd/job*/): they would wait forever on a cluster that is gone
  for pid in $(pgrep -f "$D/slurmd/job[0-9]*/slurm_script" || true); do
    pg=$(ps -o pgid= -p "$pid" | tr -d ' ')
    if [ -n "$pg" ] && [ "$pg" != "$(ps -o pgid= -p $$ | tr -d ' ')" ]; then kill -TERM -- "-$pg" 2>/dev/null || true
    else kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for pid in $(pgrep -x slurmstepd || true); do   # their slurmstepd: the ones holding a file under $D
    for fd in /proc/"$pid"/fd/*; do
      case "$(readlink "$fd" 2>/dev/null)" in "$D"/*) kill -KILL "$pid" 2>/dev/null || true; break ;; esac
    done
  done
  for p in slurmd slurmctld munged; do
    # munged is shared: leave it to another local cluster that still runs
    if [ "$p" = munged ] && { pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null; }; then
      rm -f "$D/$p.pid"; continue
    fi
    if alive "$D/$p.pid"; then
      pid=$(cat "$D/$p.pid"); kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$D/$p.pid"
  done
  ;;
*)
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
