#!/usr/bin/python3
"""Writes a DLRM-shaped model in the HeterPS dialect: 26 embedding tables
(one id each, as Criteo's categorical columns), 13 dense features through a
bottom MLP, and a top MLP over their concatenation.

usage: make-dlrm.py OUT.mlir [--tables 26] [--dim 16] [--vocab 100000]
                    [--top 256,128]
"""
import argparse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--tables", type=int, default=26)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--vocab", type=int, default=100000)
    parser.add_argument("--top", default="256,128",
                        help="the top MLP's hidden widths, comma-separated")
    args = parser.parse_args()
    try:
        top = [int(w) for w in args.top.split(",")]
    except ValueError:
        parser.error(f"--top takes comma-separated widths, got '{args.top}'")
    if not top or min(top) < 1:
        parser.error(f"--top takes positive widths, got '{args.top}'")
    t, d = args.tables, args.dim
    width = d * (t + 1)
    lines = ["module {"]
    for i in range(t):
        lines.append(f"  heterps.embedding_table @c{i} {{vocab = {args.vocab} : i64, "
                     f"dim = {d} : i64, initializer = "
                     f"#heterps.init<uniform(-0.01, 0.01)>}}")
    widths = [width] + top
    params = [("bottom", 13, d)]
    params += [(f"top{i + 1}", widths[i], widths[i + 1]) for i in range(len(top))]
    params.append(("out", top[-1], 1))
    for name, fan_in, fan_out in params:
        lines.append(f"  heterps.param @{name}.weight : tensor<{fan_in}x{fan_out}xf32>"
                     " = #heterps.init<xavier_uniform>")
        lines.append(f"  heterps.param @{name}.bias : tensor<{fan_out}xf32>"
                     " = #heterps.init<zeros>")
    ids = ", ".join(f"%s{i}: tensor<?x1xi64>" for i in range(t))
    lines.append(f"  func.func @train_step(%dense: tensor<?x13xf32>, {ids}, "
                 "%label: tensor<?x1xf32>) -> (tensor<?x1xf32> "
                 "{heterps.name = \"logit\"}, tensor<f32> {heterps.name = \"loss\"}) {")
    for i in range(t):
        lines.append(f"    %e{i} = heterps.embedding_lookup @c{i}[%s{i}] "
                     "{combiner = #heterps.combiner<sum>} : "
                     f"(tensor<?x1xi64>) -> tensor<?x{d}xf32>")

    def gemm(out, x, name, fan_in, fan_out, relu=True):
        lines.append(f"    %{name}w = heterps.load_param @{name}.weight : "
                     f"tensor<{fan_in}x{fan_out}xf32>")
        lines.append(f"    %{name}b = heterps.load_param @{name}.bias : "
                     f"tensor<{fan_out}xf32>")
        target = out + "g" if relu else out
        lines.append(f"    %{target} = heterps.gemm %{x}, %{name}w, %{name}b : "
                     f"(tensor<?x{fan_in}xf32>, tensor<{fan_in}x{fan_out}xf32>, "
                     f"tensor<{fan_out}xf32>) -> tensor<?x{fan_out}xf32>")
        if relu:
            lines.append(f"    %{out} = heterps.relu %{target} : "
                         f"tensor<?x{fan_out}xf32>")
    gemm("b", "dense", "bottom", 13, d)
    parts = ", ".join(["%b"] + [f"%e{i}" for i in range(t)])
    types = ", ".join([f"tensor<?x{d}xf32>"] * (t + 1))
    lines.append(f"    %x = heterps.concat {parts} {{axis = 1 : i64}} : "
                 f"({types}) -> tensor<?x{width}xf32>")
    previous = "x"
    for i in range(len(top)):
        gemm(f"h{i + 1}", previous, f"top{i + 1}", widths[i], widths[i + 1])
        previous = f"h{i + 1}"
    gemm("logit", previous, "out", top[-1], 1, relu=False)
    lines.append("    %loss = heterps.bce_loss %logit, %label {from_logits = true} : "
                 "(tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>")
    lines.append("    return %logit, %loss : tensor<?x1xf32>, tensor<f32>")
    lines.append("  }")
    lines.append("}")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
