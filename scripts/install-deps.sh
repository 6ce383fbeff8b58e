#!/usr/bin/env bash
# Installs the Debian packages HeterPS builds and tests with. Idempotent: packages
# that are already present are skipped, so a warm machine pays only a dpkg query.
set -euo pipefail

packages=(
  # Build tools.
  cmake ninja-build lld ccache g++ pkg-config clang-format
  # LLVM/MLIR 22. mlir-22-tools must be explicit: MLIRConfig.cmake checks for
  # mlir-tblgen. Never add another libmlir-N-dev: the two conflict.
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # Runtime libraries.
  libdnnl-dev ocl-icd-opencl-dev libeigen3-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
  libgrpc++-dev protobuf-compiler-grpc librocksdb-dev zlib1g-dev
  # Multi-process jobs: mpirun and the MPI library heterps-run links.
  openmpi-bin libopenmpi-dev
  # The fuzz targets (scripts/fuzz.sh): clang with libFuzzer and the
  # sanitizer runtimes of LLVM 22.
  clang-22 libclang-rt-22-dev
  # Tests and benchmarks.
  libgtest-dev libgmock-dev libbenchmark-dev
  # The tools' flags module (lib/Support/Flags.cpp).
  libcli11-dev
  # Certificates for the TLS tests (test/PS/tls-token.test, python/tests).
  openssl
  python3 python3-numpy python3-onnx libonnx-testdata python3-yaml
  python3-protobuf
  # The Python package (python/) and its tests.
  pybind11-dev python3-pytest
  # scripts/plot-metrics.py (tested).
  python3-matplotlib
  # The PyTorch parity tests (torchvision's models are exported at test
  # time) and the training benchmark (OpenBLAS gives PyTorch a fair BLAS),
  # and a real data set for the training tests.
  python3-torch python3-torchvision libopenblas0-pthread
  dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
