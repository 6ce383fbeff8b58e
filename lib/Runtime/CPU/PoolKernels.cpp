//===- PoolKernels.cpp - Pooling and its gradient on oneDNN ---------------===//
//
// ONNX's ceil_mode has no oneDNN counterpart: the end padding grows until
// the last window fits. Max pooling and averages that exclude padding do not
// see the difference. Averages that count padding would divide by the whole
// kernel where ONNX (like PyTorch) divides by the window clipped to the
// explicit padding, so those windows are rescaled after the primitive (and
// their dy before the backward primitive). Every pooling is oneDNN's
// pooling_v2, which takes dilations (as d - 1).
//
//===----------------------------------------------------------------------===//

#include "CNNSupport.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using namespace heterps::runtime::cpu::cnn;
using dnnl::memory;

namespace {

/// A pooling's geometry for one input shape.
struct PoolGeometry {
  Shape output;
  memory::desc src, dst;
  memory::dims strides, kernel, dilation, padL, padR;
  /// Per output spatial position (row-major), the factor from oneDNN's
  /// average to ONNX's; empty when every factor is 1.
  std::vector<float> divisorFix;
};

PoolGeometry poolGeometry(const OpInfo &info, const Shape &x,
                          bool countIncludePad) {
  PoolShape shape(info, x);
  const Window &w = shape.window;
  size_t n = x.size() - 2;
  PoolGeometry g;
  g.output = shape.output;
  g.padR = toDims(shape.padEndCeil);
  std::vector<std::vector<float>> fix(n);
  bool needFix = false;
  for (size_t i = 0; i < n; ++i) {
    int64_t size = x[i + 2], k = w.kernel[i], s = w.strides[i];
    int64_t d = w.dilations[i];
    int64_t padBegin = w.padBegin[i], padEnd = w.padEnd[i];
    int64_t out = g.output[i + 2];
    fix[i].assign(out, 1.0f);
    if (countIncludePad && shape.padEndCeil[i] > padEnd) {
      needFix = true;
      for (int64_t o = 0; o < out; ++o) {
        // The taps that fall inside the input or its explicit padding.
        int64_t start = o * s - padBegin;
        int64_t inside = std::min(k, (size + padEnd - start + d - 1) / d);
        fix[i][o] = static_cast<float>(k) / static_cast<float>(inside);
      }
    }
  }
  g.strides = toDims(w.strides);
  g.kernel = toDims(w.kernel);
  for (int64_t d : w.dilations)
    g.dilation.push_back(d - 1);
  g.padL = toDims(w.padBegin);
  g.src = plainDesc(x);
  g.dst = plainDesc(g.output);
  if (needFix) {
    Shape spatial(g.output.begin() + 2, g.output.end());
    int64_t total = numElements(spatial);
    g.divisorFix.assign(total, 1.0f);
    for (int64_t j = 0; j < total; ++j)
      for (int64_t d = n - 1, rest = j; d >= 0; --d) {
        g.divisorFix[j] *= fix[d][rest % spatial[d]];
        rest /= spatial[d];
      }
  }
  return g;
}

dnnl::algorithm poolAlgorithm(bool max, bool countIncludePad) {
  if (max)
    return dnnl::algorithm::pooling_max;
  return countIncludePad ? dnnl::algorithm::pooling_avg_include_padding
                         : dnnl::algorithm::pooling_avg_exclude_padding;
}

/// dst = src * fix per spatial position, over every N x C plane.
void applyFix(const std::vector<float> &fix, const float *src, float *dst,
              int64_t elements) {
  int64_t plane = static_cast<int64_t>(fix.size());
  for (int64_t base = 0; base < elements; base += plane)
    for (int64_t j = 0; j < plane; ++j)
      dst[base + j] = src[base + j] * fix[j];
}

struct PoolEntry : Entry {
  Program program;
  std::vector<float> divisorFix;
  /// dy rescaled for the backward primitive (pool_grad with a fix).
  memory scaledDy;
};

/// heterps.max_pool and heterps.avg_pool: input -> output.
class PoolKernel : public CachedKernel<PoolEntry> {
public:
  PoolKernel(const OpInfo &info, bool max) : CachedKernel(info), max(max) {}

protected:
  void build(const std::vector<Shape> &in, PoolEntry &e) override {
    expectInputs(in, 1, 1);
    bool countIncludePad = !max && info.getBool("count_include_pad", false);
    PoolGeometry g = poolGeometry(info, in[0], countIncludePad);
    e.outputShapes = {g.output};
    e.divisorFix = g.divisorFix;
    dnnl::pooling_v2_forward::primitive_desc pd(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                       poolAlgorithm(max, countIncludePad),
                                       g.src, g.dst, g.strides, g.kernel,
                                       g.dilation, g.padL, g.padR),
        userScratchpad(), cpuDevice().engine);
    Program &p = e.program;
    p.add(dnnl::pooling_v2_forward(pd), pd,
          {{DNNL_ARG_SRC, p.input(0, g.src)},
           {DNNL_ARG_DST, p.output(0, g.dst)}});
    p.finish();
  }

  void execute(PoolEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    e.program.execute(inputs, outputs);
    if (!e.divisorFix.empty()) {
      float *y = outputs[0]->as<float>();
      applyFix(e.divisorFix, y, y, outputs[0]->numElements());
    }
  }

private:
  bool max;
};

/// heterps.global_avg_pool: N x C x spatial... -> N x C x 1 x ...; any
/// number of spatial dimensions, as one 1-D pooling over all of them.
class GlobalAvgPoolKernel : public CachedKernel<PoolEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, PoolEntry &e) override {
    expectInputs(in, 1, 1);
    const Shape &x = in[0];
    if (x.size() < 3)
      fail(info.describe(), ": input must be N x C x spatial..., got ",
           shapeString(x));
    Shape out(x.size(), 1);
    out[0] = x[0];
    out[1] = x[1];
    e.outputShapes = {out};
    int64_t positions = numElements(Shape(x.begin() + 2, x.end()));
    if (positions == 0)
      fail(info.describe(), ": input ", shapeString(x),
           " has no spatial positions to average");
    memory::desc src = plainDesc({x[0], x[1], positions});
    memory::desc dst = plainDesc({x[0], x[1], 1});
    dnnl::pooling_forward::primitive_desc pd(
        dnnl::pooling_forward::desc(
            dnnl::prop_kind::forward_inference,
            dnnl::algorithm::pooling_avg_exclude_padding, src, dst, {1},
            {positions}, {0}, {0}),
        userScratchpad(), cpuDevice().engine);
    Program &p = e.program;
    p.add(dnnl::pooling_forward(pd), pd,
          {{DNNL_ARG_SRC, p.input(0, src)}, {DNNL_ARG_DST, p.output(0, dst)}});
    p.finish();
  }

  void execute(PoolEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    e.program.execute(inputs, outputs);
  }
};

/// heterps.pool_grad: (input, output, dy) -> dinput, attributes `kind`
/// ("max" or "avg") and those of the pool. Max pooling reruns the forward
/// primitive to regenerate oneDNN's workspace (the argmax positions), which
/// the plan does not carry.
class PoolGradKernel : public CachedKernel<PoolEntry> {
public:
  using CachedKernel::CachedKernel;

protected:
  void build(const std::vector<Shape> &in, PoolEntry &e) override {
    expectInputs(in, 3, 3);
    std::string kind = info.getString("kind");
    if (kind != "max" && kind != "avg")
      fail(info.describe(), ": kind is '", kind, "', expected 'max' or 'avg'");
    bool max = kind == "max";
    bool countIncludePad = !max && info.getBool("count_include_pad", false);
    PoolGeometry g = poolGeometry(info, in[0], countIncludePad);
    for (size_t i : {1, 2})
      if (in[i] != g.output)
        fail(info.describe(), ": ", (i == 1 ? "output" : "dy"), " has shape ",
             shapeString(in[i]), ", expected the pooled shape ",
             shapeString(g.output));
    e.outputShapes = {in[0]};
    e.divisorFix = g.divisorFix;

    CPUDevice &device = cpuDevice();
    dnnl::algorithm algorithm = poolAlgorithm(max, countIncludePad);
    dnnl::pooling_v2_forward::primitive_desc forward(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_training,
                                       algorithm, g.src, g.dst, g.strides,
                                       g.kernel, g.dilation, g.padL, g.padR),
        userScratchpad(), device.engine);
    dnnl::pooling_v2_backward::primitive_desc backward(
        dnnl::pooling_v2_backward::desc(algorithm, g.src, g.dst, g.strides,
                                        g.kernel, g.dilation, g.padL, g.padR),
        userScratchpad(), device.engine, forward);

    Program &p = e.program;
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_DIFF_SRC, p.output(0, g.src)}};
    if (max) {
      memory workspace = p.buffer(forward.workspace_desc());
      p.add(dnnl::pooling_v2_forward(forward), forward,
            {{DNNL_ARG_SRC, p.input(0, g.src)},
             {DNNL_ARG_DST, p.buffer(g.dst)},
             {DNNL_ARG_WORKSPACE, workspace}});
      args[DNNL_ARG_WORKSPACE] = workspace;
    }
    if (e.divisorFix.empty()) {
      args[DNNL_ARG_DIFF_DST] = p.input(2, g.dst);
    } else {
      e.scaledDy = p.buffer(g.dst);
      args[DNNL_ARG_DIFF_DST] = e.scaledDy;
    }
    p.add(dnnl::pooling_v2_backward(backward), backward, std::move(args));
    p.finish();
  }

  void execute(PoolEntry &e, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ExecContext &) override {
    if (!e.divisorFix.empty())
      applyFix(e.divisorFix, inputs[2]->as<float>(),
               static_cast<float *>(e.scaledDy.get_data_handle()),
               inputs[2]->numElements());
    e.program.execute(inputs, outputs);
  }
};

} // namespace

void cnn::registerPoolKernels(KernelRegistry &registry) {
  registry.add("heterps.max_pool", DeviceKind::CPU, [](const OpInfo &info) {
    return std::make_unique<PoolKernel>(info, true);
  });
  registry.add("heterps.avg_pool", DeviceKind::CPU, [](const OpInfo &info) {
    return std::make_unique<PoolKernel>(info, false);
  });
  registry.add("heterps.global_avg_pool", DeviceKind::CPU,
               factory<GlobalAvgPoolKernel>());
  registry.add("heterps.pool_grad", DeviceKind::CPU, factory<PoolGradKernel>());
}
