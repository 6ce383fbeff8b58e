#!/usr/bin/python3
"""Compares a heterps-run checkpoint (or output directory) with expected tensors.

    /usr/bin/python3 scripts/compare-tensors.py CHECKPOINT EXPECTED \\
        [--initial INITIAL] [--tolerance 1e-4] [--update-tolerance 1e-3] \\
        [--floor 1e-3] [--baseline BASELINE]

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

With --baseline, EXPECTED is the exact answer (PyTorch in float64) and
BASELINE another float32 computation of it (PyTorch's own): the worst
error of each kind over the tensors may reach twice the baseline's worst
against EXPECTED, or the tolerance where that is larger; a tensor whose
exact update is below 1e-10 is judged by its parameter error alone. Deep networks that normalise with batch
statistics amplify float32 rounding until two correct float32 runs differ
by more than any fixed tolerance; this judges heterps by what float32 can
give.

Exit status 1 when any error exceeds its limit (or a file is missing or
misshapen); the worst tensor of each kind is printed either way.
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


# With --baseline, how much larger than the baseline's worst error heterps'
# worst may be, and the exact update below which a tensor counts as not moved (the
# bias of a layer that a batch normalisation follows has a zero gradient,
# which float32 runs see as noise): its parameter error judges it.
BASELINE_FACTOR = 2.0
NEGLIGIBLE_UPDATE = 1e-10


def fraction(err, limit):
    """err / limit, for a limit that may be 0."""
    if limit > 0:
        return err / limit
    return 0.0 if err == 0 else float("inf")


def errors(a, b, p, floor):
    """The parameter error of `a` against `b`, and with the initial values
    `p` the update error and the largest update."""
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    param_err = float(np.max(diff / np.maximum(np.abs(b), floor),
                             initial=0.0))
    if p is None:
        return param_err, None, None
    scale = float(np.max(np.abs(b.astype(np.float64) - p), initial=0.0))
    # A tensor the step did not move (scale 0) must stay unchanged.
    update_err = float(np.max(diff, initial=0.0)) / scale if scale > 0 else (
        0.0 if np.max(diff, initial=0.0) == 0 else float("inf"))
    return param_err, update_err, scale


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="heterps-run --save directory")
    parser.add_argument("expected", help="directory of expected <name>.pb")
    parser.add_argument("--initial", help="directory of initial <name>.pb")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--update-tolerance", type=float, default=1e-3)
    parser.add_argument("--floor", type=float, default=1e-3,
                        help="the smallest |expected| of the parameter error")
    parser.add_argument("--baseline",
                        help="directory of another computation's results "
                        "(PyTorch's float32 step, with EXPECTED the exact "
                        "float64 one): the worst errors may reach twice the "
                        "baseline's worst")
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
    # Per tensor: (name, parameter error, update error or None), for heterps
    # and for the baseline.
    measured, baseline = [], []
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
        p = (read(os.path.join(args.initial, name + ".pb"))
             if args.initial else None)
        param_err, update_err, scale = errors(a, b, p, args.floor)
        line = f"{name}: parameter error {param_err:.3e}"
        if p is not None and args.baseline and scale < NEGLIGIBLE_UPDATE:
            update_err = None
            line += f", not moved (max update {scale:.3e})"
        elif p is not None:
            line += f", update error {update_err:.3e} (max update {scale:.3e})"
        measured.append((name, param_err, update_err))
        if args.baseline:
            c = read(find_actual(args.baseline, name) or
                     os.path.join(args.baseline, name + ".pb"))
            base_param, base_update, _ = errors(c, b, p, args.floor)
            if update_err is None:
                base_update = None
            baseline.append((name, base_param, base_update))
            line += f"; baseline {base_param:.3e}" + (
                f", {base_update:.3e}" if base_update is not None else "")
        if args.verbose:
            print(line)

    def worst(rows, column):
        return max(((row[column], row[0]) for row in rows
                    if row[column] is not None), default=(0.0, None))

    param_limit, update_limit = args.tolerance, args.update_tolerance
    if args.baseline:
        param_limit = max(param_limit,
                          BASELINE_FACTOR * worst(baseline, 1)[0])
        update_limit = max(update_limit,
                           BASELINE_FACTOR * worst(baseline, 2)[0])
    worst_param = worst(measured, 1) + (param_limit,)
    worst_update = worst(measured, 2) + (update_limit,)

    print(f"compared {len(names)} tensors")
    def report(kind, worst, tolerance):
        err, name, limit = worst
        print(f"worst {kind} error {err:.3e} ({name}), " + (
            f"tolerance {tolerance:g}" if not args.baseline else
            f"limit {limit:.3e} (the larger of {tolerance:g} and "
            f"{BASELINE_FACTOR:g} x the baseline's worst)"))
        return fraction(err, limit) <= 1.0

    ok &= report("parameter", worst_param, args.tolerance)
    if args.initial:
        ok &= report("update", worst_update, args.update_tolerance)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
