#!/usr/bin/env bash
# The main job on the embedded default: builds heterps-opt, prints what every
# op of the example CTR model costs at a batch of 512, then places, provisions
# and stages it on an AWS cluster for 200000 samples/s with the RL scheduler
# and prints the pipeline and the placement report. Later stages of the
# project grow this into import, compile and train.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HETERPS_BUILD_DIR:-"$root/build"}
report=${HETERPS_REPORT:-"$build_dir/ctr-placement.json"}

"$root/scripts/build.sh" heterps-opt
opt="$build_dir/bin/heterps-opt"
"$opt" "$root/examples/ctr.mlir" --heterps-print-op-cost=batch-size=512 \
  -o /dev/null
"$opt" "$root/examples/ctr.mlir" --heterps-schedule="cluster=$root/examples/clusters/aws-c6i-p4d.json solver=rl throughput=2000000 batch=512 samples=1e9 micro-batches=4 report=$report"
echo "placement report: $report"
cat "$report"
