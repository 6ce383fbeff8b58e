#!/usr/bin/python3
"""Compares a heterps-run checkpoint (or output directory) with expected tensors.

    /usr/bin/python3 scripts/compare-tensors.py CHECKPOINT EXPECTED \\
        [--initial INITIAL] [--tolerance 1e-4] [--update-tolerance 1e-3] \\
        [--floor 1e-3]

EXPECTED holds <name>.pb TensorProto files (scripts/torch-sgd-reference.py
writes them), or is itself a heterps-run checkpoint (a directory with a
MANIFEST: its param.<name>.pb and tables/table.<name>.pb files are the
expected tensors, e.g. of a run on one worker against a pipelined run); each
must have a counterpart in CHECKPOINT, param.<name>.pb
(a dense parameter) or table.<name>.pb (an embedding table, vocab x dim,
also looked for in CHECKPOINT/tables, where heterps-run --export-tables
writes it), or <name>.pb (an output of heterps-run --infer --output-dir),
of the same shape.

Two errors are measured per tensor, with a = heterps, b = expected:

  parameter error   max_i |a_i - b_i| / max(|b_i|, FLOOR)
                    (relative, with an absolute floor, --floor, default 1e-3,
                    so that entries near zero are judged by an absolute
                    difference of tolerance * floor = 1e-7);
  update error      with --initial (the parameters before training, p):
                    max_i |(a_i - p_i) - (b_i - p_i)| / max_i |b_i - p_i|,
                    i.e. the difference of the updates relative to the
                    largest update of the tensor. A step changes a parameter
                    by a small fraction of its value, so this is the measure
                    that actually sees a wrong gradient.

Exit status 1 when any parameter error exceeds --tolerance or any update
error exceeds --update-tolerance (or a file is missing or misshapen); the
worst tensor of each kind is printed either way.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def read(path):
    proto = onnx.TensorProto()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return numpy_helper.to_array(proto).astype(np.float64)


def find_actual(checkpoint, name):
    safe = name.replace("/", "_").replace("\\", "_")
    for directory in (checkpoint, os.path.join(checkpoint, "tables")):
        # A checkpoint's parameter or table, or a plain <name>.pb (the
        # outputs heterps-run --infer --output-dir writes).
        for prefix in ("param.", "table.", ""):
            path = os.path.join(directory, prefix + safe + ".pb")
            if os.path.exists(path):
                return path
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="heterps-run --save directory")
    parser.add_argument("expected", help="directory of expected <name>.pb")
    parser.add_argument("--initial", help="directory of initial <name>.pb")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--update-tolerance", type=float, default=1e-3)
    parser.add_argument("--floor", type=float, default=1e-3,
                        help="the smallest |expected| of the parameter error")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every tensor's errors")
    args = parser.parse_args()

    expected_is_checkpoint = os.path.exists(
        os.path.join(args.expected, "MANIFEST"))
    if expected_is_checkpoint:
        names = []
        for directory, prefix in ((args.expected, "param."),
                                  (os.path.join(args.expected, "tables"),
                                   "table.")):
            if os.path.isdir(directory):
                names += [f[len(prefix):-3] for f in os.listdir(directory)
                          if f.startswith(prefix) and f.endswith(".pb")]
        names.sort()
    else:
        names = sorted(f[:-3] for f in os.listdir(args.expected)
                       if f.endswith(".pb"))
    if not names:
        print(f"error: no .pb files in {args.expected}")
        return 1
    ok = True
    worst_param = (0.0, None)
    worst_update = (0.0, None)
    for name in names:
        path = find_actual(args.checkpoint, name)
        if path is None:
            print(f"error: {name}: no param.{name}.pb or table.{name}.pb in "
                  f"{args.checkpoint}")
            ok = False
            continue
        a = read(path)
        b = read(find_actual(args.expected, name) if expected_is_checkpoint
                 else os.path.join(args.expected, name + ".pb"))
        if a.shape != b.shape:
            print(f"error: {name}: heterps shape {list(a.shape)}, expected "
                  f"{list(b.shape)}")
            ok = False
            continue
        diff = np.abs(a - b)
        param_err = float(np.max(diff / np.maximum(np.abs(b), args.floor)))
        if param_err >= worst_param[0]:
            worst_param = (param_err, name)
        line = f"{name}: parameter error {param_err:.3e}"
        if args.initial:
            p = read(os.path.join(args.initial, name + ".pb"))
            scale = float(np.max(np.abs(b - p)))
            # A tensor the step did not move (scale 0) must stay unchanged.
            update_err = float(np.max(diff)) / scale if scale > 0 else (
                0.0 if np.max(diff) == 0 else float("inf"))
            if update_err >= worst_update[0]:
                worst_update = (update_err, name)
            line += f", update error {update_err:.3e} (max update {scale:.3e})"
        if args.verbose:
            print(line)

    print(f"compared {len(names)} tensors")
    print(f"worst parameter error {worst_param[0]:.3e} ({worst_param[1]}), "
          f"tolerance {args.tolerance:g}")
    if worst_param[0] > args.tolerance:
        ok = False
    if args.initial:
        print(f"worst update error {worst_update[0]:.3e} ({worst_update[1]}), "
              f"tolerance {args.update_tolerance:g}")
        if worst_update[0] > args.update_tolerance:
            ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
