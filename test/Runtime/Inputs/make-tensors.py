"""Writes the CTR fixture's inputs for 5 examples as ONNX TensorProto files:
dense.pb (5x13 f32) and sparse.pb (5x8 i64 ids below 100)."""
import os
import sys

import numpy as np
from onnx import numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(3)
tensors = {
    "dense": rng.standard_normal((5, 13)).astype(np.float32),
    "sparse": rng.integers(0, 100, size=(5, 8)).astype(np.int64),
}
for name, value in tensors.items():
    with open(os.path.join(out, name + ".pb"), "wb") as f:
        f.write(numpy_helper.from_array(value, name).SerializeToString())
