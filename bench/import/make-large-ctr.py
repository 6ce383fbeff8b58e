#!/usr/bin/python3
"""Writes a CTR model with one large embedding table stored as ONNX external
data, for bench/import/run.sh:

    /usr/bin/python3 bench/import/make-large-ctr.py OUT_DIR [--rows=N] [--dim=D]

OUT_DIR/ctr-large.onnx holds the graph and the small dense weights;
OUT_DIR/ctr-large.onnx.data the table's rows x dim float32 values (10M x 16
by default: 640 MB). The table is written in chunks straight from NumPy, so
the generator never holds it in memory and the .onnx stays a few KB.

Graph: ids = Gather(sparse, 0, axis=1); emb = Gather(table, ids);
bottom = Relu(Gemm(dense)); Sigmoid(Gemm(Concat(emb, bottom))).
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CHUNK_ROWS = 1 << 20


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--dim", type=int, default=16)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(20240605)

    data_name = "ctr-large.onnx.data"
    with open(os.path.join(args.out, data_name), "wb") as f:
        for start in range(0, args.rows, CHUNK_ROWS):
            rows = min(CHUNK_ROWS, args.rows - start)
            rng.standard_normal((rows, args.dim), dtype=np.float32).tofile(f)

    table = TensorProto()
    table.name = "emb.weight"
    table.data_type = TensorProto.FLOAT
    table.dims.extend([args.rows, args.dim])
    # Set by hand: onnx's set_external_data wants the data in raw_data first.
    table.data_location = TensorProto.EXTERNAL
    for key, value in (("location", data_name), ("offset", "0"),
                       ("length", str(args.rows * args.dim * 4))):
        entry = table.external_data.add()
        entry.key, entry.value = key, value

    def weight(name, *shape):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    d = args.dim
    initializers = [
        table,
        numpy_helper.from_array(np.array(0, dtype=np.int64), "col0"),
        weight("bottom.weight", d, 13), weight("bottom.bias", d),
        weight("top.weight", 1, 2 * d), weight("top.bias", 1),
    ]
    nodes = [
        helper.make_node("Gather", ["sparse", "col0"], ["ids"], name="slot0",
                         axis=1),
        helper.make_node("Gather", ["emb.weight", "ids"], ["emb"],
                         name="lookup"),
        helper.make_node("Gemm", ["dense", "bottom.weight", "bottom.bias"],
                         ["b0"], name="bottom", transB=1),
        helper.make_node("Relu", ["b0"], ["b1"], name="bottom_relu"),
        helper.make_node("Concat", ["emb", "b1"], ["x"], name="concat",
                         axis=1),
        helper.make_node("Gemm", ["x", "top.weight", "top.bias"], ["logit"],
                         name="top", transB=1),
        helper.make_node("Sigmoid", ["logit"], ["prob"], name="prob"),
    ]
    graph = helper.make_graph(
        nodes, "ctr_large",
        [helper.make_tensor_value_info("dense", TensorProto.FLOAT,
                                       ["batch", 13]),
         helper.make_tensor_value_info("sparse", TensorProto.INT64,
                                       ["batch", 1])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT,
                                       ["batch", 1])],
        initializers)
    model = helper.make_model(
        graph, producer_name="heterps-bench",
        opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = os.path.join(args.out, "ctr-large.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    onnx.checker.check_model(path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes) and {data_name} "
          f"({args.rows} x {args.dim} float32)")


if __name__ == "__main__":
    main()
