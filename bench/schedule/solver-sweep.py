#!/usr/bin/env python3
"""Every solver on real models across a sweep of throughput targets.

For each model (HeterPS IR or ONNX) and each target, runs heterps-opt's
heterps-place-ops with every solver and prints each solver's job cost
divided by the cheapest plan any of them found, and the kinds of the stages
of the rl and dp plans (c = CPU stage, g = GPU stage), and rl's
gap_to_bound from the report (its cost over a lower bound of every plan's
cost, minus one: how far the optimum can at most be). The ratios compare
solvers run by the same script on the same problem.

  bench/schedule/solver-sweep.py --opt=build/bin/heterps-opt \\
      --cluster=examples/clusters/aws-c6i-p3-p4d.json \\
      --targets=20000,100000,500000 model.mlir ...

With --max-ratio=R the script fails (exit 1) when rl's plan costs more than
R times the best, or when rl finds no plan where another solver does; with
--require-mixed it fails unless some target of each model yields a plan
that mixes CPU and GPU stages (the case the sweep is meant to cover).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SOLVERS = ["rl", "dp", "greedy", "genetic", "heuristic", "cpu-only", "gpu-only"]


def parse_list(text, convert, name):
    values = []
    for item in text.split(","):
        try:
            values.append(convert(item))
        except ValueError:
            sys.exit(f"solver-sweep.py: --{name}: '{item}' is not valid")
    return values


def place(opt, model, cluster, solver, target, batch, extra, report):
    if os.path.exists(report):
        os.remove(report)
    options = (f"cluster={cluster} solver={solver} throughput={target} "
               f"batch={batch} report={report} {extra}").strip()
    run = subprocess.run([opt, model, f"--heterps-place-ops={options}",
                          "-o", os.devnull], capture_output=True, text=True)
    if not os.path.exists(report):
        # Errors other than an infeasible plan (which still writes the
        # report) are the script's failure, not a solver's.
        if "cannot be met" in run.stderr or "does not fit" in run.stderr:
            return None
        sys.exit(f"solver-sweep.py: {solver} on {model} failed:\n{run.stderr}")
    with open(report) as f:
        return json.load(f)


def kinds(report, cluster_kinds):
    return "".join(cluster_kinds[s["resource"]][0] for s in report["stages"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opt", required=True, help="heterps-opt")
    parser.add_argument("--cluster", required=True, help="cluster file")
    parser.add_argument("--targets", required=True,
                        help="throughput targets, samples/s, comma-separated")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--place-options", default="",
                        help="more heterps-place-ops options for every run")
    parser.add_argument("--max-ratio", type=float, default=0,
                        help="fail when rl costs more than this times the best")
    parser.add_argument("--require-mixed", action="store_true")
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    targets = parse_list(args.targets, float, "targets")
    solvers = args.solvers.split(",")
    for solver in solvers:
        if solver not in SOLVERS:
            sys.exit(f"solver-sweep.py: unknown solver '{solver}'; "
                     f"expected one of {', '.join(SOLVERS)}")
    if "rl" not in solvers:
        solvers.insert(0, "rl")
    with open(args.cluster) as f:
        cluster_kinds = {r["name"]: r["kind"] for r in json.load(f)["resources"]}

    failures = []
    print("| model | target | " + " | ".join(solvers) +
          " | rl stages | dp stages | rl gap to bound |")
    print("|---|---|" + "---|" * (len(solvers) + 3))
    worst = 1.0
    with tempfile.TemporaryDirectory() as scratch:
        report_path = os.path.join(scratch, "report.json")
        for model in args.models:
            name = os.path.basename(model)
            mixed = False
            for target in targets:
                reports = {s: place(args.opt, model, args.cluster, s, target,
                                    args.batch, args.place_options, report_path)
                           for s in solvers}
                costs = {s: r["cost_usd"] for s, r in reports.items()
                         if r is not None and r["feasible"]}
                if not costs:
                    print(f"| {name} | {target:g} | " +
                          " | ".join("-" for _ in solvers) + " | - | - | - |")
                    continue
                best = min(costs.values())
                cells = [f"{costs[s] / best:.4f}" if s in costs else "-"
                         for s in solvers]
                stages = [kinds(reports[s], cluster_kinds)
                          if reports.get(s) and s in costs else "-"
                          for s in ("rl", "dp")]
                for s in costs:
                    mixed |= len(set(kinds(reports[s], cluster_kinds))) > 1
                gap = (f"{reports['rl']['gap_to_bound']:.3f}"
                       if "rl" in costs else "-")
                print(f"| {name} | {target:g} | " + " | ".join(cells) +
                      f" | {stages[0]} | {stages[1]} | {gap} |")
                if "rl" not in costs:
                    failures.append(f"{name} at {target:g}: rl found no plan")
                    continue
                ratio = costs["rl"] / best
                worst = max(worst, ratio)
                if args.max_ratio and ratio > args.max_ratio:
                    failures.append(f"{name} at {target:g}: rl costs "
                                    f"{ratio:.4f} x the best")
            if args.require_mixed and not mixed:
                failures.append(f"{name}: no target gave a plan mixing CPU "
                                f"and GPU stages")
    print(f"\nrl worst cost / best: {worst:.4f}")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
