//===- NormKernels.cpp - Batch and layer normalisation on oneDNN ----------===//
//
// The gradient kernels get no saved statistics from the plan: they rerun a
// statistics-only forward primitive, writing its (unused) normalised output
// into dinput, which the backward primitive then overwrites, so the rerun
// costs no buffer of the input's size.
//
//===----------------------------------------------------------------------===//

#include "CNNSupport.h"
#include "KernelUtil.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using namespace heterps::runtime::cpu::cnn;
using dnnl::memory;
using Flags = dnnl::normalization_flags;

namespace {

const Flags kScaleShift = Flags::use_scale | Flags::use_shift;

//===----------------------------------------------------------------------===//
// Batch normalisation
//===----------------------------------------------------------------------===//

/// Checks N x C x ... and returns the data descriptor: oneDNN takes 2 to 5
/// dimensions, so higher ranks fold their spatial dimensions into one.
memory::desc batchNormData(const OpInfo &info, const Shape &x) {
  BatchNormShape shape(info, x);
  if (x.size() <= 5)
    return plainDesc(x);
  return plainDesc({shape.batch, shape.channels, shape.inner});
}

struct BatchNormEntry : Entry {
  Program inference, training;
  memory batchMean, batchVariance;
  float momentum = 0.9f;
  bool batchStatistics = false;
  /// Values per channel, for the unbiased running variance.
  int64_t count = 0;
};

/// heterps.batch_norm: (input, scale, bias, mean, variance) -> output. In
/// training, mean and variance (views of the parameters) are updated in
/// place: running = momentum * running + (1 - momentum) * batch, with the
/// unbiased batch variance as PyTorch does. With `batch_statistics`,
/// inference normalises with the batch's statistics too (and updates
/// nothing).
class BatchNormKernel : public CachedKernel<BatchNormEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, BatchNormEntry &e) override {
    expectInputs(in, 5, 5);
    const Shape &x = in[0];
    memory::desc data = batchNormData(info, x);
    BatchNormShape shape(info, x);
    const char *names[] = {"", "scale", "bias", "mean", "variance"};
    for (size_t i = 1; i < 5; ++i)
      shape.expectChannels(info, names[i], in[i]);
    e.outputShapes = {x};
    e.count = shape.count();
    e.momentum = static_cast<float>(info.getFloat("momentum", 0.9));
    e.batchStatistics = info.getBool("batch_statistics", false);

    using BN = dnnl::batch_normalization_forward;
    CPUDevice &device = cpuDevice();
    float epsilon = static_cast<float>(info.getFloat("epsilon", 1e-5));
    memory::desc channels = plainDesc({x[1]});

    BN::primitive_desc inference(
        BN::desc(dnnl::prop_kind::forward_inference, data, epsilon,
                 kScaleShift | Flags::use_global_stats),
        userScratchpad(), device.engine);
    Program &p = e.inference;
    p.add(BN(inference), inference,
          {{DNNL_ARG_SRC, p.input(0, data)},
           {DNNL_ARG_SCALE, p.input(1, channels)},
           {DNNL_ARG_SHIFT, p.input(2, channels)},
           {DNNL_ARG_MEAN, p.input(3, channels)},
           {DNNL_ARG_VARIANCE, p.input(4, channels)},
           {DNNL_ARG_DST, p.output(0, data)}});
    p.finish();

    BN::primitive_desc training(
        BN::desc(dnnl::prop_kind::forward_training, data, epsilon, kScaleShift),
        userScratchpad(), device.engine);
    Program &q = e.training;
    e.batchMean = q.buffer(channels);
    e.batchVariance = q.buffer(channels);
    q.add(BN(training), training,
          {{DNNL_ARG_SRC, q.input(0, data)},
           {DNNL_ARG_SCALE, q.input(1, channels)},
           {DNNL_ARG_SHIFT, q.input(2, channels)},
           {DNNL_ARG_MEAN, e.batchMean},
           {DNNL_ARG_VARIANCE, e.batchVariance},
           {DNNL_ARG_DST, q.output(0, data)}});
    q.finish();
  }

  void execute(BatchNormEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs,
               ExecContext &context) override {
    if (!context.training) {
      if (e.batchStatistics)
        e.training.execute(inputs, outputs);
      else
        e.inference.execute(inputs, outputs);
      return;
    }
    e.training.execute(inputs, outputs);
    float momentum = e.momentum;
    float unbias = e.count > 1 ? static_cast<float>(e.count) /
                                     static_cast<float>(e.count - 1)
                               : 1.0f;
    const float *mean = static_cast<float *>(e.batchMean.get_data_handle());
    const float *variance =
        static_cast<float *>(e.batchVariance.get_data_handle());
    float *runningMean = inputs[3]->as<float>();
    float *runningVariance = inputs[4]->as<float>();
    for (int64_t c = 0, n = inputs[3]->numElements(); c < n; ++c) {
      runningMean[c] = momentum * runningMean[c] + (1 - momentum) * mean[c];
      runningVariance[c] =
          momentum * runningVariance[c] + (1 - momentum) * variance[c] * unbias;
    }
  }
};

struct NormGradEntry : Entry {
  Program program;
};

/// heterps.batch_norm_grad: (input, scale, dy) -> (dinput, dscale, dbias),
/// the training-mode gradient with the batch statistics of input.
class BatchNormGradKernel : public CachedKernel<NormGradEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, NormGradEntry &e) override {
    expectInputs(in, 3, 3);
    const Shape &x = in[0];
    memory::desc data = batchNormData(info, x);
    BatchNormShape(info, x).expectChannels(info, "scale", in[1]);
    if (in[2] != x)
      fail(info.describe(), ": dy has shape ", shapeString(in[2]),
           ", expected the input shape ", shapeString(x));
    e.outputShapes = {x, in[1], in[1]};

    using BN = dnnl::batch_normalization_forward;
    using BNGrad = dnnl::batch_normalization_backward;
    CPUDevice &device = cpuDevice();
    float epsilon = static_cast<float>(info.getFloat("epsilon", 1e-5));
    memory::desc channels = plainDesc({x[1]});
    BN::primitive_desc stats(
        BN::desc(dnnl::prop_kind::forward_training, data, epsilon, Flags::none),
        userScratchpad(), device.engine);
    BN::primitive_desc hint(
        BN::desc(dnnl::prop_kind::forward_training, data, epsilon, kScaleShift),
        device.engine);
    BNGrad::primitive_desc backward(BNGrad::desc(dnnl::prop_kind::backward,
                                                 data, data, epsilon,
                                                 kScaleShift),
                                    userScratchpad(), device.engine, hint);

    Program &p = e.program;
    memory mean = p.buffer(channels), variance = p.buffer(channels);
    p.add(BN(stats), stats,
          {{DNNL_ARG_SRC, p.input(0, data)},
           {DNNL_ARG_MEAN, mean},
           {DNNL_ARG_VARIANCE, variance},
           {DNNL_ARG_DST, p.output(0, data)}});
    p.add(BNGrad(backward), backward,
          {{DNNL_ARG_SRC, p.input(0, data)},
           {DNNL_ARG_MEAN, mean},
           {DNNL_ARG_VARIANCE, variance},
           {DNNL_ARG_DIFF_DST, p.input(2, data)},
           {DNNL_ARG_SCALE, p.input(1, channels)},
           // The gradient does not read the shift, but oneDNN counts it
           // among the inputs of use_shift.
           {DNNL_ARG_SHIFT, p.buffer(channels)},
           {DNNL_ARG_DIFF_SRC, p.output(0, data)},
           {DNNL_ARG_DIFF_SCALE, p.output(1, channels)},
           {DNNL_ARG_DIFF_SHIFT, p.output(2, channels)}});
    p.finish();
  }

  void execute(NormGradEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    e.program.execute(inputs, outputs);
  }
};

//===----------------------------------------------------------------------===//
// Layer normalisation
//===----------------------------------------------------------------------===//

/// Layer norm over dims axis..rank-1 is oneDNN's layer norm over the last
/// dimension of the outer x inner view.
struct LayerNormGeometry {
  memory::desc data, stats, params;
};

LayerNormGeometry layerNormGeometry(const OpInfo &info, const Shape &x,
                                    const Shape &scale) {
  LayerNormShape shape(x, scale, info);
  return {plainDesc({shape.outer, shape.inner}), plainDesc({shape.outer}),
          plainDesc({shape.inner})};
}

struct LayerNormEntry : Entry {
  Program program;
};

/// heterps.layer_norm: (input, scale, [bias]) -> output, attributes axis
/// (default -1) and epsilon.
class LayerNormKernel : public CachedKernel<LayerNormEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, LayerNormEntry &e) override {
    expectInputs(in, 2, 3);
    LayerNormGeometry g = layerNormGeometry(info, in[0], in[1]);
    bool withBias = in.size() == 3;
    if (withBias && in[2] != in[1])
      fail(info.describe(), ": bias has shape ", shapeString(in[2]),
           ", expected the scale's ", shapeString(in[1]));
    e.outputShapes = {in[0]};

    using LN = dnnl::layer_normalization_forward;
    float epsilon = static_cast<float>(info.getFloat("epsilon", 1e-5));
    Flags flags = withBias ? kScaleShift : Flags::use_scale;
    LN::primitive_desc pd(LN::desc(dnnl::prop_kind::forward_inference, g.data,
                                   g.stats, epsilon, flags),
                          userScratchpad(), cpuDevice().engine);
    Program &p = e.program;
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, p.input(0, g.data)},
        {DNNL_ARG_SCALE, p.input(1, g.params)},
        {DNNL_ARG_DST, p.output(0, g.data)}};
    if (withBias)
      args[DNNL_ARG_SHIFT] = p.input(2, g.params);
    // Inference keeps the statistics in its scratchpad, unless this oneDNN
    // wants them as outputs.
    if (pd.mean_desc().get_size() != 0) {
      args[DNNL_ARG_MEAN] = p.buffer(pd.mean_desc());
      args[DNNL_ARG_VARIANCE] = p.buffer(pd.variance_desc());
    }
    p.add(LN(pd), pd, std::move(args));
    p.finish();
  }

  void execute(LayerNormEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    e.program.execute(inputs, outputs);
  }
};

/// heterps.layer_norm_grad: (input, scale, dy) -> (dinput, dscale, dbias).
class LayerNormGradKernel : public CachedKernel<NormGradEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, NormGradEntry &e) override {
    expectInputs(in, 3, 3);
    LayerNormGeometry g = layerNormGeometry(info, in[0], in[1]);
    if (in[2] != in[0])
      fail(info.describe(), ": dy has shape ", shapeString(in[2]),
           ", expected the input shape ", shapeString(in[0]));
    e.outputShapes = {in[0], in[1], in[1]};

    using LN = dnnl::layer_normalization_forward;
    using LNGrad = dnnl::layer_normalization_backward;
    CPUDevice &device = cpuDevice();
    float epsilon = static_cast<float>(info.getFloat("epsilon", 1e-5));
    LN::primitive_desc stats(LN::desc(dnnl::prop_kind::forward_training, g.data,
                                      g.stats, epsilon, Flags::none),
                             userScratchpad(), device.engine);
    LN::primitive_desc hint(LN::desc(dnnl::prop_kind::forward_training, g.data,
                                     g.stats, epsilon, kScaleShift),
                            device.engine);
    LNGrad::primitive_desc backward(LNGrad::desc(dnnl::prop_kind::backward,
                                                 g.data, g.data, g.stats,
                                                 epsilon, kScaleShift),
                                    userScratchpad(), device.engine, hint);

    Program &p = e.program;
    memory mean = p.buffer(g.stats), variance = p.buffer(g.stats);
    p.add(LN(stats), stats,
          {{DNNL_ARG_SRC, p.input(0, g.data)},
           {DNNL_ARG_MEAN, mean},
           {DNNL_ARG_VARIANCE, variance},
           {DNNL_ARG_DST, p.output(0, g.data)}});
    p.add(LNGrad(backward), backward,
          {{DNNL_ARG_SRC, p.input(0, g.data)},
           {DNNL_ARG_MEAN, mean},
           {DNNL_ARG_VARIANCE, variance},
           {DNNL_ARG_DIFF_DST, p.input(2, g.data)},
           {DNNL_ARG_SCALE, p.input(1, g.params)},
           {DNNL_ARG_SHIFT, p.buffer(g.params)},
           {DNNL_ARG_DIFF_SRC, p.output(0, g.data)},
           {DNNL_ARG_DIFF_SCALE, p.output(1, g.params)},
           {DNNL_ARG_DIFF_SHIFT, p.output(2, g.params)}});
    p.finish();
  }

  void execute(NormGradEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    e.program.execute(inputs, outputs);
  }
};

} // namespace

void cnn::registerNormKernels(KernelRegistry &registry) {
  registry.add("heterps.batch_norm", DeviceKind::CPU,
               factory<BatchNormKernel>());
  registry.add("heterps.batch_norm_grad", DeviceKind::CPU,
               factory<BatchNormGradKernel>());
  registry.add("heterps.layer_norm", DeviceKind::CPU,
               factory<LayerNormKernel>());
  registry.add("heterps.layer_norm_grad", DeviceKind::CPU,
               factory<LayerNormGradKernel>());
}
