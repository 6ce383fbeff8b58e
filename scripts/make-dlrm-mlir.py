#!/usr/bin/env python3
"""Writes a DLRM-like model in the HeterPS dialect to standard output.

26 sparse slots of multi-hot bags (sum-combined embedding lookups into
tables in the parameter server), 13 dense features through a bottom MLP,
a concatenation, a top MLP and a binary cross-entropy loss on the logit:
the shape of the Criteo DLRM. The scheduling tests and benchmarks use it as
a CTR model large enough for plans that mix CPU and GPU stages.

  scripts/make-dlrm-mlir.py [--slots=26] [--dim=64] [--bag=4] > dlrm.mlir
"""
import argparse

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--slots", type=int, default=26)
parser.add_argument("--dim", type=int, default=64)
parser.add_argument("--bag", type=int, default=4)
parser.add_argument("--vocab", type=int, default=10000000)
options = parser.parse_args()
for name in ("slots", "dim", "bag", "vocab"):
    if getattr(options, name) < 1:
        parser.error(f"--{name} must be positive")
slots, dim, bag = options.slots, options.dim, options.bag
bottom = [13, 512, 256, dim]
top = [(slots + 1) * dim, 1024, 1024, 512, 256, 1]
L = []
L.append("module {")
for s in range(slots):
    L.append(f'  heterps.embedding_table @t{s} {{vocab = {options.vocab} : i64, dim = {dim} : i64, initializer = #heterps.init<uniform(-0.01, 0.01)>}}')


def params(prefix, sizes):
    for i in range(len(sizes) - 1):
        L.append(f"  heterps.param @{prefix}{i}.w : tensor<{sizes[i]}x{sizes[i+1]}xf32> = #heterps.init<xavier_uniform>")
        L.append(f"  heterps.param @{prefix}{i}.b : tensor<{sizes[i+1]}xf32> = #heterps.init<zeros>")


params("bot", bottom)
params("top", top)
args = ["%dense: tensor<?x13xf32>"] + [f"%i{s}: tensor<?x{bag}xi64>" for s in range(slots)] + ["%label: tensor<?x1xf32>"]
L.append(f"  func.func @dlrm({', '.join(args)}) -> (tensor<?x1xf32>, tensor<f32>) {{")
for s in range(slots):
    L.append(f'    %e{s} = heterps.embedding_lookup @t{s}[%i{s}] {{combiner = #heterps.combiner<sum>}} : (tensor<?x{bag}xi64>) -> tensor<?x{dim}xf32> loc("lookup{s}")')


def mlp(prefix, x, sizes, last_relu):
    for i in range(len(sizes) - 1):
        L.append(f"    %{prefix}w{i} = heterps.load_param @{prefix}{i}.w : tensor<{sizes[i]}x{sizes[i+1]}xf32>")
        L.append(f"    %{prefix}b{i} = heterps.load_param @{prefix}{i}.b : tensor<{sizes[i+1]}xf32>")
        L.append(f'    %{prefix}h{i} = heterps.gemm %{x}, %{prefix}w{i}, %{prefix}b{i} : (tensor<?x{sizes[i]}xf32>, tensor<{sizes[i]}x{sizes[i+1]}xf32>, tensor<{sizes[i+1]}xf32>) -> tensor<?x{sizes[i+1]}xf32> loc("{prefix}{i}")')
        x = f"{prefix}h{i}"
        if i < len(sizes) - 2 or last_relu:
            L.append(f'    %{prefix}a{i} = heterps.relu %{x} : tensor<?x{sizes[i+1]}xf32> loc("{prefix}relu{i}")')
            x = f"{prefix}a{i}"
    return x


b = mlp("bot", "dense", bottom, True)
ins = ", ".join([f"%{b}"] + [f"%e{s}" for s in range(slots)])
tys = ", ".join([f"tensor<?x{dim}xf32>"] * (slots + 1))
L.append(f'    %x = heterps.concat {ins} {{axis = 1 : i64}} : ({tys}) -> tensor<?x{(slots+1)*dim}xf32> loc("interact")')
t = mlp("top", "x", top, False)
L.append(f'    %loss = heterps.bce_loss %{t}, %label {{from_logits = true}} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32> loc("loss")')
L.append(f"    return %{t}, %loss : tensor<?x1xf32>, tensor<f32>")
L.append("  }")
L.append("}")
print("\n".join(L))
