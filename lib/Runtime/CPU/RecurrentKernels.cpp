//===- RecurrentKernels.cpp - RNN, GRU and LSTM layers and gradients ------===//
//
// A layer runs as oneDNN's RNN primitives do: the input side of every step
// is one GEMM over all T x B rows before the recurrence starts, each step
// then does one GEMM with the recurrent weights and the gates pointwise.
// The gradient kernels rerun that forward pass, keeping each step's gate
// activations and states, walk the steps backwards for the gate gradients,
// and finish with three GEMMs over all steps for the input, weight and
// recurrence gradients. Every buffer is sized in prepare(), so a step
// allocates nothing.
//
//===----------------------------------------------------------------------===//

#include "CPUDevice.h"
#include "KernelUtil.h"
#include "RecurrentShape.h"

#include <Eigen/Core>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

using Cell = RecurrentCell;

/// `cols` columns of `rows` rows `stride` apart (gate blocks of a B x G
/// matrix), for vectorized gate arithmetic.
using Block = Eigen::Map<
    Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
    Eigen::OuterStride<>>;
using ConstBlock = Eigen::Map<
    const Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
    0, Eigen::OuterStride<>>;

Block columns(float *base, int64_t rows, int64_t cols, int64_t stride) {
  return Block(base, rows, cols, Eigen::OuterStride<>(stride));
}
ConstBlock columns(const float *base, int64_t rows, int64_t cols,
                   int64_t stride) {
  return ConstBlock(base, rows, cols, Eigen::OuterStride<>(stride));
}

/// 1 / (1 + exp(-x)) in place, through Eigen's vectorized exp: its
/// logistic() rounds to 1 from x = 16, where a GRU's 1 - z still weighs
/// the candidate by 1e-7.
void sigmoid(Block a) { a = ((-a).exp() + 1.0f).inverse(); }

/// Row-major C = alpha op(A) op(B) + beta C through oneDNN's GEMM.
void gemm(const OpInfo &op, char ta, char tb, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
          float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  ForeignCallScope foreign;
  SerialScope serial(double(m) * n * k < kSerialWork);
  if (dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc) !=
      dnnl_success)
    fail(op.describe(), ": oneDNN's GEMM failed for ", m, "x", k, " by ", k,
         "x", n);
}

/// The forward pass of one layer, and what its gradient needs of it.
class Recurrence : public RecurrentShape {
public:
  Recurrence(const OpInfo &op, Cell cell) : RecurrentShape(op, cell), op(op) {}

  /// Checks the operand shapes and sizes the buffers (all steps' gates and
  /// states kept when `keep`, for a gradient).
  void prepare(const std::vector<Shape> &in, const RecurrentOperandSlots &o,
               bool keep) {
    checkRecurrentOperands(op, *this, in, o);
    int64_t rows = this->rows();
    int64_t tb = steps * batch;
    inputSide.assign(tb * rows, 0.0f);
    recurrent.assign(batch * rows, 0.0f);
    h.assign(batch * hidden, 0.0f);
    c.assign(cell == Cell::LSTM ? batch * hidden : 0, 0.0f);
    cellNext.assign(c.size(), 0.0f);
    cellTanh.assign(c.size(), 0.0f);
    lengths.assign(batch, steps);
    int64_t kept = keep ? tb : 0;
    activations.assign(keep ? tb * rows : batch * rows, 0.0f);
    statesIn.assign(keep ? tb * hidden : 0, 0.0f);
    cellsIn.assign(keep && cell == Cell::LSTM ? kept * hidden : 0, 0.0f);
    cellsOut.assign(keep && cell == Cell::LSTM ? kept * hidden : 0, 0.0f);
    // GRU: h Rn^T + Rbn (linear before reset), or r * h (after it).
    extra.assign(cell == Cell::GRU ? (keep ? tb : batch) * hidden : 0, 0.0f);
    keepAll = keep;
  }

  bool active(int64_t t, int64_t b) const { return t < lengths[b]; }

  void readLengths(const Tensor *t) {
    readSequenceLengths(op, *this, t ? t->dtype() : DType::I64,
                        t ? t->data() : nullptr, lengths);
  }

  /// Runs direction `d`; writes y (T x D x B x H, may be null), the final
  /// state and cell (B x H each, null for none).
  void forward(int64_t d, const float *x, const float *w, const float *r,
               const float *bias, const float *h0, const float *c0,
               const float *p, float *y, float *yh, float *yc) {
    int64_t H = hidden, G = rows(), B = batch;
    const float *wd = w + d * G * inputs, *rd = r + d * G * H;
    const float *wb = bias + d * 2 * G, *rb = wb + G;
    const float *pd = p ? p + d * 3 * H : nullptr;
    // The input side of every step, with the biases that add outside the
    // gates' nonlinear parts.
    for (int64_t row = 0; row < steps * B; ++row) {
      float *dst = &inputSide[row * G];
      for (int64_t k = 0; k < G; ++k) {
        bool addRecurrentBias =
            !(cell == Cell::GRU && linearBeforeReset && k >= 2 * H);
        dst[k] = wb[k] + (addRecurrentBias ? rb[k] : 0.0f);
      }
    }
    gemm(op, 'N', 'T', steps * B, G, inputs, x, inputs, wd, inputs, 1.0f,
         inputSide.data(), G);
    if (h0)
      std::copy(h0 + d * B * H, h0 + (d + 1) * B * H, h.begin());
    else
      std::fill(h.begin(), h.end(), 0.0f);
    if (cell == Cell::LSTM) {
      if (c0)
        std::copy(c0 + d * B * H, c0 + (d + 1) * B * H, c.begin());
      else
        std::fill(c.begin(), c.end(), 0.0f);
    }
    for (int64_t s = 0; s < steps; ++s) {
      int64_t t = reversed(d) ? steps - 1 - s : s;
      float *act = &activations[(keepAll ? t * B : 0) * G];
      float *ext =
          cell == Cell::GRU ? &extra[(keepAll ? t * B : 0) * H] : nullptr;
      if (keepAll) {
        std::copy(h.begin(), h.end(), &statesIn[t * B * H]);
        if (cell == Cell::LSTM)
          std::copy(c.begin(), c.end(), &cellsIn[t * B * H]);
      }
      // h R^T; the GRU's candidate part after the reset gate when it
      // multiplies h first.
      int64_t recurrentRows =
          cell == Cell::GRU && !linearBeforeReset ? 2 * H : G;
      gemm(op, 'N', 'T', B, recurrentRows, H, h.data(), H, rd, H, 0.0f,
           recurrent.data(), G);
      const float *in = &inputSide[t * B * G];
      switch (cell) {
      case Cell::RNN: {
        Block a = columns(act, B, H, G);
        a = columns(in, B, H, G) + columns(recurrent.data(), B, H, G);
        if (relu)
          a = a.max(0.0f);
        else
          a = a.tanh();
        break;
      }
      case Cell::LSTM:
        stepLSTM(in, pd, act);
        break;
      case Cell::GRU:
        stepGRU(in, rd, rb, act, ext);
        break;
      }
      // The new state of the rows still running; y is 0 past a row's end.
      for (int64_t b = 0; b < B; ++b) {
        float *yRow = y ? y + ((t * directions + d) * B + b) * H : nullptr;
        if (!active(t, b)) {
          if (yRow)
            std::fill(yRow, yRow + H, 0.0f);
          continue;
        }
        float *hb = &h[b * H];
        const float *a = &act[b * G];
        switch (cell) {
        case Cell::RNN:
          std::copy(a, a + H, hb);
          break;
        case Cell::GRU:
          for (int64_t j = 0; j < H; ++j)
            hb[j] = (1.0f - a[j]) * a[2 * H + j] + a[j] * hb[j];
          break;
        case Cell::LSTM:
          std::copy(&cellNext[b * H], &cellNext[(b + 1) * H], &c[b * H]);
          for (int64_t j = 0; j < H; ++j)
            hb[j] = a[H + j] * cellTanh[b * H + j];
          break;
        }
        if (yRow)
          std::copy(hb, hb + H, yRow);
      }
      if (keepAll && cell == Cell::LSTM)
        std::copy(c.begin(), c.end(), &cellsOut[t * B * H]);
    }
    if (yh)
      std::copy(h.begin(), h.end(), yh + d * B * H);
    if (yc)
      std::copy(c.begin(), c.end(), yc + d * B * H);
  }

  const OpInfo &op;

  // Per direction: the input side of all steps (T x B x G) and this step's
  // recurrent side (B x G); the running state and cell (B x H).
  std::vector<float> inputSide, recurrent, h, c;
  std::vector<int64_t> lengths;
  // Gate activations (T x B x G when kept, else one step's), the state and
  // cell entering each step and the cell leaving it (T x B x H), the GRU's
  // candidate input (see prepare).
  std::vector<float> activations, statesIn, cellsIn, cellsOut, extra;
  // LSTM: one step's next cell and its tanh (B x H).
  std::vector<float> cellNext, cellTanh;
  bool keepAll = false;

private:
  /// Gates i, o, f, g, and the next cell (`cellNext`) and its tanh
  /// (`cellTanh`) of every row; forward() keeps them for the active rows.
  void stepLSTM(const float *in, const float *p, float *act) {
    int64_t H = hidden, G = rows(), B = batch;
    Block pre = columns(act, B, G, G);
    pre = columns(in, B, G, G) + columns(recurrent.data(), B, G, G);
    Block cPrev = columns(c.data(), B, H, H);
    if (p) {
      // Peepholes: i and f see the previous cell.
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) {
          act[b * G + j] += p[j] * c[b * H + j];
          act[b * G + 2 * H + j] += p[2 * H + j] * c[b * H + j];
        }
    }
    Block i = columns(act, B, H, G), f = columns(act + 2 * H, B, H, G),
          g = columns(act + 3 * H, B, H, G);
    sigmoid(i);
    sigmoid(f);
    g = g.tanh();
    Block next = columns(cellNext.data(), B, H, H);
    next = f * cPrev + i * g;
    if (p) {
      // o sees the new cell.
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j)
          act[b * G + H + j] += p[H + j] * cellNext[b * H + j];
    }
    Block o = columns(act + H, B, H, G);
    sigmoid(o);
    columns(cellTanh.data(), B, H, H) = next.tanh();
  }

  /// Gates z, r, n; `ext` gets h Rn^T + Rbn or r * h.
  void stepGRU(const float *in, const float *rd, const float *rb, float *act,
               float *ext) {
    int64_t H = hidden, G = rows(), B = batch;
    Block zr = columns(act, B, 2 * H, G);
    zr = columns(in, B, 2 * H, G) + columns(recurrent.data(), B, 2 * H, G);
    sigmoid(zr);
    Block r = columns(act + H, B, H, G), n = columns(act + 2 * H, B, H, G);
    Block e = columns(ext, B, H, H);
    const float *rbn = rb + 2 * H;
    if (linearBeforeReset) {
      e = columns(recurrent.data() + 2 * H, B, H, G).rowwise() +
          Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>>(rbn, H);
      n = (columns(in + 2 * H, B, H, G) + r * e).tanh();
    } else {
      e = r * columns(h.data(), B, H, H);
      gemm(op, 'N', 'T', B, H, H, ext, H, rd + 2 * H * H, H, 0.0f,
           &recurrent[2 * H], G);
      n = (columns(in + 2 * H, B, H, G) +
           columns(recurrent.data() + 2 * H, B, H, G))
              .tanh();
    }
  }
};

const Tensor *optional(const std::vector<const Tensor *> &in, int i) {
  return i >= 0 ? in[i] : nullptr;
}

const float *floats(const OpInfo &op, const Tensor *t) {
  if (!t)
    return nullptr;
  if (t->dtype() != DType::F32)
    fail(op.describe(), ": the CPU recurrent kernels take f32, got ",
         dtypeName(t->dtype()));
  return t->as<float>();
}

/// heterps.rnn, heterps.gru, heterps.lstm.
class RecurrentKernel : public Kernel {
public:
  RecurrentKernel(const OpInfo &op, Cell cell)
      : Kernel(op), cell(cell),
        operands(readRecurrentOperands(info, cell, false)), layer(info, cell) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    layer.prepare(in, operands, /*keep=*/false);
    return recurrentResultShapes(layer, in, /*gradient=*/false);
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    layer.readLengths(optional(in, operands.lengths));
    for (int64_t d = 0; d < layer.directions; ++d)
      layer.forward(d, floats(info, in[0]), floats(info, in[1]),
                    floats(info, in[2]), floats(info, in[3]),
                    floats(info, optional(in, operands.initialH)),
                    floats(info, optional(in, operands.initialC)),
                    floats(info, optional(in, operands.peepholes)),
                    res[0]->as<float>(), res[1]->as<float>(),
                    cell == Cell::LSTM ? res[2]->as<float>() : nullptr);
  }

private:
  Cell cell;
  RecurrentOperandSlots operands;
  Recurrence layer;
};

/// heterps.rnn_grad, heterps.gru_grad, heterps.lstm_grad.
class RecurrentGradKernel : public Kernel {
public:
  RecurrentGradKernel(const OpInfo &op, Cell cell)
      : Kernel(op), cell(cell),
        operands(readRecurrentOperands(info, cell, true)), layer(info, cell) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    layer.prepare(in, operands, /*keep=*/true);
    int64_t tb = layer.steps * layer.batch, G = layer.rows(), H = layer.hidden;
    inputGrads.assign(tb * G, 0.0f);
    recurrentGrads.assign(tb * G, 0.0f);
    dh.assign(layer.batch * H, 0.0f);
    dhPrev.assign(layer.batch * H, 0.0f);
    dc.assign(cell == Cell::LSTM ? layer.batch * H : 0, 0.0f);
    resetGradient.assign(cell == Cell::GRU ? layer.batch * H : 0, 0.0f);
    return recurrentResultShapes(layer, in, /*gradient=*/true);
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    layer.readLengths(optional(in, operands.lengths));
    const float *x = floats(info, in[0]), *w = floats(info, in[1]),
                *r = floats(info, in[2]), *bias = floats(info, in[3]);
    const float *h0 = floats(info, optional(in, operands.initialH));
    const float *c0 = floats(info, optional(in, operands.initialC));
    const float *p = floats(info, optional(in, operands.peepholes));
    const float *dy = floats(info, optional(in, operands.yGrad));
    const float *dyh = floats(info, optional(in, operands.yHGrad));
    const float *dyc = floats(info, optional(in, operands.yCGrad));
    float *dx = res[0]->as<float>(), *dw = res[1]->as<float>(),
          *dr = res[2]->as<float>(), *db = res[3]->as<float>(),
          *dh0 = res[4]->as<float>();
    float *dc0 = cell == Cell::LSTM ? res[5]->as<float>() : nullptr;
    float *dp = cell == Cell::LSTM ? res[6]->as<float>() : nullptr;
    if (dp)
      std::fill(dp, dp + res[6]->numElements(), 0.0f);
    int64_t T = layer.steps, B = layer.batch, H = layer.hidden,
            G = layer.rows(), I = layer.inputs;
    for (int64_t d = 0; d < layer.directions; ++d) {
      layer.forward(d, x, w, r, bias, h0, c0, p, nullptr, nullptr, nullptr);
      backward(d, r, p, dy, dyh, dyc, dh0, dc0, dp);
      // dX += dA_in W, dW = dA_in^T X, dR = dA_rec^T H_in (the GRU's
      // candidate rows against r * h when the reset comes first).
      gemm(info, 'N', 'N', T * B, I, G, inputGrads.data(), G, w + d * G * I, I,
           d == 0 ? 0.0f : 1.0f, dx, I);
      gemm(info, 'T', 'N', G, I, T * B, inputGrads.data(), G, x, I, 0.0f,
           dw + d * G * I, I);
      float *drd = dr + d * G * H;
      if (cell == Cell::GRU && !layer.linearBeforeReset) {
        gemm(info, 'T', 'N', 2 * H, H, T * B, recurrentGrads.data(), G,
             layer.statesIn.data(), H, 0.0f, drd, H);
        gemm(info, 'T', 'N', H, H, T * B, recurrentGrads.data() + 2 * H, G,
             layer.extra.data(), H, 0.0f, drd + 2 * H * H, H);
      } else {
        gemm(info, 'T', 'N', G, H, T * B, recurrentGrads.data(), G,
             layer.statesIn.data(), H, 0.0f, drd, H);
      }
      float *dwb = db + d * 2 * G, *drb = dwb + G;
      std::fill(dwb, dwb + 2 * G, 0.0f);
      for (int64_t row = 0; row < T * B; ++row)
        for (int64_t k = 0; k < G; ++k) {
          dwb[k] += inputGrads[row * G + k];
          drb[k] += recurrentGrads[row * G + k];
        }
    }
    if (T == 0)
      std::fill(dx, dx + res[0]->numElements(), 0.0f);
  }

private:
  /// The gate gradients of direction `d`, steps in reverse order of the
  /// forward pass; leaves the initial state's gradients in dh0 and dc0.
  void backward(int64_t d, const float *r, const float *p, const float *dy,
                const float *dyh, const float *dyc, float *dh0, float *dc0,
                float *dp) {
    int64_t T = layer.steps, B = layer.batch, H = layer.hidden,
            G = layer.rows(), D = layer.directions;
    const float *rd = r + d * G * H;
    const float *pd = p ? p + d * 3 * H : nullptr;
    float *dpd = dp ? dp + d * 3 * H : nullptr;
    if (dyh)
      std::copy(dyh + d * B * H, dyh + (d + 1) * B * H, dh.begin());
    else
      std::fill(dh.begin(), dh.end(), 0.0f);
    if (cell == Cell::LSTM) {
      if (dyc)
        std::copy(dyc + d * B * H, dyc + (d + 1) * B * H, dc.begin());
      else
        std::fill(dc.begin(), dc.end(), 0.0f);
    }
    for (int64_t s = T - 1; s >= 0; --s) {
      int64_t t = layer.reversed(d) ? T - 1 - s : s;
      const float *act = &layer.activations[t * B * G];
      const float *hIn = &layer.statesIn[t * B * H];
      float *daIn = &inputGrads[t * B * G], *daRec = &recurrentGrads[t * B * G];
      for (int64_t b = 0; b < B; ++b) {
        float *dhb = &dh[b * H];
        if (dy && layer.active(t, b)) {
          const float *dyRow = dy + ((t * D + d) * B + b) * H;
          for (int64_t j = 0; j < H; ++j)
            dhb[j] += dyRow[j];
        }
      }
      switch (layer.cell) {
      case Cell::RNN:
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j) {
            int64_t i = b * H + j;
            float a = act[i];
            float da = !layer.active(t, b) ? 0.0f
                       : layer.relu        ? (a > 0.0f ? dh[i] : 0.0f)
                                           : dh[i] * (1.0f - a * a);
            daIn[i] = daRec[i] = da;
          }
        break;
      case Cell::LSTM:
        lstmGates(t, act, pd, dpd, daIn, daRec);
        break;
      case Cell::GRU:
        gruGates(t, rd, act, hIn, daIn, daRec);
        break;
      }
      // dh_prev = dA_rec R (+ the direct and reset paths of the GRU); rows
      // past their end pass the gradient through unchanged.
      if (cell == Cell::GRU && !layer.linearBeforeReset) {
        // dA for r and z came from the candidate's gradient through r * h;
        // dhPrev already holds dh * z + d(r * h) * r.
        gemm(info, 'N', 'N', B, H, 2 * H, daRec, G, rd, H, 1.0f, dhPrev.data(),
             H);
      } else {
        gemm(info, 'N', 'N', B, H, G, daRec, G, rd, H,
             cell == Cell::GRU ? 1.0f : 0.0f, dhPrev.data(), H);
      }
      for (int64_t b = 0; b < B; ++b) {
        if (!layer.active(t, b))
          std::copy(&dh[b * H], &dh[(b + 1) * H], &dhPrev[b * H]);
      }
      std::swap(dh, dhPrev);
    }
    std::copy(dh.begin(), dh.end(), dh0 + d * B * H);
    if (dc0)
      std::copy(dc.begin(), dc.end(), dc0 + d * B * H);
  }

  void lstmGates(int64_t t, const float *act, const float *p, float *dp,
                 float *daIn, float *daRec) {
    int64_t B = layer.batch, H = layer.hidden, G = layer.rows();
    const float *cIn = &layer.cellsIn[t * B * H];
    const float *cOut = &layer.cellsOut[t * B * H];
    float *tanhOut = layer.cellTanh.data();
    columns(tanhOut, B, H, H) = columns(cOut, B, H, H).tanh();
    for (int64_t b = 0; b < B; ++b) {
      float *da = daIn + b * G;
      if (!layer.active(t, b)) {
        std::fill(da, da + G, 0.0f);
        std::fill(daRec + b * G, daRec + (b + 1) * G, 0.0f);
        continue;
      }
      const float *a = act + b * G;
      for (int64_t j = 0; j < H; ++j) {
        int64_t k = b * H + j;
        float i = a[j], o = a[H + j], f = a[2 * H + j], g = a[3 * H + j];
        float cPrev = cIn[k], cNew = cOut[k], tc = tanhOut[k];
        float dao = dh[k] * tc * o * (1.0f - o);
        float dct =
            dc[k] + dh[k] * o * (1.0f - tc * tc) + (p ? dao * p[H + j] : 0.0f);
        float dai = dct * g * i * (1.0f - i);
        float daf = dct * cPrev * f * (1.0f - f);
        float dag = dct * i * (1.0f - g * g);
        dc[k] = dct * f + (p ? dai * p[j] + daf * p[2 * H + j] : 0.0f);
        if (dp) {
          dp[j] += dai * cPrev;
          dp[H + j] += dao * cNew;
          dp[2 * H + j] += daf * cPrev;
        }
        da[j] = dai;
        da[H + j] = dao;
        da[2 * H + j] = daf;
        da[3 * H + j] = dag;
      }
      std::copy(da, da + G, daRec + b * G);
    }
  }

  void gruGates(int64_t t, const float *rd, const float *act, const float *hIn,
                float *daIn, float *daRec) {
    int64_t B = layer.batch, H = layer.hidden, G = layer.rows();
    const float *ext = &layer.extra[t * B * H];
    bool lbr = layer.linearBeforeReset;
    // d(r * h) = dA_n Rn, for the reset gate when it multiplies h first.
    if (!lbr) {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) {
          int64_t k = b * H + j;
          const float *a = act + b * G;
          float n = a[2 * H + j], z = a[j];
          daIn[b * G + 2 * H + j] =
              layer.active(t, b) ? dh[k] * (1.0f - z) * (1.0f - n * n) : 0.0f;
        }
      gemm(info, 'N', 'N', B, H, H, daIn + 2 * H, G, rd + 2 * H * H, H, 0.0f,
           resetGradient.data(), H);
    }
    for (int64_t b = 0; b < B; ++b) {
      float *da = daIn + b * G, *dr = daRec + b * G;
      if (!layer.active(t, b)) {
        std::fill(da, da + G, 0.0f);
        std::fill(dr, dr + G, 0.0f);
        continue;
      }
      const float *a = act + b * G;
      for (int64_t j = 0; j < H; ++j) {
        int64_t k = b * H + j;
        float z = a[j], rg = a[H + j], n = a[2 * H + j], hp = hIn[k];
        float dz = dh[k] * (hp - n);
        float daz = dz * z * (1.0f - z);
        float dan = dh[k] * (1.0f - z) * (1.0f - n * n);
        float dReset, dhDirect = dh[k] * z;
        if (lbr) {
          dReset = dan * ext[k];
          dr[2 * H + j] = dan * rg;
        } else {
          float drh = resetGradient[k];
          dReset = drh * hp;
          dhDirect += drh * rg;
          dr[2 * H + j] = dan;
        }
        float dar = dReset * rg * (1.0f - rg);
        da[j] = dr[j] = daz;
        da[H + j] = dr[H + j] = dar;
        da[2 * H + j] = dan;
        dhPrev[k] = dhDirect;
      }
    }
  }

  Cell cell;
  RecurrentOperandSlots operands;
  Recurrence layer;
  // All steps' gradients of the gates' input-side and recurrent-side
  // pre-activations (T x B x G); they differ only in the GRU's candidate
  // when the reset gate applies after the recurrent GEMM.
  std::vector<float> inputGrads, recurrentGrads;
  // The state's and cell's gradients entering and leaving a step (B x H);
  // d(r * h) of a GRU that resets before the recurrent GEMM.
  std::vector<float> dh, dhPrev, dc, resetGradient;
};

} // namespace

void cpu::registerRecurrentKernels(KernelRegistry &r) {
  for (auto [name, cell] :
       {std::pair{"rnn", Cell::RNN}, std::pair{"gru", Cell::GRU},
        std::pair{"lstm", Cell::LSTM}}) {
    r.add(std::string("heterps.") + name, DeviceKind::CPU,
          [cell = cell](const OpInfo &op) {
            return std::make_unique<RecurrentKernel>(op, cell);
          });
    r.add(std::string("heterps.") + name + "_grad", DeviceKind::CPU,
          [cell = cell](const OpInfo &op) {
            return std::make_unique<RecurrentGradKernel>(op, cell);
          });
  }
}
