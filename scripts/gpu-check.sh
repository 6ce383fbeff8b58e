#!/usr/bin/env bash
# Runs every GPU test (HeterPSRuntimeGPUTests) and the GPU benchmark
# (heterps-gpu-bench) on a GPU, and fails when a test fails or is skipped.
#
#   scripts/gpu-check.sh                # build here and run here
#   scripts/gpu-check.sh pack [DIR]     # build here; write the bundle
#                                       # DIR/heterps-gpu-check.tar.gz
#                                       # (default DIR: .gpu-check)
#   scripts/gpu-check.sh run BUNDLE     # unpack the bundle and run it
#
# The GPU tests and the benchmark link the runtime alone (no MLIR): the plans
# they train are compiled when they are built. `pack` puts the two programs,
# their plans and the shared libraries they need, except the C and C++
# runtimes and cuBLAS (too big to carry), into one archive, so that `run`
# works on a machine that has a GPU driver and CUDA 13's cuBLAS but none of
# the build's packages. `run` writes gpu-tests.log, gpu-tests.xml and
# gpu-bench.txt into $OUT (default: ./gpu-check-out).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle_name=heterps-gpu-check.tar.gz

die() {
  echo "gpu-check: $*" >&2
  exit 1
}

pack() {
  local dest="$1"
  local build_dir="${HETERPS_BUILD_DIR:-$root/build}"
  "$root/scripts/build.sh" HeterPSRuntimeGPUTests heterps-gpu-bench
  local tests="$build_dir/unittests/HeterPSRuntimeGPUTests"
  local bench="$build_dir/bin/heterps-gpu-bench"
  [[ -x "$tests" && -x "$bench" ]] ||
    die "$build_dir has no GPU tests: this build found no CUDA (nvcc and cuBLAS; see docs/GPU.md)"
  local stage
  stage="$(mktemp -d)"
  mkdir -p "$stage/bin" "$stage/lib" "$stage/plans/tests" "$stage/plans/bench"
  cp "$tests" "$bench" "$stage/bin/"
  cp "$build_dir"/unittests/gpu-test-plans/*.plan "$stage/plans/tests/"
  cp "$build_dir"/bench/gpu/plans/*.plan "$stage/plans/bench/"
  # Every shared library the programs load but the C and C++ runtimes (the
  # GPU machine's own are newer) and cuBLAS (hundreds of MB; CUDA 13's is
  # there). libcudart travels: it must match the build's CUDA.
  ldd "$tests" "$bench" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    while read -r lib; do
      case "$(basename "$lib")" in
      libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | \
        ld-linux* | libstdc++.so* | libgcc_s.so* | libcuda.so* | \
        libcublas.so* | libcublasLt.so*) ;;
      *) cp -L "$lib" "$stage/lib/" ;;
      esac
    done
  mkdir -p "$dest"
  tar -C "$stage" -czf "$dest/$bundle_name" .
  rm -rf "$stage"
  local bytes
  bytes=$(stat -c %s "$dest/$bundle_name")
  echo "gpu-check: wrote $dest/$bundle_name ($((bytes / 1024)) KiB):"
  tar -tzvf "$dest/$bundle_name" | awk '{printf "  %10d %s\n", $3, $6}'
  # The device tool carries at most 64 MiB of files a call.
  ((bytes < 60 * 1024 * 1024)) || die "the bundle is over 60 MiB"
}

# Prints the folder holding CUDA 13's libcublas.so.13 on this machine.
find_cublas() {
  local dir
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
    /usr/local/cuda-13*/lib64 /usr/lib/x86_64-linux-gnu; do
    [[ -e "$dir/libcublas.so.13" ]] && echo "$dir" && return
  done
  # PyTorch's wheels bring their own (nvidia/cu13/lib, nvidia/cublas/lib).
  local found
  found="$(find /usr /opt -xdev -name 'libcublas.so.13' 2>/dev/null | head -1)"
  [[ -n "$found" ]] && dirname "$found"
}

run() {
  local bundle="$1" out="${OUT:-$PWD/gpu-check-out}"
  [[ -f "$bundle" ]] || die "no bundle at '$bundle' (make one with: scripts/gpu-check.sh pack)"
  local dir
  dir="$(mktemp -d)"
  tar -C "$dir" -xzf "$bundle"
  mkdir -p "$out"
  local cublas
  cublas="$(find_cublas)" || true
  [[ -n "$cublas" ]] || die "no libcublas.so.13 (CUDA 13's cuBLAS) on this machine"
  export LD_LIBRARY_PATH="$dir/lib:$cublas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu-check: cuBLAS from $cublas"
  if ldd "$dir/bin/HeterPSRuntimeGPUTests" "$dir/bin/heterps-gpu-bench" | grep 'not found'; then
    die "the programs miss the libraries above"
  fi
  nvidia-smi -L || echo "gpu-check: nvidia-smi did not answer"

  local status=0
  HETERPS_GPU_TEST_PLANS="$dir/plans/tests" "$dir/bin/HeterPSRuntimeGPUTests" \
    --gtest_output="xml:$out/gpu-tests.xml" 2>&1 | tee "$out/gpu-tests.log" ||
    status=1
  local skipped
  skipped=$(grep -c 'result="skipped"' "$out/gpu-tests.xml" || true)
  if ((skipped > 0)); then
    echo "gpu-check: $skipped GPU tests were skipped: this machine has no usable GPU" >&2
    status=1
  fi
  "$dir/bin/heterps-gpu-bench" --plans="$dir/plans/bench" 2>&1 |
    tee "$out/gpu-bench.txt" || status=1
  rm -rf "$dir"
  if ((status == 0)); then
    echo "gpu-check: every GPU test passed; results in $out"
  else
    echo "gpu-check: FAILED; results in $out" >&2
  fi
  return $status
}

case "${1:-}" in
pack) pack "${2:-$root/.gpu-check}" ;;
run)
  [[ $# -eq 2 ]] || die "usage: scripts/gpu-check.sh run BUNDLE"
  run "$2"
  ;;
"")
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  pack "$tmp"
  run "$tmp/$bundle_name"
  ;;
*) die "unknown command '$1' (pack, run, or none for both)" ;;
esac
