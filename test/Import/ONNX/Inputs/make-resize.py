#!/usr/bin/python3
"""Exports F.interpolate from PyTorch for resize.test: make-resize.py OUT_DIR

  interpolate.onnx  one model upsampling an image [batch, 2, 5, 6] four
                    ways (nearest x2, bilinear x2, bilinear with
                    align_corners to 7x9, bicubic x1.5), the results
                    flattened and concatenated; with OUT_DIR/inputs/x.pb
                    and PyTorch's output in OUT_DIR/expected/output.pb
"""

import os
import sys

import torch
import torch.nn.functional as F
from onnx import numpy_helper


class Interpolate(torch.nn.Module):
    def forward(self, x):
        parts = [
            F.interpolate(x, scale_factor=2, mode="nearest"),
            F.interpolate(x, scale_factor=2, mode="bilinear",
                          align_corners=False),
            F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True),
            F.interpolate(x, scale_factor=1.5, mode="bicubic",
                          align_corners=False),
        ]
        return torch.cat([p.flatten(1) for p in parts], dim=1)


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    torch.manual_seed(5)
    x = torch.randn(3, 2, 5, 6)
    model = Interpolate().eval()
    with torch.no_grad():
        torch.onnx.export(model, (x,), os.path.join(out, "interpolate.onnx"),
                          input_names=["x"], output_names=["output"],
                          dynamic_axes={"x": {0: "batch"},
                                        "output": {0: "batch"}},
                          opset_version=13)
        y = model(x)
    for name, value, sub in (("x", x, "inputs"), ("output", y, "expected")):
        with open(os.path.join(out, sub, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(value.numpy(), name)
                    .SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
