#!/usr/bin/env bash
# The main job on the embedded default: builds heterps-opt and runs it on the
# example CTR model, printing the verified IR and what every op costs at a
# batch of 512. Later stages of the project grow this into import, compile
# and train.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HETERPS_BUILD_DIR:-"$root/build"}

"$root/scripts/build.sh" heterps-opt
"$build_dir/bin/heterps-opt" "$root/examples/ctr.mlir" \
  --heterps-print-op-cost=batch-size=512 "$@"
