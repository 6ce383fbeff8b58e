#!/usr/bin/python3
"""PyTorch reference of a few training steps of an exported fixture.

Rebuilds the torch module of torch-ctr.onnx or torch-mlp.onnx (the classes
of scripts/export-torch-fixtures.py), loads the ONNX initializers into it so
that the weights are bit-identical to the ones heterps-opt imports, draws a
seeded batch and trains on it with torch.optim.SGD (or Adam), the batch the
same at every step, as `heterps-run --input ... --steps=N` does. It writes

    OUT/inputs/<input>.pb     the batch, named as the plan's inputs (the
                              label as `label`), for heterps-run --input
    OUT/initial/<param>.pb    the parameters before training
    OUT/expected/<param>.pb   the parameters after the last step

as ONNX TensorProto files, parameters named as the ONNX initializers.
scripts/compare-tensors.py compares a heterps-run checkpoint with expected/.

The losses are those heterps-autodiff writes:
  ctr: loss=bce         nn.BCELoss (mean) of the sigmoid output against float
                        labels of shape Bx1;
  mlp: loss=softmax-ce  cross-entropy (mean) applied to the model's output as
                        logits. The MLP ends in a softmax, so that is
                        F.cross_entropy(softmax(net(x)), y): the softmax is
                        applied twice, exactly what the plan computes.
The embeddings are dense nn.Embedding tables in torch; their rows get the
same optimizer as the dense parameters, as heterps' tables do by default.

    /usr/bin/python3 scripts/torch-sgd-reference.py --model ctr \\
        --onnx test/Import/ONNX/Inputs/torch-ctr.onnx --out /tmp/ref \\
        --lr 0.1 [--optimizer adam] [--steps 2]
"""

import argparse
import importlib.util
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def load_fixture_module():
    """Imports export-torch-fixtures.py (not an importable name) as a module."""
    path = os.path.join(HERE, "export-torch-fixtures.py")
    spec = importlib.util.spec_from_file_location("export_torch_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_trainable_weights(model, onnx_path):
    """For models exported in training mode (the VISION ones): the
    initializers are the parameters and the BatchNorm running statistics,
    by state_dict name. Every parameter must come from the file; only the
    parameters are compared after the step (torch updates the running
    statistics in train mode, heterps keeps them as frozen inputs that
    training-mode BatchNormalization does not read)."""
    graph = onnx.load(onnx_path).graph
    state = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
             for t in graph.initializer}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise SystemExit(f"weights do not match: missing {missing}, "
                         f"unexpected {unexpected}")
    params = dict(model.named_parameters())
    return [(t.name, t.name, False) for t in graph.initializer
            if t.name in params]


def load_onnx_weights(model, onnx_path):
    """Copies every ONNX initializer into the parameter of the same name.

    The exporter names the initializers after the state_dict keys
    (emb.0.weight, bottom.0.weight, ...), Linear weights stay out x in
    (Gemm with transB=1), so the shapes agree one to one. A Linear applied
    to a 3-D input exports as MatMul with its weight transposed into an
    initializer `onnx::MatMul_N`: that one is matched to the parameter it
    is the transpose of. A parameter left without an initializer, or an
    initializer without a parameter, is an error instead of a silently
    random weight. Returns (initializer, parameter, transposed) triples.
    """
    graph = onnx.load(onnx_path).graph
    state = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
             for t in graph.initializer}
    own = model.state_dict()
    pairs = [(name, name, False) for name in state if name in own]
    for name in [n for n in state if n not in own]:
        value = state[name]
        match = [key for key in own if key not in state and
                 value.dim() == 2 and own[key].shape == value.t().shape and
                 key not in [p for _, p, _ in pairs]]
        if len(match) != 1:
            raise SystemExit(f"initializer {name} matches no parameter "
                             f"(candidates {match})")
        state[match[0]] = value.t().contiguous()
        pairs.append((name, match[0], True))
    model.load_state_dict({p: state[p] for _, p, _ in pairs}, strict=True)
    return pairs


def make_batch(kind, fixtures, batch, gen):
    """A seeded batch: the model's inputs by plan input name, and the label."""
    if kind in fixtures.FAMILIES:
        inputs = fixtures.FAMILIES[kind][1](batch, gen)
        label = torch.randint(0, 2, (batch, 1), generator=gen).float()
        return inputs, label
    if kind in fixtures.VISION:
        inputs = fixtures.VISION[kind][1](batch, gen)
        label = torch.randint(0, 10, (batch,), generator=gen,
                              dtype=torch.int64)
        return inputs, label
    if kind == "ctr":
        dense = torch.randn(batch, fixtures.NUM_DENSE, generator=gen)
        sparse = torch.randint(0, fixtures.VOCAB, (batch, fixtures.NUM_SLOTS),
                               generator=gen, dtype=torch.int64)
        label = torch.randint(0, 2, (batch, 1), generator=gen).float()
        return {"dense": dense, "sparse": sparse}, label
    if kind == "einsum":
        query = torch.randn(batch, fixtures.EMB_DIM, generator=gen)
        history = torch.randn(batch, 5, fixtures.EMB_DIM, generator=gen)
        label = torch.randint(0, 2, (batch, 1), generator=gen).float()
        return {"query": query, "history": history}, label
    if kind == "two-tower":
        user = torch.randint(0, fixtures.VOCAB, (batch,), generator=gen)
        item = torch.randint(0, fixtures.VOCAB, (batch,), generator=gen)
        label = torch.randint(0, 2, (batch, 1), generator=gen).float()
        return {"user": user, "item": item}, label
    if kind == "din":
        # DIN's pooled interest vector, regressed onto a target (mse).
        query = torch.randn(batch, fixtures.EMB_DIM, generator=gen)
        history = torch.randn(batch, 5, fixtures.EMB_DIM, generator=gen)
        label = torch.randn(batch, fixtures.EMB_DIM, generator=gen)
        return {"query": query, "history": history}, label
    if kind == "transformer":
        tokens = torch.randint(0, fixtures.VOCAB, (batch, fixtures.SEQ_LEN),
                               generator=gen, dtype=torch.int64)
        label = torch.randint(0, 2, (batch, 1), generator=gen).float()
        return {"tokens": tokens}, label
    if kind == "lenet":
        image = torch.randn(batch, 1, 28, 28, generator=gen)
        label = torch.randint(0, 10, (batch,), generator=gen,
                              dtype=torch.int64)
        return {"image": image}, label
    x = torch.randn(batch, 32, generator=gen)
    label = torch.randint(0, 10, (batch,), generator=gen, dtype=torch.int64)
    return {"x": x}, label


def loss_of(kind, output, label, fixtures):
    if kind == "din":
        return F.mse_loss(output, label)
    if kind in ("ctr", "einsum", "transformer", "two-tower") or \
            kind in fixtures.FAMILIES:
        return torch.nn.BCELoss()(output, label)
    # heterps' softmax-ce treats the prediction (already a softmax) as logits.
    return F.cross_entropy(output, label)


def make_optimizer(args, params):
    if args.optimizer == "sgd":
        return torch.optim.SGD(params, lr=args.lr)
    if args.optimizer == "momentum":
        return torch.optim.SGD(params, lr=args.lr, momentum=args.momentum)
    if args.optimizer == "adam":
        return torch.optim.Adam(params, lr=args.lr,
                                betas=(args.beta1, args.beta2),
                                eps=args.epsilon)
    if args.optimizer == "adagrad":
        # heterps' Adagrad starts from a zero sum, as torch's default does.
        return torch.optim.Adagrad(params, lr=args.lr, eps=args.epsilon)
    raise SystemExit(f"unsupported optimizer {args.optimizer}")


def save(directory, name, value):
    os.makedirs(directory, exist_ok=True)
    array = value.detach().cpu().numpy() if torch.is_tensor(value) else value
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    proto = numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(os.path.join(directory, name + ".pb"), "wb") as f:
        f.write(proto.SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fixtures = load_fixture_module()
    parser.add_argument("--model",
                        choices=["ctr", "ctr-loss", "mlp", "lenet", "einsum",
                                 "transformer", "two-tower", "din"] +
                        list(fixtures.FAMILIES) +
                        list(fixtures.VISION),
                        required=True)
    parser.add_argument("--onnx", required=True, help="the fixture file")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--optimizer", default="sgd",
                        choices=["sgd", "momentum", "adam", "adagrad"])
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--beta1", type=float, default=0.9)
    parser.add_argument("--beta2", type=float, default=0.999)
    parser.add_argument("--epsilon", type=float, default=1e-8)
    parser.add_argument("--float64", action="store_true",
                        help="train in float64 (the files stay float32): "
                        "the exact answer rather than torch's float32 one")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    classes = {"ctr": fixtures.CTR, "ctr-loss": fixtures.CTRWithLoss,
               "mlp": fixtures.MLP, "lenet": fixtures.LeNet,
               "einsum": fixtures.EinsumAttention,
               "transformer": fixtures.TransformerClassifier,
               "two-tower": fixtures.TwoTower,
               "din": fixtures.TargetAttention}
    classes.update({name: family[0]
                    for name, family in fixtures.FAMILIES.items()})
    classes.update({name: vision[0]
                    for name, vision in fixtures.VISION.items()})
    model = classes[args.model]()
    if args.model in fixtures.VISION:
        names = load_trainable_weights(model, args.onnx)
    else:
        names = load_onnx_weights(model, args.onnx)
    # The weights were traced in eval mode; no dropout/batch-norm here, but
    # be explicit: train() changes nothing for these modules.
    model.train()
    if args.float64:
        model.double()

    params = dict(model.named_parameters())

    def tensor_of(param, transposed):
        return params[param].t() if transposed else params[param]

    for name, param, transposed in names:
        save(os.path.join(args.out, "initial"), name,
             tensor_of(param, transposed))

    gen = torch.Generator().manual_seed(args.seed)
    kind = "ctr" if args.model == "ctr-loss" else args.model
    inputs, label = make_batch(kind, fixtures, args.batch, gen)
    for name, value in inputs.items():
        save(os.path.join(args.out, "inputs"), name, value)
    save(os.path.join(args.out, "inputs"), "label", label)

    if args.float64:
        inputs = {k: v.double() if v.is_floating_point() else v
                  for k, v in inputs.items()}
        label = label.double() if label.is_floating_point() else label
    # The forward of the initial weights: what inference must give.
    with torch.no_grad():
        output = model(*inputs.values(), *(
            [label] if args.model == "ctr-loss" else []))
    save(os.path.join(args.out, "output"), "output",
         output[0] if isinstance(output, tuple) else output)
    opt = make_optimizer(args, model.parameters())
    for step in range(args.steps):
        opt.zero_grad()
        if args.model == "ctr-loss":
            # The model's own loss: its second output, the label an input.
            loss = model(*inputs.values(), label)[1]
        else:
            loss = loss_of(args.model, model(*inputs.values()), label,
                           fixtures)
        loss.backward()
        opt.step()
        print(f"torch step {step + 1}: loss {loss.item():.6f}")

    for name, param, transposed in names:
        save(os.path.join(args.out, "expected"), name,
             tensor_of(param, transposed))
    print(f"wrote {len(names)} expected parameters to "
          f"{os.path.join(args.out, 'expected')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
