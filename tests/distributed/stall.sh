#!/usr/bin/env bash
# A stalled rank must not hang the job: `test_distributed --stall` under mpirun -np 2 has rank 1
# sleep instead of reducing; rank 0's GradientAllreducer (timeout 2 s) must end the job within
# 30 s, non-zero, with a message naming the bucket, its parameters and the rank.
# Usage: stall.sh <mpirun> <test_distributed>
set -uo pipefail
mpirun=$1 exe=$2
start=$(date +%s%N)
output=$("$mpirun" --oversubscribe -np 2 "$exe" --stall 2>&1)
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "$output"
echo "stall.sh: mpirun exited with $rc after ${elapsed_ms} ms"
fail() { echo "stall.sh: FAILED: $*"; exit 1; }
[ "$rc" -ne 0 ] || fail "the job exited 0"
[ "$elapsed_ms" -lt 30000 ] || fail "the job took ${elapsed_ms} ms (bound 30 s)"
expected="GradientAllreducer: rank 0 of 2: the allreduce of bucket 0 of 1 ('bias' [3], 'weight' [3,4]) has not completed after 2 s"
grep -qF "$expected" <<<"$output" || fail "the output lacks: $expected"
echo "stall.sh: passed"
