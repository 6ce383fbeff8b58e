//===- GPUColumnTest.cpp - The GPU column against the CPU column ----------===//
//
// Every kernel of the GPU column runs on random inputs next to its CPU twin
// (forward ops and the gradient ops alike); the gradient ops of the unary
// ops and losses are also held against central differences of the GPU
// forwards; the CTR model's training steps on a GPU stage match the CPU
// stage's. The cases that need a GPU are reported skipped where none is
// usable; on a machine with a GPU, a GPU whose probe kernel did not run is
// a failure, not a skip.
//
// This binary links the runtime alone (no MLIR), so that it can be built on
// one machine and run on a GPU machine that has only the CUDA libraries
// (scripts/gpu-check.sh): the training plans are files that heterps-opt
// compiled at build time, found through HETERPS_GPU_TEST_PLANS.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/Devices.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/Runtime/Program.h"
#include "heterps/plan.pb.h"

#include "../../lib/Runtime/CUDA/CublasLibrary.h"
#include "CtrTraining.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace heterps;
using namespace heterps::runtime;

namespace {

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

/// How a case's input is drawn.
enum class Fill {
  Normal,      // uniform in [-2, 2]
  Positive,    // uniform in [0.2, 3] (log, sqrt, divisors, bases of pow)
  Probability, // uniform in [0.05, 0.95] (BCE on probabilities)
  Binary,      // 0 or 1 (BCE labels)
  Classes,     // integers in [0, classes): class labels, indices
  Indices,     // integers in [-classes, classes): indices, negative ones
               // counted from the end
};

struct Input {
  DType dtype;
  Shape shape;
  Fill fill = Fill::Normal;
};

Input f32(Shape shape, Fill fill = Fill::Normal) {
  return {DType::F32, std::move(shape), fill};
}

struct TwinCase {
  std::string name; // the test's name
  std::string op;
  std::vector<Input> inputs;
  std::function<void(plan::Op &)> attrs = [](plan::Op &) {};
  /// Class count for Fill::Classes.
  int64_t classes = 0;
  /// Relative tolerance (products summing many terms get more).
  float tolerance = 1e-5f;
  /// Makes drawn inputs consistent where the op expects it (a gradient
  /// op's forward result).
  std::function<void(std::vector<Tensor> &)> relate = nullptr;
  /// The result's element type when it is not the first operand's
  /// (compare, cast).
  DType result = DType::Invalid;
  /// Runs as a training step (ExecContext::training).
  bool training = false;
  /// The operands the op updates in place (batch norm's running
  /// statistics): compared after the run as further results.
  std::vector<size_t> updated = {};
  /// The plan's result shapes, for ops whose results the plan's types fix
  /// (resize); else the CPU kernel's answer for the operands.
  std::vector<Shape> resultShapes = {};
};

void setInt(plan::Op &op, const char *key, int64_t v) {
  (*op.mutable_attrs())[key].set_i(v);
}
void setFloat(plan::Op &op, const char *key, double v) {
  (*op.mutable_attrs())[key].set_f(v);
}
void setBool(plan::Op &op, const char *key, bool v) {
  (*op.mutable_attrs())[key].set_b(v);
}
void setString(plan::Op &op, const char *key, const std::string &v) {
  (*op.mutable_attrs())[key].set_s(v);
}
void setInts(plan::Op &op, const char *key, std::vector<int64_t> v) {
  auto *ints = (*op.mutable_attrs())[key].mutable_ints();
  for (int64_t x : v)
    ints->add_values(x);
}
void setFloats(plan::Op &op, const char *key, std::vector<double> v) {
  auto *floats = (*op.mutable_attrs())[key].mutable_floats();
  for (double x : v)
    floats->add_values(x);
}

const char *const kUnaryKinds[] = {"relu", "sigmoid",    "tanh", "erf",
                                   "exp",  "log",        "sqrt", "neg",
                                   "abs",  "leaky_relu", "clip"};

bool positiveDomain(const std::string &kind) {
  return kind == "log" || kind == "sqrt";
}

void unaryAttrs(plan::Op &op, const std::string &kind) {
  setFloat(op, "alpha", 0.2);
  if (kind == "clip") {
    setFloat(op, "min", -1.0);
    setFloat(op, "max", 1.5);
  }
}

/// f(x) for the unary op `kind`, from the CPU column.
Tensor unaryOnCpu(const std::string &kind, const Tensor &x) {
  plan::Op op;
  op.set_name("heterps." + kind);
  unaryAttrs(op, kind);
  TensorType type{DType::F32, x.shape()};
  OpInfo info(op, {type}, {type});
  auto kernel = KernelRegistry::global().create(info, DeviceKind::CPU);
  kernel->prepareChecked({x.shape()});
  Tensor y(DType::F32, x.shape());
  ExecContext ctx;
  kernel->run({&x}, {&y}, ctx);
  return y;
}

/// reduce_`kind` of x over `axes` (keepdims), from the CPU column.
Tensor reduceOnCpu(const std::string &kind, const Tensor &x,
                   std::vector<int64_t> axes) {
  plan::Op op;
  op.set_name("heterps.reduce_" + kind);
  setInts(op, "axes", axes);
  Shape kept = x.shape();
  for (int64_t a : axes)
    kept[a] = 1;
  OpInfo info(op, {{DType::F32, x.shape()}}, {{DType::F32, kept}});
  auto kernel = KernelRegistry::global().create(info, DeviceKind::CPU);
  kernel->prepareChecked({x.shape()});
  Tensor y(DType::F32, kept);
  ExecContext ctx;
  kernel->run({&x}, {&y}, ctx);
  return y;
}

/// Pads, walks along an axis (cumsum, arg_extreme, top_k_indices), element
/// gathers and the scatters, with their gradients.
void addIndexingCases(std::vector<TwinCase> &cases) {
  auto pad = [](const char *mode, std::vector<int64_t> pads) {
    return [mode, pads](plan::Op &op) {
      setString(op, "mode", mode);
      setInts(op, "pads", pads);
      setFloat(op, "value", 1.5);
    };
  };
  cases.push_back({"pad_constant",
                   "heterps.pad",
                   {f32({5, 7})},
                   pad("constant", {1, 0, 2, 3})});
  cases.push_back({"pad_reflect_3d",
                   "heterps.pad",
                   {f32({3, 4, 6})},
                   pad("reflect", {0, 3, 2, 1, 0, 5})});
  cases.push_back({"pad_edge_4d",
                   "heterps.pad",
                   {f32({2, 3, 4, 5})},
                   pad("edge", {0, 1, 2, 3, 1, 0, 4, 2})});
  cases.push_back({"pad_ids",
                   "heterps.pad",
                   {{DType::I64, {4, 6}, Fill::Classes}},
                   pad("constant", {2, 1, 0, 3}),
                   100});
  cases.push_back({"pad_grad_constant",
                   "heterps.pad_grad",
                   {f32({5, 7}), f32({8, 10})},
                   pad("constant", {1, 0, 2, 3})});
  // Several result elements share an input element under reflect and edge.
  cases.push_back({"pad_grad_reflect",
                   "heterps.pad_grad",
                   {f32({3, 4, 6}), f32({4, 7, 13})},
                   pad("reflect", {0, 3, 2, 1, 0, 5})});
  cases.push_back({"pad_grad_edge",
                   "heterps.pad_grad",
                   {f32({2, 3, 4, 5}), f32({3, 4, 10, 10})},
                   pad("edge", {0, 1, 2, 3, 1, 0, 4, 2})});

  cases.push_back(
      {"cumsum_rows", "heterps.cumsum", {f32({6, 300})}, [](plan::Op &op) {
         setInt(op, "axis", 1);
       }});
  cases.push_back({"cumsum_exclusive_reverse",
                   "heterps.cumsum",
                   {f32({40, 3, 5})},
                   [](plan::Op &op) {
                     setInt(op, "axis", 0);
                     setBool(op, "exclusive", true);
                     setBool(op, "reverse", true);
                   }});
  cases.push_back({"cumsum_ids",
                   "heterps.cumsum",
                   {{DType::I64, {4, 9}, Fill::Indices}},
                   [](plan::Op &op) { setInt(op, "axis", -1); },
                   1000});
  // Values drawn from a few integers: ties, which the first (or last)
  // position wins.
  TwinCase argMax{"arg_max_ties",
                  "heterps.arg_extreme",
                  {f32({7, 30, 4}, Fill::Classes)},
                  [](plan::Op &op) {
                    setString(op, "kind", "max");
                    setInt(op, "axis", 1);
                  },
                  5};
  argMax.result = DType::I64;
  cases.push_back(argMax);
  TwinCase argMin{"arg_min_last",
                  "heterps.arg_extreme",
                  {f32({25, 6}, Fill::Classes)},
                  [](plan::Op &op) {
                    setString(op, "kind", "min");
                    setInt(op, "axis", 0);
                    setBool(op, "keepdims", false);
                    setBool(op, "select_last_index", true);
                  },
                  4};
  argMin.result = DType::I64;
  cases.push_back(argMin);
  TwinCase argIds{"arg_max_i32",
                  "heterps.arg_extreme",
                  {{DType::I32, {5, 11}, Fill::Indices}},
                  [](plan::Op &op) {
                    setString(op, "kind", "max");
                    setInt(op, "axis", -1);
                  },
                  50};
  argIds.result = DType::I64;
  cases.push_back(argIds);
  TwinCase topK{"top_k_largest",
                "heterps.top_k_indices",
                {f32({6, 500})},
                [](plan::Op &op) { setInt(op, "k", 10); }};
  topK.result = DType::I64;
  cases.push_back(topK);
  // Ties broken by position, and NaNs above every number.
  TwinCase topKTies{"top_k_smallest_ties_nan",
                    "heterps.top_k_indices",
                    {f32({40, 3}, Fill::Classes)},
                    [](plan::Op &op) {
                      setInt(op, "k", 7);
                      setInt(op, "axis", 0);
                      setBool(op, "largest", false);
                    },
                    6};
  topKTies.result = DType::I64;
  topKTies.relate = [](std::vector<Tensor> &in) {
    in[0].as<float>()[4] = NAN;
    in[0].as<float>()[20] = NAN;
  };
  cases.push_back(topKTies);
  TwinCase topKNan = topKTies;
  topKNan.name = "top_k_largest_nan";
  topKNan.attrs = [](plan::Op &op) {
    setInt(op, "k", 5);
    setInt(op, "axis", 0);
  };
  cases.push_back(topKNan);
  TwinCase topKIds{"top_k_ids",
                   "heterps.top_k_indices",
                   {{DType::I64, {3, 64}, Fill::Indices}},
                   [](plan::Op &op) { setInt(op, "k", 64); },
                   20};
  topKIds.result = DType::I64;
  cases.push_back(topKIds);

  // Resize: every mode, up and down, the coordinate transformations that
  // PyTorch's interpolate and TensorFlow's crop_and_resize export.
  struct Resize {
    const char *name, *mode, *coords;
    Shape in, out;
    std::vector<double> roi;
  };
  const Resize resizes[] = {
      {"nearest_up", "nearest", "asymmetric", {2, 3, 5, 4}, {2, 3, 10, 8}, {}},
      {"linear_down", "linear", "half_pixel", {2, 3, 9, 7}, {2, 3, 4, 5}, {}},
      {"cubic_corners",
       "cubic",
       "align_corners",
       {1, 2, 6, 5},
       {1, 2, 11, 9},
       {}},
      {"crop",
       "linear",
       "tf_crop_and_resize",
       {1, 1, 6, 6},
       {1, 1, 5, 7},
       {0, 0, -0.2, 0.1, 1, 1, 0.8, 1.3}},
  };
  for (const Resize &r : resizes) {
    std::vector<double> scales;
    for (size_t d = 0; d < r.in.size(); ++d)
      scales.push_back(static_cast<double>(r.out[d]) / r.in[d]);
    auto attrs = [r, scales](plan::Op &op) {
      setString(op, "mode", r.mode);
      setString(op, "coordinate_transformation_mode", r.coords);
      setString(op, "nearest_mode", "floor");
      setFloats(op, "scales", scales);
      if (!r.roi.empty())
        setFloats(op, "roi", r.roi);
      setFloat(op, "extrapolation_value", -3.0);
    };
    TwinCase resize{
        std::string("resize_") + r.name, "heterps.resize", {f32(r.in)}, attrs};
    resize.resultShapes = {r.out};
    cases.push_back(resize);
    cases.push_back({std::string("resize_grad_") + r.name,
                     "heterps.resize_grad",
                     {f32(r.in), f32(r.out)},
                     attrs});
  }

  // Recurrent layers: every cell, both directions, ragged batches
  // (sequence_lens from 0 to T), initial states, peepholes; the gradients
  // with every result gradient.
  struct Recurrent {
    const char *name, *cell, *direction;
    bool lengths, initial, peepholes, gradient;
    const char *activation = "tanh";
    bool linearBeforeReset = false;
  };
  const Recurrent recurrents[] = {
      {"rnn_tanh", "rnn", "forward", false, false, false, false},
      {"rnn_relu_reverse_grad", "rnn", "reverse", true, true, false, true,
       "relu"},
      {"gru_bidirectional", "gru", "bidirectional", true, true, false, false},
      {"gru_grad", "gru", "forward", true, false, false, true},
      {"gru_linear_before_reset_grad", "gru", "bidirectional", false, true,
       false, true, "tanh", true},
      {"lstm_peepholes", "lstm", "bidirectional", true, true, true, false},
      {"lstm_grad", "lstm", "forward", false, false, false, true},
      {"lstm_peepholes_grad", "lstm", "bidirectional", true, true, true, true},
  };
  for (const Recurrent &rc : recurrents) {
    const int64_t T = 5, B = 4, I = 3, H = 6;
    std::string cell = rc.cell;
    bool lstm = cell == "lstm";
    int64_t D = std::string(rc.direction) == "bidirectional" ? 2 : 1;
    int64_t G = (cell == "rnn" ? 1 : cell == "gru" ? 3 : 4) * H;
    std::vector<Input> inputs{f32({T, B, I}), f32({D, G, I}), f32({D, G, H}),
                              f32({D, 2 * G})};
    std::vector<int64_t> segments{1, 1, 1, 1, rc.lengths, rc.initial};
    if (rc.lengths)
      inputs.push_back({DType::I32, {B}, Fill::Classes});
    if (rc.initial)
      inputs.push_back(f32({D, B, H}));
    if (lstm) {
      segments.push_back(rc.initial);
      segments.push_back(rc.peepholes);
      if (rc.initial)
        inputs.push_back(f32({D, B, H}));
      if (rc.peepholes)
        inputs.push_back(f32({D, 3 * H}));
    }
    if (rc.gradient) {
      inputs.push_back(f32({T, D, B, H}));
      inputs.push_back(f32({D, B, H}));
      segments.push_back(1);
      segments.push_back(1);
      if (lstm) {
        inputs.push_back(f32({D, B, H}));
        segments.push_back(1);
      }
    }
    TwinCase c{rc.name,
               "heterps." + cell + (rc.gradient ? "_grad" : ""),
               inputs,
               [rc, segments](plan::Op &op) {
                 setInt(op, "hidden_size", H);
                 setString(op, "direction", rc.direction);
                 setString(op, "activation", rc.activation);
                 setBool(op, "linear_before_reset", rc.linearBeforeReset);
                 setInts(op, "operandSegmentSizes", segments);
               },
               T + 1,
               1e-4f};
    // Weights of a tenth of the drawn values: gates away from saturation.
    c.relate = [](std::vector<Tensor> &in) {
      for (size_t i = 1; i <= 3; ++i)
        for (int64_t e = 0; e < in[i].numElements(); ++e)
          in[i].as<float>()[e] *= 0.1f;
    };
    cases.push_back(c);
  }

  cases.push_back({"gather_elements_last",
                   "heterps.gather_elements",
                   {f32({4, 7}), {DType::I64, {4, 5}, Fill::Indices}},
                   [](plan::Op &op) { setInt(op, "axis", 1); },
                   7});
  cases.push_back({"gather_elements_first_i32",
                   "heterps.gather_elements",
                   {f32({6, 3, 5}), {DType::I32, {9, 2, 5}, Fill::Indices}},
                   [](plan::Op &op) { setInt(op, "axis", 0); },
                   6});
  cases.push_back(
      {"gather_elements_grad",
       "heterps.gather_elements_grad",
       {f32({6, 3, 5}), {DType::I64, {9, 2, 5}, Fill::Indices}, f32({9, 2, 5})},
       [](plan::Op &op) { setInt(op, "axis", 0); },
       6});
  auto scatter = [](int64_t axis, const char *reduction) {
    return [axis, reduction](plan::Op &op) {
      setInt(op, "axis", axis);
      setString(op, "reduction", reduction);
    };
  };
  // 12 indices into 4 rows per column: the last one naming an element wins.
  cases.push_back(
      {"scatter_elements_store_repeated",
       "heterps.scatter_elements",
       {f32({4, 5}), {DType::I64, {12, 5}, Fill::Indices}, f32({12, 5})},
       scatter(0, "none"),
       4});
  cases.push_back(
      {"scatter_elements_add",
       "heterps.scatter_elements",
       {f32({3, 8}), {DType::I32, {3, 20}, Fill::Indices}, f32({3, 20})},
       scatter(1, "add"),
       8});
  cases.push_back({"scatter_elements_add_ids",
                   "heterps.scatter_elements",
                   {{DType::I64, {3, 8}, Fill::Indices},
                    {DType::I64, {3, 20}, Fill::Indices},
                    {DType::I64, {3, 20}, Fill::Indices}},
                   scatter(-1, "add"),
                   8});
  for (const char *reduction : {"none", "add"})
    cases.push_back({std::string("scatter_elements_grad_") + reduction,
                     "heterps.scatter_elements_grad",
                     {{DType::I64, {12, 5}, Fill::Indices}, f32({4, 5})},
                     scatter(0, reduction),
                     4});
  auto reduce = [](const char *reduction) {
    return [reduction](plan::Op &op) { setString(op, "reduction", reduction); };
  };
  // Tuples of one entry naming rows (slices of 3 x 5), of two naming
  // vectors; 9 tuples into 4 x 4 positions repeat some.
  cases.push_back(
      {"scatter_nd_rows_store",
       "heterps.scatter_nd",
       {f32({4, 3, 5}), {DType::I64, {7, 1}, Fill::Indices}, f32({7, 3, 5})},
       reduce("none"),
       4});
  cases.push_back(
      {"scatter_nd_pairs_add",
       "heterps.scatter_nd",
       {f32({4, 4, 3}), {DType::I32, {3, 3, 2}, Fill::Indices}, f32({3, 3, 3})},
       reduce("add"),
       4});
  cases.push_back(
      {"scatter_nd_pairs_mul",
       "heterps.scatter_nd",
       {f32({4, 4, 3}), {DType::I64, {9, 2}, Fill::Indices}, f32({9, 3})},
       reduce("mul"),
       4});
  cases.push_back({"scatter_nd_elements_ids",
                   "heterps.scatter_nd",
                   {{DType::I64, {4, 4}, Fill::Indices},
                    {DType::I64, {20, 2}, Fill::Indices},
                    {DType::I64, {20}, Fill::Indices}},
                   reduce("none"),
                   4});
  for (const char *reduction : {"none", "add"})
    cases.push_back({std::string("scatter_nd_grad_") + reduction,
                     "heterps.scatter_nd_grad",
                     {{DType::I64, {9, 2}, Fill::Indices}, f32({4, 4, 3})},
                     reduce(reduction),
                     4});
}

std::vector<TwinCase> twinCases() {
  std::vector<TwinCase> cases;
  // Binary ops: same shapes, a broadcast row, a broadcast column and scalar.
  for (const char *op : {"add", "sub", "mul", "div", "pow"}) {
    Fill right = std::string(op) == "div" ? Fill::Positive : Fill::Normal;
    Fill left = std::string(op) == "pow" ? Fill::Positive : Fill::Normal;
    std::string name = op;
    cases.push_back({name + "_same",
                     std::string("heterps.") + op,
                     {f32({7, 33}, left), f32({7, 33}, right)}});
    cases.push_back({name + "_row",
                     std::string("heterps.") + op,
                     {f32({3, 5, 33}, left), f32({33}, right)}});
    cases.push_back({name + "_column",
                     std::string("heterps.") + op,
                     {f32({4, 1}, left), f32({3, 4, 9}, right)}});
    cases.push_back({name + "_scalar",
                     std::string("heterps.") + op,
                     {f32({6, 10}, left), f32({}, right)}});
  }
  for (const char *kind : kUnaryKinds) {
    std::string k = kind;
    Fill fill = positiveDomain(k) ? Fill::Positive : Fill::Normal;
    cases.push_back(
        {k, "heterps." + k, {f32({5, 301}, fill)}, [k](plan::Op &op) {
           unaryAttrs(op, k);
         }});
    TwinCase grad{k + "_grad",
                  "heterps.unary_grad",
                  {f32({5, 301}, fill), f32({5, 301}), f32({5, 301})},
                  [k](plan::Op &op) {
                    unaryAttrs(op, k);
                    setString(op, "kind", k);
                  }};
    // A column may write a derivative in x or in y = f(x): y is f(x).
    grad.relate = [k](std::vector<Tensor> &in) {
      in[1] = unaryOnCpu(k, in[0]);
    };
    cases.push_back(grad);
  }

  // Dropout: the same elements dropped in both columns (one mask function).
  auto dropoutAttrs = [](plan::Op &op) {
    setFloat(op, "ratio", 0.3);
    setInt(op, "dropout_id", 3);
  };
  TwinCase dropout{
      "dropout_training", "heterps.dropout", {f32({7, 300})}, dropoutAttrs};
  dropout.training = true;
  cases.push_back(dropout);
  cases.push_back(
      {"dropout_inference", "heterps.dropout", {f32({7, 300})}, dropoutAttrs});
  cases.push_back({"dropout_grad",
                   "heterps.unary_grad",
                   {f32({7, 300}), f32({7, 300}), f32({7, 300})},
                   [dropoutAttrs](plan::Op &op) {
                     dropoutAttrs(op);
                     setString(op, "kind", "dropout");
                   }});

  // Products: every transposition, a bias of each broadcast shape, scales.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      std::string name =
          std::string("gemm_") + (ta ? "t" : "n") + (tb ? "t" : "n");
      Shape a = ta ? Shape{37, 19} : Shape{19, 37};
      Shape b = tb ? Shape{23, 37} : Shape{37, 23};
      cases.push_back({name,
                       "heterps.gemm",
                       {f32(a), f32(b)},
                       [ta, tb](plan::Op &op) {
                         setBool(op, "trans_a", ta);
                         setBool(op, "trans_b", tb);
                       },
                       0,
                       1e-4f});
    }
  cases.push_back({"gemm_bias_row_scaled",
                   "heterps.gemm",
                   {f32({64, 40}), f32({40, 24}), f32({24})},
                   [](plan::Op &op) {
                     setFloat(op, "alpha", 0.5);
                     setFloat(op, "beta", 2.0);
                   },
                   0,
                   1e-4f});
  cases.push_back({"gemm_bias_matrix",
                   "heterps.gemm",
                   {f32({16, 40}), f32({40, 8}), f32({16, 8})},
                   [](plan::Op &) {},
                   0,
                   1e-4f});
  cases.push_back({"matmul_2d",
                   "heterps.matmul",
                   {f32({31, 65}), f32({65, 17})},
                   [](plan::Op &) {},
                   0,
                   1e-4f});
  cases.push_back({"matmul_batched_by_matrix",
                   "heterps.matmul",
                   {f32({4, 9, 33}), f32({33, 12})},
                   [](plan::Op &) {},
                   0,
                   1e-4f});
  cases.push_back({"matmul_batched",
                   "heterps.matmul",
                   {f32({2, 3, 9, 33}), f32({2, 3, 33, 12})},
                   [](plan::Op &) {},
                   0,
                   1e-4f});

  // Reductions and their gradients.
  for (const char *op :
       {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_l2"}) {
    std::string n = op;
    cases.push_back(
        {n + "_last", "heterps." + n, {f32({6, 7, 130})}, [](plan::Op &op) {
           setInts(op, "axes", {2});
         }});
    cases.push_back({n + "_first_dropped",
                     "heterps." + n,
                     {f32({300, 9})},
                     [](plan::Op &op) {
                       setInts(op, "axes", {0});
                       setBool(op, "keepdims", false);
                     }});
    cases.push_back({n + "_over_nothing",
                     "heterps." + n,
                     {f32({3, 0, 4})},
                     [](plan::Op &op) { setInts(op, "axes", {1}); }});
    cases.push_back({n + "_middle_and_last",
                     "heterps." + n,
                     {f32({5, 6, 7, 8})},
                     [](plan::Op &op) {
                       setInts(op, "axes", {1, 3});
                     }});
  }
  for (const char *kind : {"sum", "mean", "max", "min", "l2"}) {
    std::string k = kind;
    TwinCase grad{"reduce_grad_" + k,
                  "heterps.reduce_grad",
                  {f32({5, 6, 7}), f32({5, 1, 7}), f32({5, 1, 7})},
                  [k](plan::Op &op) {
                    setString(op, "kind", k);
                    setInts(op, "axes", {1});
                  }};
    // The result operand is the reduction's, as max and min compare with
    // it.
    grad.relate = [k](std::vector<Tensor> &in) {
      in[1] = reduceOnCpu(k, in[0], {1});
    };
    cases.push_back(grad);
  }
  // Bags of rows (nn.EmbeddingBag's offsets): starts (b^2 / bags^2) of the
  // rows, so that sizes grow and the second bag is empty.
  auto bagOffsets = [](std::vector<Tensor> &in) {
    int64_t bags = in[1].numElements(), rows = in[0].dim(0);
    for (int64_t b = 0; b < bags; ++b) {
      int64_t start = b * b * rows / (bags * bags);
      if (in[1].dtype() == DType::I64)
        in[1].as<int64_t>()[b] = start;
      else
        in[1].as<int32_t>()[b] = static_cast<int32_t>(start);
    }
  };
  for (const char *kind : {"sum", "mean", "max"}) {
    std::string k = kind;
    auto kindAttr = [k](plan::Op &op) { setString(op, "kind", k); };
    TwinCase forward{"segment_" + k,
                     "heterps.segment_reduce",
                     {f32({20, 3}), {DType::I64, {6}, Fill::Classes}},
                     kindAttr,
                     1};
    forward.relate = bagOffsets;
    cases.push_back(forward);
    TwinCase grad{
        "segment_grad_" + k,
        "heterps.segment_reduce_grad",
        {f32({20, 2, 3}), {DType::I32, {6}, Fill::Classes}, f32({6, 2, 3})},
        kindAttr,
        1};
    grad.relate = bagOffsets;
    cases.push_back(grad);
  }
  // Products over a few elements (float products of many drift apart with
  // their order); the gradient with no zero, one zero and two zeros in a
  // product.
  cases.push_back({"reduce_prod_last",
                   "heterps.reduce_prod",
                   {f32({6, 7, 9})},
                   [](plan::Op &op) { setInts(op, "axes", {2}); },
                   0,
                   1e-4f});
  cases.push_back({"reduce_prod_middle_dropped",
                   "heterps.reduce_prod",
                   {f32({5, 4, 8})},
                   [](plan::Op &op) {
                     setInts(op, "axes", {1});
                     setBool(op, "keepdims", false);
                   },
                   0,
                   1e-4f});
  TwinCase prodGrad{"reduce_grad_prod_zeros",
                    "heterps.reduce_grad",
                    {f32({4, 6, 7}), f32({4, 1, 7}), f32({4, 1, 7})},
                    [](plan::Op &op) {
                      setString(op, "kind", "prod");
                      setInts(op, "axes", {1});
                    },
                    0,
                    1e-4f};
  prodGrad.relate = [](std::vector<Tensor> &in) {
    float *x = in[0].as<float>();
    x[(0 * 6 + 2) * 7 + 3] = 0.0f; // one zero in output (0, 3)
    x[(1 * 6 + 1) * 7 + 5] = 0.0f; // two zeros in output (1, 5)
    x[(1 * 6 + 4) * 7 + 5] = 0.0f;
    in[1] = reduceOnCpu("prod", in[0], {1});
  };
  cases.push_back(prodGrad);
  cases.push_back(
      {"sum_to_shape_row", "heterps.sum_to_shape", {f32({70, 13}), f32({13})}});
  cases.push_back({"sum_to_shape_column",
                   "heterps.sum_to_shape",
                   {f32({4, 70, 13}), f32({70, 1})}});

  // Losses and their gradients, with every reduction.
  for (const char *reduction : {"mean", "sum", "none"}) {
    std::string r = reduction;
    auto set = [r](bool logits) {
      return [r, logits](plan::Op &op) {
        setString(op, "reduction", r);
        setBool(op, "from_logits", logits);
      };
    };
    cases.push_back(
        {"bce_" + r,
         "heterps.bce_loss",
         {f32({50, 1}, Fill::Probability), f32({50, 1}, Fill::Binary)},
         set(false)});
    cases.push_back({"bce_logits_" + r,
                     "heterps.bce_loss",
                     {f32({50, 3}), f32({50, 3}, Fill::Binary)},
                     set(true)});
    cases.push_back({"mse_" + r,
                     "heterps.mse_loss",
                     {f32({40, 2}), f32({40, 2})},
                     set(false)});
    cases.push_back({"softmax_ce_" + r,
                     "heterps.softmax_ce_loss",
                     {f32({30, 11}), {DType::I64, {30}, Fill::Classes}},
                     set(true),
                     11});
    cases.push_back(
        {"softmax_ce_spatial_" + r,
         "heterps.softmax_ce_loss",
         {f32({3, 5, 4, 6}), {DType::I64, {3, 4, 6}, Fill::Classes}},
         set(true),
         5});
    Shape scalar = r == "none" ? Shape{50, 1} : Shape{};
    auto grad = [r](const char *kind, bool logits) {
      return [r, kind, logits](plan::Op &op) {
        setString(op, "reduction", r);
        setString(op, "kind", kind);
        setBool(op, "from_logits", logits);
      };
    };
    cases.push_back({"bce_grad_" + r,
                     "heterps.loss_grad",
                     {f32({50, 1}, Fill::Probability),
                      f32({50, 1}, Fill::Binary), f32(scalar)},
                     grad("bce", false)});
    cases.push_back({"bce_logits_grad_" + r,
                     "heterps.loss_grad",
                     {f32({50, 1}), f32({50, 1}, Fill::Binary), f32(scalar)},
                     grad("bce", true)});
    cases.push_back({"mse_grad_" + r,
                     "heterps.loss_grad",
                     {f32({50, 1}), f32({50, 1}), f32(scalar)},
                     grad("mse", false)});
    cases.push_back({"softmax_ce_grad_" + r,
                     "heterps.loss_grad",
                     {f32({30, 11}),
                      {DType::I64, {30}, Fill::Classes},
                      f32(r == "none" ? Shape{30} : Shape{})},
                     grad("softmax_ce", true),
                     11});
    // Class losses that skip a label (3: about one position in eleven)
    // and weigh the classes; i32 labels for NLL.
    auto ignoring = [r](const char *kind) {
      return [r, kind](plan::Op &op) {
        setString(op, "reduction", r);
        setString(op, "kind", kind);
        setInt(op, "ignore_index", 3);
      };
    };
    Input labels{DType::I64, {30}, Fill::Classes},
        labels32{DType::I32, {30}, Fill::Classes};
    Shape dl = r == "none" ? Shape{30} : Shape{};
    cases.push_back({"nll_" + r,
                     "heterps.nll_loss",
                     {f32({30, 11}), labels32},
                     set(false),
                     11});
    cases.push_back({"nll_ignore_" + r,
                     "heterps.nll_loss",
                     {f32({30, 11}), labels},
                     ignoring("nll"),
                     11});
    cases.push_back({"weighted_nll_" + r,
                     "heterps.weighted_nll_loss",
                     {f32({30, 11}), labels, f32({11}, Fill::Positive)},
                     ignoring("weighted_nll"),
                     11});
    cases.push_back({"softmax_ce_ignore_" + r,
                     "heterps.softmax_ce_loss",
                     {f32({3, 11, 10}), {DType::I64, {3, 10}, Fill::Classes}},
                     ignoring("softmax_ce"),
                     11});
    cases.push_back({"nll_grad_" + r,
                     "heterps.loss_grad",
                     {f32({30, 11}), labels32, f32(dl)},
                     grad("nll", false),
                     11});
    cases.push_back(
        {"weighted_nll_grad_" + r,
         "heterps.loss_grad",
         {f32({30, 11}), labels, f32(dl), f32({11}, Fill::Positive)},
         ignoring("weighted_nll"),
         11});
    cases.push_back({"softmax_ce_ignore_grad_" + r,
                     "heterps.loss_grad",
                     {f32({3, 11, 10}),
                      {DType::I64, {3, 10}, Fill::Classes},
                      f32(r == "none" ? Shape{3, 10} : Shape{}),
                      f32({11}, Fill::Positive)},
                     ignoring("softmax_ce"),
                     11});
  }

  // Shapes.
  cases.push_back({"concat_rows",
                   "heterps.concat",
                   {f32({3, 7}), f32({5, 7}), f32({1, 7})},
                   [](plan::Op &op) { setInt(op, "axis", 0); }});
  cases.push_back({"concat_columns",
                   "heterps.concat",
                   {f32({9, 4}), f32({9, 13}), f32({9, 1})},
                   [](plan::Op &op) { setInt(op, "axis", 1); }});
  cases.push_back({"concat_middle",
                   "heterps.concat",
                   {f32({2, 3, 5}), f32({2, 4, 5})},
                   [](plan::Op &op) { setInt(op, "axis", -2); }});
  cases.push_back({"concat_ids",
                   "heterps.concat",
                   {{DType::I64, {6, 2}, Fill::Classes},
                    {DType::I64, {6, 3}, Fill::Classes}},
                   [](plan::Op &op) { setInt(op, "axis", 1); },
                   100});
  cases.push_back(
      {"slice_strided", "heterps.slice", {f32({10, 12, 5})}, [](plan::Op &op) {
         setInts(op, "starts", {1, 0, 2});
         setInts(op, "ends", {9, 12, 5});
         setInts(op, "steps", {2, 3, 1});
       }});
  cases.push_back(
      {"slice_reversed", "heterps.slice", {f32({10, 6})}, [](plan::Op &op) {
         setInts(op, "starts", {9, 0});
         setInts(op, "ends", {-11, 6});
         setInts(op, "steps", {-1, 1});
       }});
  cases.push_back({"slice_grad",
                   "heterps.slice_grad",
                   {f32({10, 12, 5}), f32({4, 4, 3})},
                   [](plan::Op &op) {
                     setInts(op, "starts", {1, 0, 2});
                     setInts(op, "ends", {9, 12, 5});
                     setInts(op, "steps", {2, 3, 1});
                   }});
  cases.push_back(
      {"transpose_3d", "heterps.transpose", {f32({4, 7, 9})}, [](plan::Op &op) {
         setInts(op, "perm", {2, 0, 1});
       }});
  cases.push_back({"transpose_ids",
                   "heterps.transpose",
                   {{DType::I64, {5, 3}, Fill::Classes}},
                   [](plan::Op &op) {
                     setInts(op, "perm", {1, 0});
                   },
                   50});
  cases.push_back(
      {"expand", "heterps.expand", {f32({3, 1, 5})}, [](plan::Op &op) {
         setInts(op, "shape", {2, 3, 4, 5});
       }});
  cases.push_back({"gather_rows",
                   "heterps.gather",
                   {f32({20, 6}), {DType::I64, {4, 3}, Fill::Indices}},
                   [](plan::Op &op) { setInt(op, "axis", 0); },
                   20});
  cases.push_back({"gather_columns_i32",
                   "heterps.gather",
                   {f32({5, 20, 3}), {DType::I32, {7}, Fill::Indices}},
                   [](plan::Op &op) { setInt(op, "axis", 1); },
                   20});
  // 40 indices into 8 rows: most rows are named several times.
  cases.push_back(
      {"gather_grad_repeated",
       "heterps.gather_grad",
       {f32({8, 6}), {DType::I64, {40}, Fill::Indices}, f32({40, 6})},
       [](plan::Op &op) { setInt(op, "axis", 0); },
       8});
  cases.push_back(
      {"gather_grad_middle_i32",
       "heterps.gather_grad",
       {f32({3, 9, 4}), {DType::I32, {2, 5}, Fill::Indices}, f32({3, 2, 5, 4})},
       [](plan::Op &op) { setInt(op, "axis", 1); },
       9});
  for (const char *op : {"softmax", "log_softmax"}) {
    std::string n = op;
    cases.push_back({n + "_last", "heterps." + n, {f32({9, 1000})}});
    cases.push_back(
        {n + "_middle", "heterps." + n, {f32({3, 37, 5})}, [](plan::Op &op) {
           setInt(op, "axis", 1);
         }});
  }
  for (bool log : {false, true}) {
    std::string n = log ? "log_softmax_grad" : "softmax_grad";
    cases.push_back({n + "_last",
                     "heterps.softmax_grad",
                     {f32({9, 100}, Fill::Probability), f32({9, 100})},
                     [log](plan::Op &op) { setBool(op, "log", log); }});
    cases.push_back({n + "_middle",
                     "heterps.softmax_grad",
                     {f32({3, 37, 5}, Fill::Probability), f32({3, 37, 5})},
                     [log](plan::Op &op) {
                       setBool(op, "log", log);
                       setInt(op, "axis", 1);
                     }});
  }
  auto batchNormInputs = [](Shape x) {
    Shape c{x[1]};
    return std::vector<Input>{f32(x), f32(c), f32(c), f32(c),
                              f32(c, Fill::Positive)};
  };
  cases.push_back({"batch_norm_inference", "heterps.batch_norm",
                   batchNormInputs({6, 5, 4, 3}),
                   [](plan::Op &op) { setFloat(op, "epsilon", 1e-3); }});
  cases.push_back({"batch_norm_batch_statistics", "heterps.batch_norm",
                   batchNormInputs({7, 3, 10}), [](plan::Op &op) {
                     setBool(op, "batch_statistics", true);
                   }});
  TwinCase training{"batch_norm_training", "heterps.batch_norm",
                    batchNormInputs({33, 9}),
                    [](plan::Op &op) { setFloat(op, "momentum", 0.8); }};
  training.training = true;
  training.updated = {3, 4};
  cases.push_back(training);
  training.name = "batch_norm_training_rank_six";
  training.inputs = batchNormInputs({3, 4, 2, 3, 2, 5});
  cases.push_back(training);
  cases.push_back({"batch_norm_grad",
                   "heterps.batch_norm_grad",
                   {f32({6, 5, 4, 3}), f32({5}), f32({6, 5, 4, 3})},
                   [](plan::Op &op) { setFloat(op, "epsilon", 1e-3); },
                   0,
                   1e-4f});
  cases.push_back({"batch_norm_grad_matrix",
                   "heterps.batch_norm_grad",
                   {f32({300, 7}), f32({7}), f32({300, 7})},
                   [](plan::Op &) {},
                   0,
                   1e-4f});
  cases.push_back({"layer_norm_last",
                   "heterps.layer_norm",
                   {f32({6, 37}), f32({37}), f32({37})},
                   [](plan::Op &op) { setFloat(op, "epsilon", 1e-5); }});
  cases.push_back({"layer_norm_two_dims_no_bias",
                   "heterps.layer_norm",
                   {f32({3, 4, 70}), f32({4, 70})},
                   [](plan::Op &op) { setInt(op, "axis", 1); }});
  cases.push_back({"layer_norm_grad",
                   "heterps.layer_norm_grad",
                   {f32({6, 37}), f32({37}), f32({6, 37})},
                   [](plan::Op &op) { setFloat(op, "epsilon", 1e-5); },
                   0,
                   1e-4f});
  // Rows in five chunks of the parameter gradients' first pass, columns in
  // three tiles, the last one partial.
  cases.push_back({"layer_norm_grad_many_rows",
                   "heterps.layer_norm_grad",
                   {f32({300, 70}), f32({70}), f32({300, 70})},
                   [](plan::Op &) {},
                   0,
                   1e-4f});
  cases.push_back({"layer_norm_grad_two_dims",
                   "heterps.layer_norm_grad",
                   {f32({3, 4, 70}), f32({4, 70}), f32({3, 4, 70})},
                   [](plan::Op &op) { setInt(op, "axis", 1); },
                   0,
                   1e-4f});
  cases.push_back({"conv2d_bias_strided",
                   "heterps.conv",
                   {f32({2, 4, 9, 8}), f32({6, 4, 3, 3}), f32({6})},
                   [](plan::Op &op) {
                     setInts(op, "strides", {2, 2});
                     setInts(op, "pads", {1, 1, 1, 1});
                   },
                   0,
                   1e-4f});
  cases.push_back({"conv2d_grouped_dilated",
                   "heterps.conv",
                   {f32({2, 4, 10, 10}), f32({6, 2, 3, 3})},
                   [](plan::Op &op) {
                     setInt(op, "group", 2);
                     setInts(op, "dilations", {2, 2});
                     setInts(op, "pads", {2, 2, 2, 2});
                   },
                   0,
                   1e-4f});
  cases.push_back({"conv1d_uneven_pads",
                   "heterps.conv",
                   {f32({3, 5, 20}), f32({4, 5, 4}), f32({4})},
                   [](plan::Op &op) {
                     setInts(op, "strides", {3});
                     setInts(op, "pads", {0, 2});
                   },
                   0,
                   1e-4f});
  cases.push_back({"conv3d",
                   "heterps.conv",
                   {f32({1, 2, 5, 6, 4}), f32({3, 2, 2, 3, 2})},
                   [](plan::Op &) {},
                   0,
                   1e-4f});
  cases.push_back({"conv_grad_2d_grouped",
                   "heterps.conv_grad",
                   {f32({2, 4, 9, 8}), f32({6, 2, 3, 3}), f32({2, 6, 5, 8})},
                   [](plan::Op &op) {
                     setInt(op, "group", 2);
                     setInts(op, "strides", {2, 1});
                     setInts(op, "pads", {1, 0, 1, 2});
                   },
                   0,
                   1e-4f});
  cases.push_back({"conv_grad_1d_dilated",
                   "heterps.conv_grad",
                   {f32({2, 3, 16}), f32({5, 3, 3}), f32({2, 5, 7})},
                   [](plan::Op &op) {
                     setInts(op, "dilations", {2});
                     setInts(op, "pads", {1, 1});
                     setInts(op, "strides", {2});
                   },
                   0,
                   1e-4f});
  auto transposed2d = [](plan::Op &op) {
    setInts(op, "strides", {2, 2});
    setInts(op, "pads", {1, 1, 1, 1});
    setInts(op, "output_padding", {1, 0});
  };
  auto transposed1d = [](plan::Op &op) {
    setInt(op, "group", 2);
    setInts(op, "strides", {3});
  };
  cases.push_back({"conv_transpose2d_strided_bias",
                   "heterps.conv_transpose",
                   {f32({2, 4, 5, 6}), f32({4, 3, 3, 3}), f32({3})},
                   transposed2d,
                   0,
                   1e-4f});
  cases.push_back({"conv_transpose1d_grouped",
                   "heterps.conv_transpose",
                   {f32({3, 4, 7}), f32({4, 2, 3})},
                   transposed1d,
                   0,
                   1e-4f});
  cases.push_back({"conv_transpose_grad_2d",
                   "heterps.conv_transpose_grad",
                   {f32({2, 4, 5, 6}), f32({4, 3, 3, 3}), f32({2, 3, 10, 11})},
                   transposed2d,
                   0,
                   1e-4f});
  cases.push_back({"conv_transpose_grad_1d_grouped",
                   "heterps.conv_transpose_grad",
                   {f32({3, 4, 7}), f32({4, 2, 3}), f32({3, 4, 21})},
                   transposed1d,
                   0,
                   1e-4f});
  for (const char *kind : {"max", "avg"}) {
    std::string k = kind;
    auto window = [](plan::Op &op) {
      setInts(op, "kernel_shape", {3, 2});
      setInts(op, "strides", {2, 3});
      setInts(op, "pads", {1, 0, 0, 1});
      setBool(op, "ceil_mode", true);
      setBool(op, "count_include_pad", true);
    };
    cases.push_back(
        {k + "_pool", "heterps." + k + "_pool", {f32({2, 3, 9, 8})}, window});
    cases.push_back({k + "_pool_grad",
                     "heterps.pool_grad",
                     {f32({2, 3, 9, 8}), f32({2, 3, 5, 3}), f32({2, 3, 5, 3})},
                     [window, k](plan::Op &op) {
                       window(op);
                       setString(op, "kind", k);
                     }});
    cases.push_back({k + "_pool_1d_dilated",
                     "heterps." + k + "_pool",
                     {f32({3, 2, 17})},
                     [](plan::Op &op) {
                       setInts(op, "kernel_shape", {4});
                       setInts(op, "strides", {3});
                       setInts(op, "pads", {2, 1});
                       setInts(op, "dilations", {2});
                     }});
  }
  cases.push_back(
      {"global_avg_pool", "heterps.global_avg_pool", {f32({2, 5, 7, 9})}});
  for (const char *kind : {"eq", "lt", "gt", "le", "ge"}) {
    std::string k = kind;
    TwinCase compare{"compare_" + k,
                     "heterps.compare",
                     {f32({4, 9}), f32({9})},
                     [k](plan::Op &op) { setString(op, "kind", k); }};
    compare.result = DType::Bool;
    // Equal elements, so that eq, le and ge see some.
    compare.relate = [](std::vector<Tensor> &in) {
      for (int64_t i = 0; i < 9; i += 2)
        in[0].as<float>()[i] = in[1].as<float>()[i];
    };
    cases.push_back(compare);
  }
  cases.push_back({"where_broadcast",
                   "heterps.where",
                   {{DType::Bool, {4, 1}}, f32({4, 7}), f32({7})}});
  for (DType to : {DType::I64, DType::I32, DType::Bool}) {
    TwinCase cast{std::string("cast_f32_to_") + dtypeName(to),
                  "heterps.cast",
                  {f32({5, 13})}};
    cast.result = to;
    // Zero, the infinities, NaN and values beyond every integer's range
    // among the values (CastValue.h says what each becomes).
    cast.relate = [](std::vector<Tensor> &in) {
      float *x = in[0].as<float>();
      x[0] = 0.0f;
      x[1] = INFINITY;
      x[2] = -INFINITY;
      x[3] = NAN;
      x[4] = 1e10f;
      x[5] = -1e10f;
      x[6] = 3e19f;
      x[7] = -3e19f;
      for (int64_t i = 8; i < 65; ++i)
        x[i] *= 100.0f;
    };
    cases.push_back(cast);
    TwinCase back{
        std::string("cast_") + dtypeName(to) + "_to_f32",
        "heterps.cast",
        {{to, {5, 13}, to == DType::Bool ? Fill::Normal : Fill::Indices}},
        [](plan::Op &) {},
        1000};
    back.result = DType::F32;
    cases.push_back(back);
  }
  cases.push_back({"reshape", "heterps.reshape", {f32({6, 4, 5})}});
  cases.push_back({"constant", "heterps.constant", {}});
  addIndexingCases(cases);
  return cases;
}

/// The plan's result types of a case: what the CPU kernel computes for its
/// shapes (ops whose results the attributes do not fix get them here).
std::vector<TensorType> resultTypes(const TwinCase &c) {
  if (!c.resultShapes.empty()) {
    std::vector<TensorType> types;
    for (const Shape &s : c.resultShapes)
      types.push_back({DType::F32, s});
    return types;
  }
  if (c.op == "heterps.reshape")
    return {{DType::F32, {6, 20}}};
  if (c.op == "heterps.constant")
    return {{DType::F32, {3, 4}}};
  return {};
}

void addConstantValue(plan::Op &op) {
  auto &t = *(*op.mutable_attrs())["value"].mutable_tensor();
  t.mutable_type()->set_dtype(plan::F32);
  t.mutable_type()->add_dims(3);
  t.mutable_type()->add_dims(4);
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i)
    v[i] = 0.25f * i - 1.0f;
  t.set_raw(v.data(), v.size() * sizeof(float));
}

Tensor draw(const Input &in, int64_t classes, std::mt19937 &rng) {
  Tensor t(in.dtype, in.shape);
  int64_t n = t.numElements();
  if (in.dtype == DType::Bool) {
    for (int64_t i = 0; i < n; ++i)
      t.as<bool>()[i] = rng() % 2;
    return t;
  }
  if (in.dtype == DType::I64 || in.dtype == DType::I32) {
    int64_t range = in.fill == Fill::Indices ? 2 * classes : classes;
    int64_t from = in.fill == Fill::Indices ? -classes : 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = from + static_cast<int64_t>(rng() % range);
      if (in.dtype == DType::I64)
        t.as<int64_t>()[i] = v;
      else
        t.as<int32_t>()[i] = static_cast<int32_t>(v);
    }
    return t;
  }
  auto uniform = [&](float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(rng);
  };
  for (int64_t i = 0; i < n; ++i) {
    float &v = t.as<float>()[i];
    switch (in.fill) {
    case Fill::Normal:
      v = uniform(-2, 2);
      break;
    case Fill::Positive:
      v = uniform(0.2f, 3);
      break;
    case Fill::Probability:
      v = uniform(0.05f, 0.95f);
      break;
    case Fill::Binary:
      v = static_cast<float>(rng() % 2);
      break;
    case Fill::Classes:
    case Fill::Indices:
      v = static_cast<float>(rng() % classes);
      break;
    }
  }
  return t;
}

//===----------------------------------------------------------------------===//
// Running one op on either column
//===----------------------------------------------------------------------===//

/// One op of a case, on one column, with host tensors in and out.
class OneOp {
public:
  OneOp(const TwinCase &c, const std::vector<Tensor> &inputs)
      : c(c), inputs(inputs) {
    op.set_name(c.op);
    op.set_location("loc(\"" + c.name + "\")");
    c.attrs(op);
    if (c.op == "heterps.constant")
      addConstantValue(op);
    for (const Tensor &t : inputs)
      types.push_back({t.dtype(), t.shape()});
  }

  /// The CPU column's results; fixes the result types of the GPU run.
  std::vector<Tensor> cpu() {
    fixResultTypes();
    OpInfo info(op, types, resultTypesFixed);
    auto kernel = KernelRegistry::global().create(info, DeviceKind::CPU);
    std::vector<Shape> out = kernel->prepareChecked(shapes());
    std::vector<Tensor> res;
    for (size_t i = 0; i < out.size(); ++i)
      res.emplace_back(resultTypesFixed[i].dtype, out[i]);
    // The operands it updates are the case's: the GPU run starts from them.
    std::vector<Tensor> operandCopies;
    for (const Tensor &t : inputs)
      operandCopies.push_back(t.clone());
    ExecContext ctx;
    ctx.training = c.training;
    kernel->run(operands(operandCopies), results(res), ctx);
    for (size_t i : c.updated)
      res.push_back(operandCopies[i]);
    return res;
  }

  /// The result types the CPU column computes for these operands.
  void fixResultTypes() {
    std::vector<TensorType> results = resultTypes(c);
    if (results.empty()) {
      // Let the CPU kernel say what it computes: one prepare with the plan's
      // result types left open (every dimension dynamic, rank from the
      // kernel's own answer).
      OpInfo probe(op, types, {{resultDType(), {}}});
      auto kernel = KernelRegistry::global().create(probe, DeviceKind::CPU);
      for (const Shape &s : kernel->prepare(shapes()))
        results.push_back({resultDType(), s});
    }
    resultTypesFixed = results;
  }

  /// The GPU column's results, copied back to the host.
  std::vector<Tensor> gpu(const std::vector<Tensor> &in) {
    DeviceRuntime &device = *gpuRuntime();
    OpInfo info(op, types, resultTypesFixed);
    auto kernel = KernelRegistry::global().create(info, DeviceKind::GPU);
    std::vector<Shape> out = kernel->prepareChecked(shapes());
    std::vector<Tensor> deviceIn, deviceOut, res;
    for (const Tensor &t : in) {
      deviceIn.push_back(device.allocate(t.dtype(), t.shape()));
      device.copyToDevice(t, deviceIn.back());
    }
    for (size_t i = 0; i < out.size(); ++i) {
      deviceOut.push_back(device.allocate(resultTypesFixed[i].dtype, out[i]));
      res.emplace_back(resultTypesFixed[i].dtype, out[i]);
    }
    ExecContext ctx;
    ctx.training = c.training;
    std::vector<Tensor *> outs = results(deviceOut);
    kernel->run(operands(deviceIn), outs, ctx);
    for (size_t i : c.updated) {
      outs.push_back(&deviceIn[i]);
      res.emplace_back(deviceIn[i].dtype(), deviceIn[i].shape());
    }
    for (size_t i = 0; i < res.size(); ++i)
      device.copyToHost(*outs[i], res[i]);
    device.synchronize();
    return res;
  }

  std::vector<Tensor> gpu() { return gpu(inputs); }

private:
  /// The case's result type, else the first operand's (the element type
  /// of every other op of the column).
  DType resultDType() const {
    if (c.result != DType::Invalid)
      return c.result;
    if (c.op == "heterps.where")
      return inputs[1].dtype();
    return inputs.empty() ? DType::F32 : inputs[0].dtype();
  }
  std::vector<Shape> shapes() const {
    std::vector<Shape> s;
    for (const Tensor &t : inputs)
      s.push_back(t.shape());
    return s;
  }
  static std::vector<const Tensor *> operands(const std::vector<Tensor> &v) {
    std::vector<const Tensor *> p;
    for (const Tensor &t : v)
      p.push_back(&t);
    return p;
  }
  static std::vector<Tensor *> results(std::vector<Tensor> &v) {
    std::vector<Tensor *> p;
    for (Tensor &t : v)
      p.push_back(&t);
    return p;
  }

  const TwinCase &c;
  const std::vector<Tensor> &inputs;
  plan::Op op;
  std::vector<TensorType> types, resultTypesFixed;
};

void expectClose(const Tensor &got, const Tensor &expected, float tolerance,
                 const std::string &what) {
  ASSERT_EQ(got.shape(), expected.shape()) << what;
  ASSERT_EQ(got.dtype(), expected.dtype()) << what;
  int64_t n = got.numElements();
  int reported = 0;
  for (int64_t i = 0; i < n && reported < 5; ++i) {
    if (got.dtype() != DType::F32) {
      // Integers and booleans: exactly.
      auto value = [&](const Tensor &t) -> int64_t {
        switch (t.dtype()) {
        case DType::I64:
          return t.as<int64_t>()[i];
        case DType::I32:
          return t.as<int32_t>()[i];
        case DType::Bool:
          return t.as<bool>()[i];
        default:
          ADD_FAILURE() << what << ": unexpected " << dtypeName(t.dtype());
          return 0;
        }
      };
      if (value(got) != value(expected)) {
        ADD_FAILURE() << what << ", element " << i << ": " << value(got)
                      << " against " << value(expected);
        ++reported;
      }
      continue;
    }
    float g = got.as<float>()[i], e = expected.as<float>()[i];
    if (!(std::abs(g - e) <= tolerance * std::max(1.0f, std::abs(e)))) {
      ADD_FAILURE() << what << ", element " << i << ": " << g << " against "
                    << e << " (relative tolerance " << tolerance << ")";
      ++reported;
    }
  }
}

/// Names a case in gtest's messages (instead of its bytes).
void PrintTo(const TwinCase &c, std::ostream *os) { *os << c.name; }

class Twin : public ::testing::TestWithParam<TwinCase> {};

TEST_P(Twin, GpuKernelMatchesItsCpuTwin) {
  const TwinCase &c = GetParam();
  std::mt19937 rng(std::hash<std::string>()(c.name) & 0xffffffff);
  std::vector<Tensor> inputs;
  for (const Input &in : c.inputs)
    inputs.push_back(draw(in, c.classes, rng));
  if (c.relate)
    c.relate(inputs);
  OneOp op(c, inputs);
  // The CPU half runs everywhere: a case the CPU column refuses is a broken
  // case, here as on a GPU machine.
  std::vector<Tensor> expected = op.cpu();
  if (!gpuRuntime())
    GTEST_SKIP() << queryDevices().gpuStatus;
  std::vector<Tensor> got = op.gpu();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    expectClose(got[i], expected[i], c.tolerance,
                c.op + " result " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(GpuColumn, Twin, ::testing::ValuesIn(twinCases()),
                         [](const ::testing::TestParamInfo<TwinCase> &info) {
                           return info.param.name;
                         });

/// --gpu-math=tf32|bf16: the products round their operands for the tensor
/// cores. Each product's error stays within the rounding bound: a relative
/// error of 2^-p per operand (p = 11 for TF32, 8 for BF16; twice that if
/// cuBLAS truncates), so at most `tolerance` times the sum of |a| |b| over
/// the product's terms.
TEST(GpuColumn, ReducedPrecisionProductsStayWithinTheirRoundingBound) {
  struct Mode {
    GpuMath math;
    float tolerance;
  };
  std::vector<TwinCase> products;
  for (const TwinCase &c : twinCases())
    if (c.name == "gemm_nt" || c.name == "matmul_batched")
      products.push_back(c);
  products.push_back({"gemm_256",
                      "heterps.gemm",
                      {f32({256, 256}), f32({256, 256})},
                      [](plan::Op &) {}});
  ASSERT_EQ(products.size(), 3u);
  for (Mode mode : {Mode{GpuMath::TF32, 3e-3f}, Mode{GpuMath::BF16, 2e-2f}}) {
    SCOPED_TRACE(gpuMathName(mode.math));
    for (const TwinCase &c : products) {
      std::mt19937 rng(std::hash<std::string>()(c.name) & 0xffffffff);
      std::vector<Tensor> inputs, magnitudes;
      for (const Input &in : c.inputs) {
        inputs.push_back(draw(in, c.classes, rng));
        magnitudes.push_back(inputs.back().clone());
        for (int64_t i = 0; i < magnitudes.back().numElements(); ++i)
          magnitudes.back().as<float>()[i] =
              std::abs(magnitudes.back().as<float>()[i]);
      }
      OneOp op(c, inputs), magnitude(c, magnitudes);
      Tensor expected = op.cpu()[0], bound = magnitude.cpu()[0];
      if (!gpuRuntime())
        GTEST_SKIP() << queryDevices().gpuStatus;
      gpuRuntime()->setMath(mode.math);
      std::vector<Tensor> got;
      try {
        got = op.gpu();
      } catch (...) {
        gpuRuntime()->setMath(GpuMath::F32);
        throw;
      }
      gpuRuntime()->setMath(GpuMath::F32);
      ASSERT_EQ(got[0].shape(), expected.shape());
      int reported = 0;
      for (int64_t i = 0; i < expected.numElements() && reported < 5; ++i) {
        float g = got[0].as<float>()[i], e = expected.as<float>()[i];
        float limit = mode.tolerance * bound.as<float>()[i] + 1e-6f;
        if (!(std::abs(g - e) <= limit)) {
          ADD_FAILURE() << c.name << ", element " << i << ": " << g
                        << " against " << e << ", beyond " << limit;
          ++reported;
        }
      }
    }
  }
}

/// A kernel added to the GPU column without a case here would never be
/// compared with its CPU twin.
TEST(GpuColumn, EveryKernelHasATwinCase) {
  std::set<std::string> covered;
  for (const TwinCase &c : twinCases())
    covered.insert(c.op);
  // The parameters' loads and updates read and write the ParamStore: the
  // training tests and the optimizer test below hold them against the CPU.
  std::set<std::string> trained = {"heterps.load_param",
                                   "heterps.update_param"};
  for (const std::string &name :
       KernelRegistry::global().opNames(DeviceKind::GPU))
    EXPECT_TRUE(covered.count(name) || trained.count(name))
        << name << " has no twin case";
  for (const std::string &name : covered)
    EXPECT_TRUE(KernelRegistry::global().has(name, DeviceKind::GPU))
        << name << " has a twin case but no GPU kernel";
}

/// Every op of the CPU column has a GPU kernel, but the host ops (tables,
/// the PS, channels) and the ops that take and give only integers or
/// booleans, which run on the CPU whatever their stage.
TEST(GpuColumn, EveryCpuOpReadingFloatsHasAGpuKernel) {
  const std::set<std::string> onIntegersAlone = {"heterps.logical",
                                                 "heterps.not"};
  for (const std::string &name :
       KernelRegistry::global().opNames(DeviceKind::CPU))
    if (!runsOnHost(name) && !onIntegersAlone.count(name)) {
      EXPECT_TRUE(KernelRegistry::global().has(name, DeviceKind::GPU))
          << name << " has a CPU kernel but no GPU kernel";
    }
}

/// The GPU kernels that only move elements (slices, transposes, gathers)
/// take 4- and 8-byte ones: made for 2-byte ones they fail naming the op,
/// so that --fallback=cpu runs the CPU's kernel, which moves any size.
TEST(GpuColumn, MovesOfTwoByteElementsFallBackToTheCpu) {
  plan::Op transpose;
  transpose.set_name("heterps.transpose");
  setInts(transpose, "perm", {1, 0});
  for (DType half : {DType::F16, DType::BF16}) {
    OpInfo info(transpose, {{half, {2, 3}}}, {{half, {3, 2}}});
    DeviceKind column = DeviceKind::GPU;
    std::unique_ptr<Kernel> kernel = createKernelFor(
        KernelRegistry::global(), info, DeviceKind::GPU, true, column);
    EXPECT_EQ(column, DeviceKind::CPU) << dtypeName(half);
    try {
      createKernelFor(KernelRegistry::global(), info, DeviceKind::GPU, false,
                      column);
      ADD_FAILURE() << dtypeName(half) << " taken without the fallback";
    } catch (const RuntimeError &e) {
      std::string message = e.what();
      EXPECT_NE(message.find("heterps.transpose"), std::string::npos)
          << message;
      EXPECT_NE(message.find(std::string("got ") + dtypeName(half)),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("--fallback=cpu"), std::string::npos) << message;
    }
  }
}

/// A GPU that is present but does not run this build's kernels (a build for
/// another architecture, a broken driver) fails here instead of turning
/// every other GPU test into a skip.
TEST(GpuColumn, TheProbeKernelRanOnEveryGpu) {
  DeviceInventory inventory = queryDevices();
  ASSERT_TRUE(inventory.cudaBuilt);
  if (inventory.gpus.empty())
    GTEST_SKIP() << "no GPU here (" << inventory.gpuStatus << ")";
  for (const GpuInfo &gpu : inventory.gpus)
    EXPECT_TRUE(gpu.kernelsRun)
        << "GPU " << gpu.index << " (" << gpu.name
        << ") did not run the probe kernel: " << inventory.gpuStatus;
  EXPECT_NE(gpuRuntime(), nullptr);
}

/// Indices out of range fail the GPU op as they fail the CPU's, naming the
/// first one.
TEST(GpuColumn, AGatherIndexOutOfRangeIsAnErrorNamingIt) {
  TwinCase c{"gather_bad",
             "heterps.gather",
             {f32({5, 2}), {DType::I64, {3}, Fill::Classes}},
             [](plan::Op &op) { setInt(op, "axis", 0); },
             5};
  std::mt19937 rng(1);
  std::vector<Tensor> inputs{draw(c.inputs[0], 5, rng),
                             Tensor(DType::I64, {3})};
  int64_t *idx = inputs[1].as<int64_t>();
  idx[0] = -5;
  idx[1] = 7;
  idx[2] = -9;
  OneOp op(c, inputs);
  op.fixResultTypes();
  EXPECT_THROW(op.cpu(), RuntimeError);
  if (!gpuRuntime())
    GTEST_SKIP() << "no usable GPU here";
  try {
    op.gpu();
    ADD_FAILURE() << "the GPU gather accepted index 7 of 5 rows";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("index 7 at position 1"),
              std::string::npos)
        << e.what();
  }
}

/// A scatter_nd tuple with an entry out of range fails the GPU op naming the
/// tuple and the entry, as on the CPU, and an element gather's index
/// likewise.
TEST(GpuColumn, ScatterAndElementIndicesOutOfRangeAreErrorsNamingThem) {
  TwinCase nd{"scatter_nd_bad",
              "heterps.scatter_nd",
              {f32({4, 3, 2}), {DType::I64, {3, 2}}, f32({3, 2})},
              [](plan::Op &op) { setString(op, "reduction", "add"); }};
  TwinCase elements{"gather_elements_bad",
                    "heterps.gather_elements",
                    {f32({4, 3}), {DType::I32, {2, 3}}},
                    [](plan::Op &op) { setInt(op, "axis", 0); }};
  std::mt19937 rng(2);
  std::vector<Tensor> ndInputs{draw(nd.inputs[0], 0, rng),
                               Tensor(DType::I64, {3, 2}),
                               draw(nd.inputs[2], 0, rng)};
  // Tuple 1 is (-1, 3): its entry 1 is beyond the 3 columns; tuple 2 is
  // bad too, later.
  const int64_t tuples[] = {0, 1, -1, 3, 9, 0};
  std::copy(std::begin(tuples), std::end(tuples), ndInputs[1].as<int64_t>());
  std::vector<Tensor> elementInputs{draw(elements.inputs[0], 0, rng),
                                    Tensor(DType::I32, {2, 3})};
  const int32_t indices[] = {0, 3, 1, -5, 4, 2};
  std::copy(std::begin(indices), std::end(indices),
            elementInputs[1].as<int32_t>());
  struct Expectation {
    const TwinCase &c;
    const std::vector<Tensor> &inputs;
    std::string message;
  };
  for (const Expectation &e :
       {Expectation{nd, ndInputs,
                    "index tuple 1 has 3 in dimension 1, out "
                    "of range [0, 3)"},
        Expectation{elements, elementInputs, "index -5 out of range [0, 4)"}}) {
    OneOp op(e.c, e.inputs);
    op.fixResultTypes();
    try {
      op.cpu();
      ADD_FAILURE() << e.c.op << " accepted a bad index on the CPU";
    } catch (const RuntimeError &error) {
      EXPECT_NE(std::string(error.what()).find(e.message), std::string::npos)
          << error.what();
    }
    if (!gpuRuntime())
      continue;
    try {
      op.gpu();
      ADD_FAILURE() << e.c.op << " accepted a bad index on the GPU";
    } catch (const RuntimeError &error) {
      EXPECT_NE(std::string(error.what()).find(e.message), std::string::npos)
          << error.what();
    }
  }
  if (!gpuRuntime())
    GTEST_SKIP() << "no usable GPU here (the CPU halves passed)";
}

/// Bag offsets beyond the rows are an error naming the entry, as on the
/// CPU (the GPU checks them on the device, then names them as the CPU does).
TEST(GpuColumn, BagOffsetsBeyondTheRowsAreAnErrorNamingThem) {
  TwinCase c{"segment_bad",
             "heterps.segment_reduce",
             {f32({5, 2}), {DType::I64, {3}, Fill::Classes}},
             [](plan::Op &op) { setString(op, "kind", "sum"); },
             1};
  std::mt19937 rng(1);
  std::vector<Tensor> inputs{draw(c.inputs[0], 1, rng),
                             Tensor(DType::I64, {3})};
  int64_t *offsets = inputs[1].as<int64_t>();
  offsets[0] = 0;
  offsets[1] = 2;
  offsets[2] = 9;
  OneOp op(c, inputs);
  op.fixResultTypes();
  const char *expected = "offsets[2] = 9 is beyond the 5 rows of the bags";
  try {
    op.cpu();
    ADD_FAILURE() << "the CPU accepted offsets beyond the rows";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << e.what();
  }
  if (!gpuRuntime())
    GTEST_SKIP() << "no usable GPU here";
  try {
    op.gpu();
    ADD_FAILURE() << "the GPU accepted offsets beyond the rows";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << e.what();
  }
}

//===----------------------------------------------------------------------===//
// Gradients against central differences, on the GPU column
//===----------------------------------------------------------------------===//

/// dx of unary_grad against dy * (f(x + h) - f(x - h)) / 2h, both from GPU
/// kernels; points within 2h of a kink (relu, abs, leaky_relu, clip) are
/// left out.
TEST(GpuColumnGradients, UnaryGradientsAreCentralDifferences) {
  if (!gpuRuntime())
    GTEST_SKIP() << "no usable GPU here";
  const float h = 1e-2f;
  for (const char *kind : kUnaryKinds) {
    std::string k = kind;
    SCOPED_TRACE(k);
    Fill fill = positiveDomain(k) ? Fill::Positive : Fill::Normal;
    std::mt19937 rng(11);
    Tensor x = draw(f32({1000}, fill), 0, rng);
    Tensor dy = draw(f32({1000}), 0, rng);
    Tensor xp = x.clone(), xm = x.clone();
    for (int64_t i = 0; i < 1000; ++i) {
      xp.as<float>()[i] += h;
      xm.as<float>()[i] -= h;
    }
    TwinCase forward{k, "heterps." + k, {f32({1000})}, [k](plan::Op &op) {
                       unaryAttrs(op, k);
                     }};
    std::vector<Tensor> in{x};
    OneOp f(forward, in);
    f.cpu();
    Tensor y = f.gpu({x})[0], yp = f.gpu({xp})[0], ym = f.gpu({xm})[0];
    TwinCase backward{k + "_grad",
                      "heterps.unary_grad",
                      {f32({1000}), f32({1000}), f32({1000})},
                      [k](plan::Op &op) {
                        unaryAttrs(op, k);
                        setString(op, "kind", k);
                      }};
    std::vector<Tensor> bin{x, y, dy};
    OneOp b(backward, bin);
    b.cpu();
    Tensor dx = b.gpu()[0];
    int checked = 0;
    for (int64_t i = 0; i < 1000; ++i) {
      float xi = x.as<float>()[i];
      bool nearKink = std::abs(xi) < 2 * h ||
                      (k == "clip" && (std::abs(xi + 1.0f) < 2 * h ||
                                       std::abs(xi - 1.5f) < 2 * h));
      if (nearKink)
        continue;
      float numeric =
          dy.as<float>()[i] * (yp.as<float>()[i] - ym.as<float>()[i]) / (2 * h);
      float analytic = dx.as<float>()[i];
      EXPECT_NEAR(analytic, numeric, 2e-3f + 2e-2f * std::abs(numeric))
          << "x = " << xi;
      ++checked;
    }
    EXPECT_GT(checked, 900);
  }
}

/// loss_grad of each loss (mean reduction) against central differences of
/// the GPU loss, one prediction element at a time.
TEST(GpuColumnGradients, LossGradientsAreCentralDifferences) {
  if (!gpuRuntime())
    GTEST_SKIP() << "no usable GPU here";
  struct Loss {
    const char *kind;
    Input pred, label;
    bool logits;
    int64_t classes;
  };
  const Loss losses[] = {
      {"bce", f32({8, 1}, Fill::Probability), f32({8, 1}, Fill::Binary), false,
       0},
      {"bce", f32({8, 2}), f32({8, 2}, Fill::Binary), true, 0},
      {"mse", f32({8, 2}), f32({8, 2}), false, 0},
      {"softmax_ce", f32({6, 5}), {DType::I64, {6}, Fill::Classes}, true, 5},
      {"nll", f32({6, 5}), {DType::I64, {6}, Fill::Classes}, false, 5},
  };
  const float h = 1e-2f;
  for (const Loss &l : losses) {
    std::string kind = l.kind;
    SCOPED_TRACE(kind + (l.logits ? " from logits" : ""));
    std::mt19937 rng(3);
    Tensor pred = draw(l.pred, l.classes, rng);
    Tensor label = draw(l.label, l.classes, rng);
    Tensor one(DType::F32, {});
    one.as<float>()[0] = 1.0f;
    bool logits = l.logits;
    TwinCase loss{
        kind,
        "heterps." + kind + "_loss",
        {l.pred, l.label},
        [logits](plan::Op &op) { setBool(op, "from_logits", logits); },
        l.classes};
    std::vector<Tensor> in{pred, label};
    OneOp forward(loss, in);
    forward.cpu();
    TwinCase grad{kind + "_grad",
                  "heterps.loss_grad",
                  {l.pred, l.label, f32({})},
                  [kind, logits](plan::Op &op) {
                    setString(op, "kind", kind);
                    setBool(op, "from_logits", logits);
                  },
                  l.classes};
    std::vector<Tensor> gin{pred, label, one};
    OneOp backward(grad, gin);
    backward.cpu();
    Tensor dx = backward.gpu()[0];
    for (int64_t i = 0; i < pred.numElements(); ++i) {
      Tensor plus = pred.clone(), minus = pred.clone();
      plus.as<float>()[i] += h;
      minus.as<float>()[i] -= h;
      float lp = forward.gpu({plus, label})[0].as<float>()[0];
      float lm = forward.gpu({minus, label})[0].as<float>()[0];
      float numeric = (lp - lm) / (2 * h);
      EXPECT_NEAR(dx.as<float>()[i], numeric, 1e-3f + 2e-2f * std::abs(numeric))
          << "prediction element " << i;
    }
  }
}

//===----------------------------------------------------------------------===//
// Training on a GPU stage
//===----------------------------------------------------------------------===//

/// Where the plans compiled at build time are (HETERPS_GPU_TEST_PLANS,
/// where scripts/gpu-check.sh unpacked them, or the build tree).
std::string planDirectory() {
  const char *dir = std::getenv("HETERPS_GPU_TEST_PLANS");
  return dir ? dir : HETERPS_GPU_TEST_PLANS;
}

/// The CTR model's training plan (heterps-opt at build time, optimizer
/// `optimizer`), its one stage of kind `kind`.
plan::Plan ctrPlan(const std::string &kind, const std::string &optimizer) {
  return fixtures::placeStages(
      loadPlan(planDirectory() + "/ctr-" + optimizer + ".plan"), kind);
}

/// A process that runs no GPU kernel never loads cuBLAS (CublasLibrary.h):
/// not when it asks for the devices, trains a CPU stage, or (without a
/// usable GPU) trains a GPU stage with the CPU fallback. Checked in a fresh
/// process (the death test runs this binary again for this test alone),
/// since an earlier test of this one may have loaded it.
TEST(GpuColumnLibraries, RunsWithoutGpuKernelsDoNotLoadCublas) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        int failures = cuda::cublasLoaded();
        queryDevices();
        fixtures::trainCtr(ctrPlan("cpu", "adam"), {}, 2);
        if (!gpuRuntime()) {
          ProgramOptions fallback;
          fallback.fallbackToCPU = true;
          fixtures::trainCtr(ctrPlan("gpu", "sgd"), fallback, 2);
        }
        failures += cuda::cublasLoaded();
        std::exit(failures);
      },
      ::testing::ExitedWithCode(0), "");
}

/// cuBLAS loads, with every function the GPU column calls, from the
/// toolkit this build was compiled against; loading it needs no GPU.
TEST(GpuColumnLibraries, CublasLoadsWithEveryFunctionTheColumnCalls) {
  const cuda::CublasLibrary &blas = cuda::cublas();
  EXPECT_TRUE(cuda::cublasLoaded());
  EXPECT_FALSE(blas.file.empty());
  for (const void *function :
       {reinterpret_cast<const void *>(blas.create),
        reinterpret_cast<const void *>(blas.destroy),
        reinterpret_cast<const void *>(blas.setStream),
        reinterpret_cast<const void *>(blas.setMathMode),
        reinterpret_cast<const void *>(blas.statusString),
        reinterpret_cast<const void *>(blas.gemmEx),
        reinterpret_cast<const void *>(blas.gemmStridedBatchedEx)})
    EXPECT_NE(function, nullptr);
  // A function that needs no GPU answers.
  const char *reason = blas.statusString(CUBLAS_STATUS_NOT_SUPPORTED);
  ASSERT_NE(reason, nullptr);
  EXPECT_NE(std::string(reason), "");
}

/// The plans load everywhere; the GPU half needs a GPU.
TEST(GpuColumnTraining, TrainingStepsMatchTheCpu) {
  for (const char *optimizer : {"sgd", "adam"}) {
    SCOPED_TRACE(optimizer);
    std::vector<std::vector<float>> expected =
        fixtures::trainCtr(ctrPlan("cpu", optimizer), {}, 3);
    if (!gpuRuntime())
      GTEST_SKIP() << "no usable GPU here";
    std::vector<std::vector<float>> got =
        fixtures::trainCtr(ctrPlan("gpu", optimizer), {}, 3);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t p = 0; p < got.size(); ++p) {
      ASSERT_EQ(got[p].size(), expected[p].size());
      for (size_t i = 0; i < got[p].size(); ++i)
        EXPECT_NEAR(got[p][i], expected[p][i],
                    1e-5f * std::max(1.0f, std::abs(expected[p][i])))
            << "parameter " << p << ", element " << i;
    }
  }
}

/// The optimizer steps of parameters kept in device memory follow the
/// host's rule (OptimizerMath.h) within 1e-5 for every optimizer over a few
/// steps, their state included; so do the gradient sums of a step.
TEST(GpuColumnTraining, OptimizerStepsOnTheDeviceMatchTheHost) {
  std::vector<std::pair<std::string, OptimizerConfig>> configs(4);
  configs[0].first = "sgd";
  configs[0].second.learningRate = 0.1;
  configs[0].second.weightDecay = 0.01;
  configs[1].first = "momentum";
  configs[1].second.kind = OptimizerConfig::Kind::Momentum;
  configs[1].second.momentum = 0.9;
  configs[1].second.weightDecay = 0.01;
  configs[2].first = "adagrad";
  configs[2].second.kind = OptimizerConfig::Kind::Adagrad;
  configs[2].second.learningRate = 0.05;
  configs[3].first = "adam";
  configs[3].second.kind = OptimizerConfig::Kind::Adam;
  configs[3].second.weightDecay = 0.001;
  const int64_t n = 1037;
  for (auto &[name, config] : configs) {
    SCOPED_TRACE(name);
    std::mt19937 rng(11);
    Tensor w = draw(f32({n}), 0, rng);
    int64_t slots = config.stateSlots();
    Tensor state(DType::F32, {slots, n});
    std::vector<Tensor> grads;
    for (int step = 0; step < 4; ++step)
      grads.push_back(draw(f32({n}), 0, rng));
    Tensor expected = w.clone();
    for (int step = 0; step < 4; ++step)
      applyUpdate(config, expected.as<float>(), grads[step].as<float>(),
                  slots ? state.as<float>() : nullptr, n, step + 1);
    DeviceRuntime *gpu = gpuRuntime();
    if (!gpu)
      GTEST_SKIP() << queryDevices().gpuStatus;
    Tensor dw = gpu->allocate(DType::F32, {n});
    Tensor dg = gpu->allocate(DType::F32, {n}), dstate;
    if (slots)
      dstate = gpu->allocate(DType::F32, {slots, n});
    gpu->copyToDevice(w, dw);
    for (int step = 0; step < 4; ++step) {
      gpu->copyToDevice(grads[step], dg);
      gpu->applyUpdate(config, dw, dg, dstate, step + 1);
    }
    Tensor got(DType::F32, {n});
    gpu->copyToHost(dw, got);
    expectClose(got, expected, 1e-5f, name + " parameter");
    if (slots) {
      Tensor gotState(DType::F32, {slots, n});
      gpu->copyToHost(dstate, gotState);
      expectClose(gotState, state, 1e-5f, name + " state");
    }
  }

  // y = 0.5 x over a y of NaN (beta 0 reads nothing), then y = 2 x' + y.
  std::mt19937 rng(12);
  Tensor x = draw(f32({3, 333}), 0, rng), x2 = draw(f32({3, 333}), 0, rng);
  Tensor expected(DType::F32, {3, 333});
  for (int64_t i = 0; i < expected.numElements(); ++i)
    expected.as<float>()[i] =
        2.0f * x2.as<float>()[i] + 0.5f * x.as<float>()[i];
  DeviceRuntime *gpu = gpuRuntime();
  Tensor nan(DType::F32, {3, 333});
  std::fill_n(nan.as<float>(), nan.numElements(), std::nanf(""));
  Tensor dx = gpu->allocate(DType::F32, {3, 333}),
         dx2 = gpu->allocate(DType::F32, {3, 333}),
         dy = gpu->allocate(DType::F32, {3, 333});
  gpu->copyToDevice(x, dx);
  gpu->copyToDevice(x2, dx2);
  gpu->copyToDevice(nan, dy);
  gpu->scaleAdd(0.5f, dx, 0.0f, dy);
  gpu->scaleAdd(2.0f, dx2, 1.0f, dy);
  Tensor got(DType::F32, {3, 333});
  gpu->copyToHost(dy, got);
  expectClose(got, expected, 1e-6f, "scaleAdd");
}

/// The two-stage CTR plan (lookups on the CPU, the MLP in two replicas on
/// the GPU, four micro-batches) trains as the same plan all on the CPU.
TEST(GpuColumnTraining, ATwoStagePlanWithItsMlpOnTheGpuMatchesTheCpu) {
  auto train = [](PipelineExecutor &pipeline) {
    for (int step = 0; step < 5; ++step) {
      fixtures::CtrBatch batch(37, 700 + step, 20);
      pipeline.run(batch.inputs(), true, {});
    }
  };
  // The MLP's stage on the GPU (the paper's plan), then both: stage 0's
  // replicas queue their next forward before their copies to the host end,
  // and receive the gradients in page-locked buffers.
  for (auto [optimizer, allGpu] :
       {std::pair("sgd", false), std::pair("adam", false),
        std::pair("adam", true)}) {
    SCOPED_TRACE(std::string(optimizer) + (allGpu ? ", all on the GPU" : ""));
    plan::Plan cpu =
        loadPlan(planDirectory() + "/ctr-two-stages-" + optimizer + ".plan");
    ASSERT_EQ(cpu.stages_size(), 2);
    plan::Plan gpu = cpu;
    gpu.mutable_stages(1)->set_kind("gpu");
    if (allGpu)
      gpu.mutable_stages(0)->set_kind("gpu");
    PipelineOptions options;
    options.maxWorkers = 4;
    ParamStore cpuParams(cpu, 7), gpuParams(gpu, 7);
    LocalEmbeddingStore cpuTables(cpu, 7), gpuTables(gpu, 7);
    PipelineExecutor onCpu(cpu, cpuParams, cpuTables, ProgramOptions{},
                           options);
    train(onCpu);
    if (!gpuRuntime())
      GTEST_SKIP() << queryDevices().gpuStatus;
    PipelineExecutor onGpu(gpu, gpuParams, gpuTables, ProgramOptions{},
                           options);
    train(onGpu);
    for (auto &[name, param] : cpuParams.all()) {
      const Tensor &got = gpuParams.get(name).value;
      for (int64_t i = 0; i < got.numElements(); ++i)
        EXPECT_NEAR(got.as<float>()[i], param.value.as<float>()[i],
                    1e-5f *
                        std::max(1.0f, std::abs(param.value.as<float>()[i])))
            << "parameter " << name << ", element " << i;
    }
    const Tensor &expected = cpuTables.rows(0), &got = gpuTables.rows(0);
    for (int64_t i = 0; i < got.numElements(); ++i)
      EXPECT_NEAR(got.as<float>()[i], expected.as<float>()[i], 1e-5f)
          << "table element " << i;
  }
}

} // namespace
