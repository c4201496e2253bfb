#!/usr/bin/env bash
# A rank that stalls or dies must not hang the job. `test_distributed --stall|--kill` under
# mpirun -np 2 has rank 1 sleep, or kill itself with SIGKILL, at its third step instead of
# reducing; rank 0's GradientAllreducer (timeout 2 s) must then exit 3 within 30 s with a message
# naming the bucket, its parameters, itself and rank 1 as the rank that has not arrived.
#
# kill: by default mpirun ends the whole job as soon as a rank dies by a signal (checked too), so
# rank 0's own timeout is what remains when no daemon reports the death, e.g. a machine that
# hangs. `--enable-recovery` has mpirun leave the survivors running, as then. mpirun itself exits
# 0 in that mode whatever the ranks do, so each rank's exit code is read through a wrapper.
# Usage: failure.sh <mpirun> <test_distributed> stall|kill
set -uo pipefail
mpirun=$1 exe=$2 mode=$3
fail() { echo "failure.sh: FAILED: $*"; exit 1; }
codes=$(mktemp -d)
trap 'rm -rf "$codes"' EXIT

if [ "$mode" = kill ]; then
  start=$(date +%s%N)
  output=$("$mpirun" --oversubscribe -np 2 "$exe" --kill 2>&1)
  rc=$?
  elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$output"
  echo "failure.sh: without recovery, mpirun exited with $rc after ${elapsed_ms} ms"
  [ "$rc" -ne 0 ] || fail "mpirun exited 0 although rank 1 was killed"
  [ "$elapsed_ms" -lt 30000 ] || fail "the job took ${elapsed_ms} ms (bound 30 s)"
  recovery=--enable-recovery
else
  recovery=
fi

start=$(date +%s%N)
# shellcheck disable=SC2016  # expanded by each rank's shell
output=$("$mpirun" --oversubscribe $recovery -np 2 bash -c \
  '"$0" --'"$mode"'; echo $? > "$1/rank$OMPI_COMM_WORLD_RANK"' "$exe" "$codes" 2>&1)
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "$output"
rank0=$(cat "$codes/rank0" 2>/dev/null || echo none)
echo "failure.sh: mpirun exited with $rc, rank 0 with $rank0, after ${elapsed_ms} ms"
[ "$rank0" = 3 ] || fail "rank 0 exited with $rank0, not the timeout's 3"
[ "$elapsed_ms" -lt 30000 ] || fail "the job took ${elapsed_ms} ms (bound 30 s)"
expected="GradientAllreducer: rank 0 of 2: the allreduce of bucket 0 of 1 ('bias' [3], 'weight' [3,4]) has not completed after 2 s (options.timeout): rank(s) 1 have not started it (stalled or gone)"
grep -qF "$expected" <<<"$output" || fail "the output lacks: $expected"
grep -qF "rank 0: step 1 reduced" <<<"$output" || fail "rank 0 did not reduce the steps before the failure"
echo "failure.sh: passed"
