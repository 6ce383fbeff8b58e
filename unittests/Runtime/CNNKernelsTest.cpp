//===- CNNKernelsTest.cpp - Conv, pool and norm kernels of the CPU --------===//
//
// Forward kernels are checked against naive loops, backward kernels against
// central differences of the forward kernels: L = sum(dy * forward(inputs)).
// The references work on 3 spatial dimensions; 1-D and 2-D cases are lifted
// by inserting unit dimensions (unit kernel, stride 1, no padding).
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/CPU/CPUDevice.h"

#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/Kernel.h"
#include "heterps/plan.pb.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

using namespace heterps;
using namespace heterps::runtime;

namespace {

/// Every CPU kernel: the CNN ones under test, and the reductions a few
/// tests use alongside them.
KernelRegistry &registry() {
  static KernelRegistry *r = [] {
    auto *r = new KernelRegistry();
    registerCPUKernels(*r);
    return r;
  }();
  return *r;
}

/// An op with its attributes and, once run, its kernel. Not movable: the
/// kernel's OpInfo points at the plan op.
class TestOp {
public:
  explicit TestOp(const std::string &name) {
    op.set_name(name);
    op.set_location("loc(\"test.mlir\":1:1)");
  }
  TestOp(const TestOp &) = delete;
  TestOp &operator=(const TestOp &) = delete;

  TestOp &ints(const std::string &key, const std::vector<int64_t> &v) {
    auto *ints = (*op.mutable_attrs())[key].mutable_ints();
    ints->clear_values();
    for (int64_t x : v)
      ints->add_values(x);
    return *this;
  }
  TestOp &i(const std::string &key, int64_t v) {
    (*op.mutable_attrs())[key].set_i(v);
    return *this;
  }
  TestOp &f(const std::string &key, double v) {
    (*op.mutable_attrs())[key].set_f(v);
    return *this;
  }
  TestOp &b(const std::string &key, bool v) {
    (*op.mutable_attrs())[key].set_b(v);
    return *this;
  }
  TestOp &s(const std::string &key, const std::string &v) {
    (*op.mutable_attrs())[key].set_s(v);
    return *this;
  }

  /// prepare() then run() on fresh outputs of the shapes prepare() returned.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs,
                          bool training = false) {
    std::vector<Shape> shapes;
    for (const Tensor &t : inputs)
      shapes.push_back(t.shape());
    if (!kernel) {
      std::vector<TensorType> types;
      for (const Shape &s : shapes)
        types.push_back({DType::F32, s});
      info = std::make_unique<OpInfo>(op, types, std::vector<TensorType>{});
      kernel = registry().create(*info, DeviceKind::CPU);
    }
    std::vector<Shape> outShapes = kernel->prepare(shapes);
    std::vector<Tensor> outputs;
    for (const Shape &s : outShapes)
      outputs.emplace_back(DType::F32, s);
    std::vector<const Tensor *> in;
    for (const Tensor &t : inputs)
      in.push_back(&t);
    std::vector<Tensor *> out;
    for (Tensor &t : outputs)
      out.push_back(&t);
    ExecContext context;
    context.training = training;
    kernel->run(in, out, context);
    return outputs;
  }

  Kernel &getKernel() { return *kernel; }

private:
  plan::Op op;
  std::unique_ptr<OpInfo> info;
  std::unique_ptr<Kernel> kernel;
};

Tensor random(const Shape &shape, std::mt19937 &gen, float lo = -1,
              float hi = 1) {
  Tensor t(DType::F32, shape);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<float>()[i] = dist(gen);
  return t;
}

/// Distinct values at least `gap` apart, so that finite differences of a
/// max never cross a tie.
Tensor distinct(const Shape &shape, std::mt19937 &gen, float gap) {
  Tensor t(DType::F32, shape);
  std::vector<int64_t> order(t.numElements());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), gen);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<float>()[i] = gap * static_cast<float>(order[i] - t.numElements() / 2);
  return t;
}

void expectClose(const Tensor &actual, const Tensor &expected,
                 double tolerance = 1e-4) {
  ASSERT_EQ(actual.numElements(), expected.numElements());
  int failures = 0;
  for (int64_t i = 0; i < actual.numElements() && failures < 8; ++i) {
    double a = actual.as<float>()[i], e = expected.as<float>()[i];
    if (std::fabs(a - e) > tolerance * std::max(1.0, std::fabs(e))) {
      ADD_FAILURE() << "element " << i << ": " << a << " vs expected " << e;
      ++failures;
    }
  }
}

double dot(const Tensor &a, const Tensor &b) {
  double sum = 0;
  for (int64_t i = 0; i < a.numElements(); ++i)
    sum += static_cast<double>(a.as<float>()[i]) * b.as<float>()[i];
  return sum;
}

using Forward = std::function<Tensor(const std::vector<Tensor> &)>;

/// Checks `grad` against central differences of sum(dy * forward(inputs))
/// with respect to inputs[index].
void checkGradient(const Forward &forward, std::vector<Tensor> inputs,
                   size_t index, const Tensor &dy, const Tensor &grad,
                   float eps = 1e-2f) {
  SCOPED_TRACE("gradient of input " + std::to_string(index));
  Tensor x = inputs[index].clone();
  inputs[index] = x;
  ASSERT_EQ(grad.shape(), x.shape());
  int failures = 0;
  for (int64_t i = 0; i < x.numElements() && failures < 8; ++i) {
    float saved = x.as<float>()[i];
    x.as<float>()[i] = saved + eps;
    double plus = dot(dy, forward(inputs));
    x.as<float>()[i] = saved - eps;
    double minus = dot(dy, forward(inputs));
    x.as<float>()[i] = saved;
    double numeric = (plus - minus) / (2 * eps);
    double analytic = grad.as<float>()[i];
    if (std::fabs(analytic - numeric) >
        2e-2 * std::max(1.0, std::fabs(numeric))) {
      ADD_FAILURE() << "element " << i << ": kernel " << analytic
                    << ", finite difference " << numeric;
      ++failures;
    }
  }
}

//===----------------------------------------------------------------------===//
// References on N x C x D x H x W
//===----------------------------------------------------------------------===//

/// The shape with unit spatial dimensions inserted up to 3 of them.
Shape lift(const Shape &s) {
  Shape out = s;
  out.insert(out.begin() + 2, 5 - s.size(), 1);
  return out;
}
Shape liftWindow(const Shape &v, int64_t fill) {
  Shape out = v;
  out.insert(out.begin(), 3 - v.size(), fill);
  return out;
}
/// Pads (begins then ends) lifted to 3 spatial dimensions.
Shape liftPads(const Shape &pads) {
  size_t n = pads.size() / 2;
  Shape begins(pads.begin(), pads.begin() + n),
      ends(pads.begin() + n, pads.end());
  begins = liftWindow(begins, 0);
  ends = liftWindow(ends, 0);
  begins.insert(begins.end(), ends.begin(), ends.end());
  return begins;
}
Tensor lifted(const Tensor &t) {
  return Tensor::view(DType::F32, lift(t.shape()), t.data());
}

struct Index5 {
  Shape dims;
  int64_t operator()(int64_t n, int64_t c, int64_t d, int64_t h,
                     int64_t w) const {
    return (((n * dims[1] + c) * dims[2] + d) * dims[3] + h) * dims[4] + w;
  }
};

Tensor refConv(const Tensor &xs, const Tensor &ws, const Tensor *bias,
               const Shape &strides, const Shape &pads, const Shape &dilations,
               int64_t group) {
  Tensor x = lifted(xs), w = lifted(ws);
  Shape s = liftWindow(strides, 1), d = liftWindow(dilations, 1),
        p = liftPads(pads);
  Index5 xi{x.shape()}, wi{w.shape()};
  int64_t n = x.dim(0), m = w.dim(0), cg = w.dim(1);
  Shape out = {n, m};
  for (int i = 0; i < 3; ++i)
    out.push_back(
        (x.dim(i + 2) + p[i] + p[i + 3] - ((w.dim(i + 2) - 1) * d[i] + 1)) /
            s[i] +
        1);
  Tensor y(DType::F32, out);
  Index5 yi{out};
  const float *xv = x.as<float>(), *wv = w.as<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t f = 0; f < m; ++f) {
      int64_t g = f / (m / group);
      for (int64_t od = 0; od < out[2]; ++od)
        for (int64_t oh = 0; oh < out[3]; ++oh)
          for (int64_t ow = 0; ow < out[4]; ++ow) {
            double sum = bias ? bias->as<float>()[f] : 0.0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t kd = 0; kd < w.dim(2); ++kd)
                for (int64_t kh = 0; kh < w.dim(3); ++kh)
                  for (int64_t kw = 0; kw < w.dim(4); ++kw) {
                    int64_t id = od * s[0] - p[0] + kd * d[0];
                    int64_t ih = oh * s[1] - p[1] + kh * d[1];
                    int64_t iw = ow * s[2] - p[2] + kw * d[2];
                    if (id < 0 || id >= x.dim(2) || ih < 0 || ih >= x.dim(3) ||
                        iw < 0 || iw >= x.dim(4))
                      continue;
                    sum +=
                        static_cast<double>(xv[xi(b, g * cg + c, id, ih, iw)]) *
                        wv[wi(f, c, kd, kh, kw)];
                  }
            y.as<float>()[yi(b, f, od, oh, ow)] = static_cast<float>(sum);
          }
    }
  Shape shape = {n, m};
  for (size_t i = 2; i < xs.shape().size(); ++i)
    shape.push_back(out[i + 5 - xs.shape().size()]);
  y.reset(DType::F32, shape, y.data());
  return y;
}

/// ONNX pooling, written out: the output size, clipped windows, and the
/// divisors of count_include_pad (the window within the explicit padding)
/// and of excluding it (the window within the input). A dilated window
/// reads every d-th element.
Tensor refPool(const Tensor &xs, const Shape &kernel, const Shape &strides,
               const Shape &pads, bool ceilMode, bool max, bool countIncludePad,
               const Shape &dilations = {}) {
  Tensor x = lifted(xs);
  Shape k = liftWindow(kernel, 1), s = liftWindow(strides, 1),
        p = liftPads(pads),
        d = liftWindow(dilations.empty() ? Shape(kernel.size(), 1) : dilations,
                       1);
  Shape out = {x.dim(0), x.dim(1)};
  for (int i = 0; i < 3; ++i) {
    int64_t size = x.dim(i + 2), span = (k[i] - 1) * d[i] + 1;
    int64_t o =
        (size + p[i] + p[i + 3] - span + (ceilMode ? s[i] - 1 : 0)) / s[i] + 1;
    if (ceilMode && (o - 1) * s[i] >= size + p[i])
      --o;
    out.push_back(o);
  }
  Tensor y(DType::F32, out);
  Index5 xi{x.shape()}, yi{out};
  for (int64_t b = 0; b < out[0]; ++b)
    for (int64_t c = 0; c < out[1]; ++c)
      for (int64_t od = 0; od < out[2]; ++od)
        for (int64_t oh = 0; oh < out[3]; ++oh)
          for (int64_t ow = 0; ow < out[4]; ++ow) {
            int64_t o[3] = {od, oh, ow};
            double best = -INFINITY, sum = 0;
            int64_t inside = 0, padded = 1;
            // Per dimension, the taps inside the input.
            std::vector<int64_t> taps[3];
            for (int i = 0; i < 3; ++i) {
              int64_t start = o[i] * s[i] - p[i], withinPads = 0;
              for (int64_t t = 0; t < k[i]; ++t) {
                int64_t at = start + t * d[i];
                if (at >= 0 && at < x.dim(i + 2))
                  taps[i].push_back(at);
                if (at < x.dim(i + 2) + p[i + 3])
                  ++withinPads;
              }
              padded *= withinPads;
            }
            for (int64_t id : taps[0])
              for (int64_t ih : taps[1])
                for (int64_t iw : taps[2]) {
                  double v = x.as<float>()[xi(b, c, id, ih, iw)];
                  best = std::max(best, v);
                  sum += v;
                  ++inside;
                }
            double r = max ? best
                           : sum / static_cast<double>(
                                       countIncludePad ? padded : inside);
            y.as<float>()[yi(b, c, od, oh, ow)] = static_cast<float>(r);
          }
  Shape shape = {out[0], out[1]};
  for (size_t i = 2; i < xs.shape().size(); ++i)
    shape.push_back(out[i + 5 - xs.shape().size()]);
  y.reset(DType::F32, shape, y.data());
  return y;
}

/// Batch norm over N x C x S; returns y and fills the batch statistics
/// (biased variance).
Tensor refBatchNorm(const Tensor &x, const Tensor &scale, const Tensor &bias,
                    const Tensor &mean, const Tensor &variance, bool training,
                    double epsilon, std::vector<double> *batchMean = nullptr,
                    std::vector<double> *batchVariance = nullptr) {
  int64_t n = x.dim(0), c = x.dim(1), s = x.numElements() / (n * c);
  Tensor y(DType::F32, x.shape());
  const float *xv = x.as<float>();
  for (int64_t ch = 0; ch < c; ++ch) {
    double mu = 0, var = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t j = 0; j < s; ++j)
        mu += xv[(b * c + ch) * s + j];
    mu /= n * s;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t j = 0; j < s; ++j) {
        double dv = xv[(b * c + ch) * s + j] - mu;
        var += dv * dv;
      }
    var /= n * s;
    if (batchMean)
      batchMean->push_back(mu);
    if (batchVariance)
      batchVariance->push_back(var);
    if (!training) {
      mu = mean.as<float>()[ch];
      var = variance.as<float>()[ch];
    }
    for (int64_t b = 0; b < n; ++b)
      for (int64_t j = 0; j < s; ++j) {
        int64_t at = (b * c + ch) * s + j;
        y.as<float>()[at] = static_cast<float>(
            (xv[at] - mu) / std::sqrt(var + epsilon) * scale.as<float>()[ch] +
            bias.as<float>()[ch]);
      }
  }
  return y;
}

Tensor refLayerNorm(const Tensor &x, const Tensor &scale, const Tensor *bias,
                    int64_t inner, double epsilon) {
  Tensor y(DType::F32, x.shape());
  int64_t outer = x.numElements() / inner;
  for (int64_t r = 0; r < outer; ++r) {
    const float *row = x.as<float>() + r * inner;
    double mu = 0, var = 0;
    for (int64_t j = 0; j < inner; ++j)
      mu += row[j];
    mu /= inner;
    for (int64_t j = 0; j < inner; ++j)
      var += (row[j] - mu) * (row[j] - mu);
    var /= inner;
    for (int64_t j = 0; j < inner; ++j)
      y.as<float>()[r * inner + j] = static_cast<float>(
          (row[j] - mu) / std::sqrt(var + epsilon) * scale.as<float>()[j] +
          (bias ? bias->as<float>()[j] : 0.0));
  }
  return y;
}

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

TEST(CNNKernelsTest, RegistersEveryOp) {
  for (const char *name :
       {"heterps.conv", "heterps.conv_grad", "heterps.max_pool",
        "heterps.avg_pool", "heterps.global_avg_pool", "heterps.pool_grad",
        "heterps.batch_norm", "heterps.batch_norm_grad", "heterps.layer_norm",
        "heterps.layer_norm_grad"})
    EXPECT_TRUE(registry().has(name, DeviceKind::CPU)) << name;
}

TEST(CNNKernelsTest, GroupedStridedDilatedConvMatchesReference) {
  std::mt19937 gen(1);
  Shape strides = {2, 2}, pads = {1, 2, 2, 1}, dilations = {2, 2};
  TestOp conv("heterps.conv");
  conv.ints("strides", strides)
      .ints("pads", pads)
      .ints("dilations", dilations)
      .i("group", 2);
  Tensor x = random({2, 4, 9, 8}, gen), w = random({6, 2, 3, 3}, gen),
         b = random({6}, gen);
  std::vector<Tensor> y = conv.run({x, w, b});
  Tensor expected = refConv(x, w, &b, strides, pads, dilations, 2);
  ASSERT_EQ(y[0].shape(), expected.shape());
  EXPECT_EQ(y[0].shape(), (Shape{2, 6, 4, 4}));
  expectClose(y[0], expected);
}

TEST(CNNKernelsTest, ConvWithDefaultsAndOtherRanksMatchesReference) {
  std::mt19937 gen(2);
  {
    TestOp conv("heterps.conv");
    Tensor x = random({2, 3, 6, 5}, gen), w = random({4, 3, 3, 2}, gen);
    std::vector<Tensor> y = conv.run({x, w});
    expectClose(y[0], refConv(x, w, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1));
  }
  {
    SCOPED_TRACE("1-D");
    TestOp conv("heterps.conv");
    conv.ints("strides", {2}).ints("pads", {1, 2}).ints("dilations", {2});
    Tensor x = random({2, 3, 11}, gen), w = random({4, 3, 3}, gen),
           b = random({4}, gen);
    std::vector<Tensor> y = conv.run({x, w, b});
    Tensor expected = refConv(x, w, &b, {2}, {1, 2}, {2}, 1);
    ASSERT_EQ(y[0].shape(), expected.shape());
    expectClose(y[0], expected);
  }
  {
    SCOPED_TRACE("3-D");
    TestOp conv("heterps.conv");
    conv.ints("strides", {1, 2, 1})
        .ints("pads", {1, 0, 1, 0, 1, 1})
        .i("group", 2);
    Tensor x = random({1, 4, 4, 5, 3}, gen), w = random({2, 2, 2, 3, 2}, gen);
    std::vector<Tensor> y = conv.run({x, w});
    Tensor expected =
        refConv(x, w, nullptr, {1, 2, 1}, {1, 0, 1, 0, 1, 1}, {1, 1, 1}, 2);
    ASSERT_EQ(y[0].shape(), expected.shape());
    expectClose(y[0], expected);
  }
}

TEST(CNNKernelsTest, ConvCachesPrimitivesPerBatchSize) {
  std::mt19937 gen(3);
  TestOp conv("heterps.conv");
  conv.ints("pads", {1, 1, 1, 1});
  Tensor w = random({4, 3, 3, 3}, gen), b = random({4}, gen);
  Tensor x2 = random({2, 3, 5, 5}, gen), x3 = random({3, 3, 5, 5}, gen);
  for (int round = 0; round < 2; ++round) {
    expectClose(conv.run({x2, w, b})[0],
                refConv(x2, w, &b, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
    expectClose(conv.run({x3, w, b})[0],
                refConv(x3, w, &b, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
  }
  // run() without a prepare() for the signature builds it there.
  Kernel &kernel = conv.getKernel();
  Tensor x1 = random({1, 3, 5, 5}, gen), y(DType::F32, {1, 4, 5, 5});
  ExecContext context;
  kernel.run({&x1, &w, &b}, {&y}, context);
  expectClose(y, refConv(x1, w, &b, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
}

TEST(CNNKernelsTest, ShapeErrorsNameTheOp) {
  TestOp conv("heterps.conv");
  conv.i("group", 2);
  Tensor x(DType::F32, {1, 4, 5, 5}), w(DType::F32, {6, 3, 3, 3});
  try {
    conv.run({x, w});
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("heterps.conv at loc("), std::string::npos)
        << message;
    EXPECT_NE(message.find("6x3x3x3"), std::string::npos) << message;
  }
  TestOp pool("heterps.max_pool");
  pool.ints("kernel_shape", {7, 7});
  Tensor small(DType::F32, {1, 1, 3, 3});
  EXPECT_THROW(pool.run({small}), RuntimeError);
}

/// A plan file is untrusted: a perm that repeats or leaves the input's
/// dimensions is an error, not a read outside the shape.
TEST(CNNKernelsTest, TransposeRefusesAPermThatIsNotAPermutation) {
  Tensor x(DType::F32, {2, 3});
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{0, 0}, {1, 2}, {-1, 0}, {0}}) {
    TestOp transpose("heterps.transpose");
    transpose.ints("perm", perm);
    try {
      transpose.run({x});
      ADD_FAILURE() << "perm of " << perm.size() << " accepted";
    } catch (const RuntimeError &e) {
      EXPECT_NE(std::string(e.what()).find("heterps.transpose at loc("),
                std::string::npos)
          << e.what();
    }
  }
  TestOp transpose("heterps.transpose");
  transpose.ints("perm", {1, 0});
  EXPECT_EQ(transpose.run({x})[0].shape(), (Shape{3, 2}));
}

/// Rank-0 operands: a gather from one is an error naming the op, the
/// softmax of a scalar along axis 0 (the only one normalizeAxis accepts for
/// it) is 1.
TEST(CNNKernelsTest, ScalarsAreRefusedOrOneRow) {
  Tensor scalar(DType::F32, {}), ids(DType::F32, {2});
  TestOp gather("heterps.gather");
  try {
    gather.run({scalar, ids});
    ADD_FAILURE() << "a gather from a scalar was accepted";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("rank-0"), std::string::npos)
        << e.what();
  }
  scalar.as<float>()[0] = 3.0f;
  TestOp softmax("heterps.softmax");
  softmax.i("axis", 0);
  std::vector<Tensor> y = softmax.run({scalar});
  ASSERT_EQ(y[0].shape(), Shape{});
  EXPECT_FLOAT_EQ(y[0].as<float>()[0], 1.0f);
}

/// A pad as wide as the window, or a dilation that steps over the input,
/// would make windows of padding alone: they are refused, as an input
/// without spatial positions is for a global average.
TEST(CNNKernelsTest, PoolingRefusesWindowsOfPaddingAlone) {
  Tensor x(DType::F32, {1, 1, 5, 5});
  TestOp pool("heterps.max_pool");
  pool.ints("kernel_shape", {2, 2}).ints("pads", {2, 0, 0, 0});
  try {
    pool.run({x});
    ADD_FAILURE() << "a pad as wide as the window was accepted";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("narrower than the window"),
              std::string::npos)
        << e.what();
  }
  // Narrower pads, but a dilation wider than the input: the first window's
  // taps (-2 and 1) both miss the input of one element; the second
  // window's (-1 and 2) too.
  for (const char *kind : {"heterps.max_pool", "heterps.avg_pool"}) {
    TestOp dilated(kind);
    dilated.ints("kernel_shape", {2})
        .ints("dilations", {3})
        .ints("pads", {2, 2});
    try {
      dilated.run({Tensor(DType::F32, {1, 1, 1})});
      ADD_FAILURE() << kind << ": windows of padding alone were accepted";
    } catch (const RuntimeError &e) {
      EXPECT_NE(std::string(e.what()).find("window 0 of dimension 2 reads "
                                           "only padding"),
                std::string::npos)
          << e.what();
    }
  }
  // Pads of 1: the first window's taps (-1 and 2) miss an input of two
  // elements, refused; an input of three has element 2, accepted.
  TestOp edge("heterps.max_pool");
  edge.ints("kernel_shape", {2}).ints("dilations", {3}).ints("pads", {1, 1});
  EXPECT_THROW(edge.run({Tensor(DType::F32, {1, 1, 2})}), RuntimeError);
  EXPECT_EQ(edge.run({Tensor(DType::F32, {1, 1, 3})})[0].shape(),
            (Shape{1, 1, 2}));
  TestOp global("heterps.global_avg_pool");
  Tensor empty(DType::F32, {1, 2, 0});
  EXPECT_THROW(global.run({empty}), RuntimeError);
}

TEST(CNNKernelsTest, ConvGradMatchesFiniteDifferences) {
  std::mt19937 gen(4);
  Shape strides = {2, 1}, pads = {1, 2, 1, 0}, dilations = {2, 1};
  TestOp conv("heterps.conv"), grad("heterps.conv_grad");
  for (TestOp *op : {&conv, &grad})
    op->ints("strides", strides)
        .ints("pads", pads)
        .ints("dilations", dilations)
        .i("group", 2);
  Tensor x = random({2, 4, 6, 5}, gen), w = random({4, 2, 3, 2}, gen),
         b = random({4}, gen);
  Shape outShape = conv.run({x, w, b})[0].shape();
  Tensor dy = random(outShape, gen);
  std::vector<Tensor> g = grad.run({x, w, dy});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[2].shape(), (Shape{4}));
  Forward forward = [&](const std::vector<Tensor> &in) {
    return conv.run(in)[0];
  };
  for (size_t i = 0; i < 3; ++i)
    checkGradient(forward, {x, w, b}, i, dy, g[i]);
}

// Channels that fill 16-wide blocks take oneDNN's blocked layouts and the
// reorders around them; the other tests take the plain layout.
TEST(CNNKernelsTest, BlockedLayoutConvMatchesReferenceAndDifferences) {
  std::mt19937 gen(13);
  {
    SCOPED_TRACE("dense");
    TestOp conv("heterps.conv");
    conv.ints("strides", {2, 1})
        .ints("pads", {1, 1, 1, 0})
        .ints("dilations", {1, 2});
    Tensor x = random({2, 16, 7, 6}, gen), w = random({32, 16, 3, 3}, gen),
           b = random({32}, gen);
    Tensor expected = refConv(x, w, &b, {2, 1}, {1, 1, 1, 0}, {1, 2}, 1);
    Tensor y = conv.run({x, w, b})[0];
    ASSERT_EQ(y.shape(), expected.shape());
    expectClose(y, expected);
  }
  {
    SCOPED_TRACE("depthwise");
    TestOp conv("heterps.conv");
    conv.ints("pads", {1, 1, 1, 1}).i("group", 16);
    Tensor x = random({2, 16, 5, 5}, gen), w = random({16, 1, 3, 3}, gen);
    Tensor expected = refConv(x, w, nullptr, {1, 1}, {1, 1, 1, 1}, {1, 1}, 16);
    Tensor y = conv.run({x, w})[0];
    ASSERT_EQ(y.shape(), expected.shape());
    expectClose(y, expected);
  }
  {
    SCOPED_TRACE("gradient");
    TestOp conv("heterps.conv"), grad("heterps.conv_grad");
    for (TestOp *op : {&conv, &grad})
      op->ints("strides", {2, 2}).ints("pads", {1, 0, 1, 1});
    Tensor x = random({1, 16, 5, 4}, gen), w = random({16, 16, 3, 3}, gen),
           b = random({16}, gen);
    Tensor dy = random(conv.run({x, w, b})[0].shape(), gen);
    std::vector<Tensor> g = grad.run({x, w, dy});
    Forward forward = [&](const std::vector<Tensor> &in) {
      return conv.run(in)[0];
    };
    for (size_t i = 0; i < 3; ++i)
      checkGradient(forward, {x, w, b}, i, dy, g[i]);
  }
}

struct PoolCase {
  Shape input, kernel, strides, pads;
  bool ceilMode;
  Shape dilations = {};
};

TEST(CNNKernelsTest, PoolingMatchesOnnxReference) {
  std::mt19937 gen(5);
  // Height 8 with kernel 3, stride 2, pads 1/1: ceil_mode adds a window
  // past the end padding. Width 6 with kernel 2, stride 2, end pad 1: the
  // extra ceil window would start in the end padding, so it is dropped.
  std::vector<PoolCase> cases = {
      {{2, 3, 8, 6}, {3, 2}, {2, 2}, {1, 0, 1, 1}, false},
      {{2, 3, 8, 6}, {3, 2}, {2, 2}, {1, 0, 1, 1}, true},
      {{1, 2, 7}, {3}, {2}, {1, 1}, true},
      {{1, 2, 5, 4, 6}, {2, 3, 2}, {2, 2, 3}, {0, 1, 1, 1, 1, 0}, true},
      {{1, 2, 5, 5}, {2, 2}, {1, 1}, {0, 0, 0, 0}, false},
      // Dilated windows: taps that land in the padding, and a ceil window
      // whose later taps fall past the end padding.
      {{2, 3, 9, 7}, {3, 2}, {2, 1}, {1, 1, 2, 1}, false, {2, 3}},
      {{2, 3, 9, 7}, {3, 2}, {2, 2}, {2, 0, 1, 1}, true, {2, 2}},
      {{1, 2, 11}, {3}, {3}, {1, 2}, true, {3}},
      {{1, 2, 6, 7, 5},
       {2, 2, 2},
       {1, 2, 1},
       {0, 1, 0, 1, 0, 1},
       false,
       {2, 3, 2}},
  };
  for (const PoolCase &c : cases)
    for (int variant = 0; variant < 3; ++variant) {
      bool max = variant == 0, countIncludePad = variant == 2;
      SCOPED_TRACE("input " + shapeString(c.input) + (max ? " max" : " avg") +
                   (c.ceilMode ? " ceil" : "") +
                   (countIncludePad ? " count_include_pad" : ""));
      TestOp pool(max ? "heterps.max_pool" : "heterps.avg_pool");
      pool.ints("kernel_shape", c.kernel)
          .ints("strides", c.strides)
          .ints("pads", c.pads)
          .b("ceil_mode", c.ceilMode);
      if (!c.dilations.empty())
        pool.ints("dilations", c.dilations);
      if (!max)
        pool.b("count_include_pad", countIncludePad);
      Tensor x = random(c.input, gen);
      Tensor y = pool.run({x})[0];
      Tensor expected = refPool(x, c.kernel, c.strides, c.pads, c.ceilMode, max,
                                countIncludePad, c.dilations);
      ASSERT_EQ(y.shape(), expected.shape());
      expectClose(y, expected);
    }
  // ONNX's shapes for the first two cases.
  TestOp pool("heterps.avg_pool");
  pool.ints("kernel_shape", {3, 2})
      .ints("strides", {2, 2})
      .ints("pads", {1, 0, 1, 1});
  EXPECT_EQ(pool.run({random({2, 3, 8, 6}, gen)})[0].shape(),
            (Shape{2, 3, 4, 3}));
  TestOp ceil("heterps.avg_pool");
  ceil.ints("kernel_shape", {3, 2})
      .ints("strides", {2, 2})
      .ints("pads", {1, 0, 1, 1})
      .b("ceil_mode", true);
  EXPECT_EQ(ceil.run({random({2, 3, 8, 6}, gen)})[0].shape(),
            (Shape{2, 3, 5, 3}));
}

TEST(CNNKernelsTest, GlobalAvgPoolAveragesEveryChannel) {
  std::mt19937 gen(6);
  for (Shape shape :
       {Shape{2, 3, 5, 4}, Shape{2, 2, 3, 2, 4}, Shape{3, 2, 7}}) {
    TestOp pool("heterps.global_avg_pool");
    Tensor x = random(shape, gen);
    Tensor y = pool.run({x})[0];
    Shape expectedShape(shape.size(), 1);
    expectedShape[0] = shape[0];
    expectedShape[1] = shape[1];
    ASSERT_EQ(y.shape(), expectedShape);
    int64_t per = x.numElements() / (shape[0] * shape[1]);
    for (int64_t p = 0; p < shape[0] * shape[1]; ++p) {
      double sum = 0;
      for (int64_t j = 0; j < per; ++j)
        sum += x.as<float>()[p * per + j];
      EXPECT_NEAR(y.as<float>()[p], sum / per, 1e-5);
    }
  }
}

TEST(CNNKernelsTest, PoolGradMatchesFiniteDifferences) {
  std::mt19937 gen(7);
  // As in PoolingMatchesOnnxReference: ceil_mode adds a window past the end
  // padding of the height and drops one that would start in that of the
  // width.
  // The dilated variant reads every second row and every third column.
  Shape input = {2, 2, 8, 6}, kernel = {3, 2}, strides = {2, 2},
        pads = {1, 0, 1, 1};
  for (int variant = 0; variant < 3; ++variant)
    for (bool ceilMode : {false, true})
      for (bool dilated : {false, true}) {
        bool max = variant == 0, countIncludePad = variant == 2;
        SCOPED_TRACE(std::string(max ? "max" : "avg") +
                     (ceilMode ? " ceil" : "") +
                     (countIncludePad ? " count_include_pad" : "") +
                     (dilated ? " dilated" : ""));
        TestOp pool(max ? "heterps.max_pool" : "heterps.avg_pool"),
            grad("heterps.pool_grad");
        for (TestOp *op : {&pool, &grad}) {
          op->ints("kernel_shape", kernel)
              .ints("strides", strides)
              .ints("pads", pads)
              .b("ceil_mode", ceilMode)
              .b("count_include_pad", countIncludePad);
          if (dilated)
            op->ints("dilations", {2, 3});
        }
        grad.s("kind", max ? "max" : "avg");
        Tensor x = max ? distinct(input, gen, 0.05f) : random(input, gen);
        Tensor y = pool.run({x})[0];
        Tensor dy = random(y.shape(), gen);
        Tensor dx = grad.run({x, y, dy})[0];
        Forward forward = [&](const std::vector<Tensor> &in) {
          return pool.run(in)[0];
        };
        checkGradient(forward, {x}, 0, dy, dx);
      }
}

TEST(CNNKernelsTest, BatchNormInferenceUsesRunningStatistics) {
  std::mt19937 gen(8);
  // Rank 6 is past oneDNN's 5 dimensions: the kernel folds the spatial ones.
  for (Shape shape : {Shape{2, 3, 4, 5}, Shape{4, 3}, Shape{2, 3, 5},
                      Shape{2, 3, 2, 1, 2, 3}}) {
    TestOp bn("heterps.batch_norm");
    bn.f("epsilon", 1e-3);
    Tensor x = random(shape, gen), scale = random({3}, gen),
           bias = random({3}, gen), mean = random({3}, gen),
           variance = random({3}, gen, 0.5f, 2.0f);
    Tensor meanBefore = mean.clone(), varianceBefore = variance.clone();
    Tensor y = bn.run({x, scale, bias, mean, variance}, false)[0];
    expectClose(y, refBatchNorm(x, scale, bias, mean, variance, false, 1e-3));
    expectClose(mean, meanBefore, 0);
    expectClose(variance, varianceBefore, 0);
  }
}

TEST(CNNKernelsTest, BatchNormTrainingUsesAndRecordsBatchStatistics) {
  std::mt19937 gen(9);
  for (Shape shape : {Shape{2, 3, 4, 5}, Shape{5, 3}}) {
    TestOp bn("heterps.batch_norm");
    bn.f("epsilon", 1e-5).f("momentum", 0.8);
    Tensor x = random(shape, gen, -1, 3), scale = random({3}, gen),
           bias = random({3}, gen), mean = random({3}, gen),
           variance = random({3}, gen, 0.5f, 2.0f);
    Tensor meanBefore = mean.clone(), varianceBefore = variance.clone();
    std::vector<double> batchMean, batchVariance;
    Tensor expected = refBatchNorm(x, scale, bias, mean, variance, true, 1e-5,
                                   &batchMean, &batchVariance);
    Tensor y = bn.run({x, scale, bias, mean, variance}, true)[0];
    expectClose(y, expected);
    double count = static_cast<double>(x.numElements() / 3);
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(mean.as<float>()[c],
                  0.8 * meanBefore.as<float>()[c] + 0.2 * batchMean[c], 1e-5);
      EXPECT_NEAR(variance.as<float>()[c],
                  0.8 * varianceBefore.as<float>()[c] +
                      0.2 * batchVariance[c] * count / (count - 1),
                  1e-5);
    }
  }
}

TEST(CNNKernelsTest, ReduceMaxGradGoesToTheFirstMaximum) {
  // EmbeddingBag's max mode (a lookup and reduce_max over the bag) with a
  // repeated id: only the first of the equal rows gets the gradient, as in
  // PyTorch.
  TestOp grad("heterps.reduce_grad");
  grad.s("kind", "max").ints("axes", {1}).b("keepdims", false);
  Tensor x(DType::F32, {1, 3, 2}), y(DType::F32, {1, 2}),
      dy(DType::F32, {1, 2});
  float rows[] = {0.5f, 2.0f, 0.5f, 2.0f, 0.25f, 1.0f};
  std::copy(std::begin(rows), std::end(rows), x.as<float>());
  y.as<float>()[0] = 0.5f;
  y.as<float>()[1] = 2.0f;
  dy.as<float>()[0] = 3.0f;
  dy.as<float>()[1] = 4.0f;
  Tensor dx = grad.run({x, y, dy})[0];
  std::vector<float> got(dx.as<float>(), dx.as<float>() + 6);
  EXPECT_EQ(got, (std::vector<float>{3, 4, 0, 0, 0, 0}));
}

TEST(CNNKernelsTest, BatchNormWithBatchStatisticsInfersWithThem) {
  // ONNX's training_mode = 1: inference normalises with the batch's
  // statistics and leaves the running ones unchanged.
  std::mt19937 gen(12);
  TestOp bn("heterps.batch_norm");
  bn.f("epsilon", 1e-5).b("batch_statistics", true);
  Tensor x = random({4, 3, 2, 2}, gen, -1, 3), scale = random({3}, gen),
         bias = random({3}, gen), mean = random({3}, gen),
         variance = random({3}, gen, 0.5f, 2.0f);
  Tensor meanBefore = mean.clone(), varianceBefore = variance.clone();
  Tensor expected = refBatchNorm(x, scale, bias, mean, variance, true, 1e-5,
                                 nullptr, nullptr);
  Tensor y = bn.run({x, scale, bias, mean, variance}, false)[0];
  expectClose(y, expected);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(mean.as<float>()[c], meanBefore.as<float>()[c]);
    EXPECT_EQ(variance.as<float>()[c], varianceBefore.as<float>()[c]);
  }
}

TEST(CNNKernelsTest, BatchNormGradMatchesFiniteDifferences) {
  std::mt19937 gen(10);
  for (Shape shape : {Shape{2, 3, 3, 2}, Shape{6, 2}}) {
    SCOPED_TRACE("input " + shapeString(shape));
    int64_t c = shape[1];
    TestOp bn("heterps.batch_norm"), grad("heterps.batch_norm_grad");
    bn.f("epsilon", 1e-3);
    grad.f("epsilon", 1e-3);
    Tensor x = random(shape, gen, -2, 2), scale = random({c}, gen, 0.5f, 1.5f),
           bias = random({c}, gen), dy = random(shape, gen);
    Tensor mean(DType::F32, {c}), variance(DType::F32, {c});
    std::vector<Tensor> g = grad.run({x, scale, dy});
    ASSERT_EQ(g.size(), 3u);
    Forward forward = [&](const std::vector<Tensor> &in) {
      return bn.run({in[0], in[1], in[2], mean, variance}, true)[0];
    };
    for (size_t i = 0; i < 3; ++i)
      checkGradient(forward, {x, scale, bias}, i, dy, g[i]);
  }
}

TEST(CNNKernelsTest, LayerNormMatchesReference) {
  std::mt19937 gen(11);
  Shape shape = {2, 3, 4};
  for (int64_t axis : {-1, 1, 0})
    for (bool withBias : {true, false}) {
      SCOPED_TRACE("axis " + std::to_string(axis) +
                   (withBias ? " with bias" : ""));
      Shape normalised(shape.begin() + (axis < 0 ? axis + 3 : axis),
                       shape.end());
      TestOp ln("heterps.layer_norm");
      ln.i("axis", axis).f("epsilon", 1e-4);
      Tensor x = random(shape, gen, -1, 2), scale = random(normalised, gen),
             bias = random(normalised, gen);
      std::vector<Tensor> in = {x, scale};
      if (withBias)
        in.push_back(bias);
      Tensor y = ln.run(in)[0];
      EXPECT_EQ(y.shape(), shape);
      expectClose(y, refLayerNorm(x, scale, withBias ? &bias : nullptr,
                                  numElements(normalised), 1e-4));
    }
}

TEST(CNNKernelsTest, LayerNormGradMatchesFiniteDifferences) {
  std::mt19937 gen(12);
  Shape shape = {3, 2, 5};
  for (int64_t axis : {-1, 1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    Shape normalised(shape.begin() + (axis < 0 ? axis + 3 : axis), shape.end());
    TestOp ln("heterps.layer_norm"), grad("heterps.layer_norm_grad");
    for (TestOp *op : {&ln, &grad})
      op->i("axis", axis).f("epsilon", 1e-3);
    Tensor x = random(shape, gen, -2, 2),
           scale = random(normalised, gen, 0.5f, 1.5f),
           bias = random(normalised, gen), dy = random(shape, gen);
    std::vector<Tensor> g = grad.run({x, scale, dy});
    ASSERT_EQ(g.size(), 3u);
    EXPECT_EQ(g[1].shape(), normalised);
    Forward forward = [&](const std::vector<Tensor> &in) {
      return ln.run(in)[0];
    };
    for (size_t i = 0; i < 3; ++i)
      checkGradient(forward, {x, scale, bias}, i, dy, g[i]);
  }
}

} // namespace
