#!/usr/bin/env bash
# ctest driver: export a tapegrad checkpoint and batch, then check them in PyTorch.
# Exit 77 (reported by ctest as skipped, with the reason printed) when python3-torch is missing.
set -euo pipefail
exporter=$1 script=$2
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "SKIPPED: python3-torch is not installed (apt-get install python3-torch); .ci/install-deps installs it"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$exporter" "$work"
/usr/bin/python3 "$script" "$work"
