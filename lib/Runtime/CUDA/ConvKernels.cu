//===- ConvKernels.cu - Convolution and its gradient on the GPU -----------===//
//
// A convolution is a product per image and group: the image's patches are
// laid out as columns (im2col: one row per input channel and kernel tap,
// one column per output position), and the group's filter, M/group x
// (C/group * taps), multiplies them through cuBLAS (in the process's
// GpuMath). The gradient reuses the layout: the filter's gradient sums dy
// times the patches transposed over the images; the input's gradient is the
// filter transposed times dy, folded back onto the input (col2im) by
// gathering, for each input element, the taps that read it, so that no two
// threads add into one element. The index arithmetic is in ConvIndex.h,
// which the unit tests run on the host.
//
// The images go through in chunks, as many as a patch buffer of
// kChunkFloats holds: one im2col and one col2im launch per chunk, the
// products strided batches over the chunk's images (or over the groups,
// when there are more groups than images). The filter's gradient is taken
// per image into a buffer of the chunk's partial filters, then summed over
// the images in order. The bias's gradient is one block per output channel.
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

#include <algorithm>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

/// The patches of `images` images of x (each `g.channels * g.inputs`
/// floats), one patch matrix after the other.
__global__ void im2col(const float *x, float *col, ConvGeometry g,
                       int64_t images) {
  int64_t perImage = g.channels * g.taps * g.outputs;
  HETERPS_GRID_STRIDE(e, images * perImage) {
    int64_t n = e / perImage;
    col[e] = patchElement(x + n * g.channels * g.inputs, e % perImage, g);
  }
}

/// The input gradients of `images` images from their patch gradients.
__global__ void col2im(const float *dcol, float *dx, ConvGeometry g,
                       int64_t images) {
  int64_t perImage = g.channels * g.inputs;
  HETERPS_GRID_STRIDE(e, images * perImage) {
    int64_t n = e / perImage;
    dx[e] = foldedElement(dcol + n * g.channels * g.taps * g.outputs,
                          e % perImage, g);
  }
}

/// y[n][f][o] += bias[f] for the `total` elements of whole images.
__global__ void addBias(const float *bias, float *y, int64_t total,
                        int64_t features, int64_t outputs) {
  HETERPS_GRID_STRIDE(e, total) { y[e] += bias[(e / outputs) % features]; }
}

/// dw (+)= the images' partial filter gradients, summed in image order.
__global__ void sumPartials(const float *partial, float *dw, int64_t filter,
                            int64_t images, bool accumulate) {
  HETERPS_GRID_STRIDE(e, filter) {
    float sum = accumulate ? dw[e] : 0.0f;
    for (int64_t n = 0; n < images; ++n)
      sum += partial[n * filter + e];
    dw[e] = sum;
  }
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

/// The floats a chunk's patch buffer (and its partial filter gradients)
/// may take: 256 MB each.
constexpr int64_t kChunkFloats = int64_t(64) << 20;

/// What the convolutions and their gradients share: the geometry, the
/// chunks of images and their buffers, allocated when a larger one is
/// needed, not at every step.
class ConvKernelBase : public Kernel {
public:
  explicit ConvKernelBase(const OpInfo &op) : Kernel(op) { requireF32(op); }

protected:
  /// Checks the shapes (as the CPU column does) and sizes the chunks and
  /// buffers for `images` images (with partial filter gradients when
  /// `filterGradients`).
  cpu::ConvShape plan(const Shape &x, const Shape &w, bool filterGradients) {
    cpu::ConvShape shape(info, x, w);
    g = convGeometryOf(shape, x);
    images = x[0];
    groupFeatures = g.features / g.group;
    reduce = g.channels / g.group * g.taps;
    patchFloats = g.channels * g.taps * g.outputs;
    filterFloats = g.features * reduce;
    int64_t perImage =
        std::max<int64_t>({patchFloats, filterGradients ? filterFloats : 0, 1});
    chunk = std::max<int64_t>(
        1, std::min<int64_t>(images, kChunkFloats / perImage));
    col.reserve(chunk * patchFloats, "allocating a convolution's patches");
    if (filterGradients)
      partial.reserve(chunk * filterFloats,
                      "allocating a convolution's partial filter gradients");
    imageIn = g.channels * g.inputs;
    imageOut = g.features * g.outputs;
    // The products of a whole chunk and of the last, shorter one, laid out
    // here rather than at every step.
    full = chunkProducts(chunk);
    last = chunkProducts(images % chunk);
    return shape;
  }

  /// The geometry of the convolution that a transposed one (input `x`,
  /// filter `w`) is the input gradient of, whose input is the transposed
  /// one's output: returns that output, as the CPU column computes it.
  Shape planTransposed(const Shape &x, const Shape &w, bool filterGradients) {
    Shape y = cpu::convTransposeOutput(info, x, w);
    cpu::ConvShape shape = plan(y, w, filterGradients);
    if (shape.output != x)
      fail(info.describe(), ": the convolution of the output ", shapeString(y),
           " is ", shapeString(shape.output), ", not the input ",
           shapeString(x));
    return y;
  }

  /// Calls f(first image, images) for each chunk.
  template <typename F> void forChunks(F &&f) {
    for (int64_t n = 0; n < images; n += chunk)
      f(n, std::min(chunk, images - n));
  }

  /// The patch matrices of `count` images of x.
  void patches(const float *x, int64_t count) {
    im2col<<<blocksFor(count * patchFloats), kBlock, 0, gpuDevice().stream>>>(
        x, col.get(), g, count);
    checkLaunch(info);
  }

  /// The products of a chunk of `count` images.
  struct ChunkProducts {
    std::vector<BatchedProduct> patch, fold, filter;
  };
  ChunkProducts chunkProducts(int64_t count) const {
    if (count == 0)
      return {};
    return {patchProducts(g, count), foldProducts(g, count),
            filterProducts(g, count)};
  }
  const ChunkProducts &productsFor(int64_t count) const {
    return count == chunk ? full : last;
  }

  /// The bias's gradient, dy summed per channel (`channels` of `positions`
  /// each, per image); when the products have no terms, clears dx and dw
  /// and returns false.
  bool startGradient(const float *dy, float *db, int64_t channels,
                     int64_t positions, Tensor &dx, Tensor &dw) {
    cudaStream_t stream = gpuDevice().stream;
    if (channels > 0) {
      biasGradient<<<static_cast<unsigned>(channels), kBlock, 0, stream>>>(
          dy, db, images, channels, positions);
      checkLaunch(info);
    }
    if (images > 0 && g.outputs > 0 && reduce > 0 && groupFeatures > 0)
      return true;
    for (Tensor *t : {&dx, &dw})
      check(cudaMemsetAsync(t->data(), 0, t->byteSize(), stream),
            "clearing a convolution's gradient");
    return false;
  }

  /// Runs `products` over operands a, b and c.
  void multiply(const std::vector<BatchedProduct> &products, const float *a,
                const float *b, float *c) {
    for (const BatchedProduct &p : products)
      gemmBatched(info, p.ta, p.tb, p.m, p.n, p.k, a + p.a, p.lda, p.strideA,
                  b + p.b, p.ldb, p.strideB, 0.0f, c + p.c, p.ldc, p.strideC,
                  p.batch);
  }

  /// y (`count` images of M x O) = w_g col_g per group.
  void multiplyPatches(const float *w, int64_t count, float *y) {
    multiply(productsFor(count).patch, w, col.get(), y);
  }

  /// dcol = w_g^T dy_g per group for `count` images of dy (M x O each),
  /// folded back onto dx (`count` images of C x inputs).
  void foldTransposed(const float *w, const float *dy, int64_t count,
                      float *dx) {
    multiply(productsFor(count).fold, w, dy, col.get());
    col2im<<<blocksFor(count * g.channels * g.inputs), kBlock, 0,
             gpuDevice().stream>>>(col.get(), dx, g, count);
    checkLaunch(info);
  }

  /// dw (+)= the sum over `count` images of dy_g col_g^T per group (dy:
  /// M x O per image): each image's into the partial buffer, then summed.
  void filterGradient(const float *dy, int64_t count, float *dw,
                      bool accumulate) {
    multiply(productsFor(count).filter, dy, col.get(), partial.get());
    sumPartials<<<blocksFor(filterFloats), kBlock, 0, gpuDevice().stream>>>(
        partial.get(), dw, filterFloats, count, accumulate);
    checkLaunch(info);
  }

  ConvGeometry g;
  int64_t images = 0, chunk = 1, groupFeatures = 0, reduce = 0;
  int64_t patchFloats = 0, filterFloats = 0, imageIn = 0, imageOut = 0;
  ChunkProducts full, last;
  DeviceScratch<float> col, partial;
};

/// heterps.conv: (input, filter, [bias]) -> output.
class ConvKernel : public ConvKernelBase {
public:
  using ConvKernelBase::ConvKernelBase;

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() < 2 || in.size() > 3)
      fail(info.describe(), ": takes 2 or 3 operands, got ", in.size());
    cpu::ConvShape shape = plan(in[0], in[1], false);
    if (in.size() == 3 && in[2] != Shape{in[1][0]})
      fail(info.describe(), ": bias has shape ", shapeString(in[2]),
           ", expected ", shapeString({in[1][0]}));
    return {shape.output};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    float *y = res[0]->as<float>();
    if (res[0]->numElements() == 0)
      return;
    if (reduce == 0)
      check(cudaMemsetAsync(y, 0, res[0]->byteSize(), stream),
            "clearing a convolution's output");
    else
      forChunks([&](int64_t n, int64_t count) {
        patches(in[0]->as<float>() + n * imageIn, count);
        multiplyPatches(in[1]->as<float>(), count, y + n * imageOut);
      });
    if (in.size() == 3) {
      addBias<<<blocksFor(images * imageOut), kBlock, 0, stream>>>(
          in[2]->as<float>(), y, images * imageOut, g.features, g.outputs);
      checkLaunch(info);
    }
  }
};

/// heterps.conv_grad: (input, filter, dy) -> (dinput, dfilter, dbias).
class ConvGradKernel : public ConvKernelBase {
public:
  using ConvKernelBase::ConvKernelBase;

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() != 3)
      fail(info.describe(), ": takes 3 operands, got ", in.size());
    cpu::ConvShape shape = plan(in[0], in[1], true);
    if (in[2] != shape.output)
      fail(info.describe(), ": dy has shape ", shapeString(in[2]),
           ", expected the output shape ", shapeString(shape.output));
    return {in[0], in[1], {in[1][0]}};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const float *x = in[0]->as<float>(), *w = in[1]->as<float>(),
                *dy = in[2]->as<float>();
    float *dx = res[0]->as<float>(), *dw = res[1]->as<float>(),
          *db = res[2]->as<float>();
    if (!startGradient(dy, db, g.features, g.outputs, *res[0], *res[1]))
      return;
    forChunks([&](int64_t n, int64_t count) {
      // dw_g += dy_g (M/g x O) col_g^T (O x C/g*taps).
      patches(x + n * imageIn, count);
      filterGradient(dy + n * imageOut, count, dw, n > 0);
      // dcol_g = w_g^T (C/g*taps x M/g) dy_g, folded back onto dx.
      foldTransposed(w, dy + n * imageOut, count, dx + n * imageIn);
    });
  }
};

/// heterps.conv_transpose: (input, filter, [bias]) -> output, the input
/// gradient of the convolution (filter C x M/group x k...) whose output has
/// the input's shape, then the bias per channel.
class ConvTransposeKernel : public ConvKernelBase {
public:
  using ConvKernelBase::ConvKernelBase;

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in.size() < 2 || in.size() > 3)
      fail(info.describe(), ": takes 2 or 3 operands, got ", in.size());
    Shape y = planTransposed(in[0], in[1], false);
    if (in.size() == 3 && in[2] != Shape{y[1]})
      fail(info.describe(), ": bias has shape ", shapeString(in[2]),
           ", expected ", shapeString({y[1]}));
    return {y};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    cudaStream_t stream = gpuDevice().stream;
    float *y = res[0]->as<float>();
    if (res[0]->numElements() == 0)
      return;
    if (groupFeatures == 0 || g.outputs == 0)
      check(cudaMemsetAsync(y, 0, res[0]->byteSize(), stream),
            "clearing a transposed convolution's output");
    else
      forChunks([&](int64_t n, int64_t count) {
        foldTransposed(in[1]->as<float>(), in[0]->as<float>() + n * imageOut,
                       count, y + n * imageIn);
      });
    if (in.size() == 3) {
      addBias<<<blocksFor(images * imageIn), kBlock, 0, stream>>>(
          in[2]->as<float>(), y, images * imageIn, g.channels, g.inputs);
      checkLaunch(info);
    }
  }
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
      fail(info.describe(), ": takes 3 operands, got ", in.size());
    Shape y = cpu::convTransposeOutput(info, in[0], in[1]);
    if (in[2] != y)
      fail(info.describe(), ": dy has shape ", shapeString(in[2]),
           ", expected the output shape ", shapeString(y));
    planTransposed(in[0], in[1], true);
    return {in[0], in[1], {y[1]}};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    const float *x = in[0]->as<float>(), *w = in[1]->as<float>(),
                *dy = in[2]->as<float>();
    float *dx = res[0]->as<float>(), *dw = res[1]->as<float>(),
          *db = res[2]->as<float>();
    if (!startGradient(dy, db, g.channels, g.inputs, *res[0], *res[1]))
      return;
    forChunks([&](int64_t n, int64_t count) {
      patches(dy + n * imageIn, count);
      // dx_g (M/g x O) = w_g col(dy)_g: the convolution of dy.
      multiplyPatches(w, count, dx + n * imageOut);
      // dw_g += x_g (M/g x O) col(dy)_g^T (O x C/g*taps).
      filterGradient(x + n * imageOut, count, dw, n > 0);
    });
  }
};

} // namespace

void cuda::registerConvKernels(KernelRegistry &r) {
  addKernel<ConvKernel>(r, "heterps.conv");
  addKernel<ConvGradKernel>(r, "heterps.conv_grad");
  addKernel<ConvTransposeKernel>(r, "heterps.conv_transpose");
  addKernel<ConvTransposeGradKernel>(r, "heterps.conv_transpose_grad");
}
