//===- GPURecurrentTest.cpp - The GPU's recurrent layers on the host ------===//
//
// The GPU column's RNN, GRU and LSTM layers and their gradients are
// written once over a backend (RecurrentLayer.h). Here that code runs with
// host loops for its products and element functions, against the CPU
// column's kernels (oneDNN's GEMM, Eigen's gates): every cell, both
// directions, ragged batches, initial states, peepholes, every gradient.
// On a GPU the same layer runs with cuBLAS and CUDA kernels, held against
// the CPU in GPUColumnTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Error.h"
#include "heterps/plan.pb.h"

#include "../../lib/Runtime/CPU/RecurrentShape.h"
#include "../../lib/Runtime/CUDA/RecurrentLayer.h"
#include "CpuReference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace heterps;
using namespace heterps::runtime;
using heterps::runtime::testing::runOnCpu;

namespace {

/// RecurrentLayer's backend on the host: plain loops.
struct HostBackend {
  int64_t products = 0;

  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
            int64_t lda, const float *b, int64_t ldb, float beta, float *c,
            int64_t ldc) {
    ++products;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (int64_t p = 0; p < k; ++p)
          sum += (ta ? a[p * lda + i] : a[i * lda + p]) *
                 (tb ? b[j * ldb + p] : b[p * ldb + j]);
        float &to = c[i * ldc + j];
        to = sum + (beta == 0.0f ? 0.0f : beta * to);
      }
  }

  template <typename F> void forEach(int64_t n, F f) {
    for (int64_t e = 0; e < n; ++e)
      f(e);
  }
};

struct Config {
  const char *name;
  cpu::RecurrentCell cell;
  const char *direction;
  bool lengths, initial, peepholes;
  const char *activation = "tanh";
  bool linearBeforeReset = false;
};

const char *cellName(cpu::RecurrentCell cell) {
  return cell == cpu::RecurrentCell::RNN   ? "rnn"
         : cell == cpu::RecurrentCell::GRU ? "gru"
                                           : "lstm";
}

Tensor drawn(const Shape &shape, float scale, std::mt19937 &rng) {
  Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<float>()[i] =
        scale * std::uniform_real_distribution<float>(-2, 2)(rng);
  return t;
}

void expectNear(const Tensor &got, const Tensor &expected,
                const std::string &what) {
  ASSERT_EQ(got.shape(), expected.shape()) << what;
  for (int64_t i = 0; i < got.numElements(); ++i) {
    float g = got.as<float>()[i], e = expected.as<float>()[i];
    ASSERT_LE(std::abs(g - e), 2e-5f * std::max(1.0f, std::abs(e)))
        << what << ", element " << i << ": " << g << " against " << e;
  }
}

/// Names a configuration in gtest's messages (instead of its bytes).
void PrintTo(const Config &c, std::ostream *os) { *os << c.name; }

class GpuRecurrent : public ::testing::TestWithParam<Config> {};

/// The layer's forward and gradient on the host backend equal the CPU
/// column's heterps.<cell> and heterps.<cell>_grad.
TEST_P(GpuRecurrent, TheLayerMatchesTheCpuColumn) {
  const Config &c = GetParam();
  const int64_t T = 6, B = 5, I = 4, H = 7;
  bool lstm = c.cell == cpu::RecurrentCell::LSTM;
  int64_t D = std::string(c.direction) == "bidirectional" ? 2 : 1;
  int64_t G = (c.cell == cpu::RecurrentCell::RNN   ? 1
               : c.cell == cpu::RecurrentCell::GRU ? 3
                                                   : 4) *
              H;
  std::mt19937 rng(std::hash<std::string>()(c.name) & 0xffffffff);
  Tensor x = drawn({T, B, I}, 1.0f, rng), w = drawn({D, G, I}, 0.3f, rng),
         r = drawn({D, G, H}, 0.3f, rng), bias = drawn({D, 2 * G}, 0.3f, rng);
  Tensor lengths(DType::I64, {B});
  // Every length from 0 to T among the rows.
  for (int64_t b = 0; b < B; ++b)
    lengths.as<int64_t>()[b] = (b * T) / (B - 1);
  Tensor h0 = drawn({D, B, H}, 0.5f, rng), c0 = drawn({D, B, H}, 0.5f, rng),
         p = drawn({D, 3 * H}, 0.5f, rng);
  Tensor dy = drawn({T, D, B, H}, 1.0f, rng), dyh = drawn({D, B, H}, 1.0f, rng),
         dyc = drawn({D, B, H}, 1.0f, rng);

  std::vector<const Tensor *> operands{&x, &w, &r, &bias};
  std::vector<int64_t> segments{1, 1, 1, 1, c.lengths, c.initial};
  if (c.lengths)
    operands.push_back(&lengths);
  if (c.initial)
    operands.push_back(&h0);
  if (lstm) {
    segments.push_back(c.initial);
    segments.push_back(c.peepholes);
    if (c.initial)
      operands.push_back(&c0);
    if (c.peepholes)
      operands.push_back(&p);
  }
  std::vector<const Tensor *> gradOperands = operands;
  std::vector<int64_t> gradSegments = segments;
  for (const Tensor *t : {&dy, &dyh, &dyc}) {
    if (t == &dyc && !lstm)
      break;
    gradOperands.push_back(t);
    gradSegments.push_back(1);
  }
  auto makeOp = [&](bool gradient) {
    plan::Op op;
    op.set_name(std::string("heterps.") + cellName(c.cell) +
                (gradient ? "_grad" : ""));
    auto &attrs = *op.mutable_attrs();
    attrs["hidden_size"].set_i(H);
    attrs["direction"].set_s(c.direction);
    attrs["activation"].set_s(c.activation);
    attrs["linear_before_reset"].set_b(c.linearBeforeReset);
    for (int64_t s : gradient ? gradSegments : segments)
      attrs["operandSegmentSizes"].mutable_ints()->add_values(s);
    return op;
  };
  plan::Op forwardOp = makeOp(false), gradOp = makeOp(true);
  std::vector<Tensor> expected = runOnCpu(forwardOp, operands, DType::F32);
  std::vector<Tensor> expectedGrads =
      runOnCpu(gradOp, gradOperands, DType::F32);

  // The layer, as RecurrentKernels.cu drives it.
  for (bool gradient : {false, true}) {
    SCOPED_TRACE(gradient ? "gradient" : "forward");
    const plan::Op &op = gradient ? gradOp : forwardOp;
    const std::vector<const Tensor *> &in = gradient ? gradOperands : operands;
    std::vector<TensorType> types;
    std::vector<Shape> shapes;
    for (const Tensor *t : in) {
      types.push_back({t->dtype(), t->shape()});
      shapes.push_back(t->shape());
    }
    OpInfo info(op, types, {});
    cpu::RecurrentShape shape(info, c.cell);
    cpu::RecurrentOperandSlots slots =
        cpu::readRecurrentOperands(info, c.cell, gradient);
    cpu::checkRecurrentOperands(info, shape, shapes, slots);
    cuda::RecurrentBuffers buffers;
    std::vector<float> arena(
        cuda::layOutRecurrentBuffers(shape, gradient, nullptr, buffers));
    cuda::layOutRecurrentBuffers(shape, gradient, arena.data(), buffers);
    std::vector<int64_t> rowLengths;
    cpu::readSequenceLengths(info, shape, DType::I64,
                             c.lengths ? lengths.data() : nullptr, rowLengths);
    buffers.lengths = rowLengths.data();

    auto floats = [&](int slot) {
      return slot >= 0 ? in[slot]->as<float>() : nullptr;
    };
    cuda::RecurrentOperands ops;
    ops.x = x.as<float>();
    ops.w = w.as<float>();
    ops.r = r.as<float>();
    ops.bias = bias.as<float>();
    ops.h0 = floats(slots.initialH);
    ops.c0 = floats(slots.initialC);
    ops.peepholes = floats(slots.peepholes);
    ops.dy = floats(slots.yGrad);
    ops.dyh = floats(slots.yHGrad);
    ops.dyc = floats(slots.yCGrad);
    std::vector<Tensor> got;
    for (const Shape &s : cpu::recurrentResultShapes(shape, shapes, gradient))
      got.emplace_back(DType::F32, s);
    // Results start as NaN: every element must be written.
    for (Tensor &t : got)
      std::fill(t.as<float>(), t.as<float>() + t.numElements(), NAN);
    cuda::RecurrentResults results;
    HostBackend backend;
    cuda::RecurrentLayer<HostBackend> layer(backend, shape, buffers);
    if (gradient) {
      results.dx = got[0].as<float>();
      results.dw = got[1].as<float>();
      results.dr = got[2].as<float>();
      results.db = got[3].as<float>();
      results.dh0 = got[4].as<float>();
      results.dc0 = lstm ? got[5].as<float>() : nullptr;
      results.dp = lstm ? got[6].as<float>() : nullptr;
      layer.gradient(ops, results);
    } else {
      results.y = got[0].as<float>();
      results.yh = got[1].as<float>();
      results.yc = lstm ? got[2].as<float>() : nullptr;
      layer.forward(ops, results);
    }
    EXPECT_GT(backend.products, 0);
    const std::vector<Tensor> &want = gradient ? expectedGrads : expected;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      expectNear(got[i], want[i], "result " + std::to_string(i));
  }
}

const Config kConfigs[] = {
    {"rnn_tanh", cpu::RecurrentCell::RNN, "forward", false, false, false},
    {"rnn_relu_reverse_ragged", cpu::RecurrentCell::RNN, "reverse", true, true,
     false, "relu"},
    {"rnn_bidirectional", cpu::RecurrentCell::RNN, "bidirectional", true, true,
     false},
    {"gru", cpu::RecurrentCell::GRU, "forward", false, false, false},
    {"gru_bidirectional_ragged", cpu::RecurrentCell::GRU, "bidirectional", true,
     true, false},
    {"gru_linear_before_reset", cpu::RecurrentCell::GRU, "bidirectional", true,
     true, false, "tanh", true},
    {"lstm", cpu::RecurrentCell::LSTM, "forward", false, false, false},
    {"lstm_reverse_initial", cpu::RecurrentCell::LSTM, "reverse", false, true,
     false},
    {"lstm_peepholes_bidirectional_ragged", cpu::RecurrentCell::LSTM,
     "bidirectional", true, true, true},
};

INSTANTIATE_TEST_SUITE_P(GpuRecurrent, GpuRecurrent,
                         ::testing::ValuesIn(kConfigs),
                         [](const ::testing::TestParamInfo<Config> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
