"""Writes N lines of Criteo-format TSV: label, 13 integers, 26 hex hashes,
with some fields empty as in the real data.

usage: make-criteo.py FILE N [SEED]"""
import random
import sys

path, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 7)
with open(path, "w") as f:
    for _ in range(n):
        ints = ["" if rng.random() < 0.1 else str(rng.randint(-1, 500)) for _ in range(13)]
        cats = ["" if rng.random() < 0.1 else "%08x" % rng.getrandbits(32) for _ in range(26)]
        f.write("\t".join([str(rng.randint(0, 1))] + ints + cats) + "\n")
