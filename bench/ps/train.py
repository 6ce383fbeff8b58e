#!/usr/bin/python3
"""CTR training against PS servers on loopback against the embedded default.

    /usr/bin/python3 bench/ps/train.py --build BUILD [--tables 26]
        [--batches 64,512] [--servers 2] [--seconds 2] [--repeat 3]
        [--delay-ms 0]

Writes a DLRM-shaped model (bench/ps/make-dlrm.py: 26 tables of one id
each, dim 16, bottom and top MLPs), compiles its training step (Adagrad),
and trains it on synthetic data with heterps-run: with the embedded PS
server (the default), and against --servers `heterps-run serve` processes
on 127.0.0.1 started here, with each --ps-pull-ahead mode (off, exact,
stale), optionally through bench/ps/delay-proxy.py (--delay-ms each way,
as on a real network). Prints samples/s of each (best of --repeat runs of about --seconds)
and their ratios to the embedded default. The servers are fresh for every
run.
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


def start_proxy(target, delay_ms, port_file):
    """bench/ps/delay-proxy.py in front of `target`; returns (process,
    address)."""
    if os.path.exists(port_file):
        os.remove(port_file)
    proxy = subprocess.Popen(
        ["/usr/bin/python3", os.path.join(SRC, "bench", "ps",
                                          "delay-proxy.py"),
         f"--target={target}", f"--delay-ms={delay_ms}",
         f"--port-file={port_file}"])
    for _ in range(400):
        if os.path.exists(port_file):
            break
        time.sleep(0.01)
    with open(port_file) as f:
        return proxy, "127.0.0.1:" + f.read().strip()


def start_servers(heterps_run, count, workdir, delay_ms=0):
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
        if delay_ms > 0:
            proxy, addresses[-1] = start_proxy(
                addresses[-1], delay_ms, os.path.join(workdir, f"proxy.{i}"))
            servers.append(proxy)
    return servers, ",".join(addresses)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(SRC, "build"))
    parser.add_argument("--tables", type=int, default=26)
    parser.add_argument("--batches", default="64,512")
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--delay-ms", type=float, default=0,
                        help="put bench/ps/delay-proxy.py, delaying each "
                        "way by this many ms, between worker and servers")
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

        def rate(batch, steps, ps, pull_ahead="off"):
            cmd = [heterps_run, plan, f"--batch={batch}", f"--steps={steps}",
                   "--log-every=0", "--synthetic-vocab=100000",
                   "--synthetic-examples=1000000"]
            servers = []
            if ps:
                servers, addresses = start_servers(heterps_run, args.servers,
                                                   workdir, args.delay_ms)
                cmd += [f"--ps={addresses}", f"--ps-pull-ahead={pull_ahead}"]
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

        modes = ["off", "exact", "stale"]
        delay = (f", {args.delay_ms:g} ms each way" if args.delay_ms > 0
                 else "")
        print(f"{args.tables} tables, {args.servers} servers on loopback"
              f"{delay}; servers' samples/s by --ps-pull-ahead (ratio to "
              "embedded)")
        print(f"{'batch':>5} {'embedded':>10} " +
              " ".join(f"{m:>16}" for m in modes))
        for batch in [int(b) for b in args.batches.split(",")]:
            probe = rate(batch, 20, False)
            steps = max(20, int(probe * args.seconds / batch))
            embedded = max(rate(batch, steps, False)
                           for _ in range(args.repeat))
            cells = []
            for mode in modes:
                remote = max(rate(batch, steps, True, mode)
                             for _ in range(args.repeat))
                cells.append(f"{remote:9.0f} ({remote / embedded:4.2f})")
            print(f"{batch:5} {embedded:10.0f} " + " ".join(cells),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
