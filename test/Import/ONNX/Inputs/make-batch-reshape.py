#!/usr/bin/python3
"""Writes Reshape models whose target shape is computed from the batch:
make-batch-reshape.py OUT_DIR

Each model reads x of shape [batch, 4, 6] and reshapes it with a target
built from Shape(x)[0] (the batch, B) as PyTorch's exporter builds them:

  merge.onnx     [B*4, 6] (Mul), then [B, -1] of that: [B, 24]
  zero.onnx      [0, 2, -1]: the batch copied, [B, 2, 12]
  two.onnx       [B, B, -1]: two dimensions from the batch (refused)
  unfollowed.onnx [B + 1, -1]: a size the importer does not follow, with a
                 -1 that depends on it (refused)
  mismatch.onnx  [B*2, 6]: 12 elements per sample where x has 24 (refused)
"""

import os
import sys

import onnx
from onnx import TensorProto, helper


def const(name, values):
    return helper.make_node("Constant", [], [name], name=name,
                            value=helper.make_tensor(name, TensorProto.INT64,
                                                     [len(values)], values))


def batch_nodes():
    """B as a 1-element tensor, from Shape(x)."""
    return [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
            const("zero_index", [0]),
            helper.make_node("Gather", ["shape", "zero_index"], ["batch"],
                             name="batch", axis=0)]


def save(path, nodes, out_dims):
    graph = helper.make_graph(
        nodes, os.path.basename(path),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       ["batch", 4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_dims)])
    onnx.save(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    save(os.path.join(out, "merge.onnx"), batch_nodes() + [
        const("four", [4]), const("six", [6]), const("minus_one", [-1]),
        helper.make_node("Mul", ["batch", "four"], ["rows"], name="rows"),
        helper.make_node("Concat", ["rows", "six"], ["merged_shape"],
                         name="merged_shape", axis=0),
        helper.make_node("Reshape", ["x", "merged_shape"], ["merged"],
                         name="merge"),
        helper.make_node("Concat", ["batch", "minus_one"], ["split_shape"],
                         name="split_shape", axis=0),
        helper.make_node("Reshape", ["merged", "split_shape"], ["y"],
                         name="split"),
    ], ["batch", 24])
    save(os.path.join(out, "zero.onnx"), [
        const("target", [0, 2, -1]),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ], ["batch", 2, 12])
    save(os.path.join(out, "two.onnx"), batch_nodes() + [
        const("minus_one", [-1]),
        helper.make_node("Concat", ["batch", "batch", "minus_one"], ["target"],
                         name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ], ["batch", "batch", 1])
    save(os.path.join(out, "unfollowed.onnx"), batch_nodes() + [
        const("one", [1]), const("minus_one", [-1]),
        helper.make_node("Add", ["batch", "one"], ["more"], name="more"),
        helper.make_node("Concat", ["more", "minus_one"], ["target"],
                         name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ], ["rows", "cols"])
    save(os.path.join(out, "mismatch.onnx"), batch_nodes() + [
        const("two", [2]), const("six", [6]),
        helper.make_node("Mul", ["batch", "two"], ["rows"], name="rows"),
        helper.make_node("Concat", ["rows", "six"], ["target"],
                         name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ], ["rows", 6])


if __name__ == "__main__":
    main()
