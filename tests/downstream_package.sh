#!/usr/bin/env bash
# Installs the built tapegrad into a temporary prefix, then configures, builds and runs
# examples/downstream (a separate project using find_package(tapegrad)) against it: the training
# program, and the GoogleTest test that uses the installed EXPECT_GRADCHECK (the test suite has
# GoogleTest, so it must have been built).
set -euo pipefail
build_dir=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/install" >/dev/null
# Only the public headers are installed: no kernel, no detail/ folder.
leaked=$(find "$work/install/include" \( -name kernels -o -name detail -o -name copy_task \) -print)
if [ -n "$leaked" ]; then echo "installed but private: $leaked"; exit 1; fi
cmake -S "$source_dir/examples/downstream" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/install" >/dev/null
cmake --build "$work/build" -j2 >/dev/null
"$work/build/two_layer"
"$work/build/custom_op_test" --gtest_brief=1
