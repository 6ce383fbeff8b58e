//===- NormKernels.cu - Layer normalisation and its gradient on the GPU ---===//
//
// The input is seen as rows of the normalised dimensions (LayerNormShape, as
// on the CPU). One warp normalises one row: its mean, then its variance
// around that mean (two passes, as the CPU's oneDNN computes it), both warp
// reductions. The gradient recomputes each row's statistics, writes the
// input's gradient and keeps the rows' means and reciprocal deviations for
// a second kernel that sums the scale's and bias's gradients column by
// column (one thread per column, rows in order: no atomics).
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

/// The mean and 1 / sqrt(variance + epsilon) of row `x` of `n` elements,
/// in every lane of the warp.
__device__ void rowStatistics(const float *x, int64_t n, float epsilon,
                              float &mean, float &rstd) {
  int lane = threadIdx.x % kWarp;
  float sum = 0;
  for (int64_t i = lane; i < n; i += kWarp)
    sum += x[i];
  mean = warpSum(sum) / static_cast<float>(n);
  float squares = 0;
  for (int64_t i = lane; i < n; i += kWarp) {
    float d = x[i] - mean;
    squares += d * d;
  }
  rstd = rsqrtf(warpSum(squares) / static_cast<float>(n) + epsilon);
}

__global__ void layerNormRows(const float *x, const float *scale,
                              const float *bias, float *y, int64_t rows,
                              int64_t n, float epsilon) {
  int lane = threadIdx.x % kWarp;
  for (int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
       row < rows; row += int64_t(gridDim.x) * kRowsPerBlock) {
    const float *xr = x + row * n;
    float mean, rstd;
    rowStatistics(xr, n, epsilon, mean, rstd);
    for (int64_t i = lane; i < n; i += kWarp)
      y[row * n + i] =
          (xr[i] - mean) * rstd * scale[i] + (bias ? bias[i] : 0.0f);
  }
}

/// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * scale;
/// the rows' statistics go to `stats` (mean, rstd per row).
__global__ void layerNormGradRows(const float *x, const float *scale,
                                  const float *dy, float *dx, float *stats,
                                  int64_t rows, int64_t n, float epsilon) {
  int lane = threadIdx.x % kWarp;
  for (int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
       row < rows; row += int64_t(gridDim.x) * kRowsPerBlock) {
    const float *xr = x + row * n, *dyr = dy + row * n;
    float mean, rstd;
    rowStatistics(xr, n, epsilon, mean, rstd);
    float sumG = 0, sumGX = 0;
    for (int64_t i = lane; i < n; i += kWarp) {
      float g = dyr[i] * scale[i];
      sumG += g;
      sumGX += g * (xr[i] - mean) * rstd;
    }
    float meanG = warpSum(sumG) / static_cast<float>(n);
    float meanGX = warpSum(sumGX) / static_cast<float>(n);
    for (int64_t i = lane; i < n; i += kWarp) {
      float xhat = (xr[i] - mean) * rstd;
      dx[row * n + i] = rstd * (dyr[i] * scale[i] - meanG - xhat * meanGX);
    }
    if (lane == 0) {
      stats[2 * row] = mean;
      stats[2 * row + 1] = rstd;
    }
  }
}

/// dscale[j] = sum over rows of dy * xhat, dbias[j] = sum of dy.
__global__ void layerNormParamGrads(const float *x, const float *dy,
                                    const float *stats, float *dscale,
                                    float *dbias, int64_t rows, int64_t n) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x) {
    float sumScale = 0, sumBias = 0;
    for (int64_t row = 0; row < rows; ++row) {
      float g = dy[row * n + j];
      sumScale += g * (x[row * n + j] - stats[2 * row]) * stats[2 * row + 1];
      sumBias += g;
    }
    dscale[j] = sumScale;
    dbias[j] = sumBias;
  }
}

/// heterps.layer_norm: (input, scale, [bias]) -> output; attributes axis
/// (default -1) and epsilon (default 1e-5).
class LayerNormKernel : public Kernel {
public:
  explicit LayerNormKernel(const OpInfo &op)
      : Kernel(op), epsilon(static_cast<float>(op.getFloat("epsilon", 1e-5))) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() < 2 || in.size() > 3)
      fail() << info.describe() << ": takes 2 or 3 operands, got " << in.size();
    cpu::LayerNormShape shape(in[0], in[1], info);
    if (in.size() == 3 && in[2] != in[1])
      fail() << info.describe() << ": bias has shape " << shapeString(in[2])
             << ", expected the scale's " << shapeString(in[1]);
    rows = shape.outer;
    n = shape.inner;
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (rows == 0 || n == 0)
      return;
    layerNormRows<<<blocksForRows(rows), kBlock, 0, gpuDevice().stream>>>(
        in[0]->as<float>(), in[1]->as<float>(),
        in.size() == 3 ? in[2]->as<float>() : nullptr, res[0]->as<float>(),
        rows, n, epsilon);
    checkLaunch(info);
  }

private:
  float epsilon;
  int64_t rows = 0, n = 0;
};

/// heterps.layer_norm_grad: (input, scale, dy) -> (dinput, dscale, dbias).
class LayerNormGradKernel : public Kernel {
public:
  explicit LayerNormGradKernel(const OpInfo &op)
      : Kernel(op), epsilon(static_cast<float>(op.getFloat("epsilon", 1e-5))) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() != 3)
      fail() << info.describe() << ": takes 3 operands, got " << in.size();
    cpu::LayerNormShape shape(in[0], in[1], info);
    if (in[2] != in[0])
      fail() << info.describe() << ": dy has shape " << shapeString(in[2])
             << ", expected the input shape " << shapeString(in[0]);
    rows = shape.outer;
    n = shape.inner;
    // The rows' statistics, kept between the two kernels; allocated when a
    // larger batch arrives, not at every step.
    if (rows > statsRows) {
      void *p = nullptr;
      check(cudaMalloc(&p, 2 * rows * sizeof(float)),
            "allocating a layer norm's statistics");
      stats.reset(static_cast<float *>(p), cudaFree);
      statsRows = rows;
    }
    return {in[0], in[1], in[1]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    if (n == 0)
      return;
    if (rows == 0) {
      for (int r = 1; r < 3; ++r)
        check(cudaMemsetAsync(res[r]->data(), 0, res[r]->byteSize(), stream),
              "clearing a layer norm's parameter gradients");
      return;
    }
    layerNormGradRows<<<blocksForRows(rows), kBlock, 0, stream>>>(
        in[0]->as<float>(), in[1]->as<float>(), in[2]->as<float>(),
        res[0]->as<float>(), stats.get(), rows, n, epsilon);
    checkLaunch(info);
    layerNormParamGrads<<<blocksFor(n), kBlock, 0, stream>>>(
        in[0]->as<float>(), in[2]->as<float>(), stats.get(),
        res[1]->as<float>(), res[2]->as<float>(), rows, n);
    checkLaunch(info);
  }

private:
  float epsilon;
  int64_t rows = 0, n = 0, statsRows = 0;
  std::shared_ptr<float> stats;
};

} // namespace

void cuda::registerNormKernels(KernelRegistry &r) {
  addKernel<LayerNormKernel>(r, "heterps.layer_norm");
  addKernel<LayerNormGradKernel>(r, "heterps.layer_norm_grad");
}
