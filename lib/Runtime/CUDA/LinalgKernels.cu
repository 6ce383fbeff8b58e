//===- LinalgKernels.cu - GEMM and MatMul through cuBLAS ------------------===//
//
// cuBLAS is column-major and the runtime's tensors row-major: a row-major
// C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so each call
// passes B before A and swaps M and N; transposed operands only change the
// leading dimensions. Products compute in f32 unless --gpu-math asks for
// TF32 or BF16 tensor cores (GpuMath), so by default results match the CPU
// column's within 1e-5.
//
//===----------------------------------------------------------------------===//

#include "CublasLibrary.h"
#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

/// f32 operands and sums; with TF32 or BF16, cuBLAS rounds the operands
/// for the tensor cores.
cublasComputeType_t computeType(GpuMath math) {
  switch (math) {
  case GpuMath::TF32:
    return CUBLAS_COMPUTE_32F_FAST_TF32;
  case GpuMath::BF16:
    return CUBLAS_COMPUTE_32F_FAST_16BF;
  case GpuMath::F32:
    break;
  }
  return CUBLAS_COMPUTE_32F;
}

} // namespace

void cuda::gemm(const OpInfo &op, bool ta, bool tb, int64_t m, int64_t n,
                int64_t k, float alpha, const float *a, int64_t strideA,
                const float *b, int64_t strideB, float beta, float *y,
                int64_t batch) {
  if (m == 0 || n == 0)
    return;
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > INT32_MAX)
    fail(op.describe(), ": ", batch, " products of ", m, "x", k, "x", n,
         " are beyond cuBLAS's 32-bit dimensions");
  int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);
  cublasOperation_t opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasHandle_t h = gpuDevice().blas;
  cublasComputeType_t compute = computeType(productMath());
  if (batch == 1)
    check(cublas().gemmEx(h, opB, opA, static_cast<int>(n), static_cast<int>(m),
                          static_cast<int>(k), &alpha, b, CUDA_R_32F, ldb, a,
                          CUDA_R_32F, lda, &beta, y, CUDA_R_32F,
                          static_cast<int>(n), compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  else
    check(cublas().gemmStridedBatchedEx(
              h, opB, opA, static_cast<int>(n), static_cast<int>(m),
              static_cast<int>(k), &alpha, b, CUDA_R_32F, ldb, strideB, a,
              CUDA_R_32F, lda, strideA, &beta, y, CUDA_R_32F,
              static_cast<int>(n), m * n, static_cast<int>(batch), compute,
              CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
}

void cuda::gemmBatched(const OpInfo &op, bool ta, bool tb, int64_t m, int64_t n,
                       int64_t k, const float *a, int64_t lda, int64_t strideA,
                       const float *b, int64_t ldb, int64_t strideB, float beta,
                       float *c, int64_t ldc, int64_t strideC, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  for (int64_t v : {m, n, k, lda, ldb, ldc, batch})
    if (v > INT32_MAX)
      fail(op.describe(), ": ", batch, " products of ", m, "x", k, "x", n,
           " are beyond cuBLAS's 32-bit dimensions");
  float alpha = 1.0f;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  cublasOperation_t opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasHandle_t h = gpuDevice().blas;
  cublasComputeType_t compute = computeType(productMath());
  if (batch == 1)
    check(cublas().gemmEx(h, opB, opA, static_cast<int>(n), static_cast<int>(m),
                          static_cast<int>(k), &alpha, b, CUDA_R_32F,
                          static_cast<int>(ldb), a, CUDA_R_32F,
                          static_cast<int>(lda), &beta, c, CUDA_R_32F,
                          static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  else
    check(cublas().gemmStridedBatchedEx(
              h, opB, opA, static_cast<int>(n), static_cast<int>(m),
              static_cast<int>(k), &alpha, b, CUDA_R_32F, static_cast<int>(ldb),
              strideB, a, CUDA_R_32F, static_cast<int>(lda), strideA, &beta, c,
              CUDA_R_32F, static_cast<int>(ldc), strideC,
              static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
}

void cuda::gemmLeading(const OpInfo &op, bool ta, bool tb, int64_t m, int64_t n,
                       int64_t k, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float beta, float *c, int64_t ldc) {
  gemmBatched(op, ta, tb, m, n, k, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

namespace {

/// y[o] = beta * c[broadcast index of o]: the C term of a GEMM, written
/// before cuBLAS accumulates the product onto it.
__global__ void broadcastScaled(const float *c, float beta, float *y, int64_t n,
                                Indexing ix) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = beta * c[offsetOf(i, ix)];
}

/// heterps.gemm: alpha * op(A) op(B) + beta * C.
class GemmKernel : public Kernel {
public:
  explicit GemmKernel(const OpInfo &op)
      : Kernel(op), ta(op.getBool("trans_a", false)),
        tb(op.getBool("trans_b", false)),
        alpha(static_cast<float>(op.getFloat("alpha", 1.0))),
        beta(static_cast<float>(op.getFloat("beta", 1.0))) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::GemmShape product(in[0], in[1], ta, tb, info);
    m = product.m;
    k = product.k;
    n = product.n;
    hasC = in.size() > 2;
    Shape out{m, n};
    if (hasC) {
      if (cpu::broadcastShapes(in[2], out, info) != out)
        fail(info.describe(), ": C of shape ", shapeString(in[2]),
             " does not broadcast to ", m, "x", n);
      cIndex = makeIndexing(out, cpu::broadcastStrides(in[2], out), {}, info);
    }
    return {out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    float *y = res[0]->as<float>();
    int64_t total = m * n;
    // beta * C even when beta is 0, so that a NaN in C propagates as on
    // the CPU.
    bool accumulate = hasC;
    if (accumulate && total) {
      broadcastScaled<<<blocksFor(total), kBlock, 0, gpuDevice().stream>>>(
          in[2]->as<float>(), beta, y, total, cIndex);
      checkLaunch(info);
    }
    if (k == 0) {
      if (!accumulate && total)
        check(cudaMemsetAsync(y, 0, total * sizeof(float), gpuDevice().stream),
              "clearing a GEMM's result");
      return;
    }
    gemm(info, ta, tb, m, n, k, alpha, in[0]->as<float>(), 0,
         in[1]->as<float>(), 0, accumulate ? 1.0f : 0.0f, y, 1);
  }

private:
  bool ta, tb;
  float alpha, beta;
  int64_t m = 0, k = 0, n = 0;
  bool hasC = false;
  Indexing cIndex;
};

/// heterps.matmul with NumPy semantics (cpu::MatMulShape): equal batch
/// dimensions run as a strided batch.
class MatMulKernel : public Kernel {
public:
  explicit MatMulKernel(const OpInfo &op) : Kernel(op) { requireF32(op); }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::MatMulShape product(in[0], in[1], info);
    batch = product.batch;
    m = product.m;
    k = product.k;
    n = product.n;
    bBatched = product.bBatched;
    return {product.out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    float *y = res[0]->as<float>();
    if (k == 0) {
      if (res[0]->byteSize())
        check(cudaMemsetAsync(y, 0, res[0]->byteSize(), gpuDevice().stream),
              "clearing a MatMul's result");
      return;
    }
    gemm(info, false, false, m, n, k, 1.0f, in[0]->as<float>(), m * k,
         in[1]->as<float>(), bBatched ? k * n : 0, 0.0f, y, batch);
  }

private:
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool bBatched = false;
};

} // namespace

void cuda::registerLinalgKernels(KernelRegistry &r) {
  addKernel<GemmKernel>(r, "heterps.gemm");
  addKernel<MatMulKernel>(r, "heterps.matmul");
}
