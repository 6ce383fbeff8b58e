#!/bin/bash
# Training and inference samples/s of heterps-run against PyTorch on the
# exported CTR model (batch 512), MLP (batch 256) and GRU sequence CTR model
# (batch 512), 1 and 2 threads.
#
#   bench/train/run.sh [build-dir] [bench.py options: --threads=1,2
#                       --seconds=4 --repeat=2 --models=ctr,mlp,gru --json=FILE]
#
# Needs heterps-opt and heterps-run built in build-dir (default: build) and
# /usr/bin/python3 with python3-torch and python3-onnx. Debian's torch links
# libblas.so.3, which is the slow reference BLAS unless the OpenBLAS
# alternative is chosen; LD_LIBRARY_PATH below puts libopenblas0-pthread's
# libblas.so.3 first either way (apt-get install libopenblas0-pthread).
# bench.py prints the BLAS that torch actually loaded.
set -euo pipefail

src="$(cd "$(dirname "$0")/../.." && pwd)"
# The build directory is the first argument unless it is an option.
build="$src/build"
if [[ $# -gt 0 && "$1" != -* ]]; then
  build="$1"
  shift
fi

for tool in heterps-opt heterps-run; do
  if [[ ! -x "$build/bin/$tool" ]]; then
    echo "error: $build/bin/$tool is not built (ninja -C $build $tool)" >&2
    exit 1
  fi
done

openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
if [[ ! -e "$openblas/libblas.so.3" ]]; then
  echo "error: $openblas/libblas.so.3 missing: install libopenblas0-pthread," \
    "or torch runs on the reference BLAS" >&2
  exit 1
fi
export LD_LIBRARY_PATH="$openblas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

exec /usr/bin/python3 "$src/bench/train/bench.py" --build "$build" "$@"
