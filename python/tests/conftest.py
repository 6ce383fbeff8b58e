"""Paths the tests share: the repository, the build tree and its tools."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("HETERPS_BUILD_DIR", ROOT / "build")).resolve()
ONNX_INPUTS = ROOT / "test" / "Import" / "ONNX" / "Inputs"
CLUSTER = ROOT / "examples" / "clusters" / "aws-c6i-p4d.json"


@pytest.fixture(scope="session")
def heterps_run():
    tool = BUILD / "bin" / "heterps-run"
    assert tool.exists(), f"{tool} is not built"
    return str(tool)


@pytest.fixture(scope="session")
def ctr_plan():
    """The PyTorch CTR export (8 slots, 13 dense features) with a bce loss,
    Adam, one stage on the CPU."""
    import heterps
    return heterps.compile(ONNX_INPUTS / "torch-ctr.onnx", loss="bce",
                           optimizer="adam", learning_rate=0.01, batch=16)


def ctr_batch(rows, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    return {
        "dense": rng.standard_normal((rows, 13)).astype(np.float32),
        "sparse": rng.integers(0, 100, size=(rows, 8), dtype=np.int64),
        "label": (rng.random((rows, 1)) < 0.3).astype(np.float32),
    }
