//===- ReduceKernels.cu - Sums, means, maxima and minima over axes --------===//
//
// One block per result element: its threads stride over the reduced
// elements and combine their partial results in shared memory. The same
// kernel serves reduce_sum, _mean, _max, _min, _l2, _prod and sum_to_shape (the
// gradient of a broadcast), which all reduce an input into a `kept` shape
// of its rank with 1 along the reduced dimensions. The gradient of a sum or
// mean spreads dy back, that of an L2 norm dy * x / y, that of a product the
// product of the other elements (zeros counted, in double); that of a max or
// min goes to the first element equal to the result, as on the CPU.
//
// segment_reduce (nn.EmbeddingBag's bags: runs of rows that start at the
// offsets) gives a thread to each bag and column; its offsets are checked
// on the device, and a bad one is reported with the CPU's message.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

#include "heterps/Runtime/BagOffsets.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

/// How a reduction combines its elements: an L2 norm sums the squares and
/// takes the root of the sum.
enum class Combine { Sum, Max, Min, L2, Prod };

/// Adds `b` (a partial result) into `a`.
__device__ inline float combine(Combine how, float a, float b) {
  return how == Combine::Max    ? fmaxf(a, b)
         : how == Combine::Min  ? fminf(a, b)
         : how == Combine::Prod ? a * b
                                : a + b;
}

__global__ void reduceKept(const float *x, float *y, int64_t outputs,
                           int64_t count, Indexing kept, Indexing reduced,
                           Combine how, float scale) {
  __shared__ float partial[kBlock];
  float identity = how == Combine::Max    ? -INFINITY
                   : how == Combine::Min  ? INFINITY
                   : how == Combine::Prod ? 1.0f
                                          : 0.0f;
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    int64_t base = offsetOf(o, kept);
    float acc = identity;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      float v = x[base + offsetOf(r, reduced)];
      acc = combine(how, acc, how == Combine::L2 ? v * v : v);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int width = blockDim.x / 2; width > 0; width /= 2) {
      if (threadIdx.x < width)
        partial[threadIdx.x] =
            combine(how, partial[threadIdx.x], partial[threadIdx.x + width]);
      __syncthreads();
    }
    if (threadIdx.x == 0)
      y[o] = how == Combine::L2 ? sqrtf(partial[0]) : partial[0] * scale;
    __syncthreads();
  }
}

/// dx = dy of the element's output times `scale` (the gradient of a sum
/// or a mean), one thread per input element.
__global__ void spreadGradient(const float *dy, float *dx, int64_t n,
                               Indexing input, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t own, output;
    offsetsOf(i, input, own, output);
    dx[own] = dy[output] * scale;
  }
}

/// The gradient of an L2 norm: dx = dy * x / y (0 where y is 0), one
/// thread per input element.
__global__ void l2Gradient(const float *x, const float *y, const float *dy,
                           float *dx, int64_t n, Indexing input) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t own, output;
    offsetsOf(i, input, own, output);
    dx[own] = y[output] != 0.0f ? dy[output] * x[own] / y[output] : 0.0f;
  }
}

/// The gradient of a product, one thread per output: d/dx_i is the product
/// of the other elements, y / x_i without zeros; with one zero, only that
/// element gets the product of the rest; with two or more, none (in double,
/// as on the CPU).
__global__ void productGradient(const float *x, const float *dy, float *dx,
                                int64_t outputs, int64_t count, Indexing kept,
                                Indexing reduced) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outputs;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = offsetOf(o, kept), zeros = 0;
    double others = 1.0;
    for (int64_t r = 0; r < count; ++r) {
      float v = x[base + offsetOf(r, reduced)];
      if (v == 0.0f)
        ++zeros;
      else
        others *= static_cast<double>(v);
    }
    for (int64_t r = 0; r < count; ++r) {
      int64_t at = base + offsetOf(r, reduced);
      double g = zeros == 0   ? others / static_cast<double>(x[at])
                 : zeros == 1 ? (x[at] == 0.0f ? others : 0.0)
                              : 0.0;
      dx[at] = dy[o] * static_cast<float>(g);
    }
  }
}

/// The gradient of a max or min: dy goes to the first reduced element (in
/// row-major order) equal to the result, as on the CPU; one thread per
/// output, after dx was cleared.
__global__ void firstExtremeGradient(const float *x, const float *y,
                                     const float *dy, float *dx,
                                     int64_t outputs, int64_t count,
                                     Indexing kept, Indexing reduced) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < outputs;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = offsetOf(o, kept);
    for (int64_t r = 0; r < count; ++r) {
      int64_t at = base + offsetOf(r, reduced);
      if (x[at] == y[o]) {
        dx[at] = dy[o];
        break;
      }
    }
  }
}

/// The launch of a reduction of `input` into `kept` (same rank).
struct Reduction {
  int64_t outputs = 0, count = 1;
  Indexing kept, reduced;

  void init(const Shape &input, const Shape &keptShape, const OpInfo &op) {
    std::vector<int64_t> strides = cpu::stridesOf(input);
    Shape reducedShape(input.size(), 1);
    count = 1;
    for (size_t d = 0; d < input.size(); ++d)
      if (keptShape[d] == 1) {
        reducedShape[d] = input[d];
        count *= input[d];
      }
    outputs = numElements(keptShape);
    kept = makeIndexing(keptShape, strides, {}, op);
    reduced = makeIndexing(reducedShape, strides, {}, op);
  }

  void run(const OpInfo &op, const float *x, float *y, float scale,
           Combine how = Combine::Sum) const {
    if (outputs == 0)
      return;
    unsigned grid =
        static_cast<unsigned>(outputs < 65535 ? outputs : int64_t(65535));
    reduceKept<<<grid, kBlock, 0, gpuDevice().stream>>>(
        x, y, outputs, count, kept, reduced, how, scale);
    checkLaunch(op);
  }
};

/// The reductions the GPU column computes: "sum", "mean", "max", "min",
/// "l2", "prod". Throws naming the op for any other.
Combine combineOf(const std::string &kind, const OpInfo &op) {
  if (kind == "prod")
    return Combine::Prod;
  if (kind == "sum" || kind == "mean")
    return Combine::Sum;
  if (kind == "max")
    return Combine::Max;
  if (kind == "l2")
    return Combine::L2;
  if (kind != "min")
    fail(op.describe(), ": the GPU column has no '", kind, "' reduction");
  return Combine::Min;
}

/// heterps.reduce_sum, _mean, _max, _min, _l2 and _prod over `axes` (all
/// when empty).
class ReduceKernel : public Kernel {
public:
  explicit ReduceKernel(const OpInfo &op)
      : Kernel(op), mean(op.name() == "heterps.reduce_mean"),
        how(combineOf(op.name().substr(strlen("heterps.reduce_")), op)),
        axes(op.getInts("axes")), keepdims(op.getBool("keepdims", true)) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::ReducePlan plan;
    plan.init(in[0], axes, keepdims, info);
    reduction.init(in[0], plan.kept, info);
    return {plan.result};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    // A mean over no elements is 0, as on the CPU.
    float scale = mean && reduction.count
                      ? 1.0f / static_cast<float>(reduction.count)
                      : 1.0f;
    reduction.run(info, in[0]->as<float>(), res[0]->as<float>(), scale, how);
  }

private:
  bool mean;
  Combine how;
  std::vector<int64_t> axes;
  bool keepdims;
  Reduction reduction;
};

/// heterps.sum_to_shape: sums a value over the dimensions along which
/// operand 1's shape broadcasts to it.
class SumToShapeKernel : public Kernel {
public:
  explicit SumToShapeKernel(const OpInfo &op) : Kernel(op) { requireF32(op); }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (cpu::broadcastShapes(in[1], in[0], info) != in[0])
      fail(info.describe(), ": ", shapeString(in[1]), " does not broadcast to ",
           shapeString(in[0]));
    Shape kept(in[0].size() - in[1].size(), 1);
    kept.insert(kept.end(), in[1].begin(), in[1].end());
    reduction.init(in[0], kept, info);
    return {in[1]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    reduction.run(info, in[0]->as<float>(), res[0]->as<float>(), 1.0f);
  }

private:
  Reduction reduction;
};

/// heterps.reduce_grad: operands (input, result, result_grad); attributes
/// kind, axes and keepdims of the reduction.
class ReduceGradKernel : public Kernel {
public:
  explicit ReduceGradKernel(const OpInfo &op)
      : Kernel(op), kind(op.getString("kind")), how(combineOf(kind, op)),
        axes(op.getInts("axes")), keepdims(op.getBool("keepdims", true)) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    plan.init(in[0], axes, keepdims, info);
    plan.checkResults(in, info);
    reduction.init(in[0], plan.kept, info);
    input = makeIndexing(plan.input, plan.own, plan.toKept, info);
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t n = res[0]->numElements();
    if (n == 0)
      return;
    cudaStream_t stream = gpuDevice().stream;
    if (how == Combine::Sum) {
      float scale = kind == "mean" && plan.count
                        ? 1.0f / static_cast<float>(plan.count)
                        : 1.0f;
      spreadGradient<<<blocksFor(n), kBlock, 0, stream>>>(
          in[2]->as<float>(), res[0]->as<float>(), n, input, scale);
      checkLaunch(info);
      return;
    }
    if (how == Combine::L2) {
      l2Gradient<<<blocksFor(n), kBlock, 0, stream>>>(
          in[0]->as<float>(), in[1]->as<float>(), in[2]->as<float>(),
          res[0]->as<float>(), n, input);
      checkLaunch(info);
      return;
    }
    if (how == Combine::Prod) {
      if (reduction.outputs == 0)
        return;
      productGradient<<<blocksFor(reduction.outputs), kBlock, 0, stream>>>(
          in[0]->as<float>(), in[2]->as<float>(), res[0]->as<float>(),
          reduction.outputs, reduction.count, reduction.kept,
          reduction.reduced);
      checkLaunch(info);
      return;
    }
    check(cudaMemsetAsync(res[0]->data(), 0, res[0]->byteSize(), stream),
          "clearing a reduction's gradient");
    if (reduction.outputs == 0)
      return;
    firstExtremeGradient<<<blocksFor(reduction.outputs), kBlock, 0, stream>>>(
        in[0]->as<float>(), in[1]->as<float>(), in[2]->as<float>(),
        res[0]->as<float>(), reduction.outputs, reduction.count, reduction.kept,
        reduction.reduced);
    checkLaunch(info);
  }

private:
  std::string kind;
  Combine how;
  std::vector<int64_t> axes;
  bool keepdims;
  cpu::ReducePlan plan;
  Reduction reduction;
  Indexing input;
};

enum class SegmentKind { Sum, Mean, Max };

/// Records the first bag whose offset is not a valid start: the first must
/// be 0, none may decrease or lie beyond `rows`.
template <typename O>
__global__ void checkOffsets(const O *offsets, int64_t bags, int64_t rows,
                             unsigned long long *bad) {
  for (int64_t b = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; b < bags;
       b += int64_t(gridDim.x) * blockDim.x) {
    int64_t start = offsets[b], previous = b ? offsets[b - 1] : 0;
    if ((b == 0 && start != 0) || start < previous || start > rows)
      atomicMin(bad, static_cast<unsigned long long>(b));
  }
}

/// The rows [begin, end) of bag `b`.
template <typename O>
__device__ inline void bagRows(const O *offsets, int64_t b, int64_t bags,
                               int64_t rows, int64_t &begin, int64_t &end) {
  begin = offsets[b];
  end = b + 1 < bags ? static_cast<int64_t>(offsets[b + 1]) : rows;
}

/// y[b][k]: the sum, mean or maximum of column k over bag b's rows (0 for
/// an empty bag); the maximum keeps the first of equal values, as the
/// CPU's std::max does.
template <typename O>
__global__ void segmentForward(const float *x, const O *offsets, int64_t bags,
                               int64_t rows, int64_t width, SegmentKind kind,
                               float *y) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       e < bags * width; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t b = e / width, k = e % width, begin, end;
    bagRows(offsets, b, bags, rows, begin, end);
    if (begin >= end) {
      y[e] = 0.0f;
      continue;
    }
    float acc = x[begin * width + k];
    for (int64_t r = begin + 1; r < end; ++r) {
      float v = x[r * width + k];
      acc = kind == SegmentKind::Max ? (acc < v ? v : acc) : acc + v;
    }
    if (kind == SegmentKind::Mean)
      acc /= static_cast<float>(end - begin);
    y[e] = acc;
  }
}

/// dx of bag b's rows in column k: dy spread (divided by the bag's size for
/// a mean), or given whole to the first row holding the maximum.
template <typename O>
__global__ void segmentBackward(const float *x, const O *offsets, int64_t bags,
                                int64_t rows, int64_t width, SegmentKind kind,
                                const float *dy, float *dx) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       e < bags * width; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t b = e / width, k = e % width, begin, end;
    bagRows(offsets, b, bags, rows, begin, end);
    if (begin >= end)
      continue;
    if (kind == SegmentKind::Max) {
      int64_t best = begin;
      for (int64_t r = begin + 1; r < end; ++r)
        if (x[r * width + k] > x[best * width + k])
          best = r;
      for (int64_t r = begin; r < end; ++r)
        dx[r * width + k] = r == best ? dy[e] : 0.0f;
      continue;
    }
    float g = kind == SegmentKind::Mean
                  ? dy[e] * (1.0f / static_cast<float>(end - begin))
                  : dy[e];
    for (int64_t r = begin; r < end; ++r)
      dx[r * width + k] = g;
  }
}

/// heterps.segment_reduce: (data, offsets) -> a row per bag; and
/// heterps.segment_reduce_grad: (data, offsets, result_grad) -> dx. The
/// kind attribute is "sum", "mean" or "max".
class SegmentReduceKernel : public Kernel {
public:
  explicit SegmentReduceKernel(const OpInfo &op)
      : Kernel(op), gradient(op.name() == "heterps.segment_reduce_grad"),
        shape(op) {
    kind = shape.kind == "max"    ? SegmentKind::Max
           : shape.kind == "mean" ? SegmentKind::Mean
                                  : SegmentKind::Sum;
    requireF32(op);
    DType offsetType = op.inputTypes().at(1).dtype;
    if (offsetType != DType::I64 && offsetType != DType::I32)
      fail(op.describe(), ": the bag offsets are ", dtypeName(offsetType),
           "; expected i64 or i32");
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    Shape out = shape.output(info, in, gradient);
    width = shape.width;
    return {out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t rows = in[0]->dim(0), bags = in[1]->dim(0);
    cudaStream_t stream = gpuDevice().stream;
    if (bags == 0) {
      if (gradient)
        check(cudaMemsetAsync(res[0]->data(), 0, res[0]->byteSize(), stream),
              "clearing a bag reduction's gradient");
      return;
    }
    // The offsets are checked, and the check read back, before any kernel
    // reads rows through them: a bad one would read and write beyond the
    // buffers.
    auto withOffsets = [&](auto &&f) {
      if (in[1]->dtype() == DType::I32)
        f(in[1]->as<int32_t>());
      else
        f(in[1]->as<int64_t>());
    };
    bad.arm();
    withOffsets([&](auto *offsets) {
      checkOffsets<<<blocksFor(bags), kBlock, 0, stream>>>(offsets, bags, rows,
                                                           bad.word());
      checkLaunch(info);
    });
    if (bad.first() >= 0)
      reportBadOffsets(*in[1], rows);
    if (width == 0)
      return;
    withOffsets([&](auto *offsets) {
      unsigned blocks = blocksFor(bags * width);
      if (gradient)
        segmentBackward<<<blocks, kBlock, 0, stream>>>(
            in[0]->as<float>(), offsets, bags, rows, width, kind,
            in[2]->as<float>(), res[0]->as<float>());
      else
        segmentForward<<<blocks, kBlock, 0, stream>>>(
            in[0]->as<float>(), offsets, bags, rows, width, kind,
            res[0]->as<float>());
      checkLaunch(info);
    });
  }

private:
  /// Throws naming the bad entry of `device` offsets, as the CPU's check of
  /// a host copy does.
  [[noreturn]] void reportBadOffsets(const Tensor &device, int64_t rows) {
    Tensor offsets(device.dtype(), device.shape());
    check(cudaMemcpy(offsets.data(), device.data(), offsets.byteSize(),
                     cudaMemcpyDeviceToHost),
          "reading bag offsets");
    readBagOffsets(offsets, rows, info.describe(), starts);
    fail(info.describe(), ": bad bag offsets");
  }

  bool gradient;
  cpu::SegmentShape shape;
  SegmentKind kind = SegmentKind::Sum;
  int64_t width = 1;
  BadIndexFlag bad;
  std::vector<int64_t> starts;
};

} // namespace

void cuda::registerReduceKernels(KernelRegistry &r) {
  for (const char *name :
       {"heterps.reduce_sum", "heterps.reduce_mean", "heterps.reduce_max",
        "heterps.reduce_min", "heterps.reduce_l2", "heterps.reduce_prod"})
    addKernel<ReduceKernel>(r, name);
  addKernel<ReduceGradKernel>(r, "heterps.reduce_grad");
  addKernel<SumToShapeKernel>(r, "heterps.sum_to_shape");
  addKernel<SegmentReduceKernel>(r, "heterps.segment_reduce");
  addKernel<SegmentReduceKernel>(r, "heterps.segment_reduce_grad");
}
