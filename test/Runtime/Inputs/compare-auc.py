"""Compares the AUC of the last progress line of training logs with the
first log's.

usage: compare-auc.py REFERENCE.log OTHER.log... --within D
Prints each log's AUC; exits 1 (and says FAIL) when one differs from the
reference's by more than D.
"""
import argparse
import os
import re
import sys


def last_auc(path):
    auc = None
    with open(path) as f:
        for line in f:
            m = re.search(r"^step \d+ .* auc ([0-9.]+)", line)
            if m:
                auc = float(m.group(1))
    if auc is None:
        sys.exit("%s: no progress line with an AUC" % path)
    return auc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("reference")
    parser.add_argument("others", nargs="+")
    parser.add_argument("--within", type=float, required=True)
    args = parser.parse_args()
    name = os.path.basename
    reference = last_auc(args.reference)
    print("%s: auc %.4f" % (name(args.reference), reference))
    ok = True
    for path in args.others:
        auc = last_auc(path)
        close = abs(auc - reference) <= args.within
        ok &= close
        print("%s: auc %.4f, %s %g of %s" %
              (name(path), auc, "within" if close else "FAIL: not within",
               args.within, name(args.reference)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
