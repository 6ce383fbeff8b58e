//===- NormKernels.cu - Batch and layer normalisation on the GPU ----------===//
//
// Batch normalisation gives each channel a block: its mean, then its
// variance around that mean (two passes, as oneDNN computes them on the
// CPU), block reductions over the channel's batch x spatial values; an
// elementwise kernel then normalises. In training the running statistics
// (views of the parameters' device copies) are updated in place, as on the
// CPU. The gradient recomputes the statistics, as the CPU's does.
//
// Layer normalisation sees the input as rows of the normalised dimensions
// (LayerNormShape, as on the CPU). One warp normalises one row: its mean, then
// its variance around that mean (two passes, as the CPU's oneDNN computes it),
// both warp reductions. The gradient recomputes each row's statistics, writes
// the input's gradient and keeps the rows' means and reciprocal deviations for
// the scale's and bias's gradients: sums over the rows, per column, done in
// two passes so that the whole GPU takes part however few the columns are
// (chunks of rows in parallel, then the chunks' sums in order: no atomics).
//
//===----------------------------------------------------------------------===//

#include "BatchNormMath.h"
#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

#include <algorithm>

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

/// Rows per chunk of the parameter gradients' first pass.
constexpr int64_t kRowsPerChunk = 64;

HETERPS_HD inline int64_t chunksFor(int64_t rows) {
  return (rows + kRowsPerChunk - 1) / kRowsPerChunk;
}

/// The parameter gradients' first pass: per chunk of kRowsPerChunk rows and
/// per column j, the chunk's sums of dy * xhat and of dy into
/// partial[2 * (chunk * n + j)] and the float after it. A block takes kWarp
/// columns (a lane each, so that a warp reads a row's columns together) of
/// one chunk; its warps stride over the chunk's rows and their sums are
/// added in shared memory in a fixed order.
__global__ void layerNormParamPartials(const float *x, const float *dy,
                                       const float *stats, float *partial,
                                       int64_t rows, int64_t n) {
  __shared__ float sums[2][kRowsPerBlock][kWarp];
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  int64_t tiles = (n + kWarp - 1) / kWarp, chunks = chunksFor(rows);
  for (int64_t t = blockIdx.x; t < tiles * chunks; t += gridDim.x) {
    int64_t chunk = t / tiles, j = (t % tiles) * kWarp + lane;
    int64_t end =
        rows < (chunk + 1) * kRowsPerChunk ? rows : (chunk + 1) * kRowsPerChunk;
    float sumScale = 0, sumBias = 0;
    if (j < n)
      for (int64_t row = chunk * kRowsPerChunk + warp; row < end;
           row += kRowsPerBlock) {
        float g = dy[row * n + j];
        sumScale += g * (x[row * n + j] - stats[2 * row]) * stats[2 * row + 1];
        sumBias += g;
      }
    sums[0][warp][lane] = sumScale;
    sums[1][warp][lane] = sumBias;
    __syncthreads();
    if (warp == 0 && j < n) {
      float scale = 0, bias = 0;
      for (int w = 0; w < kRowsPerBlock; ++w) {
        scale += sums[0][w][lane];
        bias += sums[1][w][lane];
      }
      partial[2 * (chunk * n + j)] = scale;
      partial[2 * (chunk * n + j) + 1] = bias;
    }
    // The next tile writes `sums` again.
    __syncthreads();
  }
}

/// The second pass: dscale[j] and dbias[j], the chunks' partial sums added
/// in chunk order (no atomics, so every run sums alike).
__global__ void layerNormParamSums(const float *partial, float *dscale,
                                   float *dbias, int64_t chunks, int64_t n) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x) {
    float scale = 0, bias = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      scale += partial[2 * (c * n + j)];
      bias += partial[2 * (c * n + j) + 1];
    }
    dscale[j] = scale;
    dbias[j] = bias;
  }
}

/// The sum of `v` over the block's kBlock threads, in every thread (each
/// adds the warps' sums in the same order).
__device__ float blockSum(float v) {
  __shared__ float warps[kBlock / kWarp];
  v = warpSum(v);
  // The previous call's readers are done with `warps`.
  __syncthreads();
  if (threadIdx.x % kWarp == 0)
    warps[threadIdx.x / kWarp] = v;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < kBlock / kWarp; ++w)
    total += warps[w];
  return total;
}

/// The mean and the biased variance of channel `c`'s `count` values, in
/// every thread of the block.
__device__ void channelMoments(const float *x, int64_t c, int64_t count,
                               int64_t channels, int64_t inner, float &mean,
                               float &variance) {
  float sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += kBlock)
    sum += x[channelOffset(i, c, channels, inner)];
  mean = count ? blockSum(sum) / static_cast<float>(count) : 0.0f;
  float squares = 0;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    float d = x[channelOffset(i, c, channels, inner)] - mean;
    squares += d * d;
  }
  variance = count ? blockSum(squares) / static_cast<float>(count) : 0.0f;
}

/// Per channel (a block each): the mean and the biased variance of x.
__global__ void channelStatistics(const float *x, int64_t batch,
                                  int64_t channels, int64_t inner, float *mean,
                                  float *variance) {
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    float m, v;
    channelMoments(x, c, batch * inner, channels, inner, m, v);
    if (threadIdx.x == 0) {
      mean[c] = m;
      variance[c] = v;
    }
  }
}

/// y = (x - mean) / sqrt(variance + epsilon) * scale + bias, per channel.
__global__ void batchNormalize(const float *x, const float *scale,
                               const float *bias, const float *mean,
                               const float *variance, float *y, int64_t n,
                               int64_t channels, int64_t inner, float epsilon) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = channelAt(i, channels, inner);
    y[i] =
        batchNormalized(x[i], mean[c], variance[c], epsilon, scale[c], bias[c]);
  }
}

/// running = momentum * running + (1 - momentum) * batch, the variance
/// unbiased by `unbias`.
__global__ void
updateRunningStatistics(const float *mean, const float *variance,
                        float *runningMean, float *runningVariance,
                        int64_t channels, float momentum, float unbias) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < channels;
       c += int64_t(gridDim.x) * blockDim.x) {
    runningMean[c] = runningStatistic(runningMean[c], mean[c], momentum);
    runningVariance[c] =
        runningStatistic(runningVariance[c], variance[c] * unbias, momentum);
  }
}

/// Per channel (a block each): dscale = sum(dy * xhat), dbias = sum(dy),
/// and the channel's mean and 1 / sqrt(variance + epsilon) into `stats`.
__global__ void batchNormChannelGrads(const float *x, const float *dy,
                                      int64_t batch, int64_t channels,
                                      int64_t inner, float epsilon,
                                      float *dscale, float *dbias,
                                      float *stats) {
  int64_t count = batch * inner;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    float m, v;
    channelMoments(x, c, count, channels, inner, m, v);
    float rstd = 1.0f / sqrtf(v + epsilon);
    float sumDy = 0, sumDyXhat = 0;
    for (int64_t i = threadIdx.x; i < count; i += kBlock) {
      int64_t at = channelOffset(i, c, channels, inner);
      sumDy += dy[at];
      sumDyXhat += dy[at] * (x[at] - m) * rstd;
    }
    sumDy = blockSum(sumDy);
    sumDyXhat = blockSum(sumDyXhat);
    if (threadIdx.x == 0) {
      dscale[c] = sumDyXhat;
      dbias[c] = sumDy;
      stats[2 * c] = m;
      stats[2 * c + 1] = rstd;
    }
  }
}

/// dx = scale * rstd * (dy - dbias / count - xhat * dscale / count).
__global__ void batchNormDataGrad(const float *x, const float *scale,
                                  const float *dy, const float *dscale,
                                  const float *dbias, const float *stats,
                                  float *dx, int64_t n, int64_t channels,
                                  int64_t inner, int64_t count) {
  float perValue = 1.0f / static_cast<float>(count);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = channelAt(i, channels, inner);
    dx[i] = batchNormInputGrad(x[i], dy[i], scale[c], stats[2 * c],
                               stats[2 * c + 1], dscale[c], dbias[c], perValue);
  }
}

unsigned blocksForChannels(int64_t channels) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>(channels, 65535)));
}

/// heterps.batch_norm: (input, scale, bias, mean, variance) -> output,
/// attributes epsilon, momentum and batch_statistics, as on the CPU: in
/// training the batch's statistics normalise and the running ones (views of
/// the parameters) are updated in place.
class BatchNormKernel : public Kernel {
public:
  explicit BatchNormKernel(const OpInfo &op)
      : Kernel(op), epsilon(static_cast<float>(op.getFloat("epsilon", 1e-5))),
        momentum(static_cast<float>(op.getFloat("momentum", 0.9))),
        batchStatistics(op.getBool("batch_statistics", false)) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() != 5)
      fail(info.describe(), ": takes 5 operands, got ", in.size());
    shape = cpu::BatchNormShape(info, in[0]);
    const char *names[] = {"", "scale", "bias", "mean", "variance"};
    for (size_t i = 1; i < 5; ++i)
      shape.expectChannels(info, names[i], in[i]);
    statistics.reserve(2 * shape.channels, "allocating batch statistics");
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
    int64_t n = in[0]->numElements(), channels = shape.channels;
    if (n == 0)
      return;
    cudaStream_t stream = gpuDevice().stream;
    const float *x = in[0]->as<float>();
    const float *mean = in[3]->as<float>(), *variance = in[4]->as<float>();
    bool fromBatch = ctx.training || batchStatistics;
    if (fromBatch) {
      float *batchMean = statistics.get();
      channelStatistics<<<blocksForChannels(channels), kBlock, 0, stream>>>(
          x, shape.batch, channels, shape.inner, batchMean,
          batchMean + channels);
      checkLaunch(info);
      mean = batchMean;
      variance = batchMean + channels;
    }
    batchNormalize<<<blocksFor(n), kBlock, 0, stream>>>(
        x, in[1]->as<float>(), in[2]->as<float>(), mean, variance,
        res[0]->as<float>(), n, channels, shape.inner, epsilon);
    checkLaunch(info);
    if (!ctx.training)
      return;
    int64_t count = shape.count();
    float unbias =
        count > 1 ? static_cast<float>(count) / static_cast<float>(count - 1)
                  : 1.0f;
    updateRunningStatistics<<<blocksFor(channels), kBlock, 0, stream>>>(
        mean, variance, in[3]->as<float>(), in[4]->as<float>(), channels,
        momentum, unbias);
    checkLaunch(info);
  }

private:
  float epsilon, momentum;
  bool batchStatistics;
  cpu::BatchNormShape shape;
  DeviceScratch<float> statistics;
};

/// heterps.batch_norm_grad: (input, scale, dy) -> (dinput, dscale, dbias),
/// with the batch statistics of input.
class BatchNormGradKernel : public Kernel {
public:
  explicit BatchNormGradKernel(const OpInfo &op)
      : Kernel(op), epsilon(static_cast<float>(op.getFloat("epsilon", 1e-5))) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() != 3)
      fail(info.describe(), ": takes 3 operands, got ", in.size());
    shape = cpu::BatchNormShape(info, in[0]);
    shape.expectChannels(info, "scale", in[1]);
    if (in[2] != in[0])
      fail(info.describe(), ": dy has shape ", shapeString(in[2]),
           ", expected the input shape ", shapeString(in[0]));
    statistics.reserve(2 * shape.channels, "allocating batch statistics");
    return {in[0], in[1], in[1]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = in[0]->numElements(), channels = shape.channels;
    if (channels == 0)
      return;
    cudaStream_t stream = gpuDevice().stream;
    float *dscale = res[1]->as<float>(), *dbias = res[2]->as<float>();
    batchNormChannelGrads<<<blocksForChannels(channels), kBlock, 0, stream>>>(
        in[0]->as<float>(), in[2]->as<float>(), shape.batch, channels,
        shape.inner, epsilon, dscale, dbias, statistics.get());
    checkLaunch(info);
    if (n == 0)
      return;
    batchNormDataGrad<<<blocksFor(n), kBlock, 0, stream>>>(
        in[0]->as<float>(), in[1]->as<float>(), in[2]->as<float>(), dscale,
        dbias, statistics.get(), res[0]->as<float>(), n, channels, shape.inner,
        shape.count());
    checkLaunch(info);
  }

private:
  float epsilon;
  cpu::BatchNormShape shape;
  DeviceScratch<float> statistics;
};

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
      fail(info.describe(), ": takes 2 or 3 operands, got ", in.size());
    cpu::LayerNormShape shape(in[0], in[1], info);
    if (in.size() == 3 && in[2] != in[1])
      fail(info.describe(), ": bias has shape ", shapeString(in[2]),
           ", expected the scale's ", shapeString(in[1]));
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
      fail(info.describe(), ": takes 3 operands, got ", in.size());
    cpu::LayerNormShape shape(in[0], in[1], info);
    if (in[2] != in[0])
      fail(info.describe(), ": dy has shape ", shapeString(in[2]),
           ", expected the input shape ", shapeString(in[0]));
    rows = shape.outer;
    n = shape.inner;
    // The rows' statistics and the chunks' partial sums, kept between the
    // kernels; allocated when a larger input arrives, not at every step.
    stats.reserve(2 * rows, "allocating a layer norm's statistics");
    partials.reserve(2 * chunksFor(rows) * n,
                     "allocating a layer norm's partial sums");
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
    int64_t tiles = (n + kWarp - 1) / kWarp * chunksFor(rows);
    layerNormParamPartials<<<
        static_cast<unsigned>(std::min<int64_t>(tiles, 65535)), kBlock, 0,
        stream>>>(in[0]->as<float>(), in[2]->as<float>(), stats.get(),
                  partials.get(), rows, n);
    checkLaunch(info);
    layerNormParamSums<<<blocksFor(n), kBlock, 0, stream>>>(
        partials.get(), res[1]->as<float>(), res[2]->as<float>(),
        chunksFor(rows), n);
    checkLaunch(info);
  }

private:
  float epsilon;
  int64_t rows = 0, n = 0;
  DeviceScratch<float> stats, partials;
};

} // namespace

void cuda::registerNormKernels(KernelRegistry &r) {
  addKernel<BatchNormKernel>(r, "heterps.batch_norm");
  addKernel<BatchNormGradKernel>(r, "heterps.batch_norm_grad");
  addKernel<LayerNormKernel>(r, "heterps.layer_norm");
  addKernel<LayerNormGradKernel>(r, "heterps.layer_norm_grad");
}
