#!/usr/bin/env python3
"""Regenerates the seed corpora under fuzz/corpus/ from the test fixtures.

    fuzz/make-seeds.py BUILD_DIR     # a build with heterps-opt and heterps-ps

Seeds are small valid (and a few nearly valid) inputs of each fuzz target's
input format (see the comment at the top of each Fuzz*.cpp); the fuzzers
mutate from them. Inputs the fuzzers found and that are worth keeping are
added beside them by hand (named found-*), and this script leaves those.
"""

import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data)


def clear(target):
    for path in glob.glob(os.path.join(CORPUS, target, "*")):
        if not os.path.basename(path).startswith("found-"):
            os.remove(path)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def schedule_json():
    clear("schedule-json")
    write("schedule-json", "cluster-local", b"\0" + read(f"{ROOT}/examples/clusters/local.json"))
    write("schedule-json", "cluster-aws", b"\0" + read(f"{ROOT}/examples/clusters/aws-c6i-p3-p4d.json"))
    write("schedule-json", "cluster-two-pools", b"\0" + read(f"{ROOT}/test/Runtime/Inputs/two-pools.json"))
    profile = (b'{"batch_size": 256, "ops": ['
               b'{"op": "fc1", "resource": "local-cpu", "seconds": 0.001},'
               b'{"op": "relu", "resource": "local-cpu", "seconds": 1e-5}]}')
    write("schedule-json", "profile", b"\1" + profile)


def onnx_import():
    clear("onnx-import")
    for name in ["mlp", "cnn", "ctr", "opset9", "shape-subgraph", "int-relu",
                 "batch-output", "random", "cycle", "runtime-shape",
                 "torch-din", "torch-two-tower"]:
        write("onnx-import", name, read(f"{ROOT}/test/Import/ONNX/Inputs/{name}.onnx"))


def plans(build):
    clear("plan")
    opt = os.path.join(build, "bin", "heterps-opt")
    models = f"{ROOT}/test/Import/ONNX/Inputs"
    with tempfile.TemporaryDirectory() as tmp:
        jobs = {
            "mlp-infer": [f"{models}/mlp.onnx"],
            "mlp-train": [f"{models}/mlp.onnx",
                          "--heterps-autodiff=loss=softmax-ce optimizer=adam learning-rate=0.01"],
            "cnn-train": [f"{models}/cnn.onnx",
                          "--heterps-autodiff=loss=softmax-ce optimizer=momentum learning-rate=0.01"],
            "ctr-infer": [f"{models}/ctr.onnx"],
            "ctr-staged": [f"{models}/torch-ctr.onnx",
                           "--heterps-autodiff=loss=bce optimizer=sgd learning-rate=0.1",
                           f"--heterps-schedule=cluster={ROOT}/test/Runtime/Inputs/two-pools.json "
                           "solver=dp throughput=350000 batch=64 micro-batches=4"],
        }
        for name, args in jobs.items():
            out = os.path.join(tmp, name + ".plan")
            subprocess.run([opt, *args, f"--heterps-emit-plan=file={out}", "-o", "/dev/null"],
                           check=True)
            # Format version 1 has no checksum: the fuzzer's mutations
            # reach the parser and verifyPlan instead of stopping at the
            # version 2 trailer (a mutated version field still tries it).
            data = read(out)
            assert data[8:12] == (2).to_bytes(4, "little"), name
            write("plan", name, data[:8] + (1).to_bytes(4, "little") +
                  data[12:-8])


def tensor(array, name):
    return numpy_helper.from_array(array, name).SerializeToString()


def data_readers():
    clear("data-readers")
    criteo = b"1\t" + b"\t".join(str(i).encode() for i in range(13)) + b"\t" + \
        b"\t".join(b"%08x" % (i * 2654435761 % 2**32) for i in range(26)) + b"\n"
    criteo += b"0\t" + b"\t" * 12 + b"\t" + b"\t".join(b"" if i % 3 else b"68fd1e64" for i in range(26)) + b"\n"
    write("data-readers", "criteo", bytes([0, 3, 2]) + criteo)
    write("data-readers", "libsvm", bytes([1, 7, 1]) + b"1 1:0.5 3:1.25 8:-2\n0 2:1\n-1 8:3e-3 1:1\n")
    write("data-readers", "csv", bytes([2, 0x41, 3]) + b"y,a,b\n1,0.5,2\n0,1e3,-1\n1,2,3\n")
    images = struct.pack(">IIII", 0x803, 2, 2, 2) + bytes([0, 255, 7, 9, 1, 2, 3, 4])
    labels = struct.pack(">II", 0x801, 2) + bytes([3, 9])
    write("data-readers", "idx", bytes([3, 3, 1]) + struct.pack("<I", len(images)) + images + labels)
    write("data-readers", "tensor-f32", bytes([4, 0, 0]) + tensor(np.arange(6, dtype=np.float32).reshape(2, 3), "x"))
    t = onnx.TensorProto()
    t.name, t.data_type = "ids", onnx.TensorProto.INT64
    t.dims.extend([2, 2])
    t.int64_data.extend([1, 2, 3, 4])
    write("data-readers", "tensor-i64-typed", bytes([4, 0, 0]) + t.SerializeToString())


def runtime_checkpoint():
    parts = [tensor(np.ones((3, 4), np.float32), "w"),
             tensor(np.zeros((2, 12), np.float32), "w"),
             tensor(np.array([5], np.int64), "w")]
    data = bytes([0, 0x87])
    for p in parts:
        data += struct.pack("<H", len(p)) + p
    return data + b"entry epoch 2\n"


def ps_checkpoint(build):
    ps = os.path.join(build, "bin", "heterps-ps")
    run = os.path.join(build, "bin", "heterps-run")
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        server = subprocess.Popen([run, "serve", "--listen=127.0.0.1:0", f"--port-file={port_file}",
                                   f"--checkpoint-dir={tmp}/ckpt"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            import time
            for _ in range(200):
                if os.path.exists(port_file) and read(port_file).strip():
                    break
                time.sleep(0.05)
            address = "127.0.0.1:" + read(port_file).decode().strip()
            for args in (["create-table", "--id=3", "--dim=4", "--optimizer=adam"],
                         ["push-constant", "--table=3", "--keys=1:3:7", "--value=0.5"],
                         ["checkpoint", "c"]):
                subprocess.run([ps, *args, f"--ps={address}"], check=True,
                               stdout=subprocess.DEVNULL)
        finally:
            server.terminate()
            server.wait()
        ckpt = f"{tmp}/ckpt/c"
        manifest = read(glob.glob(f"{ckpt}/MANIFEST.*")[0])[12:]
        rows = [read(p) for p in glob.glob(f"{ckpt}/*.rows")]
        return bytes([1, 3]) + struct.pack("<I", len(manifest)) + manifest + b"".join(rows)


def checkpoint(build):
    clear("checkpoint")
    write("checkpoint", "runtime-adam", runtime_checkpoint())
    write("checkpoint", "ps-table", ps_checkpoint(build))


def ps_service():
    clear("ps-service")
    # CreateTable(table 1, dim 4, adam), Push 3 keys, Pull them, Checkpoint
    # 'c0', Restore 'c0', ServerInfo, Metrics.
    create = bytes([0, 1, 3, 7, 2])
    push = bytes([3, 1, 3, 1, 2, 3, 0, 0, 3]) + struct.pack("<12f", *[0.25] * 12) + bytes([0, 1, 1, 0])
    pull = bytes([2, 1, 3, 1, 2, 3, 0, 0])
    write("ps-service", "table-roundtrip",
          create + push + pull + bytes([9, 0, 4, 10, 0, 11, 12]))
    # SetTableOptimizer: Adam's hyper-parameters (kept), then Adagrad
    # (refused), around pushes and a pull.
    write("ps-service", "set-optimizer",
          create + push + bytes([13, 1, 2]) + push + pull + bytes([13, 1, 3]))
    dense = bytes([6, 0, 2, 2, 2]) + struct.pack("<4f", 1, 2, 3, 4) + bytes([0, 2])
    push_dense = bytes([8, 0, 4]) + struct.pack("<f", 0.5) * 4 + bytes([0, 1, 1])
    write("ps-service", "dense", dense + push_dense + bytes([7, 0]))
    many = bytes([0, 0, 1, 0, 0, 2, 2, 0, 1])
    many += bytes([4, 2, 0, 2, 5, 6, 0, 0, 2, 1, 7, 0, 1])
    write("ps-service", "many", many)
    # A raw PullRequest for table 1 with one key: the high bit on the method.
    raw = bytes([0x08, 0x01, 0x12, 0x08]) + struct.pack("<Q", 42)
    write("ps-service", "raw-pull", bytes([0x82, len(raw), 0]) + raw)


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field1(payload):
    return b"\x0a" + varint(len(payload)) + payload


def ps_answers():
    clear("ps-answers")
    # A Pull answer: 3 keys of dimension 2 in f32, in 5-byte slices, in order.
    rows = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    write("ps-answers", "pull-f32", bytes([0, 0, 4, 3, 1]) + field1(rows))
    # A PullMany answer of 2 parts (2 keys of dimension 3, none of 1), each
    # row to its place, in 7-byte slices.
    part = field1(struct.pack("<6f", *range(6)))
    write("ps-answers", "many-scatter",
          bytes([4 | 8, 1, 6, 2, 2, 0, 0]) + field1(part) + field1(b""))
    # f16 rows (1.0 and -2.0 for 1 key of dimension 2) to their places.
    write("ps-answers", "pull-f16-scatter",
          bytes([1 | 8, 0, 2, 1, 1]) + field1(struct.pack("<2e", 1.0, -2.0)))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fuzz/make-seeds.py BUILD_DIR")
    build = os.path.abspath(sys.argv[1])
    schedule_json()
    onnx_import()
    plans(build)
    data_readers()
    checkpoint(build)
    ps_service()
    ps_answers()


if __name__ == "__main__":
    main()
