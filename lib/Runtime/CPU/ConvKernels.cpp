//===- ConvKernels.cpp - Convolution and its gradients on oneDNN ----------===//
//
// Where the channels fill oneDNN's 16-wide blocks, the primitives get `any`
// layouts so that oneDNN picks its blocked direct convolutions, and the
// program reorders between the executor's plain tensors and those layouts.
// Elsewhere the plain layout (oneDNN's im2col + GEMM) is faster on AVX-512,
// measured on 2 cores with ResNet layers (batch 16):
//   64->64 3x3 56x56:    blocked fwd 9.8 ms, grad 21 ms; plain 18, 49
//   3->64 7x7/2 224x224: blocked fwd 14 ms,  grad 79 ms; plain 18, 48
//   128->512 1x1 28x28:  blocked fwd 9.5 ms, grad 11 ms; plain 4.2, 10
// (a 1x1 convolution is a GEMM, so the reorders are pure overhead).
//
//===----------------------------------------------------------------------===//

#include "CNNSupport.h"

#include <algorithm>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using namespace heterps::runtime::cpu::cnn;
using dnnl::memory;

namespace {

/// A convolution's geometry for one pair of input and filter shapes.
struct ConvGeometry {
  Shape output;
  // Plain layouts of the operands; the weights have a leading group
  // dimension when grouped (the same bytes as ONNX's M x C/group x k...).
  memory::desc src, weights, bias, dst;
  Shape weightsShape;
  memory::dims strides, dilates, padL, padR;
  /// Whether the primitives choose their layouts (see the file comment).
  bool blocked = false;

  /// The descriptor a primitive is created with for an operand of `shape`
  /// whose plain layout is `plain`.
  memory::desc layout(const Shape &shape, const memory::desc &plain) const {
    return blocked ? anyDesc(shape) : plain;
  }
};

ConvGeometry convGeometry(const OpInfo &info, const Shape &x, const Shape &w) {
  ConvShape shape(info, x, w);
  const Window &window = shape.window;
  int64_t group = shape.group, channels = x[1], features = w[0];
  ConvGeometry g;
  g.output = shape.output;
  // oneDNN counts the gaps between taps, ONNX the distance between them.
  for (int64_t dilation : window.dilations)
    g.dilates.push_back(dilation - 1);
  g.strides = toDims(window.strides);
  g.padL = toDims(window.padBegin);
  g.padR = toDims(window.padEnd);
  g.weightsShape = w;
  if (group > 1) {
    g.weightsShape[0] = features / group;
    g.weightsShape.insert(g.weightsShape.begin(), group);
  }
  int64_t groupChannels = channels / group, groupFeatures = features / group;
  bool pointwise = std::all_of(window.kernel.begin(), window.kernel.end(),
                               [](int64_t k) { return k == 1; });
  bool depthwise =
      groupChannels == 1 && groupFeatures == 1 && channels % 16 == 0;
  g.blocked =
      !pointwise &&
      (depthwise || (groupChannels % 16 == 0 && groupFeatures % 16 == 0));
  g.src = plainDesc(x);
  g.weights = plainDesc(g.weightsShape);
  g.bias = plainDesc({features});
  g.dst = plainDesc(g.output);
  return g;
}

dnnl::convolution_forward::primitive_desc
forwardDesc(const ConvGeometry &g, const Shape &x, bool withBias) {
  using fwd = dnnl::convolution_forward;
  memory::desc src = g.layout(x, g.src),
               weights = g.layout(g.weightsShape, g.weights),
               dst = g.layout(g.output, g.dst);
  fwd::desc desc =
      withBias ? fwd::desc(dnnl::prop_kind::forward_training,
                           dnnl::algorithm::convolution_direct, src, weights,
                           g.bias, dst, g.strides, g.dilates, g.padL, g.padR)
               : fwd::desc(dnnl::prop_kind::forward_training,
                           dnnl::algorithm::convolution_direct, src, weights,
                           dst, g.strides, g.dilates, g.padL, g.padR);
  return fwd::primitive_desc(desc, userScratchpad(), cpuDevice().engine);
}

struct ConvEntry : Entry {
  Program program;
};

/// heterps.conv: (input, filter, [bias]) -> output.
class ConvKernel : public CachedKernel<ConvEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, ConvEntry &e) override {
    expectInputs(in, 2, 3);
    ConvGeometry g = convGeometry(info, in[0], in[1]);
    bool withBias = in.size() == 3;
    if (withBias && in[2] != Shape{in[1][0]})
      fail(info.describe(), ": bias has shape ", shapeString(in[2]),
           ", expected ", shapeString({in[1][0]}));
    e.outputShapes = {g.output};

    auto pd = forwardDesc(g, in[0], withBias);
    Program &p = e.program;
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, p.inputAs(0, g.src, pd.src_desc())},
        {DNNL_ARG_WEIGHTS, p.inputAs(1, g.weights, pd.weights_desc())},
        {DNNL_ARG_DST, p.outputAs(0, g.dst, pd.dst_desc())}};
    if (withBias)
      args[DNNL_ARG_BIAS] = p.input(2, g.bias);
    p.add(dnnl::convolution_forward(pd), pd, std::move(args));
    p.finish();
  }

  void execute(ConvEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    e.program.execute(inputs, outputs);
  }
};

/// heterps.conv_grad: (input, filter, dy) -> (dinput, dfilter, dbias), with
/// the attributes of the conv; dbias has M elements whether or not the conv
/// had a bias.
class ConvGradKernel : public CachedKernel<ConvEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, ConvEntry &e) override {
    expectInputs(in, 3, 3);
    ConvGeometry g = convGeometry(info, in[0], in[1]);
    if (in[2] != g.output)
      fail(info.describe(), ": dy has shape ", shapeString(in[2]),
           ", expected the output shape ", shapeString(g.output));
    e.outputShapes = {in[0], in[1], {in[1][0]}};

    CPUDevice &device = cpuDevice();
    auto hint = forwardDesc(g, in[0], true);
    memory::desc src = g.layout(in[0], g.src),
                 weights = g.layout(g.weightsShape, g.weights),
                 dst = g.layout(g.output, g.dst);
    dnnl::convolution_backward_data::primitive_desc data(
        dnnl::convolution_backward_data::desc(
            dnnl::algorithm::convolution_direct, src, weights, dst, g.strides,
            g.dilates, g.padL, g.padR),
        userScratchpad(), device.engine, hint);
    dnnl::convolution_backward_weights::primitive_desc filter(
        dnnl::convolution_backward_weights::desc(
            dnnl::algorithm::convolution_direct, src, weights, g.bias, dst,
            g.strides, g.dilates, g.padL, g.padR),
        userScratchpad(), device.engine, hint);

    Program &p = e.program;
    p.add(dnnl::convolution_backward_data(data), data,
          {{DNNL_ARG_DIFF_DST, p.inputAs(2, g.dst, data.diff_dst_desc())},
           {DNNL_ARG_WEIGHTS, p.inputAs(1, g.weights, data.weights_desc())},
           {DNNL_ARG_DIFF_SRC, p.outputAs(0, g.src, data.diff_src_desc())}});
    p.add(
        dnnl::convolution_backward_weights(filter), filter,
        {{DNNL_ARG_SRC, p.inputAs(0, g.src, filter.src_desc())},
         {DNNL_ARG_DIFF_DST, p.inputAs(2, g.dst, filter.diff_dst_desc())},
         {DNNL_ARG_DIFF_WEIGHTS,
          p.outputAs(1, g.weights, filter.diff_weights_desc())},
         {DNNL_ARG_DIFF_BIAS, p.outputAs(2, g.bias, filter.diff_bias_desc())}});
    p.finish();
  }

  void execute(ConvEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    e.program.execute(inputs, outputs);
  }
};

//===----------------------------------------------------------------------===//
// Transposed convolution
//===----------------------------------------------------------------------===//

/// The geometry of the convolution whose input gradient the transposed
/// convolution is: its input is `y` (the transposed one's output), its
/// output `x`.
ConvGeometry transposedGeometry(const OpInfo &info, const Shape &x,
                                const Shape &w, const Shape &y) {
  ConvGeometry g = convGeometry(info, y, w);
  if (g.output != x)
    fail(info.describe(), ": the convolution of the output ", shapeString(y),
         " is ", shapeString(g.output), ", not the input ", shapeString(x));
  return g;
}

/// heterps.conv_transpose: (input, filter, [bias]) -> output, as oneDNN's
/// backward-data convolution of the input, then the bias per channel.
class ConvTransposeKernel : public CachedKernel<ConvEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, ConvEntry &e) override {
    expectInputs(in, 2, 3);
    Shape y = convTransposeOutput(info, in[0], in[1]);
    ConvGeometry g = transposedGeometry(info, in[0], in[1], y);
    if (in.size() == 3 && in[2] != Shape{y[1]})
      fail(info.describe(), ": bias has shape ", shapeString(in[2]),
           ", expected ", shapeString({y[1]}));
    e.outputShapes = {y};

    auto hint = forwardDesc(g, y, false);
    memory::desc src = g.layout(y, g.src),
                 weights = g.layout(g.weightsShape, g.weights),
                 dst = g.layout(g.output, g.dst);
    dnnl::convolution_backward_data::primitive_desc data(
        dnnl::convolution_backward_data::desc(
            dnnl::algorithm::convolution_direct, src, weights, dst, g.strides,
            g.dilates, g.padL, g.padR),
        userScratchpad(), cpuDevice().engine, hint);
    Program &p = e.program;
    p.add(dnnl::convolution_backward_data(data), data,
          {{DNNL_ARG_DIFF_DST, p.inputAs(0, g.dst, data.diff_dst_desc())},
           {DNNL_ARG_WEIGHTS, p.inputAs(1, g.weights, data.weights_desc())},
           {DNNL_ARG_DIFF_SRC, p.outputAs(0, g.src, data.diff_src_desc())}});
    p.finish();
  }

  void execute(ConvEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    e.program.execute(inputs, outputs);
    if (inputs.size() < 3)
      return;
    Tensor &y = *outputs[0];
    const float *b = inputs[2]->as<float>();
    int64_t channels = y.dim(1), planes = y.dim(0) * channels;
    int64_t spatial = y.numElements() / std::max<int64_t>(planes, 1);
    float *out = y.as<float>();
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < spatial; ++i)
        out[p * spatial + i] += b[p % channels];
  }
};

/// heterps.conv_transpose_grad: (input, filter, dy) -> (dinput, dfilter,
/// dbias): the convolution of dy, that convolution's filter gradient with
/// the input as its output gradient, and dy summed per channel.
class ConvTransposeGradKernel : public CachedKernel<ConvEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, ConvEntry &e) override {
    expectInputs(in, 3, 3);
    Shape y = convTransposeOutput(info, in[0], in[1]);
    if (in[2] != y)
      fail(info.describe(), ": dy has shape ", shapeString(in[2]),
           ", expected the output shape ", shapeString(y));
    ConvGeometry g = transposedGeometry(info, in[0], in[1], y);
    e.outputShapes = {in[0], in[1], {y[1]}};

    auto forward = forwardDesc(g, y, false);
    memory::desc src = g.layout(y, g.src),
                 weights = g.layout(g.weightsShape, g.weights),
                 dst = g.layout(g.output, g.dst);
    dnnl::convolution_backward_weights::primitive_desc filter(
        dnnl::convolution_backward_weights::desc(
            dnnl::algorithm::convolution_direct, src, weights, dst, g.strides,
            g.dilates, g.padL, g.padR),
        userScratchpad(), cpuDevice().engine, forward);
    Program &p = e.program;
    p.add(dnnl::convolution_forward(forward), forward,
          {{DNNL_ARG_SRC, p.inputAs(2, g.src, forward.src_desc())},
           {DNNL_ARG_WEIGHTS, p.inputAs(1, g.weights, forward.weights_desc())},
           {DNNL_ARG_DST, p.outputAs(0, g.dst, forward.dst_desc())}});
    p.add(dnnl::convolution_backward_weights(filter), filter,
          {{DNNL_ARG_SRC, p.inputAs(2, g.src, filter.src_desc())},
           {DNNL_ARG_DIFF_DST, p.inputAs(0, g.dst, filter.diff_dst_desc())},
           {DNNL_ARG_DIFF_WEIGHTS,
            p.outputAs(1, g.weights, filter.diff_weights_desc())}});
    p.finish();
  }

  void execute(ConvEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    e.program.execute(inputs, outputs);
    const Tensor &dy = *inputs[2];
    int64_t channels = dy.dim(1), planes = dy.dim(0) * channels;
    int64_t spatial = dy.numElements() / std::max<int64_t>(planes, 1);
    const float *d = dy.as<float>();
    float *db = outputs[2]->as<float>();
    std::fill(db, db + channels, 0.0f);
    for (int64_t p = 0; p < planes; ++p) {
      float sum = 0.0f;
      for (int64_t i = 0; i < spatial; ++i)
        sum += d[p * spatial + i];
      db[p % channels] += sum;
    }
  }
};

} // namespace

void cpu::registerCNNKernels(KernelRegistry &registry) {
  registry.add("heterps.conv", DeviceKind::CPU, factory<ConvKernel>());
  registry.add("heterps.conv_grad", DeviceKind::CPU, factory<ConvGradKernel>());
  registry.add("heterps.conv_transpose", DeviceKind::CPU,
               factory<ConvTransposeKernel>());
  registry.add("heterps.conv_transpose_grad", DeviceKind::CPU,
               factory<ConvTransposeGradKernel>());
  cnn::registerPoolKernels(registry);
  cnn::registerNormKernels(registry);
}
