#!/usr/bin/env bash
# Builds the fuzz targets with clang-22, libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer into ${HETERPS_FUZZ_BUILD_DIR:-build-fuzz} and
# runs each for SECONDS (default 60) through ctest's label `fuzz`; ctest's
# other arguments follow (-R plan: one target). Each run starts from the
# seeds in fuzz/corpus/ and the working corpus the previous runs grew in the
# build directory; a crash leaves its input in build-fuzz/fuzz/artifacts/.
#
#   scripts/fuzz.sh               # every target, 60 s each
#   scripts/fuzz.sh 600 -R plan   # the plan target for 10 minutes
#
# HETERPS_FUZZ_SEED=N fixes libFuzzer's seed (default 0: a new one each
# run); CI fixes it, so that its minute replays the mutations a developer's
# run with that seed made.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HETERPS_FUZZ_BUILD_DIR:-"$root/build-fuzz"}
seconds=60
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
elif [ $# -gt 0 ] && [[ $1 != -* ]]; then
  echo "fuzz.sh: SECONDS must be a whole number, got '$1'" >&2
  exit 2
fi

"$root/scripts/install-deps.sh"

# Coverage instrumentation and the sanitizers in every library the targets
# link; only the targets link libFuzzer's main. UBSan's vptr check needs
# RTTI, which the LLVM-style libraries are built without.
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
flags+=" -fno-sanitize=vptr -fno-omit-frame-pointer -gline-tables-only"
# OpenMP: GCC's runtime, which oneDNN uses too (clang's libomp would be a
# second one in the process, and its package puts a libgomp.so.1 beside
# libMLIR that the GCC build would then load). Clang only calls it here.
gcc_dir=$(dirname "$(g++ -print-libgcc-file-name)")
omp="-fopenmp=libgomp -idirafter $gcc_dir/include"
cmake -G Ninja -S "$root" -B "$build_dir" \
  -DCMAKE_BUILD_TYPE=Release \
  -DOpenMP_C_FLAGS="$omp" -DOpenMP_CXX_FLAGS="$omp" \
  -DOpenMP_C_LIB_NAMES=gomp -DOpenMP_CXX_LIB_NAMES=gomp \
  -DOpenMP_gomp_LIBRARY="$gcc_dir/libgomp.so" \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DHETERPS_ENABLE_CUDA=OFF -DHETERPS_ENABLE_PYTHON=OFF -DHETERPS_FUZZ=ON \
  -DHETERPS_FUZZ_SECONDS="$seconds" -DHETERPS_FUZZ_SEED="${HETERPS_FUZZ_SEED:-0}" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$build_dir" --target heterps-fuzzers
cd "$build_dir"
ctest -L '^fuzz$' --output-on-failure -j "$(nproc)" "$@"
