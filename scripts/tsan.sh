#!/usr/bin/env bash
# Builds the pipelined executor's tests with ThreadSanitizer (GCC, CUDA and
# Python off) into ${HETERPS_TSAN_BUILD_DIR:-build-tsan} and runs them
# REPEAT times (default 10): the workers, their channels, the GPU stages'
# fences and copy streams on the test device, the page-locked message
# buffers and the replicas' own parameters. Fails on any race report but
# those inside oneDNN's primitive cache (an uninstrumented library whose
# lookups synchronise through atomics ThreadSanitizer does not see).
#
#   scripts/tsan.sh [REPEAT]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${HETERPS_TSAN_BUILD_DIR:-$root/build-tsan}"
repeat="${1:-10}"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || {
  echo "tsan.sh: REPEAT must be a positive whole number, got '$repeat'" >&2
  exit 2
}

"$root/scripts/install-deps.sh"
flags="-fsanitize=thread -O1 -g"
cmake -G Ninja -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHETERPS_ENABLE_CUDA=OFF -DHETERPS_ENABLE_PYTHON=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build "$build_dir" --target HeterPSRuntimePipelineTests

suppressions="$(mktemp)"
log="$(mktemp)"
trap 'rm -f "$suppressions" "$log"' EXIT
echo "race:libdnnl.so" >"$suppressions"
# One OpenMP thread: GCC's OpenMP runtime is not instrumented either.
status=0
OMP_NUM_THREADS=1 TSAN_OPTIONS="suppressions=$suppressions" \
  "$build_dir/unittests/HeterPSRuntimePipelineTests" \
  --gtest_repeat="$repeat" >"$log" 2>&1 || status=$?
reports=$(grep -c '^WARNING: ThreadSanitizer' "$log" || true)
grep -E '^\[  (PASSED|FAILED)  \]' "$log" | sort | uniq -c
if ((status != 0 || reports > 0)); then
  grep -A30 '^WARNING: ThreadSanitizer' "$log" | head -120 >&2
  echo "tsan.sh: $reports race reports, exit status $status" >&2
  exit 1
fi
echo "tsan.sh: no race reported in $repeat runs"
