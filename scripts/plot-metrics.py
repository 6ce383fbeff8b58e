#!/usr/bin/python3
"""Plots the loss and AUC (or accuracy) curves of heterps-run --metrics-file.

    /usr/bin/python3 scripts/plot-metrics.py run.jsonl [other.jsonl ...] \\
        [-o curves.png] [--x=step|seconds]

Each file is one run (named by its file name in the legend): its progress
lines ("kind": "steps") draw the training loss and AUC, its evaluations
("kind": "eval") the evaluation AUC as points. The format comes from the
output's extension (png, svg, pdf). Needs matplotlib (apt install
python3-matplotlib).
"""

import argparse
import json
import os
import sys


def read_runs(paths):
    runs = []
    for path in paths:
        rows = []
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"plot-metrics: {path}:{number}: not JSON ({e})")
                if not isinstance(row, dict) or "kind" not in row:
                    sys.exit(f"plot-metrics: {path}:{number}: not a metrics "
                             "line (no \"kind\")")
                rows.append(row)
        if not rows:
            sys.exit(f"plot-metrics: {path}: no metrics lines")
        runs.append((os.path.basename(path), rows))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="--metrics-file outputs")
    parser.add_argument("-o", "--output", default="metrics.png")
    parser.add_argument("--x", choices=("step", "seconds"), default="step")
    args = parser.parse_args()
    extension = os.path.splitext(args.output)[1].lstrip(".").lower()
    if extension not in ("png", "svg", "pdf"):
        sys.exit(f"plot-metrics: '{args.output}': the output must end in "
                 ".png, .svg or .pdf")
    runs = read_runs(args.files)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot-metrics: matplotlib is not installed "
                 "(apt install python3-matplotlib)")

    quality = "auc"
    if not any(quality in row for _, rows in runs for row in rows):
        quality = "accuracy"
    figure, (loss_axes, quality_axes) = plt.subplots(
        1, 2, figsize=(11, 4), constrained_layout=True)
    for name, rows in runs:
        steps = [r for r in rows if r["kind"] == "steps"]
        evals = [r for r in rows if r["kind"] == "eval" and quality in r]
        x = [r[args.x] for r in steps if "loss" in r]
        loss_axes.plot(x, [r["loss"] for r in steps if "loss" in r],
                       label=name)
        line = quality_axes.plot(
            [r[args.x] for r in steps if quality in r],
            [r[quality] for r in steps if quality in r],
            label=f"{name} (training)")
        if evals:
            quality_axes.plot([r[args.x] for r in evals],
                              [r[quality] for r in evals], "o--",
                              color=line[0].get_color(),
                              label=f"{name} (evaluation)")
    loss_axes.set_xlabel(args.x)
    loss_axes.set_ylabel("loss")
    quality_axes.set_xlabel(args.x)
    quality_axes.set_ylabel(quality)
    for axes in (loss_axes, quality_axes):
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.savefig(args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
