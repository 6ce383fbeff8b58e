#!/bin/bash
# The pipelined executor against one worker and against the scheduler's
# prediction from measured op times (bench.py says how).
#
#   bench/pipeline/run.sh [build-dir] [bench.py options: --seconds=2
#                          --repeat=3 --models=mlp,ctr --batches=256,1024,4096
#                          --json=FILE]
#
# Needs heterps-opt and heterps-run built in build-dir (default: build) and
# /usr/bin/python3 with python3-numpy and python3-onnx.
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

exec /usr/bin/python3 "$src/bench/pipeline/bench.py" --build "$build" "$@"
