#!/usr/bin/env bash
# Preemption of a sweep: starts `phalanx sweep` on 3 CPU ranks, sends SIGUSR1 to mpirun once
# MIN_RESULTS rung results are in (trials are running), and measures the time from the signal to
# mpirun's exit (status 75); then resumes the sweep and counts the steps redone: for every
# interrupted job, the resumed job's start step minus the interrupted job's end step.
#
#   bench/sweep_stop.sh PHALANX SWEEP.yaml WORK_DIR [REPETITIONS] [MIN_RESULTS]
#
# Needs sqlite3 and bc. Prints one line per repetition.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,8p' "$0"; exit 2; }
phalanx=$1 sweep=$2 work=$3 repetitions=${4:-3} min_results=${5:-3}
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
mpirun_flags=(--oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 3)
mkdir -p "$work"
for repetition in $(seq "$repetitions"); do
  directory=$work/stop-$repetition
  rm -rf "$directory" "$directory.log"
  mpirun "${mpirun_flags[@]}" "$phalanx" sweep "$sweep" --sweep-dir "$directory" >"$directory.log" 2>&1 &
  launcher=$!
  until [ "$(sqlite3 "$directory/sweep.db" 'SELECT COUNT(*) FROM rung_results' 2>/dev/null || echo 0)" -ge "$min_results" ]; do
    sleep 0.05
  done
  start=$(date +%s.%N)
  kill -USR1 "$launcher"
  status=0
  wait "$launcher" || status=$?
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  interrupted=$(sqlite3 "$directory/sweep.db" "SELECT COUNT(*) FROM jobs WHERE status = 'interrupted'")
  mpirun "${mpirun_flags[@]}" "$phalanx" sweep "$sweep" --sweep-dir "$directory" --resume >>"$directory.log" 2>&1
  redone=$(sqlite3 "$directory/sweep.db" "SELECT COALESCE(SUM(interrupted.end_step - resumed.start_step), 0) FROM jobs
    interrupted JOIN jobs resumed ON resumed.trial_id = interrupted.trial_id AND resumed.rung = interrupted.rung
    AND resumed.status = 'done' WHERE interrupted.status = 'interrupted'")
  printf 'run %d: signal -> mpirun exited with %d after %.2f s; %s interrupted job(s), %s step(s) redone after --resume\n' \
    "$repetition" "$status" "$seconds" "$interrupted" "$redone"
  grep -o 'sweep stopped by .* after the signal' "$directory.log" || true
done
