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
# heterps-run, their plans and the shared libraries they need, except the C
# and C++ runtimes and cuBLAS (too big to carry), into one archive, so that
# `run` works on a machine that has a GPU driver and CUDA 13's cuBLAS but
# none of the build's packages. `pack` also trains exported PyTorch models
# with PyTorch here (scripts/torch-sgd-reference.py) and compiles them for a
# GPU stage; `run` trains them with heterps-run on the GPU, in one worker and
# pipelined in micro-batches, and holds the parameters against PyTorch's
# (scripts/compare-tensors.py, 1e-5; python3 with numpy and onnx there).
# `run` writes gpu-tests.log, gpu-tests.xml, gpu-bench.txt, torch-steps.txt
# and torch-checks.log into $OUT (default: ./gpu-check-out); a test run that
# fails is run again test by test under compute-sanitizer's memcheck where
# the machine has it (gpu-memcheck.log): six files at most, as the device
# tool brings back eight. The phases share GPU_CHECK_SECONDS (default 540,
# inside the device tool's 600 s a command): tests, benchmark, PyTorch
# checks, then memcheck; a phase that would start past the deadline is
# skipped and said so. GPU_CHECK_FALLBACK=cpu runs the PyTorch checks with
# --fallback=cpu: a check of this script on a machine without a GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle_name=heterps-gpu-check.tar.gz

# The exported PyTorch models `run` trains on a GPU stage against PyTorch's
# own steps: "fixture loss optimizer steps learning-rate tolerance" (the
# parameters' relative tolerance; Adam divides by the root of the squared
# gradients, so where a gradient is nearly zero float32's rounding moves a
# parameter by up to the learning rate: its check allows 1e-3, as the CPU
# column needs too, and the update error, which sees a wrong gradient,
# stays within 1e-3 of the largest update either way).
torch_checks=(
  "wide-deep bce sgd 1 0.1 1e-5"
  "deepfm bce sgd 1 0.1 1e-5"
  "dcn-v2 bce sgd 1 0.1 1e-5"
  "dlrm-dot bce sgd 1 0.1 1e-5"
  "autoint bce sgd 1 0.1 1e-5"
  "two-tower bce sgd 1 0.1 1e-5"
  "textcnn bce sgd 1 0.1 1e-5"
  "din mse sgd 1 0.1 1e-5"
  "embedding-bag bce sgd 1 0.1 1e-5"
  "embedding-bag-offsets bce sgd 1 0.1 1e-5"
  "gru-sequence bce sgd 1 0.1 1e-5"
  "bilstm-text bce sgd 1 0.1 1e-5"
  "transformer bce sgd 1 0.1 1e-5"
  "einsum bce sgd 1 0.1 1e-5"
  "mlp softmax-ce sgd 1 0.1 1e-5"
  "lenet softmax-ce sgd 1 0.1 1e-5"
  "ctr bce momentum 3 0.05 1e-5"
  "dlrm-dot bce adam 3 0.01 1e-3"
)

die() {
  echo "gpu-check: $*" >&2
  exit 1
}

# Seconds left before GPU_CHECK_SECONDS from the start of `run`.
deadline=0
seconds_left() { echo $((deadline - SECONDS)); }
# A phase's time limit: CAP seconds, or what is left less a margin for the
# phases' reports; 0 when too little is left to start it.
limit() {
  local cap="$1" left
  left=$(($(seconds_left) - 15))
  ((left >= 20)) || { echo 0; return; }
  echo $((cap < left ? cap : left))
}

pack() {
  local dest="$1"
  local build_dir="${HETERPS_BUILD_DIR:-$root/build}"
  "$root/scripts/build.sh" HeterPSRuntimeGPUTests heterps-gpu-bench \
    heterps-run heterps-opt
  local tests="$build_dir/unittests/HeterPSRuntimeGPUTests"
  local bench="$build_dir/bin/heterps-gpu-bench" run="$build_dir/bin/heterps-run"
  [[ -x "$tests" && -x "$bench" ]] ||
    die "$build_dir has no GPU tests: this build found no CUDA (nvcc and cuBLAS; see docs/GPU.md)"
  local stage
  stage="$(mktemp -d)"
  mkdir -p "$stage/bin" "$stage/lib" "$stage/plans/tests" "$stage/plans/bench"
  cp "$tests" "$bench" "$run" "$stage/bin/"
  cp "$build_dir"/unittests/gpu-test-plans/*.plan "$stage/plans/tests/"
  cp "$build_dir"/bench/gpu/plans/*.plan "$stage/plans/bench/"
  pack_torch_checks "$build_dir" "$stage/torch"
  # Every shared library the programs load but the C and C++ runtimes (the
  # GPU machine's own are newer) and cuBLAS (hundreds of MB; CUDA 13's is
  # there: run puts its folder on LD_LIBRARY_PATH, where the benchmark's
  # link and the runtime's dlopen find it). libcudart travels: it must
  # match the build's CUDA.
  ldd "$tests" "$bench" "$run" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
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

# PyTorch's steps of the models of torch_checks, and their plans for one GPU
# stage (the gpu-only solver on bench/gpu/gpu-node.json), into DEST.
pack_torch_checks() {
  local build_dir="$1" dest="$2" spec model loss optimizer steps lr
  local tolerance work onnx
  mkdir -p "$dest"
  cp "$root/scripts/compare-tensors.py" "$dest/"
  for spec in "${torch_checks[@]}"; do
    read -r model loss optimizer steps lr tolerance <<<"$spec"
    work="$dest/$model-$optimizer"
    onnx="$root/test/Import/ONNX/Inputs/torch-$model.onnx"
    /usr/bin/python3 "$root/scripts/torch-sgd-reference.py" --model "$model" \
      --onnx "$onnx" --out "$work/ref" --batch 16 --lr "$lr" \
      --optimizer "$optimizer" --steps "$steps" >/dev/null
    "$build_dir/bin/heterps-opt" "$onnx" \
      --heterps-autodiff="loss=$loss optimizer=$optimizer learning-rate=$lr" \
      --heterps-schedule="cluster=$root/bench/gpu/gpu-node.json solver=gpu-only throughput=1000 batch=16" \
      --heterps-emit-plan="file=$work/model.plan" -o /dev/null
    echo "$steps $tolerance" >"$work/check"
  done
}

# Trains every model DIR/torch holds with heterps-run on its GPU stage, in
# one worker and pipelined in 4 micro-batches, and compares the parameters
# (and the inference outputs) with PyTorch's; a line per run into OUT.
run_torch_checks() {
  local dir="$1" out="$2" status=0 work name steps tolerance file mode
  local fallback=()
  [[ "${GPU_CHECK_FALLBACK:-}" == cpu ]] && fallback=(--fallback=cpu)
  : >"$out/torch-steps.txt"
  : >"$out/torch-checks.log"
  for work in "$dir"/torch/*/; do
    work="${work%/}"
    name="$(basename "$work")"
    read -r steps tolerance <"$work/check"
    local inputs=()
    for file in "$work"/ref/inputs/*.pb; do
      [[ "$(basename "$file" .pb)" == label ]] ||
        inputs+=(--input "$(basename "$file" .pb)=$file")
    done
    local log="$out/torch-checks.log" seconds
    echo "=== $name" >>"$log"
    # Each run gets 30 s at most (a run takes a few); the checks stop at
    # the deadline.
    seconds=$(limit 30)
    if ((seconds == 0)); then
      echo "SKIPPED $name and the models after it: out of time" >>"$out/torch-steps.txt"
      status=1
      break
    fi
    if [[ -d "$work/ref/output" && "$steps" == 1 ]]; then
      if timeout "$seconds" "$dir/bin/heterps-run" "$work/model.plan" --infer \
        "${inputs[@]}" "${fallback[@]}" --output-dir="$work/out" >>"$log" 2>&1 &&
        host_python "$dir/torch/compare-tensors.py" "$work/out" "$work/ref/output" \
          >>"$log" 2>&1; then
        echo "PASS $name inference" >>"$out/torch-steps.txt"
      else
        echo "FAIL $name inference (see torch-checks.log)" >>"$out/torch-steps.txt"
        status=1
      fi
    fi
    for mode in off on; do
      local extra=()
      [[ "$mode" == on ]] && extra=(--micro-batches=4)
      seconds=$(limit 30)
      if ((seconds == 0)); then
        echo "SKIPPED $name --pipeline=$mode: out of time" >>"$out/torch-steps.txt"
        status=1
        continue
      fi
      if timeout "$seconds" "$dir/bin/heterps-run" "$work/model.plan" "${inputs[@]}" \
        --input label="$work/ref/inputs/label.pb" --steps="$steps" --batch=16 \
        --log-every=0 --pipeline="$mode" "${extra[@]}" "${fallback[@]}" \
        --save="$work/ckpt-$mode" --export-tables="$work/ckpt-$mode/tables" \
        >>"$log" 2>&1 &&
        host_python "$dir/torch/compare-tensors.py" "$work/ckpt-$mode" \
          "$work/ref/expected" --initial "$work/ref/initial" \
          --tolerance "$tolerance" >>"$log" 2>&1; then
        echo "PASS $name $steps step(s), --pipeline=$mode" >>"$out/torch-steps.txt"
      else
        echo "FAIL $name $steps step(s), --pipeline=$mode (see torch-checks.log)" \
          >>"$out/torch-steps.txt"
        status=1
      fi
    done
  done
  grep -vE '^PASS' "$out/torch-steps.txt" || true
  return $status
}

# The counts of every phase, last, where the device tool's output shows them.
summary() {
  local out="$1" tests failures skipped
  echo "=== gpu-check summary"
  tests=$(grep -o 'tests="[0-9]*"' "$out/gpu-tests.xml" 2>/dev/null | head -1 | tr -dc 0-9)
  failures=$(grep -o 'failures="[0-9]*"' "$out/gpu-tests.xml" 2>/dev/null | head -1 | tr -dc 0-9)
  skipped=$(grep -c 'result="skipped"' "$out/gpu-tests.xml" 2>/dev/null || true)
  if [[ -f "$out/gpu-tests.xml" ]]; then
    echo "GPU tests: ${tests:-?} run, ${failures:-?} failed, ${skipped:-0} skipped"
  else
    echo "GPU tests: no gpu-tests.xml (the run crashed or timed out; the end of gpu-tests.log:)"
    tail -5 "$out/gpu-tests.log" 2>/dev/null || true
  fi
  grep -E '^\[  FAILED  \] [A-Za-z]' "$out/gpu-tests.log" 2>/dev/null | sort -u | head -20 || true
  echo "PyTorch checks: $(grep -c '^PASS' "$out/torch-steps.txt" 2>/dev/null || true) passed," \
    "$(grep -c '^FAIL' "$out/torch-steps.txt" 2>/dev/null || true) failed," \
    "$(grep -c '^SKIPPED' "$out/torch-steps.txt" 2>/dev/null || true) skipped"
  echo "benchmark: the end of gpu-bench.txt:"
  tail -12 "$out/gpu-bench.txt" 2>/dev/null || true
}

# python3 with the library path the machine gave this script.
host_library_path=""
host_python() { LD_LIBRARY_PATH="$host_library_path" python3 "$@"; }

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
  deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-540}))
  [[ -f "$bundle" ]] || die "no bundle at '$bundle' (make one with: scripts/gpu-check.sh pack)"
  local dir
  dir="$(mktemp -d)"
  tar -C "$dir" -xzf "$bundle"
  mkdir -p "$out"
  local cublas
  cublas="$(find_cublas)" || true
  [[ -n "$cublas" ]] || die "no libcublas.so.13 (CUDA 13's cuBLAS) on this machine"
  # The bundle's libraries are for its programs, not for Python's.
  host_library_path="${LD_LIBRARY_PATH-}"
  export LD_LIBRARY_PATH="$dir/lib:$cublas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu-check: cuBLAS from $cublas"
  if ldd "$dir"/bin/* | grep 'not found'; then
    die "the programs miss the libraries above"
  fi
  nvidia-smi -L || echo "gpu-check: nvidia-smi did not answer"

  local status=0 tests_status=0 seconds
  export HETERPS_GPU_TEST_PLANS="$dir/plans/tests"
  # The whole log into the file; here only what failed and the counts, so
  # that the end of this script's output (all the device tool shows) holds
  # the summary.
  timeout "$(limit 240)" "$dir/bin/HeterPSRuntimeGPUTests" \
    --gtest_output="xml:$out/gpu-tests.xml" >"$out/gpu-tests.log" 2>&1 ||
    tests_status=1
  grep -E '^\[  FAILED  \]|^\[  PASSED  \]|tests? from .* ran' "$out/gpu-tests.log" |
    sort -u | head -40 || true
  local skipped
  skipped=$(grep -c 'result="skipped"' "$out/gpu-tests.xml" 2>/dev/null || true)
  if ((skipped > 0)); then
    echo "gpu-check: $skipped GPU tests were skipped: this machine has no usable GPU" >&2
    tests_status=1
  fi
  ((tests_status == 0)) || status=1
  seconds=$(limit 150)
  if ((seconds > 0)); then
    timeout "$seconds" "$dir/bin/heterps-gpu-bench" --plans="$dir/plans/bench" 2>&1 |
      tee "$out/gpu-bench.txt" || status=1
  else
    echo "gpu-check: benchmark skipped: out of time" | tee "$out/gpu-bench.txt" >&2
    status=1
  fi
  run_torch_checks "$dir" "$out" || status=1
  ((tests_status == 0)) || memcheck_failures "$dir" "$out"
  rm -rf "$dir"
  summary "$out"
  if ((status == 0)); then
    echo "gpu-check: every GPU test passed; results in $out"
  else
    echo "gpu-check: FAILED; results in $out" >&2
  fi
  return $status
}

# After a failed test run: each test that failed or did not finish (a
# crash ends the run, and a CUDA error poisons the tests after it) again on
# its own, under compute-sanitizer's memcheck where the machine has one, into
# OUT/gpu-memcheck.log.
memcheck_failures() {
  local dir="$1" out="$2" sanitizer="" name
  sanitizer="$(command -v compute-sanitizer || true)"
  [[ -z "$sanitizer" && -x /usr/local/cuda/bin/compute-sanitizer ]] &&
    sanitizer=/usr/local/cuda/bin/compute-sanitizer
  local passed
  passed="$(grep -o 'OK \] [^ ]*' "$out/gpu-tests.log" | awk '{print $3}' | sort -u || true)"
  local all
  all="$("$dir/bin/HeterPSRuntimeGPUTests" --gtest_list_tests |
    awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}' || true)"
  local count=0 seconds
  : >"$out/gpu-memcheck.log"
  for name in $all; do
    grep -qxF "$name" <<<"$passed" && continue
    ((count++ < 12)) || break
    seconds=$(limit 60)
    if ((seconds == 0)); then
      echo "=== out of time: the tests from $name on were not run again" >>"$out/gpu-memcheck.log"
      break
    fi
    echo "=== $name" >>"$out/gpu-memcheck.log"
    if [[ -n "$sanitizer" ]]; then
      timeout "$seconds" "$sanitizer" --tool memcheck --print-limit 5 \
        "$dir/bin/HeterPSRuntimeGPUTests" --gtest_filter="$name" \
        >>"$out/gpu-memcheck.log" 2>&1 || true
    else
      timeout "$seconds" "$dir/bin/HeterPSRuntimeGPUTests" --gtest_filter="$name" \
        >>"$out/gpu-memcheck.log" 2>&1 || true
    fi
  done
  echo "gpu-check: the tests that did not pass, again one by one${sanitizer:+ under memcheck}: $out/gpu-memcheck.log" >&2
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
