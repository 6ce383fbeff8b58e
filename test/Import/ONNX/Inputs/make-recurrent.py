#!/usr/bin/python3
"""Writes recurrent-layer models for recurrent.test: make-recurrent.py OUT_DIR

  masked-gru.onnx   a bidirectional GRU (linear_before_reset = 1,
                    layout = 1: batch first) over sequences of different
                    lengths (sequence_lens) from an initial state; with
                    OUT_DIR/inputs/{x,lengths,h0}.pb and the outputs PyTorch
                    computes for the same packed sequences (nn.GRU on a
                    PackedSequence: the padding of y is zero, y_h the state
                    after each row's last step, in both directions) in
                    OUT_DIR/expected/{y,y_h}.pb
  fill-elsewhere.onnx  a ConstantOfShape of the batch's shape read by an Add
                    (refused: only a recurrent layer's initial state may be
                    one)
  activations.onnx  a GRU with activations Relu, Tanh (refused)
  clip.onnx         an LSTM with a clip (refused)
  hidden.onnx       an RNN whose hidden_size disagrees with R (refused)
"""

import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

T, B, I, H = 5, 3, 4, 6


def tensor_file(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def save(path, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, os.path.basename(path), inputs, outputs,
                              list(initializers))
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def reorder(w):
    """PyTorch's gate blocks r, z, n as ONNX's z, r, n."""
    r, z, n = np.split(w, 3, axis=0)
    return np.concatenate([z, r, n], axis=0)


def masked_gru(out):
    torch.manual_seed(7)
    gru = torch.nn.GRU(I, H, batch_first=True, bidirectional=True)
    x = torch.randn(B, T, I)
    lengths = torch.tensor([5, 2, 4])
    h0 = torch.randn(2, B, H)
    with torch.no_grad():
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            x, lengths, batch_first=True, enforce_sorted=False)
        y, yh = gru(packed, h0)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(
            y, batch_first=True, total_length=T)
    p = {k: v.numpy() for k, v in gru.state_dict().items()}
    w = np.stack([reorder(p["weight_ih_l0"]), reorder(p["weight_ih_l0_reverse"])])
    r = np.stack([reorder(p["weight_hh_l0"]), reorder(p["weight_hh_l0_reverse"])])
    b = np.stack([
        np.concatenate([reorder(p["bias_ih_l0"]), reorder(p["bias_hh_l0"])]),
        np.concatenate([reorder(p["bias_ih_l0_reverse"]),
                        reorder(p["bias_hh_l0_reverse"])])])
    node = helper.make_node(
        "GRU", ["x", "W", "R", "B", "lengths", "h0"], ["y", "y_h"],
        name="gru", hidden_size=H, direction="bidirectional", layout=1,
        linear_before_reset=1)
    save(os.path.join(out, "masked-gru.onnx"), [node],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                        ["batch", T, I]),
          helper.make_tensor_value_info("lengths", TensorProto.INT32,
                                        ["batch"]),
          helper.make_tensor_value_info("h0", TensorProto.FLOAT,
                                        ["batch", 2, H])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                        ["batch", T, 2, H]),
          helper.make_tensor_value_info("y_h", TensorProto.FLOAT,
                                        ["batch", 2, H])],
         [numpy_helper.from_array(w.astype(np.float32), "W"),
          numpy_helper.from_array(r.astype(np.float32), "R"),
          numpy_helper.from_array(b.astype(np.float32), "B")])
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    tensor_file(os.path.join(out, "inputs", "x.pb"), x.numpy(), "x")
    tensor_file(os.path.join(out, "inputs", "lengths.pb"),
                lengths.numpy().astype(np.int32), "lengths")
    # h0 batch first: [B, D, H].
    tensor_file(os.path.join(out, "inputs", "h0.pb"),
                h0.numpy().transpose(1, 0, 2).copy(), "h0")
    # y [B, T, D, H] from PyTorch's [B, T, D*H]; y_h [B, D, H].
    tensor_file(os.path.join(out, "expected", "y.pb"),
                y.numpy().reshape(B, T, 2, H), "y")
    tensor_file(os.path.join(out, "expected", "y_h.pb"),
                yh.numpy().transpose(1, 0, 2).copy(), "y_h")


def weights(gates, directions=1):
    rng = np.random.default_rng(3)
    return [numpy_helper.from_array(
                rng.standard_normal((directions, gates * H, I)).astype(
                    np.float32), "W"),
            numpy_helper.from_array(
                rng.standard_normal((directions, gates * H, H)).astype(
                    np.float32), "R")]


def refused(out):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", T, I])
    y_h = helper.make_tensor_value_info("y_h", TensorProto.FLOAT,
                                        ["batch", 1, H])
    save(os.path.join(out, "activations.onnx"),
         [helper.make_node("GRU", ["x", "W", "R"], ["", "y_h"], name="gru",
                           hidden_size=H, layout=1, activations=["Relu", "Tanh"])],
         [x], [y_h], weights(3))
    save(os.path.join(out, "clip.onnx"),
         [helper.make_node("LSTM", ["x", "W", "R"], ["", "y_h"], name="lstm",
                           hidden_size=H, layout=1, clip=3.0)],
         [x], [y_h], weights(4))
    save(os.path.join(out, "hidden.onnx"),
         [helper.make_node("RNN", ["x", "W", "R"], ["", "y_h"], name="rnn",
                           hidden_size=H + 1, layout=1)],
         [x], [y_h], weights(1))
    # zeros [B, T, I] from Shape(x)[0], added to data.
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Constant", [], ["index"], name="index",
                         value=helper.make_tensor("index", TensorProto.INT64,
                                                  [1], [0])),
        helper.make_node("Gather", ["shape", "index"], ["batch"],
                         name="batch", axis=0),
        helper.make_node("Constant", [], ["rest"], name="rest",
                         value=helper.make_tensor("rest", TensorProto.INT64,
                                                  [2], [T, I])),
        helper.make_node("Concat", ["batch", "rest"], ["dims"],
                         name="dims", axis=0),
        helper.make_node("ConstantOfShape", ["dims"], ["zeros"],
                         name="zeros"),
        helper.make_node("Add", ["x", "zeros"], ["y"], name="add"),
    ]
    save(os.path.join(out, "fill-elsewhere.onnx"), nodes, [x],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                        ["batch", T, I])])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    masked_gru(out)
    refused(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
