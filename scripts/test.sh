#!/usr/bin/env bash
# Sets up, builds and runs every test: the lit suite (heterps-opt, FileCheck),
# the GoogleTest suites and the check that docs/ matches the .td files. ctest
# prints the summary; the exit code is non-zero when any test fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HETERPS_BUILD_DIR:-"$root/build"}

"$root/scripts/build.sh"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" "$@"
