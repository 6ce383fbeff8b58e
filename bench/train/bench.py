#!/usr/bin/python3
"""Training and inference throughput of heterps-run against PyTorch.

    /usr/bin/python3 bench/train/bench.py --build BUILD [--threads 1,2]
        [--seconds 4] [--repeat 2] [--models ctr,mlp,gru]

(bench/train/run.sh sets up the BLAS and calls this.) For each model and
thread count it measures, on the same model, batch and thread count:

  heterps train   heterps-run PLAN --threads=T on synthetic data, SGD; the
                  samples/s of its final line. The plan comes from
                  heterps-opt FIXTURE --heterps-autodiff (loss=bce for the
                  CTR, softmax-ce for the MLP, optimizer=sgd).
  heterps infer   heterps-run PLAN --infer on N synthetic examples, timed
                  from outside at two sizes, (N2 - N1) / (t2 - t1), which
                  cancels the start-up (plan load, oneDNN primitive
                  creation).
  torch train     the fixture's torch module (export-torch-fixtures.py), a
                  timed loop of zero_grad + forward + loss + backward +
                  torch.optim.SGD step on pre-generated random batches of the
                  same shapes, after a warm-up.
  torch infer     the same, forward only under torch.no_grad().

Both heterps measures include what heterps-run does per batch besides the
model: generating the synthetic batch and accumulating the metric (AUC or
accuracy); the torch loops do not generate data, so both are also timed on
one fixed batch ("fixed"), the model alone: training by heterps-run
--input, inference by heterps.Trainer.predict on NumPy arrays (the Python
package of --build, in a subprocess like torch's). --profile prints
where heterps-run's time goes (perf). Each measure is the best of --repeat
runs. The torch runs are subprocesses of this script so that the
BLAS and OpenMP thread counts are set before torch loads.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(SRC, "test", "Import", "ONNX", "Inputs")

# Model name -> (fixture, batch, heterps-autodiff options). The MLP batch is
# 256, the CTR's 512 (the numbers).
MODELS = {
    "ctr": ("torch-ctr.onnx", 512, "loss=bce optimizer=sgd learning-rate=0.01"),
    "mlp": ("torch-mlp.onnx", 256,
            "loss=softmax-ce optimizer=sgd learning-rate=0.01"),
    # The GRU sequence CTR model: 10 history items through a GRU of 16.
    "gru": ("torch-gru-sequence.onnx", 512,
            "loss=bce optimizer=sgd learning-rate=0.01"),
}
LEARNING_RATE = 0.01
TARGETS = {"ctr": 1.5, "mlp": 1.0}  # heterps/torch training, from the issue


# ------------------------------------------------------------------- quiet --

def idle_fraction(interval=0.5):
    """The fraction of all CPUs' time that was idle over `interval` s."""
    def sample():
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        return fields[3] + fields[4], sum(fields)  # idle + iowait, total
    idle0, total0 = sample()
    time.sleep(interval)
    idle1, total1 = sample()
    return (idle1 - idle0) / max(total1 - total0, 1)


def wait_quiet(max_wait, threshold=0.9):
    """Waits (up to max_wait s) until the machine is idle: on a shared
    2-core machine a compile next door halves any throughput. Returns the
    idle fraction seen last."""
    deadline = time.monotonic() + max_wait
    while True:
        idle = idle_fraction()
        if idle >= threshold or time.monotonic() >= deadline:
            return idle
        time.sleep(1.0)


# ----------------------------------------------------------------- heterps --

def make_plan(build, model, workdir):
    fixture, batch, options = MODELS[model]
    plan = os.path.join(workdir, model + ".plan")
    subprocess.run(
        [os.path.join(build, "bin", "heterps-opt"),
         os.path.join(FIXTURES, fixture), f"--heterps-autodiff={options}",
         f"--heterps-emit-plan=file={plan} batch={batch}", "-o", os.devnull],
        check=True)
    return plan


def heterps_run(build, args):
    """Runs heterps-run, returns (stdout, wall seconds)."""
    start = time.perf_counter()
    out = subprocess.run([os.path.join(build, "bin", "heterps-run")] + args,
                         check=True, capture_output=True, text=True).stdout
    return out, time.perf_counter() - start


def heterps_train(build, plan, batch, threads, seconds):
    common = [plan, f"--batch={batch}", f"--threads={threads}",
              "--log-every=0", "--synthetic-vocab=100",
              # Epochs of the default 65536 examples; --steps stops first.
              "--epochs=100000"]

    def rate(steps):
        out, _ = heterps_run(build, common + [f"--steps={steps}"])
        m = re.search(r"trained (\d+) steps?, (\d+) samples in ([\d.]+) s: "
                      r"(\d+) samples/s", out)
        if not m:
            raise RuntimeError("no throughput line in:\n" + out)
        return float(m.group(4))

    # A short run to size the measured one to about `seconds`.
    probe = rate(50)
    steps = max(100, int(probe * seconds / batch))
    return rate(steps)


def random_batch(model, batch):
    """One random batch of `model`'s inputs and label, by input name."""
    import numpy as np

    rng = np.random.default_rng(1)
    if model == "ctr":
        return {
            "dense": rng.standard_normal((batch, 13), dtype=np.float32),
            "sparse": rng.integers(0, 100, (batch, 8), dtype=np.int64),
            "label": rng.integers(0, 2, (batch, 1)).astype(np.float32)}
    if model == "gru":
        return {
            "dense": rng.standard_normal((batch, 13), dtype=np.float32),
            "target": rng.integers(0, 100, (batch,), dtype=np.int64),
            "history": rng.integers(0, 100, (batch, 10), dtype=np.int64),
            "label": rng.integers(0, 2, (batch, 1)).astype(np.float32)}
    return {
        "x": rng.standard_normal((batch, 32), dtype=np.float32),
        "label": rng.integers(0, 10, (batch,), dtype=np.int64)}


def write_inputs(model, batch, workdir):
    """One random batch as TensorProto files, for heterps-run --input."""
    from onnx import numpy_helper

    flags = []
    for name, value in random_batch(model, batch).items():
        path = os.path.join(workdir, f"{model}-{name}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(value, name).SerializeToString())
        flags.append(f"--input={name}={path}")
    return flags


def heterps_train_fixed(build, plan, inputs, batch, threads, seconds):
    """heterps-run on one --input batch: the model alone, no data source."""
    common = [plan] + inputs + [f"--batch={batch}", f"--threads={threads}",
                                "--log-every=0"]

    def rate(steps):
        out, _ = heterps_run(build, common + [f"--steps={steps}"])
        m = re.search(r"samples in ([\d.]+) s: (\d+) samples/s", out)
        if not m:
            raise RuntimeError("no throughput line in:\n" + out)
        return float(m.group(2))

    probe = rate(50)
    return rate(max(100, int(probe * seconds / batch)))


def heterps_infer(build, plan, batch, threads, seconds):
    common = [plan, "--infer", f"--batch={batch}", f"--threads={threads}",
              "--synthetic-vocab=100"]

    def wall(examples):
        _, secs = heterps_run(build,
                              common + [f"--synthetic-examples={examples}"])
        return secs

    small = 64 * batch
    t_small = wall(small)
    # Size the large run from the small one (start-up included: an
    # overestimate of the time per example, so the run stays short).
    large = small + max(64 * batch,
                        int(small * seconds / max(t_small, 1e-3)) // batch
                        * batch)
    t_large = wall(large)
    t_small = min(t_small, wall(small))
    return (large - small) / max(t_large - t_small, 1e-9)


# ----------------------------------------------------------------- profile --

# perf symbol (substring) -> where the time goes. Order matters: the first
# match wins. libm's cos/log/pow are the synthetic generator's Box-Muller and
# log-uniform ids (the models call no cos or pow; their log is a few
# elements in the loss); tanhf/expm1f are the MLP's Tanh, exp/expf its softmax.
CATEGORIES = [
    ("data generation", ["SyntheticSource", "__cos", "cos@", "__ieee754_log",
                         "log@", "__ieee754_pow", "pow@", "Binder::bind"]),
    # LocalEmbeddingStore::push sorts (row, index) pairs of longs; the AUC
    # sorts (score, label) pairs of floats.
    ("embeddings", ["EmbeddingStore", "Embedding", "Gather",
                    "pair<long, long>"]),
    ("metrics (AUC/acc)", ["Metrics::", "computeAUC", "__introsort_loop",
                           "__insertion_sort", "__adjust_heap"]),
    ("activation grads", ["UnaryGradKernel"]),
    ("activations", ["UnaryKernel", "tanh", "expm1", "__ieee754_exp", "exp@",
                     "__expf", "Softmax"]),
    ("GEMM (oneDNN)", ["[JIT]", "libdnnl", "Matmul", "Gemm"]),
    ("copies/slices", ["memmove", "memcpy", "memset", "SliceKernel",
                       "ConcatKernel"]),
    ("malloc/free", ["malloc", "free", "operator new", "operator delete",
                     "unlink_chunk", "_int_"]),
    ("losses/reductions", ["Loss", "SumToShape", "Reduce"]),
    ("optimizer", ["applyUpdate", "ParamStore"]),
    ("kernel (OS)", ["[k]"]),
]


def profile(build, plan, run_args, workdir):
    """perf record of one heterps-run, its cycles grouped by CATEGORIES."""
    data = os.path.join(workdir, "perf.data")
    subprocess.run(["perf", "record", "-q", "-o", data, "--",
                    os.path.join(build, "bin", "heterps-run"), plan]
                   + run_args, check=True, capture_output=True)
    report = subprocess.run(
        ["perf", "report", "-i", data, "--stdio", "--no-children", "-g",
         "none", "--sort", "dso,symbol"],
        check=True, capture_output=True, text=True).stdout
    totals = {}
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(.*)", line)
        if not m:
            continue
        pct, rest = float(m.group(1)), m.group(2)
        name = "other"
        for category, keys in CATEGORIES:
            if any(k in rest for k in keys):
                name = category
                break
        totals[name] = totals.get(name, 0.0) + pct
    return sorted(totals.items(), key=lambda kv: -kv[1])


def print_profiles(build, models, seconds):
    """Where heterps-run's time goes, 1 thread: training on synthetic data
    and on one --input batch, inference on synthetic data."""
    with tempfile.TemporaryDirectory(prefix="heterps-bench-prof-") as work:
        for model in models:
            plan = make_plan(build, model, work)
            batch = MODELS[model][1]
            # Roughly `seconds` long at about 1M samples/s.
            examples = int(1e6 * seconds) // batch * batch
            runs = [
                ("training on synthetic data",
                 [f"--steps={examples // batch}", "--epochs=100000",
                  "--synthetic-vocab=100"]),
                ("training on one --input batch",
                 [f"--steps={examples // batch}"]
                 + write_inputs(model, batch, work)),
                ("inference on synthetic data",
                 ["--infer", f"--synthetic-examples={examples}",
                  "--synthetic-vocab=100"]),
            ]
            for what, extra in runs:
                print(f"{model}, batch {batch}, 1 thread, {what}: "
                      f"% of cycles", flush=True)
                for name, pct in profile(
                        build, plan,
                        extra + [f"--batch={batch}", "--log-every=0"], work):
                    if pct >= 0.5:
                        print(f"  {pct:5.1f}  {name}")


# ------------------------------------------------------------------- torch --

def timed(step, batch, seconds):
    """Samples/s of step(i) over about `seconds`, after 20 warm-up steps."""
    for i in range(20):
        step(i)
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(20):
            step(n)
            n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n * batch / elapsed


def torch_worker(model_name, threads, seconds):
    """Runs in a subprocess: measures torch and prints a JSON line."""
    import torch
    import torch.nn.functional as F
    import importlib.util

    torch.set_num_threads(threads)
    spec = importlib.util.spec_from_file_location(
        "export_torch_fixtures",
        os.path.join(SRC, "scripts", "export-torch-fixtures.py"))
    fx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fx)

    batch = MODELS[model_name][1]
    torch.manual_seed(1)
    # A few distinct batches, cycled, so that the loop does not time data
    # generation (heterps-run generates its synthetic batches in its loop).
    if model_name == "ctr":
        model = fx.CTR()
        batches = [((torch.randn(batch, fx.NUM_DENSE),
                     torch.randint(0, fx.VOCAB, (batch, fx.NUM_SLOTS))),
                    torch.randint(0, 2, (batch, 1)).float())
                   for _ in range(8)]
        criterion = torch.nn.BCELoss()
    elif model_name == "gru":
        model = fx.GRUSequenceCTR()
        batches = [(tuple(fx.sequence_batch(
                        batch, torch.Generator().manual_seed(i)).values()),
                    torch.randint(0, 2, (batch, 1)).float())
                   for i in range(8)]
        criterion = torch.nn.BCELoss()
    else:
        model = fx.MLP()
        batches = [((torch.randn(batch, 32),), torch.randint(0, 10, (batch,)))
                   for _ in range(8)]
        # heterps' softmax-ce: cross-entropy of the softmax output as logits.
        criterion = F.cross_entropy
    opt = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)

    def train_step(i):
        inputs, label = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        loss = criterion(model(*inputs), label)
        loss.backward()
        opt.step()

    def infer_step(i):
        inputs, _ = batches[i % len(batches)]
        model(*inputs)

    model.train()
    train = timed(train_step, batch, seconds)
    model.eval()
    with torch.no_grad():
        infer = timed(infer_step, batch, seconds)
    blas = [line.strip() for line in open("/proc/self/maps")
            if "blas" in line or "lapack" in line]
    blas = sorted({line.split()[-1] for line in blas})
    print(json.dumps({"train": train, "infer": infer, "blas": blas,
                      "torch_threads": torch.get_num_threads(),
                      "torch": torch.__version__}))


def heterps_worker(build, plan, model_name, threads, seconds):
    """Runs in a subprocess: heterps.Trainer.predict on one fixed batch
    (the model alone, as torch is timed) through the Python package of
    `build`; prints a JSON line."""
    sys.path.insert(0, os.path.join(build, "python"))
    import heterps

    batch = MODELS[model_name][1]
    trainer = heterps.Trainer(plan, threads=threads, batch=batch)
    inputs = {name: value for name, value in
              random_batch(model_name, batch).items() if name != "label"}
    infer = timed(lambda i: trainer.predict(inputs), batch, seconds)
    print(json.dumps({"infer": infer}))


def heterps_infer_fixed(build, plan, model, threads, seconds):
    """heterps' inference on one fixed batch (heterps_worker), with the
    OpenMP wait policy heterps-run runs with."""
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--heterps-worker", model,
         "--plan", plan, "--build", build, "--threads", str(threads),
         "--seconds", str(seconds)],
        env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["infer"]


def torch_measure(model, threads, seconds):
    """torch's best: with several threads, both OpenMP wait policies.

    On 2 cores, GNU OpenMP's spinning workers and OpenBLAS's own pthreads
    fight over the cores: the MLP at 2 threads ran 50x slower with the
    default (active) policy. heterps-run waits passively; torch gets
    whichever of the two is faster here, per phase.
    """
    best = None
    policies = ["ACTIVE", "PASSIVE"] if threads > 1 else [None]
    for policy in policies:
        env = dict(os.environ)
        env["OMP_NUM_THREADS"] = str(threads)
        env["OPENBLAS_NUM_THREADS"] = str(threads)
        if policy:
            env["OMP_WAIT_POLICY"] = policy
        out = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--torch-worker",
             model, "--threads", str(threads), "--seconds", str(seconds)],
            env=env, check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        if best is None:
            best = r
        else:
            best["train"] = max(best["train"], r["train"])
            best["infer"] = max(best["infer"], r["infer"])
    return best


# -------------------------------------------------------------------- main --

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(SRC, "build"),
                        help="build directory with bin/heterps-opt, -run")
    parser.add_argument("--threads", default="1,2",
                        help="comma-separated thread counts")
    parser.add_argument("--models", default="ctr,mlp,gru")
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="length of each timed run")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs per measure; the best counts")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--quiet-wait", type=float, default=60,
                        help="before each measure, wait up to this many "
                        "seconds for the CPUs to be 90%% idle")
    parser.add_argument("--profile", action="store_true",
                        help="instead, profile heterps-run (1 thread) with "
                        "perf and print where the time goes")
    parser.add_argument("--torch-worker", metavar="MODEL",
                        help=argparse.SUPPRESS)
    parser.add_argument("--heterps-worker", metavar="MODEL",
                        help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]

    if args.torch_worker:
        torch_worker(args.torch_worker, threads[0], args.seconds)
        return 0
    if args.heterps_worker:
        heterps_worker(args.build, args.plan, args.heterps_worker, threads[0],
                       args.seconds)
        return 0

    models = args.models.split(",")
    if args.profile:
        print_profiles(args.build, models, args.seconds)
        return 0
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; "
          f"best of {args.repeat}, ~{args.seconds:g} s per run", flush=True)
    results = []
    blas_note = None
    with tempfile.TemporaryDirectory(prefix="heterps-bench-train-") as work:
        for model in models:
            plan = make_plan(args.build, model, work)
            batch = MODELS[model][1]
            inputs = write_inputs(model, batch, work)
            for t in threads:
                r = {"model": model, "batch": batch, "threads": t,
                     "heterps_train": 0.0, "heterps_train_fixed": 0.0,
                     "heterps_infer": 0.0, "heterps_infer_fixed": 0.0,
                     "torch_train": 0.0, "torch_infer": 0.0}
                for _ in range(args.repeat):
                    idle = wait_quiet(args.quiet_wait)
                    r["min_idle"] = min(r.get("min_idle", 1.0), idle)
                    r["heterps_train"] = max(r["heterps_train"], heterps_train(
                        args.build, plan, batch, t, args.seconds))
                    r["heterps_train_fixed"] = max(
                        r["heterps_train_fixed"], heterps_train_fixed(
                            args.build, plan, inputs, batch, t, args.seconds))
                    r["heterps_infer"] = max(r["heterps_infer"], heterps_infer(
                        args.build, plan, batch, t, args.seconds))
                    r["heterps_infer_fixed"] = max(
                        r["heterps_infer_fixed"], heterps_infer_fixed(
                            args.build, plan, model, t, args.seconds))
                    wait_quiet(args.quiet_wait)
                    tm = torch_measure(model, t, args.seconds)
                    r["torch_train"] = max(r["torch_train"], tm["train"])
                    r["torch_infer"] = max(r["torch_infer"], tm["infer"])
                    blas_note = (f"torch {tm['torch']}, BLAS loaded: "
                                 f"{', '.join(tm['blas']) or 'none'}")
                print(f"  measured {model} x{t} threads (CPUs idle before: "
                      f"{100 * r['min_idle']:.0f}% at worst)", flush=True)
                results.append(r)

    print(blas_note)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print()
    print("samples/s. heterps: heterps-run on synthetic data (its generator "
          "and metric\nincluded); 'fixed': the model alone on one batch, as "
          "torch is timed (training:\nheterps-run --input; inference: "
          "heterps.Trainer.predict on NumPy arrays).")
    header = (f"{'model':<5} {'batch':>5} {'thr':>3} | {'phase':<5} | "
              f"{'heterps':>9} {'fixed':>9} {'torch':>9} | {'ratio':>5} "
              f"{'fixed':>5} | target")
    print(header)
    print("-" * len(header))
    for r in results:
        for phase in ("train", "infer"):
            h, p = r["heterps_" + phase], r["torch_" + phase]
            fixed = r.get("heterps_" + phase + "_fixed")
            ratio = h / p if p else float("inf")
            fixed_text = f"{fixed:>9.0f}" if fixed else f"{'-':>9}"
            fixed_ratio = f"{fixed / p:>5.2f}" if fixed and p else f"{'-':>5}"
            target = TARGETS.get(r["model"]) if phase == "train" else None
            mark = "" if target is None else (
                f">={target:g} " + ("met" if ratio >= target else "missed"))
            print(f"{r['model']:<5} {r['batch']:>5} {r['threads']:>3} | "
                  f"{phase:<5} | {h:>9.0f} {fixed_text} {p:>9.0f} | "
                  f"{ratio:>5.2f} {fixed_ratio} | {mark}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
