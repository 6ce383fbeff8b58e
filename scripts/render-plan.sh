#!/usr/bin/env bash
# Renders a plan graph (heterps-opt --heterps-view-plan=file=plan.dot, or
# heterps-run PLAN --print-plan=dot > plan.dot) with Graphviz's dot.
#
#   scripts/render-plan.sh plan.dot            # writes plan.svg
#   scripts/render-plan.sh plan.dot out.png    # the format from the name
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: render-plan.sh PLAN.dot [OUT.svg|OUT.png|OUT.pdf]" >&2
  exit 2
fi
in=$1
out=${2:-${in%.dot}.svg}
format=${out##*.}
case "$format" in
  svg | png | pdf) ;;
  *)
    echo "render-plan.sh: '$out': the output must end in .svg, .png or .pdf" >&2
    exit 2
    ;;
esac
if [ ! -f "$in" ]; then
  echo "render-plan.sh: no such file '$in'" >&2
  exit 1
fi
if ! command -v dot > /dev/null; then
  echo "render-plan.sh: Graphviz's dot is not installed (apt install graphviz)" >&2
  exit 1
fi
dot -T"$format" "$in" -o "$out"
echo "wrote $out"
