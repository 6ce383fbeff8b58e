#!/usr/bin/env bash
# Installs a build tree into a scratch prefix (cmake --install), builds
# examples/cpp against it with find_package(HeterPS), and checks that the
# model it compiles and trains in process ends at the loss heterps-run (the
# installed one) reaches on the same plan.
#
#   test/Install/check-install.sh BUILD_DIR SCRATCH_DIR [CMAKE]
set -euo pipefail
build=$1 scratch=$2 cmake=${3:-cmake}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
step() {
  local log=$scratch/$1.log
  shift
  if ! "$@" > "$log" 2>&1; then
    echo "check-install: failed: $*" >&2
    tail -40 "$log" >&2
    exit 1
  fi
}
step install "$cmake" --install "$build" --prefix "$scratch/prefix"
linker=()
if command -v ld.lld > /dev/null; then
  linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld)
fi
step configure "$cmake" -S "$src/examples/cpp" -B "$scratch/example" -G Ninja \
  -DHeterPS_DIR="$scratch/prefix/lib/cmake/HeterPS" "${linker[@]}"
step build "$cmake" --build "$scratch/example"

model=$src/test/Import/ONNX/Inputs/torch-ctr.onnx
library=$("$scratch/example/train-onnx" "$model" 20 "$scratch/ctr.plan" | tail -1)
tool=$("$scratch/prefix/bin/heterps-run" "$scratch/ctr.plan" --steps=20 \
  --log-every=0 | tail -1)
echo "train-onnx:  $library"
echo "heterps-run: $tool"
if [[ "$library" != *"last loss"* || "${library##*last loss }" != "${tool##*last loss }" ]]; then
  echo "check-install: the library and heterps-run end at different losses" >&2
  exit 1
fi
echo "check-install: equal"
