#!/usr/bin/env bash
# The main job on the embedded default: compiles the example CTR model
# (examples/ctr.mlir) into a training step, schedules it on an AWS cluster
# for 2M samples/s (the rl solver's plan: CPU stages for some embedding
# lookups, a GPU stage for the MLP and the others; --print-plan shows it), writes
# the plan, and trains it with heterps-run in this process on synthetic CTR
# data, the tables in the in-process parameter store. Without a GPU the GPU
# stage runs on the CPU (--fallback=cpu).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HETERPS_BUILD_DIR:-"$root/build"}
report=${HETERPS_REPORT:-"$build_dir/ctr-placement.json"}
plan="$build_dir/ctr.plan"

"$root/scripts/build.sh" heterps-opt heterps-run
opt="$build_dir/bin/heterps-opt"
run="$build_dir/bin/heterps-run"

"$opt" "$root/examples/ctr.mlir" --heterps-print-op-cost=batch-size=512 \
  -o /dev/null
"$opt" "$root/examples/ctr.mlir" \
  --heterps-autodiff='optimizer=adagrad learning-rate=0.05' \
  --heterps-schedule="cluster=$root/examples/clusters/aws-c6i-p4d.json solver=rl throughput=2000000 batch=512 samples=1e9 micro-batches=4 report=$report" \
  --heterps-emit-plan="file=$plan batch=512" -o "$build_dir/ctr-scheduled.mlir"
echo "placement report: $report"
cat "$report"
echo
"$run" "$plan" --print-plan
"$run" "$plan" --fallback=cpu --epochs=2 --log-every=32 --threads="$(nproc)"
