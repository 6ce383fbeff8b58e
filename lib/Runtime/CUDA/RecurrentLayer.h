//===- RecurrentLayer.h - Recurrent layers over a backend -------*- C++ -*-===//
//
// The GPU column's recurrent layers and their gradients, written once over
// a backend that multiplies matrices and runs a function per element:
// RecurrentKernels.cu instantiates it with cuBLAS and CUDA kernels, the
// unit tests with host loops, so that the recurrence (the order of the
// products, the gate arithmetic, the ragged batches of sequence_lens, the
// walk back through the steps) is held against the CPU column on machines
// without a GPU.
//
// The structure is the CPU column's (RecurrentKernels.cpp): the input side
// of every step is one product over all T x B rows before the recurrence,
// each step one product with the recurrent weights and the gates element
// by element; the gradient reruns the forward keeping every step's gates
// and states, walks the steps backwards for the gate gradients, and ends
// with three products over all steps for the input, weight and recurrence
// gradients.
//
// A backend provides
//   void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
//             const float *a, int64_t lda, const float *b, int64_t ldb,
//             float beta, float *c, int64_t ldc);   // row-major, k > 0
//   template <typename F> void forEach(int64_t n, F f);  // f(0..n-1)
// and the functions given to forEach are HETERPS_HD lambdas capturing
// values only (pointers into the backend's memory, never `this`).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_RECURRENTLAYER_H
#define HETERPS_LIB_RUNTIME_CUDA_RECURRENTLAYER_H

#include "../CPU/RecurrentShape.h"
#include "../HostDevice.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

namespace heterps::runtime::cuda {

using cpu::RecurrentCell;
using cpu::RecurrentShape;

/// Rows per chunk of the gradients' column sums (biases, peepholes).
constexpr int64_t kSumChunkRows = 64;

HETERPS_HD inline float logistic(float x) { return 1.0f / (1.0f + expf(-x)); }

/// The buffers of a layer, in the backend's memory. `keep` layers (for a
/// gradient) hold every step's gates and states; others one step's.
struct RecurrentBuffers {
  float *inputSide = nullptr;       // T x B x G
  float *recurrent = nullptr;       // B x G
  float *h = nullptr;               // B x H
  float *c = nullptr;               // B x H (LSTM)
  float *cellNext = nullptr;        // B x H (LSTM)
  float *activations = nullptr;     // (T or 1) x B x G
  float *statesIn = nullptr;        // T x B x H (keep)
  float *cellsIn = nullptr;         // T x B x H (keep, LSTM)
  float *cellsOut = nullptr;        // T x B x H (keep, LSTM)
  float *extra = nullptr;           // (T or 1) x B x H (GRU)
  const int64_t *lengths = nullptr; // B
  // The gradient's.
  float *inputGrads = nullptr;                           // T x B x G
  float *recurrentGrads = nullptr;                       // T x B x G
  float *dh = nullptr, *dhPrev = nullptr, *dc = nullptr; // B x H
  float *resetGradient = nullptr;                        // B x H (GRU)
  float *partials = nullptr; // column sums' chunks (see columnSums)
  bool keep = false;
};

/// Lays out the buffers of a layer of `shape` (kept for a gradient) from
/// `base` and returns the floats they take; with a null `base`, only
/// counts. The lengths stay the caller's.
inline int64_t layOutRecurrentBuffers(const RecurrentShape &shape, bool keep,
                                      float *base, RecurrentBuffers &b) {
  int64_t T = shape.steps, B = shape.batch, H = shape.hidden, G = shape.rows();
  bool lstm = shape.cell == RecurrentCell::LSTM,
       gru = shape.cell == RecurrentCell::GRU;
  int64_t used = 0;
  auto take = [&](float *&to, int64_t floats) {
    to = base ? base + used : nullptr;
    used += floats;
  };
  b.keep = keep;
  take(b.inputSide, T * B * G);
  take(b.recurrent, B * G);
  take(b.h, B * H);
  take(b.c, lstm ? B * H : 0);
  take(b.cellNext, lstm ? B * H : 0);
  take(b.activations, (keep ? T : 1) * B * G);
  take(b.statesIn, keep ? T * B * H : 0);
  take(b.cellsIn, keep && lstm ? T * B * H : 0);
  take(b.cellsOut, keep && lstm ? T * B * H : 0);
  take(b.extra, gru ? (keep ? T : 1) * B * H : 0);
  take(b.inputGrads, keep ? T * B * G : 0);
  take(b.recurrentGrads, keep ? T * B * G : 0);
  take(b.dh, keep ? B * H : 0);
  take(b.dhPrev, keep ? B * H : 0);
  take(b.dc, keep && lstm ? B * H : 0);
  take(b.resetGradient, keep && gru ? B * H : 0);
  int64_t chunks = (T * B + kSumChunkRows - 1) / kSumChunkRows;
  take(b.partials, keep ? chunks * std::max(2 * G, 3 * H) : 0);
  return used;
}

/// The operands of a forward or a gradient run (null where absent).
struct RecurrentOperands {
  const float *x = nullptr, *w = nullptr, *r = nullptr, *bias = nullptr;
  const float *h0 = nullptr, *c0 = nullptr, *peepholes = nullptr;
  // The gradient's.
  const float *dy = nullptr, *dyh = nullptr, *dyc = nullptr;
};

/// The results: y (T x D x B x H), the final state and cell; or the
/// gradients of x, w, r, the bias, the initial state and cell and the
/// peepholes.
struct RecurrentResults {
  float *y = nullptr, *yh = nullptr, *yc = nullptr;
  float *dx = nullptr, *dw = nullptr, *dr = nullptr, *db = nullptr;
  float *dh0 = nullptr, *dc0 = nullptr, *dp = nullptr;
};

template <typename Backend> class RecurrentLayer {
public:
  RecurrentLayer(Backend &backend, const RecurrentShape &shape,
                 const RecurrentBuffers &buffers)
      : backend(backend), s(shape), buf(buffers) {}

  /// heterps.rnn / gru / lstm: every direction.
  void forward(const RecurrentOperands &in, const RecurrentResults &out) {
    for (int64_t d = 0; d < s.directions; ++d)
      forwardDirection(d, in, out.y, out.yh, out.yc);
  }

  /// heterps.rnn_grad / gru_grad / lstm_grad (buffers kept).
  void gradient(const RecurrentOperands &in, const RecurrentResults &out) {
    const RecurrentShape s = this->s;
    int64_t T = s.steps, B = s.batch, H = s.hidden, G = s.rows(), I = s.inputs;
    for (int64_t d = 0; d < s.directions; ++d) {
      forwardDirection(d, in, nullptr, nullptr, nullptr);
      backwardDirection(d, in, out);
      // dX += dA_in W, dW = dA_in^T X, dR = dA_rec^T H_in (the GRU's
      // candidate rows against r * h when the reset comes first).
      product(false, false, T * B, I, G, buf.inputGrads, G, in.w + d * G * I, I,
              d == 0 ? 0.0f : 1.0f, out.dx, I);
      product(true, false, G, I, T * B, buf.inputGrads, G, in.x, I, 0.0f,
              out.dw + d * G * I, I);
      float *drd = out.dr + d * G * H;
      if (s.cell == RecurrentCell::GRU && !s.linearBeforeReset) {
        product(true, false, 2 * H, H, T * B, buf.recurrentGrads, G,
                buf.statesIn, H, 0.0f, drd, H);
        product(true, false, H, H, T * B, buf.recurrentGrads + 2 * H, G,
                buf.extra, H, 0.0f, drd + 2 * H * H, H);
      } else {
        product(true, false, G, H, T * B, buf.recurrentGrads, G, buf.statesIn,
                H, 0.0f, drd, H);
      }
      // The biases' gradients (dwb and drb side by side): sums over the
      // rows of the two gate gradients.
      const float *inputGrads = buf.inputGrads,
                  *recurrentGrads = buf.recurrentGrads;
      columnSums(
          T * B, 2 * G,
          [=] HETERPS_HD(int64_t row, int64_t k) {
            return k < G ? inputGrads[row * G + k]
                         : recurrentGrads[row * G + k - G];
          },
          out.db + d * 2 * G);
      // The peepholes': the gate gradients of every step (zero past a row's
      // end) times the cell each peephole saw.
      if (out.dp) {
        const float *cellsIn = buf.cellsIn, *cellsOut = buf.cellsOut;
        columnSums(
            T * B, 3 * H,
            [=] HETERPS_HD(int64_t row, int64_t k) {
              int64_t gate = k / H, j = k % H;
              const float *cell = gate == 1 ? cellsOut : cellsIn;
              return inputGrads[row * G + gate * H + j] * cell[row * H + j];
            },
            out.dp + d * 3 * H);
      }
    }
  }

  // The steps of forward() and gradient(). They stay public: nvcc refuses
  // extended lambdas in private or protected member functions.

  /// c = op(a) op(b) (+ c when beta is 1); a product over no terms leaves
  /// beta * c.
  void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
               const float *a, int64_t lda, const float *b, int64_t ldb,
               float beta, float *c, int64_t ldc) {
    if (m == 0 || n == 0)
      return;
    if (k > 0) {
      backend.gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    backend.forEach(m * n, [=] HETERPS_HD(int64_t e) {
      float &v = c[(e / n) * ldc + e % n];
      v = beta == 0.0f ? 0.0f : beta * v;
    });
  }

  void fill(float *to, float value, int64_t n) {
    backend.forEach(n, [=] HETERPS_HD(int64_t e) { to[e] = value; });
  }

  void copy(float *to, const float *from, int64_t n) {
    backend.forEach(n, [=] HETERPS_HD(int64_t e) { to[e] = from[e]; });
  }

  /// out[k] = the sum over `rows` rows of term(row, k), for k < cols: chunks
  /// of rows summed in parallel, then the chunks in order (the whole device
  /// takes part however few the columns are; no atomics).
  template <typename Term>
  void columnSums(int64_t rows, int64_t cols, Term term, float *out) {
    const int64_t chunkRows = kSumChunkRows;
    int64_t chunks = (rows + chunkRows - 1) / chunkRows;
    float *partials = buf.partials;
    backend.forEach(chunks * cols, [=] HETERPS_HD(int64_t e) {
      int64_t chunk = e / cols, k = e % cols;
      int64_t end =
          (chunk + 1) * chunkRows < rows ? (chunk + 1) * chunkRows : rows;
      float sum = 0.0f;
      for (int64_t row = chunk * chunkRows; row < end; ++row)
        sum += term(row, k);
      partials[e] = sum;
    });
    backend.forEach(cols, [=] HETERPS_HD(int64_t k) {
      float sum = 0.0f;
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        sum += partials[chunk * cols + k];
      out[k] = sum;
    });
  }

  /// Runs direction `d`; writes y (may be null), the final state and cell
  /// (null for none). Kept layers record every step's gates and states.
  void forwardDirection(int64_t d, const RecurrentOperands &in, float *y,
                        float *yh, float *yc) {
    const RecurrentShape s = this->s;
    const RecurrentBuffers b = buf;
    int64_t T = s.steps, B = s.batch, H = s.hidden, G = s.rows(), I = s.inputs,
            D = s.directions;
    const float *rd = in.r + d * G * H;
    const float *wb = in.bias + d * 2 * G, *rb = wb + G;
    const float *pd = in.peepholes ? in.peepholes + d * 3 * H : nullptr;
    bool gru = s.cell == RecurrentCell::GRU,
         lstm = s.cell == RecurrentCell::LSTM;
    bool lbr = s.linearBeforeReset;
    // The input side of every step, with the biases that add outside the
    // gates' nonlinear parts.
    float *inputSide = b.inputSide;
    backend.forEach(T * B * G, [=] HETERPS_HD(int64_t e) {
      int64_t k = e % G;
      bool addRecurrentBias = !(gru && lbr && k >= 2 * H);
      inputSide[e] = wb[k] + (addRecurrentBias ? rb[k] : 0.0f);
    });
    product(false, true, T * B, G, I, in.x, I, in.w + d * G * I, I, 1.0f,
            inputSide, G);
    if (in.h0)
      copy(b.h, in.h0 + d * B * H, B * H);
    else
      fill(b.h, 0.0f, B * H);
    if (lstm) {
      if (in.c0)
        copy(b.c, in.c0 + d * B * H, B * H);
      else
        fill(b.c, 0.0f, B * H);
    }
    const int64_t *lengths = b.lengths;
    for (int64_t step = 0; step < T; ++step) {
      int64_t t = s.reversed(d) ? T - 1 - step : step;
      float *act = b.activations + (b.keep ? t * B : 0) * G;
      float *ext = gru ? b.extra + (b.keep ? t * B : 0) * H : nullptr;
      if (b.keep) {
        copy(b.statesIn + t * B * H, b.h, B * H);
        if (lstm)
          copy(b.cellsIn + t * B * H, b.c, B * H);
      }
      // h R^T; the GRU's candidate part after the reset gate when it
      // multiplies h first.
      int64_t recurrentRows = gru && !lbr ? 2 * H : G;
      product(false, true, B, recurrentRows, H, b.h, H, rd, H, 0.0f,
              b.recurrent, G);
      const float *inRows = inputSide + t * B * G;
      const float *rec = b.recurrent;
      const float *h = b.h, *c = b.c;
      float *cellNext = b.cellNext;
      bool relu = s.relu;
      switch (s.cell) {
      case RecurrentCell::RNN:
        backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
          int64_t row = e / H, j = e % H;
          float a = inRows[row * G + j] + rec[row * G + j];
          act[row * G + j] = relu ? (a > 0.0f ? a : 0.0f) : tanhf(a);
        });
        break;
      case RecurrentCell::LSTM:
        backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
          int64_t row = e / H, j = e % H;
          const float *pre = inRows + row * G, *rr = rec + row * G;
          float *a = act + row * G;
          float cPrev = c[e];
          float i = pre[j] + rr[j], o = pre[H + j] + rr[H + j],
                f = pre[2 * H + j] + rr[2 * H + j],
                g = pre[3 * H + j] + rr[3 * H + j];
          if (pd) {
            // Peepholes: i and f see the previous cell, o the new one.
            i += pd[j] * cPrev;
            f += pd[2 * H + j] * cPrev;
          }
          i = logistic(i);
          f = logistic(f);
          g = tanhf(g);
          float next = f * cPrev + i * g;
          if (pd)
            o += pd[H + j] * next;
          o = logistic(o);
          a[j] = i;
          a[H + j] = o;
          a[2 * H + j] = f;
          a[3 * H + j] = g;
          cellNext[e] = next;
        });
        break;
      case RecurrentCell::GRU:
        if (lbr) {
          backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
            int64_t row = e / H, j = e % H;
            const float *pre = inRows + row * G, *rr = rec + row * G;
            float *a = act + row * G;
            float z = logistic(pre[j] + rr[j]);
            float r = logistic(pre[H + j] + rr[H + j]);
            float linear = rr[2 * H + j] + rb[2 * H + j];
            ext[e] = linear;
            a[j] = z;
            a[H + j] = r;
            a[2 * H + j] = tanhf(pre[2 * H + j] + r * linear);
          });
        } else {
          backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
            int64_t row = e / H, j = e % H;
            const float *pre = inRows + row * G, *rr = rec + row * G;
            float *a = act + row * G;
            float z = logistic(pre[j] + rr[j]);
            float r = logistic(pre[H + j] + rr[H + j]);
            a[j] = z;
            a[H + j] = r;
            ext[e] = r * h[e];
          });
          product(false, true, B, H, H, ext, H, rd + 2 * H * H, H, 0.0f,
                  b.recurrent + 2 * H, G);
          backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
            int64_t row = e / H, j = e % H;
            act[row * G + 2 * H + j] =
                tanhf(inRows[row * G + 2 * H + j] + rec[row * G + 2 * H + j]);
          });
        }
        break;
      }
      // The new state of the rows still running; y is 0 past a row's end.
      float *hw = b.h, *cw = b.c;
      RecurrentCell cell = s.cell;
      backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
        int64_t row = e / H, j = e % H;
        float *yAt = y ? y + ((t * D + d) * B + row) * H + j : nullptr;
        if (t >= lengths[row]) {
          if (yAt)
            *yAt = 0.0f;
          return;
        }
        const float *a = act + row * G;
        float next;
        switch (cell) {
        case RecurrentCell::RNN:
          next = a[j];
          break;
        case RecurrentCell::GRU:
          next = (1.0f - a[j]) * a[2 * H + j] + a[j] * hw[e];
          break;
        default:
          cw[e] = cellNext[e];
          next = a[H + j] * tanhf(cellNext[e]);
          break;
        }
        hw[e] = next;
        if (yAt)
          *yAt = next;
      });
      if (b.keep && lstm)
        copy(b.cellsOut + t * B * H, b.c, B * H);
    }
    if (yh)
      copy(yh + d * B * H, b.h, B * H);
    if (yc)
      copy(yc + d * B * H, b.c, B * H);
  }

  /// The gate gradients of direction `d`, steps in reverse order of the
  /// forward; leaves the initial state's gradients in dh0 and dc0.
  void backwardDirection(int64_t d, const RecurrentOperands &in,
                         const RecurrentResults &out) {
    const RecurrentShape s = this->s;
    const RecurrentBuffers b = buf;
    int64_t T = s.steps, B = s.batch, H = s.hidden, G = s.rows(),
            D = s.directions;
    bool gru = s.cell == RecurrentCell::GRU,
         lstm = s.cell == RecurrentCell::LSTM;
    bool lbr = s.linearBeforeReset, relu = s.relu;
    const float *rd = in.r + d * G * H;
    const float *pd = in.peepholes ? in.peepholes + d * 3 * H : nullptr;
    const int64_t *lengths = b.lengths;
    float *dh = b.dh, *dhPrev = b.dhPrev, *dc = b.dc;
    if (in.dyh)
      copy(dh, in.dyh + d * B * H, B * H);
    else
      fill(dh, 0.0f, B * H);
    if (lstm) {
      if (in.dyc)
        copy(dc, in.dyc + d * B * H, B * H);
      else
        fill(dc, 0.0f, B * H);
    }
    const float *dy = in.dy;
    for (int64_t step = T - 1; step >= 0; --step) {
      int64_t t = s.reversed(d) ? T - 1 - step : step;
      const float *act = b.activations + t * B * G;
      const float *hIn = b.statesIn + t * B * H;
      float *daIn = b.inputGrads + t * B * G;
      float *daRec = b.recurrentGrads + t * B * G;
      if (dy)
        backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
          int64_t row = e / H;
          if (t < lengths[row])
            dh[e] += dy[((t * D + d) * B + row) * H + e % H];
        });
      switch (s.cell) {
      case RecurrentCell::RNN:
        // G is H: a gate element is a state element.
        backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
          float a = act[e];
          float da = t >= lengths[e / H] ? 0.0f
                     : relu              ? (a > 0.0f ? dh[e] : 0.0f)
                                         : dh[e] * (1.0f - a * a);
          daIn[e] = da;
          daRec[e] = da;
        });
        break;
      case RecurrentCell::LSTM:
        lstmGates(t, act, pd, daIn, daRec, dh, dc);
        break;
      case RecurrentCell::GRU:
        gruGates(t, rd, act, hIn, daIn, daRec, dh, dhPrev);
        break;
      }
      // dh_prev = dA_rec R (+ the direct and reset paths of the GRU); rows
      // past their end pass the gradient through unchanged.
      if (gru && !lbr)
        product(false, false, B, H, 2 * H, daRec, G, rd, H, 1.0f, dhPrev, H);
      else
        product(false, false, B, H, G, daRec, G, rd, H, gru ? 1.0f : 0.0f,
                dhPrev, H);
      const float *dhRead = dh;
      float *dhWrite = dhPrev;
      backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
        if (t >= lengths[e / H])
          dhWrite[e] = dhRead[e];
      });
      std::swap(dh, dhPrev);
    }
    copy(out.dh0 + d * B * H, dh, B * H);
    if (out.dc0)
      copy(out.dc0 + d * B * H, dc, B * H);
  }

  void lstmGates(int64_t t, const float *act, const float *p, float *daIn,
                 float *daRec, float *dh, float *dc) {
    const RecurrentShape s = this->s;
    int64_t B = s.batch, H = s.hidden, G = s.rows();
    const float *cIn = buf.cellsIn + t * B * H;
    const float *cOut = buf.cellsOut + t * B * H;
    const int64_t *lengths = buf.lengths;
    backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
      int64_t row = e / H, j = e % H;
      float *da = daIn + row * G, *dr = daRec + row * G;
      if (t >= lengths[row]) {
        da[j] = da[H + j] = da[2 * H + j] = da[3 * H + j] = 0.0f;
        dr[j] = dr[H + j] = dr[2 * H + j] = dr[3 * H + j] = 0.0f;
        return;
      }
      const float *a = act + row * G;
      float i = a[j], o = a[H + j], f = a[2 * H + j], g = a[3 * H + j];
      float cPrev = cIn[e], tc = tanhf(cOut[e]);
      float dao = dh[e] * tc * o * (1.0f - o);
      float dct =
          dc[e] + dh[e] * o * (1.0f - tc * tc) + (p ? dao * p[H + j] : 0.0f);
      float dai = dct * g * i * (1.0f - i);
      float daf = dct * cPrev * f * (1.0f - f);
      float dag = dct * i * (1.0f - g * g);
      dc[e] = dct * f + (p ? dai * p[j] + daf * p[2 * H + j] : 0.0f);
      da[j] = dr[j] = dai;
      da[H + j] = dr[H + j] = dao;
      da[2 * H + j] = dr[2 * H + j] = daf;
      da[3 * H + j] = dr[3 * H + j] = dag;
    });
  }

  void gruGates(int64_t t, const float *rd, const float *act, const float *hIn,
                float *daIn, float *daRec, const float *dh, float *dhPrev) {
    const RecurrentShape s = this->s;
    int64_t B = s.batch, H = s.hidden, G = s.rows();
    const float *ext = buf.extra + t * B * H;
    float *resetGradient = buf.resetGradient;
    const int64_t *lengths = buf.lengths;
    bool lbr = s.linearBeforeReset;
    // d(r * h) = dA_n Rn, for the reset gate when it multiplies h first.
    if (!lbr) {
      backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
        int64_t row = e / H, j = e % H;
        const float *a = act + row * G;
        float n = a[2 * H + j], z = a[j];
        daIn[row * G + 2 * H + j] =
            t < lengths[row] ? dh[e] * (1.0f - z) * (1.0f - n * n) : 0.0f;
      });
      product(false, false, B, H, H, daIn + 2 * H, G, rd + 2 * H * H, H, 0.0f,
              resetGradient, H);
    }
    backend.forEach(B * H, [=] HETERPS_HD(int64_t e) {
      int64_t row = e / H, j = e % H;
      float *da = daIn + row * G, *dr = daRec + row * G;
      if (t >= lengths[row]) {
        da[j] = da[H + j] = da[2 * H + j] = 0.0f;
        dr[j] = dr[H + j] = dr[2 * H + j] = 0.0f;
        return;
      }
      const float *a = act + row * G;
      float z = a[j], rg = a[H + j], n = a[2 * H + j], hp = hIn[e];
      float dz = dh[e] * (hp - n);
      float daz = dz * z * (1.0f - z);
      float dan = dh[e] * (1.0f - z) * (1.0f - n * n);
      float dReset, dhDirect = dh[e] * z;
      if (lbr) {
        dReset = dan * ext[e];
        dr[2 * H + j] = dan * rg;
      } else {
        float drh = resetGradient[e];
        dReset = drh * hp;
        dhDirect += drh * rg;
        dr[2 * H + j] = dan;
      }
      float dar = dReset * rg * (1.0f - rg);
      da[j] = dr[j] = daz;
      da[H + j] = dr[H + j] = dar;
      da[2 * H + j] = dan;
      dhPrev[e] = dhDirect;
    });
  }

  Backend &backend;
  RecurrentShape s;
  RecurrentBuffers buf;
};

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_RECURRENTLAYER_H
