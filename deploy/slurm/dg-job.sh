# shellcheck shell=bash
# Shared by the sbatch templates of deploy/slurm/ (sourced, not run). See deploy/slurm/README.md.
#
# Variables a template reads (all optional; set them in the environment of sbatch, which
# exports it to the job):
#   DG_HOME          distgraph checkout holding launch/ and deploy/ (default: SLURM_SUBMIT_DIR;
#                    the template sources DG_HOME/deploy/slurm/dg-job.sh)
#   DG_VENV          virtual environment to activate (default: DG_HOME/.venv when present)
#   DG_LAUNCH        srun (default) or mpirun (MPICH/Open MPI mpiexec inside the allocation)
#   DG_SRUN_MPI      srun's --mpi plugin (pmix, pmi2; default: the site's MpiDefault)
#   DG_OUT           directory for results, logs and checkpoints (default: SUBMIT_DIR/dg-NAME-JOBID)
#   DG_MAX_RESTARTS  requeues allowed before the job gives up (default 20)
#   DG_THREADS, DG_GPUS, DG_SYMMETRIC_SIZE, DG_MEMORY_PLAN: the launchers' --threads, --gpus,
#                    --symmetric-size, --memory-plan (launch/README.md)

dg_log() { echo "[$(date -u +%FT%TZ) job ${SLURM_JOB_ID:-?} restart ${SLURM_RESTART_COUNT:-0}] $*" >&2; }  # to the job log

# dg_forget_outer_mpi: drop the process-manager variables of an MPI job that this job was
# submitted from (sbatch exports the submit environment). Submitted from a rank of mpiexec (as
# tests/run.sh runs the tests), the job inherits MPICH hydra's HYDI_CONTROL_FD: the hydra proxy
# that mpiexec starts inside the job (DG_LAUNCH=mpirun) takes it for its control socket, fails
# ("unable to send the proxy ID to the server"), and mpiexec waits forever. They describe a
# process on the submit host, never this job (srun and mpiexec set the ranks' own).
dg_forget_outer_mpi() {
  local v
  for v in $(compgen -e); do
    case "$v" in HYDI_*|PMI_*|PMIX_*|MPI_LOCALNRANKS|MPI_LOCALRANKID|OMPI_COMM_WORLD_*) unset "$v" ;; esac
  done
}

# dg_setup NAME: activate the environment, make DG_OUT and DG_RUN, the launcher command line
# (without -n: callers add "-n N" before the command, e.g. "${DG_RUN[@]}" -n 4 distgraph ...).
dg_setup() {
  local name=$1
  dg_forget_outer_mpi
  DG_HOME=${DG_HOME:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
  [ -x "$DG_HOME/launch/distgraph-mpirun" ] || { dg_log "DG_HOME=$DG_HOME has no launch/: set DG_HOME to a distgraph checkout"; exit 2; }
  if [ -z "${DG_VENV:-}" ] && [ -f "$DG_HOME/.venv/bin/activate" ]; then DG_VENV=$DG_HOME/.venv; fi
  # shellcheck source=/dev/null
  if [ -n "${DG_VENV:-}" ]; then . "$DG_VENV/bin/activate"; fi
  DG_PY=$(command -v python3)
  DG_OUT=${DG_OUT:-${SLURM_SUBMIT_DIR:-$PWD}/dg-$name-${SLURM_JOB_ID:-0}}
  mkdir -p "$DG_OUT"
  local opts=()
  [ -n "${DG_THREADS:-}" ] && opts+=(--threads "$DG_THREADS")
  [ -n "${DG_GPUS:-}" ] && opts+=(--gpus "$DG_GPUS")
  [ -n "${DG_SYMMETRIC_SIZE:-}" ] && opts+=(--symmetric-size "$DG_SYMMETRIC_SIZE")
  [ -n "${DG_MEMORY_PLAN:-}" ] && opts+=(--memory-plan "$DG_MEMORY_PLAN")
  case "${DG_LAUNCH:-srun}" in
    srun) DG_RUN=("$DG_PY" "$DG_HOME/launch/distgraph-srun" ${DG_SRUN_MPI:+--mpi "$DG_SRUN_MPI"} "${opts[@]}") ;;
    mpirun) DG_RUN=("$DG_PY" "$DG_HOME/launch/distgraph-mpirun" "${opts[@]}") ;;
    *) dg_log "DG_LAUNCH must be srun or mpirun; got ${DG_LAUNCH}"; exit 2 ;;
  esac
  dg_log "distgraph $name: $SLURM_NTASKS ranks on ${SLURM_JOB_NUM_NODES:-1} node(s) ($SLURM_JOB_NODELIST), launcher ${DG_LAUNCH:-srun}, output $DG_OUT"
  if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then dg_clean_shm; fi
}

# dg_clean_shm: remove the shared-memory segments that the killed ranks of an earlier run of
# this job left in /dev/shm (ours, and mapped by no process), on every node of the job.
# MPICH names its segment after the PMI job id, which under srun is JOBID.STEPID: the same
# again after a requeue, so a new rank would attach to the dead job's segment and hang.
dg_clean_shm() {
  local script='n=0; for f in /dev/shm/mpich_shm_* /dev/shm/mpich_vci_* /dev/shm/vader_segment.* /dev/shm/sm_segment.*; do
    [ -O "$f" ] || continue; grep -qsF "$f" /proc/[0-9]*/maps && continue; rm -f "$f" && n=$((n + 1)); done
    [ "$n" = 0 ] || echo "$(hostname -s): removed $n stale MPI shared-memory segment(s)"'
  if [ "${DG_LAUNCH:-srun}" = srun ] && command -v srun >/dev/null; then
    srun -N "${SLURM_JOB_NUM_NODES:-1}" --ntasks-per-node=1 -n "${SLURM_JOB_NUM_NODES:-1}" bash -c "$script" >&2 || true
  else
    bash -c "$script" >&2 || true
  fi
}

dg_preflight() {  # every rank must be in one MPI job: a wrong PMI gives N singletons writing one checkpoint
  local want=${SLURM_NTASKS:-1} got
  got=$("${DG_RUN[@]}" -n "$want" "$DG_PY" -c "from mpi4py import MPI; c = MPI.COMM_WORLD; print(c.size) if c.rank == 0 else None" | sort -u)
  if [ "$got" != "$want" ]; then
    dg_log "preflight: MPI sees '$got' ranks, the allocation has $want tasks; with srun set DG_SRUN_MPI (pmix, pmi2) or DG_LAUNCH=mpirun"
    exit 2
  fi
}

# dg_run_requeueable CMD...: run CMD in the background and wait; on SIGUSR1 (sent by
# '#SBATCH --signal=B:USR1@SECONDS' before the time limit) requeue the job, which restarts this
# script later with SLURM_RESTART_COUNT+1. Preemption (PreemptMode=REQUEUE) and
# 'scontrol requeue' restart it the same way: the template resumes from its checkpoints.
dg_run_requeueable() {
  DG_CHILD=
  trap 'dg_on_usr1' USR1
  trap 'dg_log "SIGTERM (preempted, cancelled or requeued)"; [ -n "$DG_CHILD" ] && kill -TERM "$DG_CHILD" 2>/dev/null; exit 143' TERM
  "$@" &
  DG_CHILD=$!
  local rc=0
  while :; do
    wait "$DG_CHILD" && rc=0 || rc=$?
    # wait returns >128 when a trapped signal interrupted it while the child still runs
    kill -0 "$DG_CHILD" 2>/dev/null || break
  done
  trap - USR1 TERM
  return "$rc"
}

dg_on_usr1() {
  local n=${SLURM_RESTART_COUNT:-0} max=${DG_MAX_RESTARTS:-20}
  if [ "$n" -ge "$max" ]; then
    dg_log "time limit near, but $n restarts reached DG_MAX_RESTARTS=$max: not requeueing"
    return
  fi
  dg_log "time limit near: requeueing (the next run resumes from the last checkpoint)"
  scontrol requeue "$SLURM_JOB_ID"
}

# dg_save_json STDOUT_FILE JSON_FILE: keep the last JSON line rank 0 printed (distgraph --json),
# written atomically; fails when there is none.
dg_save_json() {
  local line
  line=$(grep '^{' "$1" | tail -n 1) || true
  [ -n "$line" ] || { dg_log "no JSON summary in $1"; return 1; }
  printf '%s\n' "$line" > "$2.tmp" && mv -f "$2.tmp" "$2"
}
