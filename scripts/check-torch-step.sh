#!/bin/bash
# Checks an exported fixture against PyTorch: inference, and one SGD step.
#
#   scripts/check-torch-step.sh MODEL FIXTURE.onnx WORK_DIR \
#       [--loss=bce|softmax-ce|mse] [--tolerance=T] [--float64]
#
# MODEL is a name scripts/torch-sgd-reference.py knows. The reference
# draws a seeded batch of 16 (its inputs and a label), the PyTorch forward
# and the parameters after one torch.optim.SGD step (lr 0.1; the loss bce,
# softmax-ce for the classifiers, mse for regression); the fixture is compiled with
# heterps-autodiff and heterps-emit-plan, run by heterps-run --infer on the
# same inputs and trained one step from the same weights. Prints
# compare-tensors.py's report of both, "INFER: PASS" and "STEP: PASS" when
# they agree (outputs within 1e-4, parameters within T relative, 1e-5 by
# default); exits non-zero otherwise. With --float64 the reference is also
# computed in float64, and heterps is judged against that exact answer with
# PyTorch's float32 run as the baseline (compare-tensors.py --baseline):
# for deep networks that normalise with batch statistics, where two correct
# float32 runs differ by more than a fixed tolerance.
# heterps-opt and heterps-run come from $HETERPS_TOOLS_DIR when it is set
# (the lit tests set it to the build's bin/), else from PATH.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 MODEL FIXTURE.onnx WORK_DIR [--loss=L] [--tolerance=T]" \
    "[--float64]" >&2
  exit 2
fi
model=$1 onnx=$2 work=$3 loss=bce tolerance=1e-5 float64=
shift 3
for option in "$@"; do
  case $option in
    --loss=bce | --loss=softmax-ce | --loss=mse) loss=${option#--loss=} ;;
    --tolerance=*) tolerance=${option#--tolerance=} ;;
    --float64) float64=1 ;;
    *) echo "$0: unknown option '$option' (--loss=bce|softmax-ce|mse," \
         "--tolerance=T, --float64)" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${HETERPS_TOOLS_DIR:-}" ]; then
  PATH=$HETERPS_TOOLS_DIR:$PATH
fi
python=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
"$python" "$here/torch-sgd-reference.py" --model "$model" --onnx "$onnx" \
  --out "$work/ref" --batch 16 --lr 0.1
# What heterps is compared with: PyTorch's float32 results, or the float64
# ones with the float32 ones as the baseline.
expected=$work/ref baseline=()
if [ -n "$float64" ]; then
  "$python" "$here/torch-sgd-reference.py" --model "$model" --onnx "$onnx" \
    --out "$work/ref64" --batch 16 --lr 0.1 --float64
  expected=$work/ref64
fi
heterps-opt "$onnx" \
  --heterps-autodiff="loss=$loss optimizer=sgd learning-rate=0.1" \
  --heterps-emit-plan="file=$work/model.plan" -o /dev/null
inputs=()
for file in "$work"/ref/inputs/*.pb; do
  name=$(basename "$file" .pb)
  [ "$name" = label ] || inputs+=(--input "$name=$file")
done
heterps-run "$work/model.plan" --infer "${inputs[@]}" \
  --output-dir="$work/out" >/dev/null
[ -n "$float64" ] && baseline=(--baseline "$work/ref/output")
"$python" "$here/compare-tensors.py" "$work/out" "$expected/output" \
  "${baseline[@]}" |
  sed 's/^PASS$/INFER: PASS/; s/^FAIL$/INFER: FAIL/'
heterps-run "$work/model.plan" "${inputs[@]}" \
  --input label="$work/ref/inputs/label.pb" --steps=1 --batch=16 \
  --log-every=0 --save="$work/ckpt" --export-tables="$work/ckpt/tables" \
  >/dev/null
[ -n "$float64" ] && baseline=(--baseline "$work/ref/expected")
"$python" "$here/compare-tensors.py" "$work/ckpt" "$expected/expected" \
  --initial "$work/ref/initial" --tolerance "$tolerance" "${baseline[@]}" |
  sed 's/^PASS$/STEP: PASS/; s/^FAIL$/STEP: FAIL/'
