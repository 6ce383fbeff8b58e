#!/bin/bash
# Checks an exported fixture against PyTorch: inference, and one SGD step.
#
#   scripts/check-torch-step.sh MODEL FIXTURE.onnx WORK_DIR [STEP_TOLERANCE]
#
# MODEL is a name scripts/torch-sgd-reference.py knows. The reference
# draws a seeded batch of 16 (its inputs and a label), the PyTorch forward
# and the parameters after one torch.optim.SGD step (lr 0.1, bce); the
# fixture is compiled with heterps-autodiff and heterps-emit-plan, run by
# heterps-run --infer on the same inputs and trained one step from the same
# weights. Prints compare-tensors.py's report of both, "INFER: PASS" and
# "STEP: PASS" when they agree (parameters within STEP_TOLERANCE relative,
# 1e-5 by default; outputs within 1e-4); exits non-zero otherwise.
# heterps-opt and heterps-run come from $HETERPS_TOOLS_DIR when it is set
# (the lit tests set it to the build's bin/), else from PATH.
set -euo pipefail
model=$1 onnx=$2 work=$3 tolerance=${4:-1e-5}
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${HETERPS_TOOLS_DIR:-}" ]; then
  PATH=$HETERPS_TOOLS_DIR:$PATH
fi
python=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
"$python" "$here/torch-sgd-reference.py" --model "$model" --onnx "$onnx" \
  --out "$work/ref" --batch 16 --lr 0.1
heterps-opt "$onnx" \
  --heterps-autodiff='loss=bce optimizer=sgd learning-rate=0.1' \
  --heterps-emit-plan="file=$work/model.plan" -o /dev/null
inputs=()
for file in "$work"/ref/inputs/*.pb; do
  name=$(basename "$file" .pb)
  [ "$name" = label ] || inputs+=(--input "$name=$file")
done
heterps-run "$work/model.plan" --infer "${inputs[@]}" \
  --output-dir="$work/out" >/dev/null
"$python" "$here/compare-tensors.py" "$work/out" "$work/ref/output" |
  sed 's/^PASS$/INFER: PASS/; s/^FAIL$/INFER: FAIL/'
heterps-run "$work/model.plan" "${inputs[@]}" \
  --input label="$work/ref/inputs/label.pb" --steps=1 --batch=16 \
  --log-every=0 --save="$work/ckpt" --export-tables="$work/ckpt/tables" \
  >/dev/null
"$python" "$here/compare-tensors.py" "$work/ckpt" "$work/ref/expected" \
  --initial "$work/ref/initial" --tolerance "$tolerance" |
  sed 's/^PASS$/STEP: PASS/; s/^FAIL$/STEP: FAIL/'
