"""heterps.torch.export: a PyTorch model through the compiler and back."""

import numpy as np
import pytest
import torch
from torch import nn

import heterps
import heterps.torch


class TinyCTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 4)
        self.hidden = nn.Linear(5 + 3 * 4, 8)
        self.out = nn.Linear(8, 1)

    def forward(self, dense, ids):
        rows = self.embedding(ids).flatten(1)
        x = torch.relu(self.hidden(torch.cat([dense, rows], dim=1)))
        return torch.sigmoid(self.out(x))


def inputs(rows, seed):
    rng = np.random.default_rng(seed)
    return {"dense": rng.standard_normal((rows, 5)).astype(np.float32),
            "ids": rng.integers(0, 50, size=(rows, 3), dtype=np.int64)}


def test_export_predicts_as_torch_does(tmp_path):
    torch.manual_seed(0)
    model = TinyCTR()
    path = heterps.torch.export(model, (torch.zeros(2, 5),
                                        torch.zeros(2, 3, dtype=torch.long)),
                                tmp_path / "tiny.onnx",
                                input_names=["dense", "ids"])
    assert model.training  # export leaves the module's mode as it was
    plan = heterps.compile(path, optimizer=None)
    assert [i.name for i in plan.inputs] == ["dense", "ids"]
    assert plan.inputs[0].shape == (-1, 5)
    batch = inputs(7, seed=1)
    got = heterps.Trainer(plan).predict(batch)["output"]
    with torch.no_grad():
        model.eval()
        want = model(torch.from_numpy(batch["dense"]),
                     torch.from_numpy(batch["ids"])).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_one_sgd_step_matches_torch(tmp_path):
    torch.manual_seed(1)
    model = TinyCTR()
    path = heterps.torch.export(model, (torch.zeros(2, 5),
                                        torch.zeros(2, 3, dtype=torch.long)),
                                tmp_path / "tiny.onnx",
                                input_names=["dense", "ids"])
    plan = heterps.compile(path, loss="bce", optimizer="sgd",
                           learning_rate=0.5)
    batch = inputs(16, seed=2)
    label = (np.arange(16) % 3 == 0).astype(np.float32).reshape(16, 1)
    trainer = heterps.Trainer(plan)
    loss = trainer.step({**batch, "label": label})
    got = trainer.predict(batch)["output"]

    dense = torch.from_numpy(batch["dense"])
    ids = torch.from_numpy(batch["ids"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    want_loss = nn.functional.binary_cross_entropy(model(dense, ids),
                                                   torch.from_numpy(label))
    want_loss.backward()
    optimizer.step()
    with torch.no_grad():
        want = model(dense, ids).numpy()
    assert abs(loss - want_loss.item()) < 1e-5
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_export_refuses_names_the_exporter_would_change(tmp_path):
    # torch.onnx renames repeated or empty names ('a.1', 'onnx::Concat_0'):
    # the plan's inputs would not be the names given.
    import torch

    model = torch.nn.Linear(4, 1)
    two = (torch.zeros(2, 4), torch.zeros(2, 4))
    for inputs, names, match in (
            (two, ["a", "a"], "'a' is given twice"),
            (torch.zeros(2, 4), ["output"], "'output' is given twice"),
            (torch.zeros(2, 4), [""], "non-empty strings")):
        with pytest.raises(ValueError, match=match):
            heterps.torch.export(model, inputs, tmp_path / "m.onnx",
                                 input_names=names)
