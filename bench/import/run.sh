#!/bin/bash
# Times the ONNX import on torchvision's resnet18 (random weights, 45 MB of
# initializers inline) and on a CTR model whose 10M x 16 embedding table is
# 640 MB of external data, against a bare protobuf parse of each.
#
#   bench/import/run.sh [build-dir] [--repeat=N]
#
# Needs heterps-bench-import built (ninja -C build heterps-bench-import),
# /usr/bin/python3 with python3-torch, python3-torchvision and python3-onnx,
# and about 1 GB of disk in <build-dir>/bench/import-data. The models are
# generated once and reused; delete that directory to regenerate them.
set -euo pipefail

src="$(cd "$(dirname "$0")/../.." && pwd)"
# The build directory is the first argument unless it is an option.
build="$src/build"
if [[ $# -gt 0 && "$1" != -* ]]; then
  build="$1"
  shift
fi
data="$build/bench/import-data"
bench="$build/bench/import/heterps-bench-import"
mkdir -p "$data"

if [[ ! -x "$bench" ]]; then
  echo "error: $bench is not built (ninja -C $build heterps-bench-import)" >&2
  exit 1
fi
if [[ ! -f "$data/resnet18.onnx" ]]; then
  /usr/bin/python3 "$src/scripts/export-torch-fixtures.py" \
    --resnet18 "$data/resnet18.onnx"
fi
if [[ ! -f "$data/ctr-large.onnx" || ! -f "$data/ctr-large.onnx.data" ]]; then
  /usr/bin/python3 "$src/bench/import/make-large-ctr.py" "$data" \
    --rows=10000000 --dim=16
fi

# /usr/bin/time -v reports the peak memory of the whole run where present.
if [[ -x /usr/bin/time ]]; then
  /usr/bin/time -f "wall %e s, peak RSS %M KiB" \
    "$bench" "$@" "$data/resnet18.onnx" "$data/ctr-large.onnx"
else
  "$bench" "$@" "$data/resnet18.onnx" "$data/ctr-large.onnx"
fi
