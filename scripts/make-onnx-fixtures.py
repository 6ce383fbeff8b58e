#!/usr/bin/python3
"""Writes the small ONNX fixtures of test/Import/ONNX/Inputs/.

Run with Debian's interpreter (it sees python3-onnx):

    /usr/bin/python3 scripts/make-onnx-fixtures.py [output-dir]

Deterministic: weights come from a seeded NumPy generator and the bad inputs
are fixed byte strings, so rerunning reproduces the committed files exactly.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = (sys.argv[1] if len(sys.argv) > 1 else
       os.path.join(HERE, "..", "test", "Import", "ONNX", "Inputs"))
RNG = np.random.default_rng(20240601)


def weight(name, *shape):
    return numpy_helper.from_array(
        (RNG.standard_normal(shape) * 0.1).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def batch_input(name, elem, *dims):
    return helper.make_tensor_value_info(name, elem, ["batch", *dims])


def model(graph, opset=OPSET):
    m = helper.make_model(graph, producer_name="heterps-fixtures",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def save(m, name, check=True):
    if check:
        onnx.checker.check_model(m)
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def mlp():
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h1"],
                         name="fc1", transB=1),
        helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
        helper.make_node("Gemm", ["a1", "fc2.weight", "fc2.bias"], ["h2"],
                         name="fc2", transB=1),
        helper.make_node("Relu", ["h2"], ["a2"], name="relu2"),
        helper.make_node("MatMul", ["a2", "fc3.weight"], ["h3"], name="fc3"),
        helper.make_node("Add", ["h3", "fc3.bias"], ["logits"], name="fc3_bias"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax",
                         axis=-1),
    ]
    g = helper.make_graph(
        nodes, "mlp",
        [batch_input("x", TensorProto.FLOAT, 16)],
        [batch_input("probs", TensorProto.FLOAT, 4)],
        [weight("fc1.weight", 32, 16), weight("fc1.bias", 32),
         weight("fc2.weight", 16, 32), weight("fc2.bias", 16),
         weight("fc3.weight", 16, 4), weight("fc3.bias", 4)])
    save(model(g), "mlp.onnx")


def ctr(slots=8, vocab=50, dim=4, dense=13):
    """A DLRM-like CTR model: one int64 column per sparse slot."""
    nodes, inits = [], []
    embedded = []
    # Half of the slots take their column with Gather, half with Slice, as
    # exporters do.
    for s in range(slots):
        col = f"slot{s}.ids"
        if s % 2 == 0:
            inits.append(ints(f"slot{s}.col", s))
            nodes.append(helper.make_node("Gather", ["sparse", f"slot{s}.col"],
                                          [col], name=f"slot{s}_column",
                                          axis=1))
        else:
            inits += [ints(f"slot{s}.start", [s]), ints(f"slot{s}.end", [s + 1]),
                      ints(f"slot{s}.axis", [1])]
            nodes.append(helper.make_node(
                "Slice", ["sparse", f"slot{s}.start", f"slot{s}.end",
                          f"slot{s}.axis"], [col + ".2d"],
                name=f"slot{s}_column"))
            inits.append(ints(f"slot{s}.sq", [1]))
            nodes.append(helper.make_node("Squeeze", [col + ".2d", f"slot{s}.sq"],
                                          [col], name=f"slot{s}_squeeze"))
        inits.append(weight(f"emb{s}", vocab, dim))
        nodes.append(helper.make_node("Gather", [f"emb{s}", col],
                                      [f"slot{s}.emb"], name=f"slot{s}_lookup"))
        embedded.append(f"slot{s}.emb")
    nodes.append(helper.make_node("Concat", embedded + ["dense_out"],
                                  ["features"], name="concat", axis=1))
    # Bottom MLP over the dense features, placed before the concat.
    bottom = [
        helper.make_node("Gemm", ["dense", "bot.weight", "bot.bias"],
                         ["dense_h"], name="bottom_fc", transB=1),
        helper.make_node("Relu", ["dense_h"], ["dense_out"], name="bottom_relu"),
    ]
    inits += [weight("bot.weight", dim, dense), weight("bot.bias", dim)]
    width = (slots + 1) * dim
    top = [
        helper.make_node("Gemm", ["features", "top1.weight", "top1.bias"],
                         ["t1"], name="top_fc1", transB=1),
        helper.make_node("Relu", ["t1"], ["t1r"], name="top_relu1"),
        helper.make_node("Gemm", ["t1r", "top2.weight", "top2.bias"],
                         ["t2"], name="top_fc2", transB=1),
        helper.make_node("Sigmoid", ["t2"], ["ctr"], name="predict"),
    ]
    inits += [weight("top1.weight", 16, width), weight("top1.bias", 16),
              weight("top2.weight", 1, 16), weight("top2.bias", 1)]
    g = helper.make_graph(
        bottom + nodes + top, "ctr",
        [batch_input("dense", TensorProto.FLOAT, dense),
         batch_input("sparse", TensorProto.INT64, slots)],
        [batch_input("ctr", TensorProto.FLOAT, 1)], inits)
    save(model(g), "ctr.onnx")


def cnn():
    nodes = [
        helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["c1"],
                         name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["c1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"],
                         ["b1"], name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.weight"], ["c2"], name="conv2",
                         auto_pad="SAME_UPPER"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"],
                         name="fc", transB=1),
    ]
    bn = [numpy_helper.from_array(np.ones(8, np.float32), "bn1.scale"),
          numpy_helper.from_array(np.zeros(8, np.float32), "bn1.bias"),
          numpy_helper.from_array(np.zeros(8, np.float32), "bn1.mean"),
          numpy_helper.from_array(np.ones(8, np.float32), "bn1.var")]
    g = helper.make_graph(
        nodes, "cnn",
        [batch_input("image", TensorProto.FLOAT, 3, 16, 16)],
        [batch_input("logits", TensorProto.FLOAT, 10)],
        [weight("conv1.weight", 8, 3, 3, 3), weight("conv1.bias", 8), *bn,
         weight("conv2.weight", 16, 8, 3, 3), weight("fc.weight", 10, 16),
         weight("fc.bias", 10)])
    save(model(g), "cnn.onnx")


def shape_subgraph():
    """Reshape(x, Concat(Shape(x)[0], -1)): the exporter's flatten."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="batch_1d"),
        helper.make_node("Concat", ["n1", "minus1"], ["target"],
                         name="target_shape", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="flatten"),
        helper.make_node("Mul", ["y", "y"], ["z"], name="square"),
        helper.make_node("ReduceSum", ["z", "axes1"], ["out"], name="sum",
                         keepdims=0),
    ]
    g = helper.make_graph(
        nodes, "shape_subgraph",
        [batch_input("x", TensorProto.FLOAT, 4, 6)],
        [batch_input("out", TensorProto.FLOAT)],
        [ints("zero", 0), ints("axes0", [0]), ints("minus1", [-1]),
         ints("axes1", [1])])
    save(model(g), "shape-subgraph.onnx")


def external():
    """A Gemm whose weight lives in external.onnx.data next to the model."""
    w = weight("fc.weight", 8, 4)
    bias = weight("fc.bias", 8)
    data = w.raw_data if w.raw_data else numpy_helper.to_array(w).tobytes()
    with open(os.path.join(OUT, "external.onnx.data"), "wb") as f:
        f.write(b"\0" * 16)  # exercise the offset
        f.write(data)
    w.ClearField("raw_data")
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "external.onnx.data"), ("offset", "16"),
                 ("length", str(len(data)))):
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"],
                          name="fc", transB=1)],
        "external",
        [batch_input("x", TensorProto.FLOAT, 4)],
        [batch_input("y", TensorProto.FLOAT, 8)], [w, bias])
    # The checker resolves external data against the model's directory, so
    # it checks the saved file.
    onnx.checker.check_model(save(model(g), "external.onnx", check=False))
    # The same model pointing at a file that is not there.
    w.external_data[0].value = "missing.onnx.data"
    g = helper.make_graph(g.node, "external", g.input, g.output, [w, bias])
    save(model(g), "external-missing.onnx", check=False)


def old_opset():
    """Opset 9 signatures: axes, bounds and ratio are attributes, Softmax
    coerces to 2-D at its axis."""
    nodes = [
        helper.make_node("Unsqueeze", ["x"], ["u"], name="unsqueeze",
                         axes=[1]),
        helper.make_node("Squeeze", ["u"], ["s"], name="squeeze", axes=[1]),
        helper.make_node("Clip", ["s"], ["c"], name="clip", min=-1.0, max=1.0),
        helper.make_node("Slice", ["c"], ["sl"], name="slice", starts=[1],
                         ends=[5], axes=[1]),
        helper.make_node("Dropout", ["sl"], ["d"], name="dropout", ratio=0.25),
        helper.make_node("Softmax", ["d"], ["p"], name="softmax", axis=1),
        helper.make_node("ReduceSum", ["p"], ["r"], name="sum", axes=[2],
                         keepdims=0),
    ]
    g = helper.make_graph(
        nodes, "old_opset", [batch_input("x", TensorProto.FLOAT, 6, 3)],
        [batch_input("r", TensorProto.FLOAT, 4)])
    save(model(g, opset=9), "opset9.onnx")


def bad_inputs():
    good = open(os.path.join(OUT, "mlp.onnx"), "rb").read()
    with open(os.path.join(OUT, "truncated.onnx"), "wb") as f:
        f.write(good[: len(good) // 3])
    open(os.path.join(OUT, "empty.onnx"), "wb").close()
    with open(os.path.join(OUT, "random.onnx"), "wb") as f:
        f.write(np.random.default_rng(7).integers(0, 256, 512,
                                                  dtype=np.uint8).tobytes())
    x = [batch_input("x", TensorProto.FLOAT, 4)]
    y = [batch_input("y", TensorProto.FLOAT, 4)]
    # a -> b -> a: a cycle (the checker sees a node using a later output).
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["a"], name="first"),
         helper.make_node("Relu", ["a"], ["b"], name="second"),
         helper.make_node("Identity", ["b"], ["y"], name="out")],
        "cycle", x, y)
    save(model(g), "cycle.onnx", check=False)
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")],
        "undefined", x, y)
    save(model(g), "undefined-input.onnx", check=False)
    g = helper.make_graph(
        [helper.make_node("Sin", ["x"], ["y"], name="sine")],
        "unsupported", x, y)
    save(model(g), "unsupported-op.onnx")
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "unknown_dim",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       ["batch", "seq"])])
    save(model(g), "unknown-dim.onnx")
    # A Reshape whose target shape is computed at run time.
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        "runtime_shape",
        [batch_input("x", TensorProto.FLOAT, 4),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])], y)
    save(model(g), "runtime-shape.onnx")
    # An output that is the (batch-dependent) shape itself.
    g = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["y"], name="shape")],
        "batch_output", x,
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2])])
    save(model(g), "batch-output.onnx")
    # An integer Relu: imports, but the dialect's relu takes float tensors.
    g = helper.make_graph(
        [helper.make_node("Relu", ["i"], ["y"], name="int_relu")],
        "int_relu", [batch_input("i", TensorProto.INT64, 4)],
        [batch_input("y", TensorProto.INT64, 4)])
    save(model(g), "int-relu.onnx")


def main():
    os.makedirs(OUT, exist_ok=True)
    mlp()
    ctr()
    cnn()
    shape_subgraph()
    old_opset()
    external()
    bad_inputs()


if __name__ == "__main__":
    main()
