#!/usr/bin/python3
"""CTR training against PS servers on loopback against the embedded default.

    /usr/bin/python3 bench/ps/train.py --build BUILD [--tables 26]
        [--batches 64,512] [--servers 2] [--seconds 2] [--repeat 3]

Writes a DLRM-shaped model (bench/ps/make-dlrm.py: 26 tables of one id
each, dim 16, bottom and top MLPs), compiles its training step (Adagrad),
and trains it on synthetic data with heterps-run: with the embedded PS
server (the default), and against --servers `heterps-run serve` processes
on 127.0.0.1 started here. Prints samples/s of each (best of --repeat runs
of about --seconds) and their ratio. The servers are fresh for every run.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def run(cmd):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    if out.returncode != 0:
        raise RuntimeError(" ".join(cmd) + " failed:\n" + out.stdout)
    return out.stdout


def start_servers(heterps_run, count, workdir):
    servers, addresses = [], []
    for i in range(count):
        port_file = os.path.join(workdir, f"port.{i}")
        if os.path.exists(port_file):
            os.remove(port_file)
        servers.append(subprocess.Popen(
            [heterps_run, "serve", f"--shard-index={i}",
             f"--shard-count={count}", f"--port-file={port_file}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(400):
            if os.path.exists(port_file):
                break
            time.sleep(0.01)
        with open(port_file) as f:
            addresses.append("127.0.0.1:" + f.read().strip())
    return servers, ",".join(addresses)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(SRC, "build"))
    parser.add_argument("--tables", type=int, default=26)
    parser.add_argument("--batches", default="64,512")
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    opt = os.path.join(args.build, "bin", "heterps-opt")
    heterps_run = os.path.join(args.build, "bin", "heterps-run")
    with tempfile.TemporaryDirectory() as workdir:
        model = os.path.join(workdir, "dlrm.mlir")
        plan = os.path.join(workdir, "dlrm.plan")
        run(["/usr/bin/python3", os.path.join(SRC, "bench", "ps",
                                              "make-dlrm.py"), model,
             f"--tables={args.tables}"])
        run([opt, model,
             "--heterps-autodiff=optimizer=adagrad learning-rate=0.05",
             f"--heterps-emit-plan=file={plan}", "-o", os.devnull])

        def rate(batch, steps, ps):
            cmd = [heterps_run, plan, f"--batch={batch}", f"--steps={steps}",
                   "--log-every=0", "--synthetic-vocab=100000",
                   "--synthetic-examples=1000000"]
            servers = []
            if ps:
                servers, addresses = start_servers(heterps_run, args.servers,
                                                   workdir)
                cmd.append(f"--ps={addresses}")
            try:
                out = run(cmd)
            finally:
                for server in servers:
                    server.terminate()
                    server.wait()
            m = re.search(r"samples in [\d.]+ s: (\d+) samples/s", out)
            if not m:
                raise RuntimeError("no throughput line in:\n" + out)
            return float(m.group(1))

        print(f"{args.tables} tables, {args.servers} servers on loopback")
        print(f"{'batch':>5} {'embedded':>10} {'servers':>10} {'ratio':>6}")
        for batch in [int(b) for b in args.batches.split(",")]:
            probe = rate(batch, 20, False)
            steps = max(20, int(probe * args.seconds / batch))
            embedded = max(rate(batch, steps, False)
                           for _ in range(args.repeat))
            remote = max(rate(batch, steps, True) for _ in range(args.repeat))
            print(f"{batch:5} {embedded:10.0f} {remote:10.0f} "
                  f"{remote / embedded:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
