#!/usr/bin/python3
"""Writes a one-node Einsum model: make-einsum.py OUT.onnx EQUATION SHAPE...

Each SHAPE is an input's dimensions, comma-separated ('?' for the batch).
The output's shape is NumPy's einsum of the shapes (the batch as 2); an
equation NumPy refuses gets a 0-D output (the importer refuses it first)."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def main():
    out, equation, shapes = sys.argv[1], sys.argv[2], sys.argv[3:]
    inputs, arrays = [], []
    for i, shape in enumerate(shapes):
        dims = [d if d == "?" else int(d) for d in shape.split(",") if d]
        arrays.append(np.zeros([2 if d == "?" else d for d in dims]))
        dims = ["batch" if d == "?" else d for d in dims]
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT,
                                                    dims))
    try:
        out_dims = list(np.einsum(equation, *arrays).shape)
        if shapes and shapes[0].startswith("?") and out_dims:
            out_dims[0] = "batch"
    except ValueError:
        out_dims = []
    node = helper.make_node("Einsum", [v.name for v in inputs], ["y"],
                            name="einsum", equation=equation)
    graph = helper.make_graph([node], "einsum", inputs,
                              [helper.make_tensor_value_info(
                                  "y", TensorProto.FLOAT, out_dims)])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, out)


if __name__ == "__main__":
    main()
