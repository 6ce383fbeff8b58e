"""The throughput/cost frontier: the cheapest plan of each solver for a range
of throughput targets, and where CPU, GPU and mixed plans win.

    /usr/bin/python3 -m heterps.frontier MODEL --cluster=CLUSTER.json \\
        [--throughputs=1e4:1e7:10] [--solvers=rl,dp,cpu-only,gpu-only] \\
        [--loss=bce --optimizer=adam --batch=512 --samples=1e8] \\
        [--plot=frontier.png] [--json=frontier.json]

Each (solver, target) pair compiles MODEL with heterps.compile and records
the plan's predicted throughput, cost per hour and job cost and its mix of
resource kinds ("cpu", "gpu" or "mixed"), or that the target cannot be met.
The table goes to stdout; --plot draws cost per hour against the target
(log-log, one line per solver, markers by mix; matplotlib), --json writes
the rows.
"""

import argparse
import json
import math
import numbers
import os
import sys

from .compiler import _SOLVERS, CompileError, compile as compile_model

# What a target no plan of a solver meets says, or a solver that has no
# plan on this cluster (gpu-only without GPUs, pins it cannot honour,
# exhaustive's size limit): infeasible rows. Any other error is the
# model's, the cluster's or the options', and is raised.
_UNMET = ("samples/s cannot be met", "the plan does not fit in memory",
          "-only: the cluster has no", "-only: op ", "candidate plans exceed "
          "the limit")


def plan_mix(plan):
    """"cpu", "gpu" or "mixed": the resource kinds of a plan's stages."""
    kinds = {stage.kind for stage in plan.stages}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def sweep(model, cluster, throughputs, solvers, **options):
    """One row per (solver, target): dicts with solver, target, feasible,
    and for feasible ones throughput, cost_per_hour, job_cost, mix,
    stages; for the others the compiler's first error. Only targets no plan
    meets are infeasible rows: another CompileError (the model, the cluster,
    an option) is raised."""
    if isinstance(solvers, str) or not all(isinstance(s, str)
                                           for s in solvers):
        raise TypeError("solvers must be a list of solver names, got "
                        f"{solvers!r}")
    for solver in solvers:
        if solver not in _SOLVERS:
            raise ValueError(f"unknown solver {solver!r} (expected one of "
                             f"{', '.join(_SOLVERS)})")
    for target in throughputs:
        if isinstance(target, bool) or not isinstance(target, numbers.Real) \
                or not (0 < target < math.inf):
            raise ValueError(f"a throughput target must be a positive finite "
                             f"number, got {target!r}")
    rows = []
    for solver in solvers:
        for target in throughputs:
            row = {"solver": solver, "target": float(target)}
            try:
                plan = compile_model(model, cluster=cluster,
                                     throughput=target, solver=solver,
                                     **options)
            except CompileError as error:
                if not any(u in str(error) for u in _UNMET):
                    raise
                row.update(feasible=False,
                           error=error.diagnostics[0] if error.diagnostics
                           else str(error))
            else:
                p = plan.predicted
                row.update(feasible=True, throughput=p.throughput,
                           cost_per_hour=p.cost_per_hour,
                           job_cost=p.job_cost, mix=plan_mix(plan),
                           stages=len(plan.stages))
            rows.append(row)
    return rows


def parse_throughputs(text):
    """`FIRST:LAST:COUNT` (geometric) or a comma-separated list."""
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise ValueError(f"--throughputs takes FIRST:LAST:COUNT, got "
                             f"'{text}'")
        try:
            first, last = float(parts[0]), float(parts[1])
            count = int(parts[2])
        except ValueError:
            raise ValueError(f"--throughputs takes FIRST:LAST:COUNT numbers, "
                             f"got '{text}'") from None
        if not (0 < first < last < math.inf) or count < 2:
            raise ValueError(f"--throughputs: expected 0 < FIRST < LAST and "
                             f"COUNT >= 2, got '{text}'")
        ratio = (last / first) ** (1 / (count - 1))
        return [first * ratio ** i for i in range(count)]
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"--throughputs takes numbers, got '{text}'") \
            from None
    if not values or any(not (v > 0) or math.isinf(v) for v in values):
        raise ValueError(f"--throughputs: expected positive numbers, got "
                         f"'{text}'")
    return values


def format_table(rows):
    lines = [f"{'solver':<10} {'target/s':>12} {'predicted/s':>12} "
             f"{'$/hour':>10} {'job $':>10} {'mix':>6} {'stages':>6}"]
    for r in rows:
        if r["feasible"]:
            lines.append(f"{r['solver']:<10} {r['target']:>12.0f} "
                         f"{r['throughput']:>12.0f} "
                         f"{r['cost_per_hour']:>10.4f} "
                         f"{r['job_cost']:>10.4f} {r['mix']:>6} "
                         f"{r['stages']:>6}")
        else:
            lines.append(f"{r['solver']:<10} {r['target']:>12.0f} "
                         f"{'infeasible':>12}")
    return "\n".join(lines)


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    markers = {"cpu": "s", "gpu": "^", "mixed": "o"}
    figure, axes = plt.subplots(figsize=(8, 5), constrained_layout=True)
    for solver in dict.fromkeys(r["solver"] for r in rows):
        feasible = [r for r in rows if r["solver"] == solver and r["feasible"]]
        if not feasible:
            continue
        line = axes.plot([r["target"] for r in feasible],
                         [r["cost_per_hour"] for r in feasible],
                         label=solver, alpha=0.8)
        for mix, marker in markers.items():
            points = [r for r in feasible if r["mix"] == mix]
            axes.scatter([r["target"] for r in points],
                         [r["cost_per_hour"] for r in points],
                         marker=marker, color=line[0].get_color())
    for mix, marker in markers.items():
        axes.scatter([], [], marker=marker, color="grey", label=f"{mix} plan")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("throughput target (samples/s)")
    axes.set_ylabel("cost ($ per hour)")
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=8)
    figure.savefig(path)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m heterps.frontier",
        description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("model", help="an ONNX model or HeterPS IR")
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--throughputs", default="1e4:1e7:10")
    parser.add_argument("--solvers", default="rl,dp,cpu-only,gpu-only")
    parser.add_argument("--loss", default=None,
                        help="bce, softmax-ce or mse (default: the model's "
                        "own loss)")
    parser.add_argument("--optimizer", default="sgd")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--samples", type=float, default=1e8)
    parser.add_argument("--micro-batches", type=int, default=1)
    parser.add_argument("--plot", help="a .png, .svg or .pdf to draw")
    parser.add_argument("--json", help="write the rows as JSON")
    args = parser.parse_args(argv)
    try:
        throughputs = parse_throughputs(args.throughputs)
    except ValueError as error:
        parser.error(str(error))
    if args.plot and not args.plot.endswith((".png", ".svg", ".pdf")):
        parser.error(f"--plot: '{args.plot}' must end in .png, .svg or .pdf")
    # Found before the sweep, not after it.
    for flag, path in (("--plot", args.plot), ("--json", args.json)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            parser.error(f"{flag}: the directory of '{path}' does not exist")
    if args.batch < 1 or args.micro_batches < 1 or not (
            0 < args.samples < math.inf):
        parser.error("--batch, --micro-batches and --samples must be "
                     "positive")
    solvers = [s for s in args.solvers.split(",") if s]
    if not solvers:
        parser.error(f"--solvers names no solver: '{args.solvers}'")
    unknown = [s for s in solvers if s not in _SOLVERS]
    if unknown:
        parser.error(f"--solvers: unknown solver {unknown[0]!r} (expected "
                     f"one of {', '.join(_SOLVERS)})")
    options = dict(loss=args.loss, optimizer=args.optimizer,
                   batch=args.batch, samples=args.samples,
                   micro_batches=args.micro_batches)
    # A model, cluster or option that does not compile fails once, clearly.
    try:
        rows = sweep(args.model, args.cluster, throughputs, solvers,
                     **options)
    except (CompileError, ValueError, TypeError) as error:
        sys.exit(f"frontier: {error}")
    if not any(r["feasible"] for r in rows):
        errors = {r["error"] for r in rows}
        if len(errors) == 1:
            # The same error at every target: the model or the options,
            # not the targets.
            sys.exit(f"frontier: {errors.pop()}")
        print(rows[0]["error"], file=sys.stderr)
        sys.exit("frontier: no target could be met by any solver")
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.plot:
        plot(rows, args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
