#!/usr/bin/env bash
# Installs the packages HeterPS needs, configures with CMake + Ninja + lld
# against LLVM/MLIR 22 and builds everything into ${HETERPS_BUILD_DIR:-build}.
#
#   scripts/build.sh                      # Release build, CUDA auto-detected
#   HETERPS_ENABLE_CUDA=OFF scripts/build.sh
#   scripts/build.sh heterps-opt          # build one target
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HETERPS_BUILD_DIR:-"$root/build"}

"$root/scripts/install-deps.sh"

if [ ! -f "$build_dir/build.ninja" ] ||
   [ -n "${HETERPS_ENABLE_CUDA:-}" ] || [ -n "${CMAKE_BUILD_TYPE:-}" ]; then
  cmake -G Ninja -S "$root" -B "$build_dir" \
    -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
    -DHETERPS_ENABLE_CUDA="${HETERPS_ENABLE_CUDA:-AUTO}"
fi
cmake --build "$build_dir" -- "$@"
