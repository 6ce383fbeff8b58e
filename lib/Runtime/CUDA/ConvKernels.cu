//===- ConvKernels.cu - Convolution and its gradient on the GPU -----------===//
//
// A convolution is a product per image and group: the image's patches are
// laid out as columns (im2col: one row per input channel and kernel tap,
// one column per output position), and the group's filter, M/group x
// (C/group * taps), multiplies them through cuBLAS (gemm(), in the
// process's GpuMath). The gradient reuses the layout: the filter's gradient
// sums, image by image, dy times the patches transposed; the input's
// gradient is the filter transposed times dy, folded back onto the input
// (col2im) by gathering, for each input element, the taps that read it, so
// that no two threads add into one element. The index arithmetic is in
// ConvIndex.h, which the unit tests run on the host. The bias's gradient is one
// block per output channel.
//
// A transposed convolution is the input gradient of the convolution whose
// output has its input's shape: the same products and fold, with the roles
// of the convolution's input and output exchanged; its gradient is that
// convolution's forward (the input's gradient) and filter gradient.
//
// cuDNN 9.19, on the build machines, deprecates the descriptor API this
// would otherwise call; its graph API is left for later.
//
//===----------------------------------------------------------------------===//

#include "ConvIndex.h"
#include "GPUDevice.h"

#include "../CPU/KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

__global__ void im2col(const float *x, float *col, ConvGeometry g) {
  int64_t total = g.channels * g.taps * g.outputs;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x)
    col[e] = patchElement(x, e, g);
}

__global__ void col2im(const float *dcol, float *dx, ConvGeometry g) {
  int64_t total = g.channels * g.inputs;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x)
    dx[e] = foldedElement(dcol, e, g);
}

/// y[f][o] += bias[f] for the features of one image.
__global__ void addBias(const float *bias, float *y, int64_t features,
                        int64_t outputs) {
  int64_t total = features * outputs;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x)
    y[e] += bias[e / outputs];
}

/// db[f] = the sum of dy[n][f][o] over images n and positions o: one block
/// per feature, in a fixed order.
__global__ void biasGradient(const float *dy, float *db, int64_t images,
                             int64_t features, int64_t outputs) {
  __shared__ float partial[kBlock];
  int64_t f = blockIdx.x;
  float sum = 0;
  for (int64_t e = threadIdx.x; e < images * outputs; e += blockDim.x) {
    int64_t n = e / outputs, o = e % outputs;
    sum += dy[(n * features + f) * outputs + o];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kBlock / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    db[f] = partial[0];
}

/// What conv and conv_grad share: the geometry and the patch buffer of one
/// image, allocated when a larger one is needed, not at every step.
class ConvKernelBase : public Kernel {
public:
  explicit ConvKernelBase(const OpInfo &op) : Kernel(op) { requireF32(op); }

protected:
  /// Checks the shapes (as the CPU column does) and sizes the buffer.
  cpu::ConvShape plan(const Shape &x, const Shape &w) {
    cpu::ConvShape shape(info, x, w);
    g = convGeometryOf(shape, x);
    int64_t elements = g.channels * g.taps * g.outputs;
    if (elements > colElements) {
      void *p = nullptr;
      check(cudaMalloc(&p, elements * sizeof(float)),
            "allocating a convolution's patch buffer");
      col.reset(static_cast<float *>(p), cudaFree);
      colElements = elements;
    }
    return shape;
  }

  /// The geometry of the convolution that a transposed one (input `x`,
  /// filter `w`) is the input gradient of, whose input is the transposed
  /// one's output: returns that output, as the CPU column computes it.
  Shape planTransposed(const Shape &x, const Shape &w) {
    Shape y = cpu::convTransposeOutput(info, x, w);
    cpu::ConvShape shape = plan(y, w);
    if (shape.output != x)
      fail() << info.describe() << ": the convolution of the output "
             << shapeString(y) << " is " << shapeString(shape.output)
             << ", not the input " << shapeString(x);
    return y;
  }

  /// dcol = w^T x per group, folded back into `y`: one image of the
  /// convolution's input gradient (x being its output's gradient).
  void foldTransposed(const float *w, const float *x, float *y) {
    int64_t groupFeatures = g.features / g.group,
            reduce = g.channels / g.group * g.taps;
    gemm(info, true, false, reduce, g.outputs, groupFeatures, 1.0f, w,
         groupFeatures * reduce, x, groupFeatures * g.outputs, 0.0f, col.get(),
         g.group);
    col2im<<<blocksFor(g.channels * g.inputs), kBlock, 0, gpuDevice().stream>>>(
        col.get(), y, g);
    checkLaunch(info);
  }

  void patches(const float *image) {
    im2col<<<blocksFor(g.channels * g.taps * g.outputs), kBlock, 0,
             gpuDevice().stream>>>(image, col.get(), g);
    checkLaunch(info);
  }

  ConvGeometry g;
  std::shared_ptr<float> col;
  int64_t colElements = 0;
};

/// heterps.conv: (input, filter, [bias]) -> output.
class ConvKernel : public ConvKernelBase {
public:
  using ConvKernelBase::ConvKernelBase;

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() < 2 || in.size() > 3)
      fail() << info.describe() << ": takes 2 or 3 operands, got " << in.size();
    cpu::ConvShape shape = plan(in[0], in[1]);
    if (in.size() == 3 && in[2] != Shape{in[1][0]})
      fail() << info.describe() << ": bias has shape " << shapeString(in[2])
             << ", expected " << shapeString({in[1][0]});
    images = in[0][0];
    return {shape.output};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    int64_t groupChannels = g.channels / g.group,
            groupFeatures = g.features / g.group,
            reduce = groupChannels * g.taps;
    float *y = res[0]->as<float>();
    if (res[0]->numElements() == 0)
      return;
    for (int64_t n = 0; n < images; ++n) {
      float *yn = y + n * g.features * g.outputs;
      if (reduce == 0) {
        check(cudaMemsetAsync(yn, 0, g.features * g.outputs * sizeof(float),
                              gpuDevice().stream),
              "clearing a convolution's output");
      } else {
        patches(in[0]->as<float>() + n * g.channels * g.inputs);
        // Per group: y_g (M/g x O) = w_g (M/g x C/g*taps) col_g.
        gemm(info, false, false, groupFeatures, g.outputs, reduce, 1.0f,
             in[1]->as<float>(), groupFeatures * reduce, col.get(),
             reduce * g.outputs, 0.0f, yn, g.group);
      }
      if (in.size() == 3) {
        addBias<<<blocksFor(g.features * g.outputs), kBlock, 0,
                  gpuDevice().stream>>>(in[2]->as<float>(), yn, g.features,
                                        g.outputs);
        checkLaunch(info);
      }
    }
  }

private:
  int64_t images = 0;
};

/// heterps.conv_grad: (input, filter, dy) -> (dinput, dfilter, dbias).
class ConvGradKernel : public ConvKernelBase {
public:
  using ConvKernelBase::ConvKernelBase;

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() != 3)
      fail() << info.describe() << ": takes 3 operands, got " << in.size();
    cpu::ConvShape shape = plan(in[0], in[1]);
    if (in[2] != shape.output)
      fail() << info.describe() << ": dy has shape " << shapeString(in[2])
             << ", expected the output shape " << shapeString(shape.output);
    images = in[0][0];
    return {in[0], in[1], {in[1][0]}};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    int64_t groupChannels = g.channels / g.group,
            groupFeatures = g.features / g.group,
            reduce = groupChannels * g.taps;
    const float *x = in[0]->as<float>(), *w = in[1]->as<float>(),
                *dy = in[2]->as<float>();
    float *dx = res[0]->as<float>(), *dw = res[1]->as<float>(),
          *db = res[2]->as<float>();
    if (g.features > 0) {
      biasGradient<<<static_cast<unsigned>(g.features), kBlock, 0, stream>>>(
          dy, db, images, g.features, g.outputs);
      checkLaunch(info);
    }
    if (images == 0 || g.outputs == 0 || reduce == 0) {
      for (Tensor *t : {res[0], res[1]})
        check(cudaMemsetAsync(t->data(), 0, t->byteSize(), stream),
              "clearing a convolution's gradient");
      return;
    }
    for (int64_t n = 0; n < images; ++n) {
      const float *dyn = dy + n * g.features * g.outputs;
      // dw_g += dy_g (M/g x O) col_g^T (O x C/g*taps).
      patches(x + n * g.channels * g.inputs);
      gemm(info, false, true, groupFeatures, reduce, g.outputs, 1.0f, dyn,
           groupFeatures * g.outputs, col.get(), reduce * g.outputs,
           n == 0 ? 0.0f : 1.0f, dw, g.group);
      // dcol_g = w_g^T (C/g*taps x M/g) dy_g, folded back onto dx.
      foldTransposed(w, dyn, dx + n * g.channels * g.inputs);
    }
  }

private:
  int64_t images = 0;
};

/// heterps.conv_transpose: (input, filter, [bias]) -> output, the input
/// gradient of the convolution (filter C x M/group x k...) whose output has
/// the input's shape, then the bias per channel.
class ConvTransposeKernel : public ConvKernelBase {
public:
  using ConvKernelBase::ConvKernelBase;

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() < 2 || in.size() > 3)
      fail() << info.describe() << ": takes 2 or 3 operands, got " << in.size();
    Shape y = planTransposed(in[0], in[1]);
    if (in.size() == 3 && in[2] != Shape{y[1]})
      fail() << info.describe() << ": bias has shape " << shapeString(in[2])
             << ", expected " << shapeString({y[1]});
    images = y[0];
    return {y};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    float *y = res[0]->as<float>();
    if (res[0]->numElements() == 0)
      return;
    bool empty = g.features == 0 || g.outputs == 0;
    for (int64_t n = 0; n < images; ++n) {
      float *yn = y + n * g.channels * g.inputs;
      if (empty)
        check(cudaMemsetAsync(yn, 0, g.channels * g.inputs * sizeof(float),
                              stream),
              "clearing a transposed convolution's output");
      else
        foldTransposed(in[1]->as<float>(),
                       in[0]->as<float>() + n * g.features * g.outputs, yn);
      if (in.size() == 3) {
        addBias<<<blocksFor(g.channels * g.inputs), kBlock, 0, stream>>>(
            in[2]->as<float>(), yn, g.channels, g.inputs);
        checkLaunch(info);
      }
    }
  }

private:
  int64_t images = 0;
};

/// heterps.conv_transpose_grad: (input, filter, dy) -> (dinput, dfilter,
/// dbias): the convolution of dy by the filter, that convolution's filter
/// gradient with the input as its output's gradient, and dy summed per
/// channel.
class ConvTransposeGradKernel : public ConvKernelBase {
public:
  using ConvKernelBase::ConvKernelBase;

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() != 3)
      fail() << info.describe() << ": takes 3 operands, got " << in.size();
    Shape y = cpu::convTransposeOutput(info, in[0], in[1]);
    if (in[2] != y)
      fail() << info.describe() << ": dy has shape " << shapeString(in[2])
             << ", expected the output shape " << shapeString(y);
    planTransposed(in[0], in[1]);
    images = y[0];
    return {in[0], in[1], {y[1]}};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    int64_t groupFeatures = g.features / g.group,
            reduce = g.channels / g.group * g.taps;
    const float *x = in[0]->as<float>(), *w = in[1]->as<float>(),
                *dy = in[2]->as<float>();
    float *dx = res[0]->as<float>(), *dw = res[1]->as<float>(),
          *db = res[2]->as<float>();
    if (g.channels > 0) {
      biasGradient<<<static_cast<unsigned>(g.channels), kBlock, 0, stream>>>(
          dy, db, images, g.channels, g.inputs);
      checkLaunch(info);
    }
    if (images == 0 || g.outputs == 0 || reduce == 0 || groupFeatures == 0) {
      for (Tensor *t : {res[0], res[1]})
        check(cudaMemsetAsync(t->data(), 0, t->byteSize(), stream),
              "clearing a transposed convolution's gradient");
      return;
    }
    for (int64_t n = 0; n < images; ++n) {
      const float *xn = x + n * g.features * g.outputs;
      patches(dy + n * g.channels * g.inputs);
      // dx_g (M/g x O) = w_g col(dy)_g: the convolution of dy.
      gemm(info, false, false, groupFeatures, g.outputs, reduce, 1.0f, w,
           groupFeatures * reduce, col.get(), reduce * g.outputs, 0.0f,
           dx + n * g.features * g.outputs, g.group);
      // dw_g += x_g (M/g x O) col(dy)_g^T (O x C/g*taps).
      gemm(info, false, true, groupFeatures, reduce, g.outputs, 1.0f, xn,
           groupFeatures * g.outputs, col.get(), reduce * g.outputs,
           n == 0 ? 0.0f : 1.0f, dw, g.group);
    }
  }

private:
  int64_t images = 0;
};

} // namespace

void cuda::registerConvKernels(KernelRegistry &r) {
  addKernel<ConvKernel>(r, "heterps.conv");
  addKernel<ConvGradKernel>(r, "heterps.conv_grad");
  addKernel<ConvTransposeKernel>(r, "heterps.conv_transpose");
  addKernel<ConvTransposeGradKernel>(r, "heterps.conv_transpose_grad");
}
