#!/usr/bin/env bash
# copy_task --distributed on 2 ranks trains the model one process trains on the joined batch:
# batches of 7 sequences split 3 + 4 (different token counts), 12 Adam steps, float32. The two
# runs' checkpoints (parameters and Adam's moments) must agree within 1e-5 of each tensor's largest
# value (measured: 4.8e-7; the ranks sum their gradients in another order than one GEMM does).
# Also: one rank equals one process bit for bit, only rank 0 prints, and with dropout 0.2 the two
# ranks still train what one process does (masks follow the example's index in the whole batch).
# Usage: copy_task_ranks.sh <mpirun> <copy_task>
set -uo pipefail
mpirun=$1 copy_task=$2
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "copy_task_ranks.sh: FAILED: $*"; exit 1; }
flags="--batch 7 --batches-per-epoch 4 --epochs 3 --d-model 16 --d-ff 32 --heads 2 --layers 1 --threads 1"

"$copy_task" $flags --checkpoint "$dir/one.safetensors" > "$dir/one.txt" 2>&1 || fail "one process: $(cat "$dir/one.txt")"
"$mpirun" --oversubscribe -np 2 "$copy_task" $flags --distributed --checkpoint "$dir/two.safetensors" > "$dir/two.txt" 2>&1 \
  || fail "two ranks: $(cat "$dir/two.txt")"
cat "$dir/two.txt"
[ "$(grep -c '^Copy task:' "$dir/two.txt")" -eq 1 ] || fail "expected one header line (rank 0 prints alone)"
grep -q '| 2 ranks, data-parallel' "$dir/two.txt" || fail "the header does not say 2 ranks"
diff <(grep '^Epoch' "$dir/one.txt" | cut -d'|' -f1-3) <(grep '^Epoch' "$dir/two.txt" | cut -d'|' -f1-3) \
  || fail "the printed losses differ"
/usr/bin/python3 "$here/compare_checkpoints.py" "$dir/one.safetensors" "$dir/two.safetensors" 1e-5 || fail "the checkpoints differ"

# One rank is one process: bit for bit.
"$mpirun" --oversubscribe -np 1 "$copy_task" $flags --distributed --checkpoint "$dir/single.safetensors" > "$dir/single.txt" 2>&1 \
  || fail "one rank: $(cat "$dir/single.txt")"
/usr/bin/python3 "$here/compare_checkpoints.py" "$dir/one.safetensors" "$dir/single.safetensors" 0 || fail "one rank differs"

# Dropout: each rank takes its rows' part of the whole batch's masks, so the split changes nothing.
"$copy_task" $flags --dropout 0.2 --checkpoint "$dir/one_dropout.safetensors" > "$dir/one_dropout.txt" 2>&1 \
  || fail "one process with dropout: $(cat "$dir/one_dropout.txt")"
"$mpirun" --oversubscribe -np 2 "$copy_task" $flags --dropout 0.2 --distributed --checkpoint "$dir/two_dropout.safetensors" \
  > "$dir/two_dropout.txt" 2>&1 || fail "two ranks with dropout: $(cat "$dir/two_dropout.txt")"
diff <(grep '^Epoch' "$dir/one_dropout.txt" | cut -d'|' -f1-3) <(grep '^Epoch' "$dir/two_dropout.txt" | cut -d'|' -f1-3) \
  || fail "the printed losses with dropout differ"
/usr/bin/python3 "$here/compare_checkpoints.py" "$dir/one_dropout.safetensors" "$dir/two_dropout.safetensors" 1e-5 \
  || fail "the checkpoints with dropout differ"
/usr/bin/python3 "$here/compare_checkpoints.py" "$dir/one.safetensors" "$dir/one_dropout.safetensors" 1e-5 >/dev/null \
  && fail "dropout 0.2 changed nothing (the comparison above would prove nothing)"
echo "copy_task_ranks.sh: passed"
