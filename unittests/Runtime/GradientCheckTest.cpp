//===- GradientCheckTest.cpp - Backward ops against finite differences ----===//
//
// Every differentiable op is checked end to end: a small module whose float
// operands are dense parameters (and, for lookups, embedding tables) goes
// through heterps-autodiff (SGD, learning rate 1) and heterps-emit-plan; the
// runtime loads the plan and takes one training step, so the analytic
// gradient of every parameter element is its old value minus its new one.
// That is compared with central differences of the loss computed by
// inference runs (training-mode forwards for batch normalisation, whose
// inference uses the running statistics).
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Import/ONNX/ImportONNX.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/Runtime/Program.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace heterps;
using namespace heterps::runtime;

namespace {

using Values = std::vector<float>;

//===----------------------------------------------------------------------===//
// Values and types
//===----------------------------------------------------------------------===//

std::string tensorType(const Shape &shape, const char *element = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + element + ">";
}

/// A dense literal of `shape` (nested brackets, exact float digits).
std::string denseLiteral(const Shape &shape, const Values &v) {
  std::string out;
  size_t next = 0;
  std::function<void(size_t)> emit = [&](size_t dim) {
    if (dim == shape.size()) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.8e", static_cast<double>(v[next++]));
      out += buf;
      return;
    }
    out += "[";
    for (int64_t i = 0; i < shape[dim]; ++i) {
      if (i)
        out += ", ";
      emit(dim + 1);
    }
    out += "]";
  };
  emit(0);
  return "dense<" + out + ">";
}

std::string indexString(const Shape &shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d)
    s += (d ? "," : "") + std::to_string(idx[d]);
  return s + "]";
}

/// Random values; every case has its own stream.
class Rng {
public:
  explicit Rng(const std::string &seed)
      : gen(static_cast<uint32_t>(std::hash<std::string>()(seed))) {}

  Values uniform(int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    Values v(n);
    for (float &x : v)
      x = d(gen);
    return v;
  }
  /// Magnitudes in [lo, hi], random signs: away from kinks at 0.
  Values awayFromZero(int64_t n, float lo, float hi) {
    Values v = uniform(n, lo, hi);
    std::bernoulli_distribution sign(0.5);
    for (float &x : v)
      if (sign(gen))
        x = -x;
    return v;
  }
  /// Distinct values in [lo, hi], at least (hi - lo) / n apart, shuffled:
  /// maxima stay maxima under a small perturbation.
  Values distinct(int64_t n, float lo, float hi) {
    Values v(n);
    float step = (hi - lo) / static_cast<float>(std::max<int64_t>(n - 1, 1));
    std::uniform_real_distribution<float> jitter(-0.2f * step, 0.2f * step);
    for (int64_t i = 0; i < n; ++i)
      v[i] = lo + step * static_cast<float>(i) + jitter(gen);
    std::shuffle(v.begin(), v.end(), gen);
    return v;
  }
  std::vector<int64_t> ints(int64_t n, int64_t lo, int64_t hi) {
    std::uniform_int_distribution<int64_t> d(lo, hi);
    std::vector<int64_t> v(n);
    for (int64_t &x : v)
      x = d(gen);
    return v;
  }

private:
  std::mt19937 gen;
};

Tensor floatTensor(const Shape &shape, const Values &v) {
  Tensor t(DType::F32, shape);
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numElements());
  std::copy(v.begin(), v.end(), t.as<float>());
  return t;
}

Tensor intTensor(const Shape &shape, const std::vector<int64_t> &v) {
  Tensor t(DType::I64, shape);
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numElements());
  std::copy(v.begin(), v.end(), t.as<int64_t>());
  return t;
}

//===----------------------------------------------------------------------===//
// Compiling a module into a plan
//===----------------------------------------------------------------------===//

std::string tempPlanPath() {
  static int counter = 0;
  return (std::filesystem::temp_directory_path() /
          ("heterps-gradcheck-" + std::to_string(::getpid()) + "-" +
           std::to_string(counter++) + ".plan"))
      .string();
}

/// Runs heterps-autodiff (SGD, learning rate 1) and heterps-emit-plan on
/// `module` and loads the plan; on failure returns false with the
/// diagnostics in `error`.
bool compileModule(mlir::ModuleOp module,
                   const mlir::heterps::AutodiffPassOptions &autodiff,
                   plan::Plan &out, std::string &error) {
  mlir::MLIRContext *context = module.getContext();
  std::string path = tempPlanPath();
  llvm::raw_string_ostream os(error);
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &d) {
    os << d << "\n";
    return mlir::success();
  });
  mlir::PassManager pm(context);
  pm.addPass(mlir::heterps::createAutodiffPass(autodiff));
  mlir::heterps::EmitPlanPassOptions emit;
  emit.file = path;
  emit.batchSize = 4;
  pm.addPass(mlir::heterps::createEmitPlanPass(emit));
  if (mlir::failed(pm.run(module))) {
    std::filesystem::remove(path);
    return false;
  }
  try {
    out = loadPlan(path);
  } catch (const std::exception &e) {
    error += e.what();
    std::filesystem::remove(path);
    return false;
  }
  std::filesystem::remove(path);
  return true;
}

std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  registry.insert<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect>();
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

mlir::heterps::AutodiffPassOptions sgdOptions() {
  mlir::heterps::AutodiffPassOptions o;
  o.optimizer = mlir::heterps::OptimizerKind::sgd;
  o.learningRate = 1.0;
  return o;
}

//===----------------------------------------------------------------------===//
// A gradient check
//===----------------------------------------------------------------------===//

/// An op under test: parameters, tables and inputs, and the function body,
/// which defines `%loss` (a 0-D loss) from them.
struct GradCase {
  explicit GradCase(std::string name) : name(name), rng(name) {}

  struct Param {
    std::string name;
    Shape shape;
    Values values;
    bool frozen;
  };
  struct Table {
    std::string name;
    int64_t vocab, dim;
    Values values;
  };
  struct Input {
    std::string type;
    Tensor value;
  };

  /// A trainable parameter `@name`, loaded into `%name` at the top.
  GradCase &param(const std::string &n, const Shape &s, Values v) {
    params.push_back({n, s, std::move(v), false});
    return *this;
  }
  /// A frozen parameter (a target, class weights, running statistics).
  GradCase &frozen(const std::string &n, const Shape &s, Values v) {
    params.push_back({n, s, std::move(v), true});
    return *this;
  }
  GradCase &table(const std::string &n, int64_t vocab, int64_t dim) {
    tables.push_back({n, vocab, dim, rng.uniform(vocab * dim, -1.0f, 1.0f)});
    return *this;
  }
  /// A function argument `%name` of MLIR type `type` fed with `value`.
  GradCase &input(const std::string &n, const std::string &type, Tensor v) {
    inputNames.push_back(n);
    inputs.push_back({type, std::move(v)});
    return *this;
  }
  GradCase &code(const std::string &lines) {
    body += lines;
    if (!lines.empty() && lines.back() != '\n')
      body += "\n";
    return *this;
  }
  /// `%loss = mse_loss %value, target` with a random frozen target of the
  /// value's static shape.
  GradCase &mseLoss(const std::string &value, const Shape &shape) {
    std::string t = tensorType(shape);
    frozen("target", shape, rng.uniform(numElements(shape), -1.0f, 1.0f));
    return code("%loss = heterps.mse_loss " + value + ", %target : (" + t +
                ", " + t + ") -> tensor<f32>");
  }
  /// The same against an input target of a dynamic type.
  GradCase &mseLossInput(const std::string &value, const Shape &type,
                         const Shape &shape) {
    std::string t = tensorType(type);
    input("target", t,
          floatTensor(shape, rng.uniform(numElements(shape), -1.0f, 1.0f)));
    return code("%loss = heterps.mse_loss " + value + ", %target : (" + t +
                ", " + t + ") -> tensor<f32>");
  }

  std::string moduleText() const {
    std::ostringstream os;
    for (const Param &p : params)
      os << "heterps.param " << (p.frozen ? "frozen " : "") << "@" << p.name
         << " : " << tensorType(p.shape) << " = "
         << denseLiteral(p.shape, p.values) << "\n";
    for (const Table &t : tables)
      os << "heterps.embedding_table @" << t.name << " {vocab = " << t.vocab
         << " : i64, dim = " << t.dim
         << " : i64, initializer = #heterps.init<zeros>, value = "
         << denseLiteral({t.vocab, t.dim}, t.values) << " : "
         << tensorType({t.vocab, t.dim}) << "}\n";
    os << "func.func @main(";
    for (size_t i = 0; i < inputs.size(); ++i)
      os << (i ? ", " : "") << "%" << inputNames[i] << ": " << inputs[i].type;
    os << ") -> tensor<f32> {\n";
    for (const Param &p : params)
      os << "  %" << p.name << " = heterps.load_param @" << p.name << " : "
         << tensorType(p.shape) << "\n";
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);)
      os << "  " << line << "\n";
    os << "  return %loss : tensor<f32>\n}\n";
    return os.str();
  }

  std::string name;
  Rng rng;
  std::vector<Param> params;
  std::vector<Table> tables;
  std::vector<std::string> inputNames;
  std::vector<Input> inputs;
  std::string body;
  /// Finite differences of training-mode forwards (batch norm).
  bool trainingForward = false;
  float eps = 1e-2f;
  double rtol = 1e-2, atol = 1e-3;
};

/// A compiled case, ready to run.
struct Compiled {
  std::unique_ptr<mlir::MLIRContext> context;
  plan::Plan plan;
  std::unique_ptr<ParamStore> params;
  std::unique_ptr<LocalEmbeddingStore> tables;
  std::unique_ptr<Program> program;
  std::vector<const Tensor *> inputs;
  int lossOutput = 0;
};

/// Compiles `text`; records a failure naming `what` when it does not.
std::unique_ptr<Compiled>
compile(const std::string &what, const std::string &text,
        const mlir::heterps::AutodiffPassOptions &options) {
  auto c = std::make_unique<Compiled>();
  c->context = makeContext();
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    llvm::raw_string_ostream os(error);
    mlir::ScopedDiagnosticHandler handler(c->context.get(),
                                          [&](mlir::Diagnostic &d) {
                                            os << d << "\n";
                                            return mlir::success();
                                          });
    module = mlir::parseSourceString<mlir::ModuleOp>(text, c->context.get());
  }
  if (!module) {
    ADD_FAILURE() << what << ": the module does not parse:\n"
                  << error << "\n"
                  << text;
    return nullptr;
  }
  if (!compileModule(*module, options, c->plan, error)) {
    ADD_FAILURE() << what << ": autodiff / emit-plan failed:\n"
                  << error << "\n"
                  << text;
    return nullptr;
  }
  c->params = std::make_unique<ParamStore>(c->plan, 1);
  c->tables = std::make_unique<LocalEmbeddingStore>(c->plan, 1);
  c->program = std::make_unique<Program>(c->plan, *c->params, *c->tables,
                                         ProgramOptions());
  c->lossOutput = static_cast<int>(c->plan.training().loss_output());
  return c;
}

/// Binds `inputs` (in argument order) to the plan's inputs.
bool bindInputs(Compiled &c, const std::string &what,
                const std::vector<GradCase::Input> &inputs) {
  c.inputs.assign(c.plan.inputs_size(), nullptr);
  if (static_cast<size_t>(c.plan.inputs_size()) != inputs.size()) {
    ADD_FAILURE() << what << ": the plan has " << c.plan.inputs_size()
                  << " inputs, the case gives " << inputs.size();
    return false;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    int index = c.program->inputIndex("input" + std::to_string(i));
    if (index < 0) {
      ADD_FAILURE() << what << ": no plan input 'input" << i << "'";
      return false;
    }
    c.inputs[index] = &inputs[i].value;
  }
  return true;
}

/// Everything a step may change: parameter values and table rows.
struct Snapshot {
  std::map<std::string, Tensor> params;
  std::vector<Tensor> tables;

  static Snapshot take(Compiled &c) {
    Snapshot s;
    for (auto &[name, p] : c.params->all())
      s.params[name] = p.value.clone();
    for (int t = 0; t < c.tables->numTables(); ++t)
      s.tables.push_back(c.tables->rows(t).clone());
    return s;
  }
  void restore(Compiled &c) const {
    for (auto &[name, p] : c.params->all())
      std::memcpy(p.value.data(), params.at(name).data(), p.value.byteSize());
    for (int t = 0; t < c.tables->numTables(); ++t)
      std::memcpy(c.tables->rows(t).data(), tables[t].data(),
                  tables[t].byteSize());
  }
};

float runLoss(Compiled &c, bool training) {
  std::vector<const Tensor *> out =
      c.program->run(c.inputs, training, {c.lossOutput});
  return out[0]->as<float>()[0];
}

/// One gradient to check: the analytic values and where to perturb.
struct Checked {
  std::string what;
  Shape shape;
  float *data;
  Values analytic;
};

/// Checks the gradient of every element of the case's trainable parameters
/// and tables; a failure names the case and its worst element. Prints the
/// largest relative error (over elements whose gradient is not negligible)
/// and the largest absolute error.
void checkGradients(GradCase &gc) {
  SCOPED_TRACE(gc.name);
  std::string text = gc.moduleText();
  std::unique_ptr<Compiled> c = compile(gc.name, text, sgdOptions());
  if (!c || !bindInputs(*c, gc.name, gc.inputs))
    return;
  try {
    Snapshot before = Snapshot::take(*c);
    float trainingLoss = runLoss(*c, /*training=*/true);
    std::vector<Checked> checks;
    for (const GradCase::Param &p : gc.params) {
      if (p.frozen) {
        const Tensor &now = c->params->get(p.name).value;
        // Batch norm updates its running statistics, nothing else may.
        bool unchanged =
            std::memcmp(now.data(), before.params.at(p.name).data(),
                        now.byteSize()) == 0;
        EXPECT_TRUE(unchanged || gc.trainingForward)
            << gc.name << ": the step changed frozen parameter @" << p.name;
        continue;
      }
      DenseParameter &param = c->params->get(p.name);
      const Tensor &old = before.params.at(p.name);
      Values g(old.numElements());
      for (size_t i = 0; i < g.size(); ++i)
        g[i] = old.as<float>()[i] - param.value.as<float>()[i];
      checks.push_back(
          {"@" + p.name, param.value.shape(), param.value.as<float>(), g});
    }
    for (const GradCase::Table &t : gc.tables) {
      int id = c->tables->tableId(t.name);
      Tensor &rows = c->tables->rows(id);
      const Tensor &old = before.tables[id];
      Values g(old.numElements());
      for (size_t i = 0; i < g.size(); ++i)
        g[i] = old.as<float>()[i] - rows.as<float>()[i];
      checks.push_back(
          {"table @" + t.name + " row", rows.shape(), rows.as<float>(), g});
    }
    before.restore(*c);

    auto loss = [&] {
      float l = runLoss(*c, gc.trainingForward);
      if (gc.trainingForward)
        before.restore(*c);
      return l;
    };
    float forwardLoss = loss();
    if (!gc.trainingForward) {
      EXPECT_NEAR(trainingLoss, forwardLoss,
                  1e-5 * std::max(1.0f, std::abs(forwardLoss)))
          << gc.name << ": the training step and inference disagree on the "
          << "loss";
    }
    EXPECT_TRUE(std::isfinite(forwardLoss))
        << gc.name << ": loss is not finite";

    double worstRatio = 0, maxRel = 0, maxAbs = 0;
    std::string worst;
    int64_t elements = 0;
    for (Checked &ch : checks) {
      for (size_t i = 0; i < ch.analytic.size(); ++i, ++elements) {
        float saved = ch.data[i];
        float up = saved + gc.eps, down = saved - gc.eps;
        ch.data[i] = up;
        double lp = loss();
        ch.data[i] = down;
        double lm = loss();
        ch.data[i] = saved;
        double numeric = (lp - lm) / (static_cast<double>(up) - down);
        double analytic = ch.analytic[i];
        double err = std::abs(analytic - numeric);
        double scale = std::max(std::abs(analytic), std::abs(numeric));
        double tol = gc.atol + gc.rtol * scale;
        maxAbs = std::max(maxAbs, err);
        if (scale > 10 * gc.atol)
          maxRel = std::max(maxRel, err / scale);
        double ratio = std::isfinite(analytic) && std::isfinite(numeric)
                           ? err / tol
                           : std::numeric_limits<double>::infinity();
        if (ratio > worstRatio || worst.empty()) {
          worstRatio = ratio;
          std::ostringstream os;
          os << ch.what << indexString(ch.shape, static_cast<int64_t>(i))
             << ": analytic " << analytic << " vs numeric " << numeric
             << " (error " << err << ", tolerance " << tol << ")";
          worst = os.str();
        }
      }
    }
    std::printf("[gradcheck] %-36s %4lld elements  max rel err %.2e  max abs "
                "err %.2e\n",
                gc.name.c_str(), static_cast<long long>(elements), maxRel,
                maxAbs);
    EXPECT_GT(elements, 0) << gc.name << ": nothing to check";
    EXPECT_LE(worstRatio, 1.0) << "gradient of op '" << gc.name
                               << "' is wrong; worst element " << worst << "\n"
                               << text;
  } catch (const std::exception &e) {
    ADD_FAILURE() << gc.name << ": the runtime failed: " << e.what() << "\n"
                  << text;
  }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

struct BinaryShapes {
  const char *label;
  Shape lhs, rhs, out;
};

class BinaryGradTest : public ::testing::TestWithParam<const char *> {};

TEST_P(BinaryGradTest, BroadcastParams) {
  std::string op = GetParam();
  for (const BinaryShapes &s :
       {BinaryShapes{"3x4 . 3x4", {3, 4}, {3, 4}, {3, 4}},
        BinaryShapes{"3x4 . 4", {3, 4}, {4}, {3, 4}},
        BinaryShapes{"3x1 . 1x4", {3, 1}, {1, 4}, {3, 4}},
        BinaryShapes{"f32 . 2x3", {}, {2, 3}, {2, 3}},
        BinaryShapes{"2x1x4 . 3x1", {2, 1, 4}, {3, 1}, {2, 3, 4}}}) {
    GradCase c(op + " " + s.label);
    c.param("a", s.lhs, c.rng.awayFromZero(numElements(s.lhs), 0.5f, 1.5f));
    c.param("b", s.rhs, c.rng.awayFromZero(numElements(s.rhs), 0.5f, 1.5f));
    c.code("%y = heterps." + op + " %a, %b : (" + tensorType(s.lhs) + ", " +
           tensorType(s.rhs) + ") -> " + tensorType(s.out));
    c.mseLoss("%y", s.out);
    checkGradients(c);
  }
}

/// A dynamic batch: ?x4 (an input times a parameter) with a 4-vector.
TEST_P(BinaryGradTest, DynamicBatch) {
  std::string op = GetParam();
  GradCase c(op + " ?x4 . 4");
  c.input("x", "tensor<?x4xf32>",
          floatTensor({3, 4}, c.rng.awayFromZero(12, 0.5f, 1.5f)));
  c.param("w", {4}, c.rng.awayFromZero(4, 0.5f, 1.5f));
  c.param("b", {4}, c.rng.awayFromZero(4, 0.5f, 1.5f));
  c.code("%h = heterps.mul %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> "
         "tensor<?x4xf32>");
  c.code("%y = heterps." + op +
         " %h, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>");
  c.code("%z = heterps." + op +
         " %b, %y : (tensor<4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>");
  c.mseLossInput("%z", {-1, 4}, {3, 4});
  checkGradients(c);
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryGradTest,
                         ::testing::Values("add", "sub", "mul", "div"),
                         [](const auto &info) {
                           return std::string(info.param);
                         });

struct UnarySpec {
  const char *op;
  const char *attrs;
  /// Values of the input: [lo, hi], or magnitudes [lo, hi] with random signs.
  float lo, hi;
  bool signs;
};

class UnaryGradTest : public ::testing::TestWithParam<UnarySpec> {};

TEST_P(UnaryGradTest, Param) {
  const UnarySpec &s = GetParam();
  GradCase c(std::string(s.op) + (*s.attrs ? std::string(" ") + s.attrs : ""));
  Values x = s.signs ? c.rng.awayFromZero(12, s.lo, s.hi)
                     : c.rng.uniform(12, s.lo, s.hi);
  c.param("x", {3, 4}, x);
  c.code(std::string("%y = heterps.") + s.op + " %x " + s.attrs +
         " : tensor<3x4xf32>");
  c.mseLoss("%y", {3, 4});
  checkGradients(c);
}

INSTANTIATE_TEST_SUITE_P(
    Ops, UnaryGradTest,
    ::testing::Values(
        UnarySpec{"relu", "", 0.1f, 1.5f, true},
        UnarySpec{"sigmoid", "", 0.0f, 2.0f, true},
        UnarySpec{"tanh", "", 0.0f, 1.5f, true},
        UnarySpec{"erf", "", -1.5f, 1.5f, false},
        UnarySpec{"exp", "", -1.0f, 1.0f, false},
        UnarySpec{"log", "", 0.3f, 2.0f, false},
        UnarySpec{"sqrt", "", 0.3f, 2.0f, false},
        UnarySpec{"neg", "", -1.0f, 1.0f, false},
        UnarySpec{"abs", "", 0.1f, 1.5f, true},
        UnarySpec{"leaky_relu", "{alpha = 0.2 : f32}", 0.1f, 1.5f, true},
        UnarySpec{"softmax", "", -2.0f, 2.0f, false},
        UnarySpec{"softmax", "{axis = 0 : i64}", -2.0f, 2.0f, false},
        UnarySpec{"log_softmax", "", -2.0f, 2.0f, false},
        UnarySpec{"log_softmax", "{axis = 0 : i64}", -2.0f, 2.0f, false}),
    [](const auto &info) {
      std::string n =
          std::string(info.param.op) + "_" + std::to_string(info.index);
      return n;
    });

/// Softmax along a middle axis (strided rows).
TEST(GradientCheck, SoftmaxMiddleAxis) {
  for (const char *op : {"softmax", "log_softmax"}) {
    GradCase c(std::string(op) + " 2x3x4 axis 1");
    c.param("x", {2, 3, 4}, c.rng.uniform(24, -2.0f, 2.0f));
    c.code(std::string("%y = heterps.") + op +
           " %x {axis = 1 : i64} : tensor<2x3x4xf32>");
    c.mseLoss("%y", {2, 3, 4});
    checkGradients(c);
  }
}

/// A float-to-float cast passes the gradient through, cast back.
TEST(GradientCheck, CastF64) {
  GradCase c("cast f32 -> f64 -> f32");
  c.param("x", {2, 3}, c.rng.uniform(6, -1.0f, 1.0f));
  c.code("%d = heterps.cast %x : (tensor<2x3xf32>) -> tensor<2x3xf64>");
  c.code("%e = heterps.exp %d : tensor<2x3xf64>");
  c.code("%y = heterps.cast %e : (tensor<2x3xf64>) -> tensor<2x3xf32>");
  c.mseLoss("%y", {2, 3});
  checkGradients(c);
}

/// Gradients of values with several uses, and of a parameter loaded twice,
/// are summed.
TEST(GradientCheck, SeveralUses) {
  {
    GradCase c("concat of one value twice");
    c.param("a", {2, 3}, c.rng.uniform(6, -1.0f, 1.0f));
    c.code("%y = heterps.concat %a, %a {axis = 1 : i64} : "
           "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>");
    c.mseLoss("%y", {2, 6});
    checkGradients(c);
  }
  {
    GradCase c("parameter loaded twice");
    c.param("w", {3, 3}, c.rng.uniform(9, -1.0f, 1.0f));
    c.code("%w2 = heterps.load_param @w : tensor<3x3xf32>");
    c.code("%h = heterps.matmul %w, %w2 : (tensor<3x3xf32>, tensor<3x3xf32>) "
           "-> tensor<3x3xf32>");
    c.code("%y = heterps.mul %h, %w : (tensor<3x3xf32>, tensor<3x3xf32>) -> "
           "tensor<3x3xf32>");
    c.mseLoss("%y", {3, 3});
    checkGradients(c);
  }
}

/// Clip: inside, below and above the bounds, away from them.
TEST(GradientCheck, Clip) {
  for (const char *attrs :
       {"{max = 0.5 : f32, min = -0.5 : f32}", "{min = -0.25 : f32}"}) {
    GradCase c(std::string("clip ") + attrs);
    Values x(12);
    Values picks = {-1.2f, -0.8f, -0.4f, -0.1f, 0.1f, 0.3f,
                    0.6f,  0.9f,  1.3f,  -0.6f, 0.0f, 0.7f};
    Values shift = c.rng.uniform(12, -0.03f, 0.03f);
    for (int i = 0; i < 12; ++i)
      x[i] = picks[i] + shift[i];
    c.param("x", {3, 4}, x);
    c.code(std::string("%y = heterps.clip %x ") + attrs + " : tensor<3x4xf32>");
    c.mseLoss("%y", {3, 4});
    checkGradients(c);
  }
}

/// Dropout is the identity in inference, so it is checked at the mask:
/// the training step's gradient is zero exactly where its output is, and
/// 1 / (1 - ratio) times the upstream gradient elsewhere.
TEST(GradientCheck, DropoutMask) {
  const int64_t n = 64;
  Rng rng("dropout");
  Values x = rng.uniform(n, 0.5f, 1.5f);
  std::ostringstream text;
  text << "heterps.param @x : tensor<" << n
       << "xf32> = " << denseLiteral({n}, x) << "\n"
       << "heterps.param frozen @t : tensor<" << n << "xf32> = dense<5.0>\n"
       << "func.func @main() -> (tensor<" << n << "xf32>, tensor<f32>) {\n"
       << "  %x = heterps.load_param @x : tensor<" << n << "xf32>\n"
       << "  %t = heterps.load_param @t : tensor<" << n << "xf32>\n"
       << "  %y = heterps.dropout %x {ratio = 0.5 : f32} : tensor<" << n
       << "xf32>\n"
       << "  %loss = heterps.mse_loss %y, %t : (tensor<" << n
       << "xf32>, tensor<" << n << "xf32>) -> tensor<f32>\n"
       << "  return %y, %loss : tensor<" << n << "xf32>, tensor<f32>\n}\n";
  std::unique_ptr<Compiled> c = compile("dropout", text.str(), sgdOptions());
  ASSERT_TRUE(c);
  c->inputs.clear();
  for (int step = 0; step < 3; ++step) {
    Snapshot before = Snapshot::take(*c);
    std::vector<const Tensor *> out = c->program->run({}, true, {0, 1});
    const float *y = out[0]->as<float>();
    const float *w = c->params->get("x").value.as<float>();
    const float *w0 = before.params.at("x").as<float>();
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; ++i) {
      float grad = w0[i] - w[i];
      if (y[i] == 0.0f) {
        ++dropped;
        EXPECT_EQ(grad, 0.0f) << "dropout: element " << i
                              << " is dropped in the forward but has gradient "
                              << grad << " (step " << step << ")";
      } else {
        EXPECT_NEAR(y[i], 2.0f * w0[i], 1e-5f) << "dropout: element " << i;
        // d/dx of mean((2x - 5)^2) is 2 * 2 (2x - 5) / n.
        float expected = 4.0f * (y[i] - 5.0f) / static_cast<float>(n);
        EXPECT_NEAR(grad, expected, 1e-4f)
            << "dropout: element " << i << " is kept in the forward; analytic "
            << grad << " vs " << expected << " (step " << step << ")";
      }
    }
    EXPECT_GT(dropped, n / 8) << "dropout: ratio 0.5 dropped " << dropped;
    EXPECT_LT(dropped, n - n / 8) << "dropout: ratio 0.5 dropped " << dropped;
    before.restore(*c);
  }
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

class GemmGradTest
    : public ::testing::TestWithParam<std::tuple<bool, bool, float, float>> {};

TEST_P(GemmGradTest, Bias) {
  auto [ta, tb, alpha, beta] = GetParam();
  const int64_t m = 3, k = 4, n = 2;
  char label[96];
  std::snprintf(label, sizeof(label),
                "gemm trans_a=%d trans_b=%d alpha=%g beta=%g", ta, tb, alpha,
                beta);
  GradCase c(label);
  Shape a = ta ? Shape{k, m} : Shape{m, k};
  Shape b = tb ? Shape{n, k} : Shape{k, n};
  c.param("a", a, c.rng.uniform(m * k, -1.0f, 1.0f));
  c.param("b", b, c.rng.uniform(k * n, -1.0f, 1.0f));
  c.param("c", {n}, c.rng.uniform(n, -1.0f, 1.0f));
  char attrs[128];
  std::snprintf(attrs, sizeof(attrs),
                "{alpha = %.3f : f32, beta = %.3f : f32, trans_a = %s, "
                "trans_b = %s}",
                alpha, beta, ta ? "true" : "false", tb ? "true" : "false");
  c.code(std::string("%y = heterps.gemm %a, %b, %c ") + attrs + " : (" +
         tensorType(a) + ", " + tensorType(b) + ", " + tensorType({n}) +
         ") -> " + tensorType({m, n}));
  c.mseLoss("%y", {m, n});
  checkGradients(c);
}

INSTANTIATE_TEST_SUITE_P(
    Transposes, GemmGradTest,
    ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                       ::testing::Values(0.75f),
                       // beta == alpha and beta == 1 take oneDNN's fused
                       // bias or not.
                       ::testing::Values(1.5f, 1.0f, 0.75f)),
    [](const auto &info) {
      float beta = std::get<3>(info.param);
      return std::string("ta") + (std::get<0>(info.param) ? "1" : "0") + "_tb" +
             (std::get<1>(info.param) ? "1" : "0") + "_beta" +
             (beta == 1.0f   ? "1"
              : beta == 1.5f ? "1_5"
                             : "0_75");
    });

/// A C that is a full matrix and a column, with a dynamic batch of A.
TEST(GradientCheck, GemmMatrixAndColumnBias) {
  {
    GradCase c("gemm C 3x2 beta=0.5");
    c.param("a", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.param("b", {4, 2}, c.rng.uniform(8, -1.0f, 1.0f));
    c.param("c", {3, 2}, c.rng.uniform(6, -1.0f, 1.0f));
    c.code("%y = heterps.gemm %a, %b, %c {beta = 0.5 : f32} : "
           "(tensor<3x4xf32>, tensor<4x2xf32>, tensor<3x2xf32>) -> "
           "tensor<3x2xf32>");
    c.mseLoss("%y", {3, 2});
    checkGradients(c);
  }
  {
    GradCase c("gemm C 3x1 alpha=2");
    c.param("a", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.param("b", {2, 4}, c.rng.uniform(8, -1.0f, 1.0f));
    c.param("c", {3, 1}, c.rng.uniform(3, -1.0f, 1.0f));
    c.code("%y = heterps.gemm %a, %b, %c {alpha = 2.0 : f32, trans_b = true} "
           ": (tensor<3x4xf32>, tensor<2x4xf32>, tensor<3x1xf32>) -> "
           "tensor<3x2xf32>");
    c.mseLoss("%y", {3, 2});
    checkGradients(c);
  }
  for (const char *attrs : {"", "{alpha = 0.5 : f32, beta = 2.0 : f32}"}) {
    GradCase c(std::string("gemm C 0-D ") + attrs);
    c.param("a", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.param("b", {4, 2}, c.rng.uniform(8, -1.0f, 1.0f));
    c.param("c", {}, {0.3f});
    c.code(std::string("%y = heterps.gemm %a, %b, %c ") + attrs +
           " : (tensor<3x4xf32>, tensor<4x2xf32>, tensor<f32>) -> "
           "tensor<3x2xf32>");
    c.mseLoss("%y", {3, 2});
    checkGradients(c);
  }
  for (const char *attrs : {"", "{beta = 0.25 : f32}"}) {
    GradCase c(std::string("gemm C 1x2 ") + attrs);
    c.param("a", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.param("b", {4, 2}, c.rng.uniform(8, -1.0f, 1.0f));
    c.param("c", {1, 2}, c.rng.uniform(2, -1.0f, 1.0f));
    c.code(std::string("%y = heterps.gemm %a, %b, %c ") + attrs +
           " : (tensor<3x4xf32>, tensor<4x2xf32>, tensor<1x2xf32>) -> "
           "tensor<3x2xf32>");
    c.mseLoss("%y", {3, 2});
    checkGradients(c);
  }
  {
    GradCase c("gemm ?x4 input, no C");
    c.input("x", "tensor<?x4xf32>",
            floatTensor({3, 4}, c.rng.uniform(12, -1.0f, 1.0f)));
    c.param("w", {2, 4}, c.rng.uniform(8, -1.0f, 1.0f));
    c.param("b", {2}, c.rng.uniform(2, -1.0f, 1.0f));
    c.code("%y = heterps.gemm %x, %w, %b {trans_b = true} : "
           "(tensor<?x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> "
           "tensor<?x2xf32>");
    c.mseLossInput("%y", {-1, 2}, {3, 2});
    checkGradients(c);
  }
}

TEST(GradientCheck, MatMul) {
  GradCase c("matmul 3x4 . 4x2");
  c.param("a", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
  c.param("b", {4, 2}, c.rng.uniform(8, -1.0f, 1.0f));
  c.code("%y = heterps.matmul %a, %b : (tensor<3x4xf32>, tensor<4x2xf32>) -> "
         "tensor<3x2xf32>");
  c.mseLoss("%y", {3, 2});
  checkGradients(c);

  GradCase d("matmul ?x4 . 4x2 (dynamic)");
  d.input("x", "tensor<?x4xf32>",
          floatTensor({2, 4}, d.rng.uniform(8, -1.0f, 1.0f)));
  d.param("w", {4, 3}, d.rng.uniform(12, -1.0f, 1.0f));
  d.param("v", {3, 2}, d.rng.uniform(6, -1.0f, 1.0f));
  d.code("%h = heterps.matmul %x, %w : (tensor<?x4xf32>, tensor<4x3xf32>) -> "
         "tensor<?x3xf32>");
  d.code("%y = heterps.matmul %h, %v : (tensor<?x3xf32>, tensor<3x2xf32>) -> "
         "tensor<?x2xf32>");
  d.mseLossInput("%y", {-1, 2}, {2, 2});
  checkGradients(d);
}

/// Batched: equal batch dimensions, and a matrix shared by the batch.
TEST(GradientCheck, MatMulBatched) {
  GradCase c("matmul 2x3x4 . 2x4x2");
  c.param("a", {2, 3, 4}, c.rng.uniform(24, -1.0f, 1.0f));
  c.param("b", {2, 4, 2}, c.rng.uniform(16, -1.0f, 1.0f));
  c.code("%y = heterps.matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x4x2xf32>) "
         "-> tensor<2x3x2xf32>");
  c.mseLoss("%y", {2, 3, 2});
  checkGradients(c);

  GradCase d("matmul 2x3x4 . 4x2 (shared)");
  d.param("a", {2, 3, 4}, d.rng.uniform(24, -1.0f, 1.0f));
  d.param("b", {4, 2}, d.rng.uniform(8, -1.0f, 1.0f));
  d.code("%y = heterps.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x2xf32>) "
         "-> tensor<2x3x2xf32>");
  d.mseLoss("%y", {2, 3, 2});
  checkGradients(d);
}

/// Pow with a trainable base and exponent, broadcast.
TEST(GradientCheck, Pow) {
  GradCase c("pow 3x4 . 4");
  c.param("a", {3, 4}, c.rng.uniform(12, 0.5f, 1.5f));
  c.param("b", {4}, c.rng.uniform(4, 0.5f, 2.5f));
  c.code("%y = heterps.pow %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> "
         "tensor<3x4xf32>");
  c.mseLoss("%y", {3, 4});
  checkGradients(c);
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

TEST(GradientCheck, Concat) {
  {
    GradCase c("concat axis 1");
    c.param("a", {2, 3}, c.rng.uniform(6, -1.0f, 1.0f));
    c.param("b", {2, 2}, c.rng.uniform(4, -1.0f, 1.0f));
    c.param("d", {2, 1}, c.rng.uniform(2, -1.0f, 1.0f));
    c.code("%y = heterps.concat %a, %b, %d {axis = 1 : i64} : "
           "(tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x1xf32>) -> "
           "tensor<2x6xf32>");
    c.mseLoss("%y", {2, 6});
    checkGradients(c);
  }
  {
    GradCase c("concat axis 0");
    c.param("a", {1, 3}, c.rng.uniform(3, -1.0f, 1.0f));
    c.param("b", {2, 3}, c.rng.uniform(6, -1.0f, 1.0f));
    c.code("%y = heterps.concat %a, %b {axis = 0 : i64} : "
           "(tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>");
    c.mseLoss("%y", {3, 3});
    checkGradients(c);
  }
  {
    GradCase c("concat axis -1, dynamic batch");
    c.input("x", "tensor<?x3xf32>",
            floatTensor({2, 3}, c.rng.uniform(6, -1.0f, 1.0f)));
    c.param("w1", {3, 3}, c.rng.uniform(9, -1.0f, 1.0f));
    c.param("w2", {3, 2}, c.rng.uniform(6, -1.0f, 1.0f));
    c.code("%h = heterps.matmul %x, %w1 : (tensor<?x3xf32>, tensor<3x3xf32>) "
           "-> tensor<?x3xf32>");
    c.code("%g = heterps.matmul %x, %w2 : (tensor<?x3xf32>, tensor<3x2xf32>) "
           "-> tensor<?x2xf32>");
    c.code("%y = heterps.concat %h, %g {axis = -1 : i64} : "
           "(tensor<?x3xf32>, tensor<?x2xf32>) -> tensor<?x5xf32>");
    c.mseLossInput("%y", {-1, 5}, {2, 5});
    checkGradients(c);
  }
}

TEST(GradientCheck, Reshape) {
  {
    GradCase c("reshape 2x6 -> 3x4");
    c.param("a", {2, 6}, c.rng.uniform(12, -1.0f, 1.0f));
    c.param("b", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.code("%r = heterps.reshape %a : (tensor<2x6xf32>) -> tensor<3x4xf32>");
    c.code("%y = heterps.mul %r, %b : (tensor<3x4xf32>, tensor<3x4xf32>) -> "
           "tensor<3x4xf32>");
    c.mseLoss("%y", {3, 4});
    checkGradients(c);
  }
  {
    GradCase c("reshape ?x6 -> ?x2x3");
    c.input("x", "tensor<?x6xf32>",
            floatTensor({2, 6}, c.rng.uniform(12, -1.0f, 1.0f)));
    c.param("w", {6}, c.rng.uniform(6, -1.0f, 1.0f));
    c.param("v", {2, 3}, c.rng.uniform(6, -1.0f, 1.0f));
    c.code("%h = heterps.mul %x, %w : (tensor<?x6xf32>, tensor<6xf32>) -> "
           "tensor<?x6xf32>");
    c.code("%r = heterps.reshape %h : (tensor<?x6xf32>) -> tensor<?x2x3xf32>");
    c.code("%y = heterps.mul %r, %v : (tensor<?x2x3xf32>, tensor<2x3xf32>) -> "
           "tensor<?x2x3xf32>");
    c.mseLossInput("%y", {-1, 2, 3}, {2, 2, 3});
    checkGradients(c);
  }
}

TEST(GradientCheck, Slice) {
  struct SliceSpec {
    const char *name, *starts, *ends, *steps;
    Shape out;
  };
  for (const SliceSpec &spec :
       {SliceSpec{"slice columns 2:5", "0, 2", "3, 5", "1, 1", {3, 3}},
        SliceSpec{"slice step 2", "1, 0", "3, 6", "1, 2", {2, 3}},
        SliceSpec{"slice backwards", "2, 5", "-1, 0", "-1, -2", {3, 3}}}) {
    GradCase c(spec.name);
    c.param("a", {3, 6}, c.rng.uniform(18, -1.0f, 1.0f));
    c.param("s", spec.out, c.rng.uniform(numElements(spec.out), -1.0f, 1.0f));
    c.code(std::string("%t = heterps.slice %a {starts = array<i64: ") +
           spec.starts + ">, ends = array<i64: " + spec.ends +
           ">, steps = array<i64: " + spec.steps +
           ">} : (tensor<3x6xf32>) -> " + tensorType(spec.out));
    c.code("%y = heterps.mul %t, %s : (" + tensorType(spec.out) + ", " +
           tensorType(spec.out) + ") -> " + tensorType(spec.out));
    c.mseLoss("%y", spec.out);
    checkGradients(c);
  }
  {
    // The packed q/k/v split of an attention layer: a dynamic batch kept
    // whole, the features cut in three.
    GradCase c("slice ?x6 -> ?x2 (the middle third)");
    c.input("x", "tensor<?x6xf32>",
            floatTensor({2, 6}, c.rng.uniform(12, -1.0f, 1.0f)));
    c.param("w", {6}, c.rng.uniform(6, -1.0f, 1.0f));
    c.code("%h = heterps.mul %x, %w : (tensor<?x6xf32>, tensor<6xf32>) -> "
           "tensor<?x6xf32>");
    c.code("%k = heterps.slice %h {starts = array<i64: 0, 2>, ends = "
           "array<i64: 9223372036854775807, 4>, steps = array<i64: 1, 1>} : "
           "(tensor<?x6xf32>) -> tensor<?x2xf32>");
    c.mseLossInput("%k", {-1, 2}, {2, 2});
    checkGradients(c);
  }
}

TEST(GradientCheck, Pad) {
  for (const char *mode : {"constant", "reflect", "edge"}) {
    GradCase c(std::string("pad ") + mode + " 3x4 -> 5x7");
    c.param("a", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.param("s", {5, 7}, c.rng.uniform(35, -1.0f, 1.0f));
    c.code(std::string("%p = heterps.pad %a {mode = \"") + mode +
           "\", pads = array<i64: 1, 2, 1, 1>, value = 0.5 : f64} : "
           "(tensor<3x4xf32>) -> tensor<5x7xf32>");
    c.code("%y = heterps.mul %p, %s : (tensor<5x7xf32>, tensor<5x7xf32>) -> "
           "tensor<5x7xf32>");
    c.mseLoss("%y", {5, 7});
    checkGradients(c);
  }
  {
    // An image batch: the batch and channels are not padded.
    GradCase c("pad reflect ?x2x3x3 spatial");
    c.input("x", "tensor<?x2x3x3xf32>",
            floatTensor({2, 2, 3, 3}, c.rng.uniform(36, -1.0f, 1.0f)));
    c.param("w", {3}, c.rng.uniform(3, -1.0f, 1.0f));
    c.code("%h = heterps.mul %x, %w : (tensor<?x2x3x3xf32>, tensor<3xf32>) -> "
           "tensor<?x2x3x3xf32>");
    c.code("%p = heterps.pad %h {mode = \"reflect\", pads = array<i64: 0, 0, "
           "2, 1, 0, 0, 1, 2>} : (tensor<?x2x3x3xf32>) -> tensor<?x2x6x6xf32>");
    c.mseLossInput("%p", {-1, 2, 6, 6}, {2, 2, 6, 6});
    checkGradients(c);
  }
}

TEST(GradientCheck, CumSum) {
  for (const char *attrs :
       {"{axis = 1 : i64}", "{axis = 1 : i64, exclusive = true}",
        "{axis = 0 : i64, reverse = true}",
        "{axis = -1 : i64, exclusive = true, reverse = true}"}) {
    GradCase c(std::string("cumsum ") + attrs);
    c.param("a", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.code(std::string("%c = heterps.cumsum %a ") + attrs +
           " : tensor<3x4xf32>");
    c.mseLoss("%c", {3, 4});
    checkGradients(c);
  }
}

TEST(GradientCheck, GatherElements) {
  // Top-k style picks along axis 1, one element picked twice.
  GradCase c("gather_elements axis 1");
  c.param("d", {2, 5}, c.rng.uniform(10, -1.0f, 1.0f));
  c.code("%i = heterps.constant dense<[[4, 0, 4], [-1, 2, 1]]> : "
         "tensor<2x3xi64>");
  c.code("%g = heterps.gather_elements %d, %i {axis = 1 : i64} : "
         "(tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>");
  c.mseLoss("%g", {2, 3});
  checkGradients(c);
}

TEST(GradientCheck, TopK) {
  // ONNX TopK's values: the indices come from the data itself; only the
  // picked elements get a gradient (the perturbation never reorders them).
  for (const char *attrs : {"{axis = 1 : i64, k = 3 : i64}",
                            "{axis = 0 : i64, k = 2 : i64, largest = false}"}) {
    GradCase c(std::string("top_k ") + attrs);
    c.param("d", {4, 5}, c.rng.uniform(20, -1.0f, 1.0f));
    bool rows = std::string(attrs).find("axis = 1") != std::string::npos;
    std::string type = rows ? "tensor<4x3xi64>" : "tensor<2x5xi64>";
    c.code(std::string("%i = heterps.top_k_indices %d ") + attrs +
           " : (tensor<4x5xf32>) -> " + type);
    c.code(std::string("%v = heterps.gather_elements %d, %i {axis = ") +
           (rows ? "1" : "0") + " : i64} : (tensor<4x5xf32>, " + type +
           ") -> " + (rows ? "tensor<4x3xf32>" : "tensor<2x5xf32>"));
    c.mseLoss("%v",
              rows ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{2, 5});
    checkGradients(c);
  }
}

TEST(GradientCheck, ScatterElements) {
  // Stored updates hide the data under them; added ones do not. One row
  // writes twice to one place only with "add" (with "none" the last write
  // would win).
  for (const char *reduction : {"none", "add"}) {
    GradCase c(std::string("scatter_elements ") + reduction);
    bool add = std::string(reduction) == "add";
    c.param("d", {2, 5}, c.rng.uniform(10, -1.0f, 1.0f));
    c.param("u", {2, 3}, c.rng.uniform(6, -1.0f, 1.0f));
    c.code(std::string("%i = heterps.constant dense<") +
           (add ? "[[4, 0, 4], [-1, 2, 1]]" : "[[4, 0, 2], [-1, 2, 1]]") +
           "> : tensor<2x3xi64>");
    c.code(std::string("%s = heterps.scatter_elements %d, %i, %u {axis = 1 : "
                       "i64, reduction = \"") +
           reduction +
           "\"} : (tensor<2x5xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> "
           "tensor<2x5xf32>");
    c.mseLoss("%s", {2, 5});
    checkGradients(c);
  }
}

/// A recurrent layer over T = 3 steps of B = 2 rows, I = 3 inputs, H = 2
/// units: every operand a parameter (the input too), the loss on both the
/// sequence and the final state(s). `lengths` masks row 1 after one step.
void checkRecurrent(const std::string &op, const std::string &attrs,
                    bool bidirectional, bool lengths, bool initial,
                    bool peepholes = false) {
  GradCase c(op + " " + attrs + (lengths ? " lengths" : "") +
             (initial ? " initial" : "") + (peepholes ? " peepholes" : ""));
  int64_t T = 3, B = 2, I = 3, H = 2, D = bidirectional ? 2 : 1;
  int64_t G = op == "gru" ? 3 : op == "lstm" ? 4 : 1;
  bool lstm = op == "lstm";
  c.param("x", {T, B, I}, c.rng.uniform(T * B * I, -1.0f, 1.0f));
  c.param("w", {D, G * H, I}, c.rng.uniform(D * G * H * I, -0.8f, 0.8f));
  c.param("r", {D, G * H, H}, c.rng.uniform(D * G * H * H, -0.8f, 0.8f));
  c.param("b", {D, 2 * G * H}, c.rng.uniform(D * 2 * G * H, -0.5f, 0.5f));
  std::string operands = "%x, %w, %r, %b";
  std::string types = tensorType({T, B, I}) + ", " + tensorType({D, G * H, I}) +
                      ", " + tensorType({D, G * H, H}) + ", " +
                      tensorType({D, 2 * G * H});
  std::string state = tensorType({D, B, H});
  if (lengths) {
    c.code("%len = heterps.constant dense<[3, 1]> : tensor<2xi32>");
    operands += " lengths(%len)";
    types += ", tensor<2xi32>";
  }
  if (initial) {
    c.param("h0", {D, B, H}, c.rng.uniform(D * B * H, -1.0f, 1.0f));
    operands += " initial_h(%h0)";
    types += ", " + state;
    if (lstm) {
      c.param("c0", {D, B, H}, c.rng.uniform(D * B * H, -1.0f, 1.0f));
      operands += " initial_c(%c0)";
      types += ", " + state;
    }
  }
  if (peepholes) {
    c.param("p", {D, 3 * H}, c.rng.uniform(D * 3 * H, -0.5f, 0.5f));
    operands += " peepholes(%p)";
    types += ", " + tensorType({D, 3 * H});
  }
  std::string seq = tensorType({T, D, B, H});
  c.code(std::string("%y, %yh") + (lstm ? ", %yc" : "") + " = heterps." + op +
         " " + operands + " {hidden_size = 2 : i64, direction = \"" +
         (bidirectional ? "bidirectional" : "forward") + "\"" +
         (attrs.empty() ? "" : ", " + attrs) + "} : (" + types + ") -> (" +
         seq + ", " + state + (lstm ? ", " + state : "") + ")");
  c.frozen("ty", {T, D, B, H}, c.rng.uniform(T * D * B * H, -1.0f, 1.0f));
  c.frozen("th", {D, B, H}, c.rng.uniform(D * B * H, -1.0f, 1.0f));
  c.code("%ly = heterps.mse_loss %y, %ty : (" + seq + ", " + seq +
         ") -> tensor<f32>");
  c.code("%lh = heterps.mse_loss %yh, %th : (" + state + ", " + state +
         ") -> tensor<f32>");
  if (lstm) {
    c.frozen("tc", {D, B, H}, c.rng.uniform(D * B * H, -1.0f, 1.0f));
    c.code("%lc = heterps.mse_loss %yc, %tc : (" + state + ", " + state +
           ") -> tensor<f32>");
    c.code("%l2 = heterps.add %ly, %lh : (tensor<f32>, tensor<f32>) -> "
           "tensor<f32>");
    c.code("%loss = heterps.add %l2, %lc : (tensor<f32>, tensor<f32>) -> "
           "tensor<f32>");
  } else {
    c.code("%loss = heterps.add %ly, %lh : (tensor<f32>, tensor<f32>) -> "
           "tensor<f32>");
  }
  checkGradients(c);
}

TEST(GradientCheck, RNN) {
  checkRecurrent("rnn", "", /*bidirectional=*/false, /*lengths=*/false,
                 /*initial=*/false);
  checkRecurrent("rnn", "", true, true, true);
  checkRecurrent("rnn", "activation = \"relu\"", false, true, true);
}

TEST(GradientCheck, GRU) {
  // Reset before the recurrent GEMM (ONNX's default) and after it
  // (PyTorch's).
  checkRecurrent("gru", "", false, false, false);
  checkRecurrent("gru", "", true, true, true);
  checkRecurrent("gru", "linear_before_reset = true", false, false, true);
  checkRecurrent("gru", "linear_before_reset = true", true, true, false);
}

TEST(GradientCheck, LSTM) {
  checkRecurrent("lstm", "", false, false, false);
  checkRecurrent("lstm", "", true, true, true);
  checkRecurrent("lstm", "", true, false, true, /*peepholes=*/true);
}

TEST(GradientCheck, SegmentReduce) {
  // Four bags of 2, 0, 3 and 2 rows (an empty one gives zeros and takes no
  // gradient); max takes the first row holding the maximum.
  for (const char *kind : {"sum", "mean", "max"}) {
    GradCase c(std::string("segment_reduce ") + kind);
    c.param("x", {7, 3}, c.rng.uniform(21, -1.0f, 1.0f));
    c.code("%o = heterps.constant dense<[0, 2, 2, 5]> : tensor<4xi64>");
    c.code(std::string("%s = heterps.segment_reduce ") + kind +
           " %x, %o : (tensor<7x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>");
    c.mseLoss("%s", {4, 3});
    checkGradients(c);
  }
}

TEST(GradientCheck, ScatterND) {
  // Rows (tuples of 1) and single elements (tuples of 2), stored or added;
  // with "add" one tuple repeats.
  for (const char *reduction : {"none", "add"}) {
    bool add = std::string(reduction) == "add";
    GradCase c(std::string("scatter_nd ") + reduction);
    c.param("d", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.param("u", {2, 4}, c.rng.uniform(8, -1.0f, 1.0f));
    c.param("v", {2}, c.rng.uniform(2, -1.0f, 1.0f));
    c.code(std::string("%i = heterps.constant dense<") +
           (add ? "[[2], [2]]" : "[[2], [0]]") + "> : tensor<2x1xi64>");
    c.code("%j = heterps.constant dense<[[0, 1], [-1, 3]]> : "
           "tensor<2x2xi64>");
    c.code(std::string("%s = heterps.scatter_nd %d, %i, %u {reduction = \"") +
           reduction +
           "\"} : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> "
           "tensor<3x4xf32>");
    c.code(std::string("%t = heterps.scatter_nd %s, %j, %v {reduction = \"") +
           reduction +
           "\"} : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2xf32>) -> "
           "tensor<3x4xf32>");
    c.mseLoss("%t", {3, 4});
    checkGradients(c);
  }
}

TEST(GradientCheck, Where) {
  // A mask from a comparison of data; y broadcasts from a row.
  GradCase c("where mask, x 3x4, y 4");
  c.param("x", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
  c.param("y", {4}, c.rng.uniform(4, -1.0f, 1.0f));
  c.code("%a = heterps.constant dense<[[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, "
         "-3.0, 4.0], [-0.5, 0.25, 0.0, -2.0]]> : tensor<3x4xf32>");
  c.code("%z = heterps.constant dense<0.0> : tensor<f32>");
  c.code("%m = heterps.compare \"gt\" %a, %z : (tensor<3x4xf32>, "
         "tensor<f32>) -> tensor<3x4xi1>");
  c.code("%w = heterps.where %m, %x, %y : (tensor<3x4xi1>, tensor<3x4xf32>, "
         "tensor<4xf32>) -> tensor<3x4xf32>");
  c.mseLoss("%w", {3, 4});
  checkGradients(c);
}

TEST(GradientCheck, GatherOfFloats) {
  {
    // DLRM's dot interaction keeps the pairs Z[:, li, lj]: constant
    // indices, some named twice.
    GradCase c("gather axis 1, repeated indices");
    c.param("z", {2, 4, 3}, c.rng.uniform(24, -1.0f, 1.0f));
    c.param("s", {2, 5, 3}, c.rng.uniform(30, -1.0f, 1.0f));
    c.code("%i = heterps.constant dense<[0, 2, 2, 3, -1]> : tensor<5xi64>");
    c.code("%g = heterps.gather %z, %i {axis = 1 : i64} : (tensor<2x4x3xf32>, "
           "tensor<5xi64>) -> tensor<2x5x3xf32>");
    c.code("%y = heterps.mul %g, %s : (tensor<2x5x3xf32>, tensor<2x5x3xf32>) "
           "-> tensor<2x5x3xf32>");
    c.mseLoss("%y", {2, 5, 3});
    checkGradients(c);
  }
  {
    GradCase c("gather axis 0 by a 2-D index");
    c.param("t", {5, 2}, c.rng.uniform(10, -1.0f, 1.0f));
    c.code("%i = heterps.constant dense<[[4, 0], [1, 4]]> : tensor<2x2xi32>");
    c.code("%g = heterps.gather %t, %i {axis = 0 : i64} : (tensor<5x2xf32>, "
           "tensor<2x2xi32>) -> tensor<2x2x2xf32>");
    c.mseLoss("%g", {2, 2, 2});
    checkGradients(c);
  }
}

TEST(GradientCheck, Transpose) {
  for (auto [perm, out] : {std::pair<const char *, Shape>{"2, 0, 1", {4, 2, 3}},
                           {"0, 2, 1", {2, 4, 3}},
                           {"1, 0, 2", {3, 2, 4}}}) {
    GradCase c(std::string("transpose perm [") + perm + "]");
    c.param("a", {2, 3, 4}, c.rng.uniform(24, -1.0f, 1.0f));
    c.param("s", out, c.rng.uniform(24, -1.0f, 1.0f));
    c.code(std::string("%t = heterps.transpose %a {perm = array<i64: ") + perm +
           ">} : (tensor<2x3x4xf32>) -> " + tensorType(out));
    c.code("%y = heterps.mul %t, %s : (" + tensorType(out) + ", " +
           tensorType(out) + ") -> " + tensorType(out));
    c.mseLoss("%y", out);
    checkGradients(c);
  }
}

TEST(GradientCheck, Expand) {
  {
    GradCase c("expand 3x1 -> 2x3x4");
    c.param("a", {3, 1}, c.rng.uniform(3, -1.0f, 1.0f));
    c.param("s", {2, 3, 4}, c.rng.uniform(24, -1.0f, 1.0f));
    c.code("%e = heterps.expand %a {shape = array<i64: 2, 1, 4>} : "
           "(tensor<3x1xf32>) -> tensor<2x3x4xf32>");
    c.code("%y = heterps.mul %e, %s : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) "
           "-> tensor<2x3x4xf32>");
    c.mseLoss("%y", {2, 3, 4});
    checkGradients(c);
  }
  {
    GradCase c("expand 4 -> 3x4");
    c.param("a", {4}, c.rng.uniform(4, -1.0f, 1.0f));
    c.code("%e = heterps.expand %a {shape = array<i64: 3, 4>} : "
           "(tensor<4xf32>) -> tensor<3x4xf32>");
    c.mseLoss("%e", {3, 4});
    checkGradients(c);
  }
}

//===----------------------------------------------------------------------===//
// Reductions and pooling
//===----------------------------------------------------------------------===//

struct ReduceSpec {
  const char *axes;
  bool keepdims;
  Shape out;
};

TEST(GradientCheck, Reductions) {
  const std::vector<ReduceSpec> specs = {
      {"1", true, {2, 1, 4}}, {"1", false, {2, 4}},  {"0, 2", true, {1, 3, 1}},
      {"0, 2", false, {3}},   {"-1", false, {2, 3}}, {"", true, {1, 1, 1}},
      {"", false, {}}};
  for (const char *kind : {"sum", "mean", "max", "min", "prod", "l2"})
    for (const ReduceSpec &s : specs) {
      GradCase c(std::string("reduce_") + kind + " axes [" + s.axes + "]" +
                 (s.keepdims ? " keepdims" : ""));
      c.param("a", {2, 3, 4}, c.rng.distinct(24, -1.2f, 1.2f));
      std::string attrs = std::string("{axes = array<i64") +
                          (*s.axes ? std::string(": ") + s.axes : "") +
                          ">, keepdims = " + (s.keepdims ? "true" : "false") +
                          "}";
      c.code(std::string("%r = heterps.reduce_") + kind + " %a " + attrs +
             " : (tensor<2x3x4xf32>) -> " + tensorType(s.out));
      c.mseLoss("%r", s.out);
      checkGradients(c);
    }
}

TEST(GradientCheck, GlobalAvgPool) {
  GradCase c("global_avg_pool");
  c.param("x", {2, 3, 2, 3}, c.rng.uniform(36, -1.0f, 1.0f));
  c.code("%g = heterps.global_avg_pool %x : (tensor<2x3x2x3xf32>) -> "
         "tensor<2x3x1x1xf32>");
  c.mseLoss("%g", {2, 3, 1, 1});
  checkGradients(c);
}

TEST(GradientCheck, Conv) {
  struct ConvSpec {
    const char *label;
    Shape x, w;
    bool bias;
    const char *attrs;
    Shape out;
  };
  for (const ConvSpec &s :
       {ConvSpec{"conv 3x3 stride 2 pads 1 group 2",
                 {2, 4, 5, 5},
                 {4, 2, 3, 3},
                 true,
                 "{group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = "
                 "array<i64: 2, 2>}",
                 {2, 4, 3, 3}},
        ConvSpec{"conv 2x3 pads 0,1,1,0 no bias",
                 {1, 3, 4, 4},
                 {2, 3, 2, 3},
                 false,
                 "{pads = array<i64: 0, 1, 1, 0>}",
                 {1, 2, 4, 3}},
        ConvSpec{"conv 3x3 dilation 2",
                 {1, 2, 6, 6},
                 {3, 2, 3, 3},
                 true,
                 "{dilations = array<i64: 2, 2>}",
                 {1, 3, 2, 2}},
        ConvSpec{"conv 1-D stride 2",
                 {2, 2, 7},
                 {3, 2, 3},
                 true,
                 "{strides = array<i64: 2>}",
                 {2, 3, 3}}}) {
    GradCase c(s.label);
    c.param("x", s.x, c.rng.uniform(numElements(s.x), -1.0f, 1.0f));
    c.param("w", s.w, c.rng.uniform(numElements(s.w), -0.5f, 0.5f));
    std::string operands = "%x, %w",
                types = tensorType(s.x) + ", " + tensorType(s.w);
    if (s.bias) {
      c.param("b", {s.w[0]}, c.rng.uniform(s.w[0], -0.5f, 0.5f));
      operands += ", %b";
      types += ", " + tensorType({s.w[0]});
    }
    c.code("%y = heterps.conv " + operands + " " + s.attrs + " : (" + types +
           ") -> " + tensorType(s.out));
    c.mseLoss("%y", s.out);
    checkGradients(c);
  }
}

TEST(GradientCheck, ConvTranspose) {
  struct Spec {
    const char *label;
    Shape x, w;
    bool bias;
    const char *attrs;
    Shape out;
  };
  // The filter is C x M/group x k...; out = stride * (in - 1) +
  // output_padding + dilation * (k - 1) + 1 - pads.
  for (const Spec &s :
       {Spec{"conv_transpose 3x3 stride 2 pads 1 output_padding 1 group 2",
             {2, 4, 3, 3},
             {4, 2, 3, 3},
             true,
             "{group = 2 : i64, output_padding = array<i64: 1, 1>, pads = "
             "array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}",
             {2, 4, 6, 6}},
        Spec{"conv_transpose 2x2 no bias",
             {1, 2, 3, 3},
             {2, 3, 2, 2},
             false,
             "",
             {1, 3, 4, 4}},
        Spec{"conv_transpose 2x2 dilation 2",
             {1, 2, 3, 3},
             {2, 1, 2, 2},
             true,
             "{dilations = array<i64: 2, 2>}",
             {1, 1, 5, 5}},
        Spec{"conv_transpose 1-D stride 3 pads 0,1",
             {2, 2, 4},
             {2, 3, 3},
             true,
             "{pads = array<i64: 0, 1>, strides = array<i64: 3>}",
             {2, 3, 11}}}) {
    GradCase c(s.label);
    c.param("x", s.x, c.rng.uniform(numElements(s.x), -1.0f, 1.0f));
    c.param("w", s.w, c.rng.uniform(numElements(s.w), -0.5f, 0.5f));
    std::string operands = "%x, %w",
                types = tensorType(s.x) + ", " + tensorType(s.w);
    if (s.bias) {
      c.param("b", {s.out[1]}, c.rng.uniform(s.out[1], -0.5f, 0.5f));
      operands += ", %b";
      types += ", " + tensorType({s.out[1]});
    }
    c.code("%y = heterps.conv_transpose " + operands + " " + s.attrs + " : (" +
           types + ") -> " + tensorType(s.out));
    c.mseLoss("%y", s.out);
    checkGradients(c);
  }
}

TEST(GradientCheck, Resize) {
  // The gradient is the interpolation transposed: nearest copies, linear
  // and cubic weights (edges repeated, or excluded), and extrapolated
  // elements that take none.
  struct Spec {
    const char *label;
    Shape x;
    const char *attrs;
    Shape out;
  };
  for (const Spec &s :
       {Spec{"resize linear x2",
             {1, 2, 3, 3},
             "{mode = \"linear\", scales = array<f64: 1.0, 1.0, 2.0, 2.0>}",
             {1, 2, 6, 6}},
        Spec{"resize nearest 3x2 to 5x4 asymmetric",
             {2, 1, 3, 2},
             "{coordinate_transformation_mode = \"asymmetric\", scales = "
             "array<f64: 1.0, 1.0, 1.6666666666666667, 2.0>}",
             {2, 1, 5, 4}},
        Spec{"resize cubic 5x5 to 3x4 exclude_outside",
             {1, 1, 5, 5},
             "{mode = \"cubic\", cubic_coeff_a = -5.0e-01, exclude_outside "
             "= true, scales = array<f64: 1.0, 1.0, 0.6, 0.8>}",
             {1, 1, 3, 4}},
        Spec{"resize tf_crop_and_resize linear",
             {1, 1, 4, 4},
             "{mode = \"linear\", coordinate_transformation_mode = "
             "\"tf_crop_and_resize\", extrapolation_value = 2.0, roi = "
             "array<f64: 0.0, 0.0, 0.4, 0.6, 1.0, 1.0, 1.2, 1.7>, scales = "
             "array<f64: 1.0, 1.0, 0.75, 0.75>}",
             {1, 1, 3, 3}}}) {
    GradCase c(s.label);
    c.param("x", s.x, c.rng.uniform(numElements(s.x), -1.0f, 1.0f));
    c.code(std::string("%y = heterps.resize %x ") + s.attrs + " : (" +
           tensorType(s.x) + ") -> " + tensorType(s.out));
    c.mseLoss("%y", s.out);
    checkGradients(c);
  }
}

TEST(GradientCheck, Pool) {
  struct PoolSpec {
    const char *label, *op, *attrs;
    Shape out;
  };
  for (const PoolSpec &s :
       {PoolSpec{
            "max_pool 2x2 stride 2",
            "max_pool",
            "{kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}",
            {2, 2, 2, 2}},
        PoolSpec{"max_pool 3x3 stride 2 pads 1",
                 "max_pool",
                 "{kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, "
                 "1>, strides = array<i64: 2, 2>}",
                 {2, 2, 3, 3}},
        PoolSpec{"max_pool 2x2 stride 2 ceil_mode",
                 "max_pool",
                 "{ceil_mode = true, kernel_shape = array<i64: 2, 2>, strides "
                 "= array<i64: 2, 2>}",
                 {2, 2, 3, 3}},
        PoolSpec{
            "avg_pool 2x2 stride 2",
            "avg_pool",
            "{kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}",
            {2, 2, 2, 2}},
        PoolSpec{"avg_pool 3x3 pads 1 exclude pad",
                 "avg_pool",
                 "{kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, "
                 "1>, strides = array<i64: 2, 2>}",
                 {2, 2, 3, 3}},
        PoolSpec{"avg_pool 3x3 pads 1 include pad",
                 "avg_pool",
                 "{count_include_pad = true, kernel_shape = array<i64: 3, 3>, "
                 "pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}",
                 {2, 2, 3, 3}},
        PoolSpec{"avg_pool 2x2 ceil_mode include pad",
                 "avg_pool",
                 "{ceil_mode = true, count_include_pad = true, kernel_shape = "
                 "array<i64: 2, 2>, strides = array<i64: 2, 2>}",
                 {2, 2, 3, 3}},
        PoolSpec{"max_pool 2x2 dilations 2",
                 "max_pool",
                 "{dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, "
                 "2>}",
                 {2, 2, 3, 3}},
        PoolSpec{"avg_pool 2x3 dilations 2x1 pads 1 include pad",
                 "avg_pool",
                 "{count_include_pad = true, dilations = array<i64: 2, 1>, "
                 "kernel_shape = array<i64: 2, 3>, pads = array<i64: 1, 0, 1, "
                 "0>, strides = array<i64: 2, 1>}",
                 {2, 2, 3, 3}}}) {
    GradCase c(s.label);
    // 5x5 planes; max pooling needs distinct values.
    c.param("x", {2, 2, 5, 5}, c.rng.distinct(100, -2.0f, 2.0f));
    c.code(std::string("%y = heterps.") + s.op + " %x " + s.attrs +
           " : (tensor<2x2x5x5xf32>) -> " + tensorType(s.out));
    c.mseLoss("%y", s.out);
    checkGradients(c);
  }
}

TEST(GradientCheck, PoolOtherRanks) {
  {
    GradCase c("max_pool 1-D 3 stride 2");
    c.param("x", {2, 2, 7}, c.rng.distinct(28, -2.0f, 2.0f));
    c.code("%y = heterps.max_pool %x {kernel_shape = array<i64: 3>, strides = "
           "array<i64: 2>} : (tensor<2x2x7xf32>) -> tensor<2x2x3xf32>");
    c.mseLoss("%y", {2, 2, 3});
    checkGradients(c);
  }
  {
    GradCase c("avg_pool 3-D 2x2x2");
    c.param("x", {1, 2, 3, 4, 4}, c.rng.uniform(96, -1.0f, 1.0f));
    c.code("%y = heterps.avg_pool %x {kernel_shape = array<i64: 2, 2, 2>, "
           "strides = array<i64: 1, 2, 2>} : (tensor<1x2x3x4x4xf32>) -> "
           "tensor<1x2x2x2x2xf32>");
    c.mseLoss("%y", {1, 2, 2, 2, 2});
    checkGradients(c);
  }
  {
    GradCase c("global_avg_pool 1-D");
    c.param("x", {2, 3, 5}, c.rng.uniform(30, -1.0f, 1.0f));
    c.code("%g = heterps.global_avg_pool %x : (tensor<2x3x5xf32>) -> "
           "tensor<2x3x1xf32>");
    c.mseLoss("%g", {2, 3, 1});
    checkGradients(c);
  }
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// Training-mode batch norm: the step normalises with the batch statistics,
/// so the finite differences come from training-mode forwards (each
/// followed by restoring the parameters and the running statistics).
TEST(GradientCheck, BatchNorm) {
  for (Shape x : {Shape{4, 3, 2, 2}, Shape{5, 3}}) {
    GradCase c("batch_norm training " + tensorType(x));
    c.trainingForward = true;
    int64_t ch = x[1];
    c.param("x", x, c.rng.uniform(numElements(x), -1.5f, 1.5f));
    c.param("s", {ch}, c.rng.uniform(ch, 0.5f, 1.5f));
    c.param("b", {ch}, c.rng.uniform(ch, -0.5f, 0.5f));
    c.frozen("m", {ch}, c.rng.uniform(ch, -0.2f, 0.2f));
    c.frozen("v", {ch}, c.rng.uniform(ch, 0.8f, 1.2f));
    std::string t = tensorType(x), v = tensorType({ch});
    c.code("%y = heterps.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : "
           "f32} : (" +
           t + ", " + v + ", " + v + ", " + v + ", " + v + ") -> " + t);
    c.mseLoss("%y", x);
    checkGradients(c);
  }
}

TEST(GradientCheck, LayerNorm) {
  {
    GradCase c("layer_norm axis -1 with bias");
    c.param("x", {3, 6}, c.rng.uniform(18, -1.5f, 1.5f));
    c.param("s", {6}, c.rng.uniform(6, 0.5f, 1.5f));
    c.param("b", {6}, c.rng.uniform(6, -0.5f, 0.5f));
    c.code("%y = heterps.layer_norm %x, %s, %b {axis = -1 : i64} : "
           "(tensor<3x6xf32>, tensor<6xf32>, tensor<6xf32>) -> "
           "tensor<3x6xf32>");
    c.mseLoss("%y", {3, 6});
    checkGradients(c);
  }
  {
    GradCase c("layer_norm axis 1 no bias");
    c.param("x", {2, 3, 4}, c.rng.uniform(24, -1.5f, 1.5f));
    c.param("s", {3, 4}, c.rng.uniform(12, 0.5f, 1.5f));
    c.code("%y = heterps.layer_norm %x, %s {axis = 1 : i64} : "
           "(tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>");
    c.mseLoss("%y", {2, 3, 4});
    checkGradients(c);
  }
}

//===----------------------------------------------------------------------===//
// Embedding lookups: the rows are checked through the table
//===----------------------------------------------------------------------===//

TEST(GradientCheck, EmbeddingLookup) {
  // Ids with duplicates inside a bag and across the batch, and a key past
  // the vocabulary (k mod vocab).
  std::vector<int64_t> ids = {0, 2, 2, 5, 1, 8};
  {
    GradCase c("embedding_lookup combiner none");
    c.table("t", 6, 3);
    c.input("ids", "tensor<?x2xi64>", intTensor({3, 2}, ids));
    c.param("w", {2, 3}, c.rng.uniform(6, 0.5f, 1.5f));
    c.code("%e = heterps.embedding_lookup @t[%ids] : (tensor<?x2xi64>) -> "
           "tensor<?x2x3xf32>");
    c.code("%y = heterps.mul %e, %w : (tensor<?x2x3xf32>, tensor<2x3xf32>) -> "
           "tensor<?x2x3xf32>");
    c.mseLossInput("%y", {-1, 2, 3}, {3, 2, 3});
    checkGradients(c);
  }
  for (const char *combiner : {"sum", "mean"}) {
    GradCase c(std::string("embedding_lookup combiner ") + combiner);
    c.table("t", 6, 3);
    c.input("ids", "tensor<?x3xi64>", intTensor({2, 3}, ids));
    c.param("w", {3}, c.rng.uniform(3, 0.5f, 1.5f));
    c.code(std::string("%e = heterps.embedding_lookup @t[%ids] {combiner = "
                       "#heterps.combiner<") +
           combiner + ">} : (tensor<?x3xi64>) -> tensor<?x3xf32>");
    c.code("%y = heterps.mul %e, %w : (tensor<?x3xf32>, tensor<3xf32>) -> "
           "tensor<?x3xf32>");
    c.mseLossInput("%y", {-1, 3}, {2, 3});
    checkGradients(c);
  }
  {
    GradCase c("embedding_lookup two lookups of one table");
    c.table("t", 5, 2);
    c.input("a", "tensor<?x2xi64>", intTensor({2, 2}, {0, 1, 3, 1}));
    c.input("b", "tensor<?x1xi64>", intTensor({2, 1}, {1, 4}));
    c.code("%ea = heterps.embedding_lookup @t[%a] {combiner = "
           "#heterps.combiner<sum>} : (tensor<?x2xi64>) -> tensor<?x2xf32>");
    c.code("%eb = heterps.embedding_lookup @t[%b] {combiner = "
           "#heterps.combiner<mean>} : (tensor<?x1xi64>) -> tensor<?x2xf32>");
    c.code("%y = heterps.mul %ea, %eb : (tensor<?x2xf32>, tensor<?x2xf32>) -> "
           "tensor<?x2xf32>");
    c.mseLossInput("%y", {-1, 2}, {2, 2});
    checkGradients(c);
  }
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

TEST(GradientCheck, BCELoss) {
  for (const char *reduction : {"mean", "sum"}) {
    GradCase c(std::string("bce_loss probabilities ") + reduction);
    c.param("p", {4, 2}, c.rng.uniform(8, 0.15f, 0.85f));
    c.frozen("y", {4, 2}, c.rng.uniform(8, 0.0f, 1.0f));
    c.code(std::string("%loss = heterps.bce_loss %p, %y {reduction = "
                       "#heterps.reduction<") +
           reduction +
           ">} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<f32>");
    c.eps = 2e-3f;
    checkGradients(c);
  }
  for (const char *reduction : {"mean", "sum"}) {
    GradCase c(std::string("bce_loss from_logits ") + reduction);
    c.param("z", {4, 2}, c.rng.uniform(8, -3.0f, 3.0f));
    c.frozen("y", {4, 2}, c.rng.uniform(8, 0.0f, 1.0f));
    c.code(std::string("%loss = heterps.bce_loss %z, %y {from_logits = true, "
                       "reduction = #heterps.reduction<") +
           reduction +
           ">} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<f32>");
    checkGradients(c);
  }
  {
    GradCase c("bce_loss reduction none (then mse)");
    c.param("p", {4, 1}, c.rng.uniform(4, 0.15f, 0.85f));
    c.frozen("y", {4, 1}, {0.0f, 1.0f, 1.0f, 0.0f});
    c.code("%l = heterps.bce_loss %p, %y {reduction = "
           "#heterps.reduction<none>} : (tensor<4x1xf32>, tensor<4x1xf32>) -> "
           "tensor<4x1xf32>");
    c.mseLoss("%l", {4, 1});
    c.eps = 2e-3f;
    checkGradients(c);
  }
  {
    GradCase c("bce_loss from_logits, dynamic label input");
    c.param("z", {3, 1}, c.rng.uniform(3, -2.0f, 2.0f));
    c.input("y", "tensor<3x1xf32>", floatTensor({3, 1}, {1.0f, 0.0f, 1.0f}));
    c.code("%loss = heterps.bce_loss %z, %y {from_logits = true} : "
           "(tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<f32>");
    checkGradients(c);
  }
}

TEST(GradientCheck, MSELoss) {
  for (const char *reduction : {"mean", "sum"}) {
    GradCase c(std::string("mse_loss ") + reduction);
    c.param("p", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.frozen("t", {3, 4}, c.rng.uniform(12, -1.0f, 1.0f));
    c.code(std::string("%loss = heterps.mse_loss %p, %t {reduction = "
                       "#heterps.reduction<") +
           reduction +
           ">} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<f32>");
    checkGradients(c);
  }
  {
    // Both operands trainable (distillation, siamese heads): the target has
    // a gradient too.
    GradCase c("mse_loss trainable target");
    c.param("p", {3, 2}, c.rng.uniform(6, -1.0f, 1.0f));
    c.param("q", {3, 2}, c.rng.uniform(6, -1.0f, 1.0f));
    c.code("%t = heterps.tanh %q : tensor<3x2xf32>");
    c.code("%loss = heterps.mse_loss %p, %t : (tensor<3x2xf32>, "
           "tensor<3x2xf32>) -> tensor<f32>");
    checkGradients(c);
  }
  {
    // A target computed from data needs no gradient, so its producers need
    // no gradient rule (slice has none for floats).
    GradCase c("mse_loss target sliced from an input");
    c.param("p", {3, 2}, c.rng.uniform(6, -1.0f, 1.0f));
    c.input("x", "tensor<3x4xf32>",
            floatTensor({3, 4}, c.rng.uniform(12, -1.0f, 1.0f)));
    c.code("%t = heterps.slice %x {ends = array<i64: 3, 3>, starts = "
           "array<i64: 0, 1>, steps = array<i64: 1, 1>} : (tensor<3x4xf32>) "
           "-> tensor<3x2xf32>");
    c.code("%loss = heterps.mse_loss %p, %t : (tensor<3x2xf32>, "
           "tensor<3x2xf32>) -> tensor<f32>");
    checkGradients(c);
  }
  {
    GradCase c("mse_loss reduction none (then mse)");
    c.param("p", {3, 2}, c.rng.uniform(6, -1.0f, 1.0f));
    c.frozen("t", {3, 2}, c.rng.uniform(6, -1.0f, 1.0f));
    c.code("%l = heterps.mse_loss %p, %t {reduction = "
           "#heterps.reduction<none>} : (tensor<3x2xf32>, tensor<3x2xf32>) -> "
           "tensor<3x2xf32>");
    c.mseLoss("%l", {3, 2});
    checkGradients(c);
  }
}

TEST(GradientCheck, SoftmaxCELoss) {
  for (const char *reduction : {"mean", "sum"}) {
    GradCase c(std::string("softmax_ce_loss ") + reduction);
    c.param("z", {4, 5}, c.rng.uniform(20, -2.0f, 2.0f));
    c.input("y", "tensor<?xi64>", intTensor({4}, {0, 3, 4, 3}));
    c.code(std::string("%loss = heterps.softmax_ce_loss %z, %y {reduction = "
                       "#heterps.reduction<") +
           reduction + ">} : (tensor<4x5xf32>, tensor<?xi64>) -> tensor<f32>");
    checkGradients(c);
  }
  {
    GradCase c("softmax_ce_loss N x C x inner");
    c.param("z", {2, 3, 2}, c.rng.uniform(12, -2.0f, 2.0f));
    c.input("y", "tensor<2x2xi64>", intTensor({2, 2}, {0, 2, 1, 1}));
    c.code("%loss = heterps.softmax_ce_loss %z, %y : (tensor<2x3x2xf32>, "
           "tensor<2x2xi64>) -> tensor<f32>");
    checkGradients(c);
  }
  {
    GradCase c("softmax_ce_loss reduction none (then mse)");
    c.param("z", {3, 4}, c.rng.uniform(12, -2.0f, 2.0f));
    c.input("y", "tensor<3xi64>", intTensor({3}, {1, 0, 3}));
    c.code("%l = heterps.softmax_ce_loss %z, %y {reduction = "
           "#heterps.reduction<none>} : (tensor<3x4xf32>, tensor<3xi64>) -> "
           "tensor<3xf32>");
    c.mseLoss("%l", {3});
    checkGradients(c);
  }
}

TEST(GradientCheck, NLLLoss) {
  for (const char *reduction : {"mean", "sum"}) {
    GradCase c(std::string("nll_loss of log_softmax ") + reduction);
    c.param("z", {4, 5}, c.rng.uniform(20, -2.0f, 2.0f));
    c.input("y", "tensor<?xi64>", intTensor({4}, {1, 1, 4, 0}));
    c.code("%lp = heterps.log_softmax %z {axis = 1 : i64} : tensor<4x5xf32>");
    c.code(std::string("%loss = heterps.nll_loss %lp, %y {reduction = "
                       "#heterps.reduction<") +
           reduction + ">} : (tensor<4x5xf32>, tensor<?xi64>) -> tensor<f32>");
    checkGradients(c);
  }
  {
    GradCase c("nll_loss reduction none (then mse)");
    c.param("z", {3, 4}, c.rng.uniform(12, -2.0f, 0.0f));
    c.input("y", "tensor<3xi64>", intTensor({3}, {2, 0, 3}));
    c.code("%l = heterps.nll_loss %z, %y {reduction = "
           "#heterps.reduction<none>} : (tensor<3x4xf32>, tensor<3xi64>) -> "
           "tensor<3xf32>");
    c.mseLoss("%l", {3});
    checkGradients(c);
  }
}

TEST(GradientCheck, WeightedNLLLoss) {
  struct Spec {
    const char *label, *attrs;
    bool weight;
    bool none;
  };
  for (const Spec &s :
       {Spec{"weighted_nll_loss mean, weights", "", true, false},
        Spec{"weighted_nll_loss mean, weights, ignore_index 2",
             "{ignore_index = 2 : i64}", true, false},
        Spec{"weighted_nll_loss sum, no weights, ignore_index 0",
             "{ignore_index = 0 : i64, reduction = #heterps.reduction<sum>}",
             false, false},
        Spec{"weighted_nll_loss none (then mse), weights",
             "{reduction = #heterps.reduction<none>}", true, true}}) {
    GradCase c(s.label);
    c.param("z", {5, 4}, c.rng.uniform(20, -2.0f, 2.0f));
    c.input("y", "tensor<?xi64>", intTensor({5}, {2, 0, 3, 2, 1}));
    c.code("%lp = heterps.log_softmax %z {axis = 1 : i64} : tensor<5x4xf32>");
    std::string operands = "%lp, %y", types = "tensor<5x4xf32>, tensor<?xi64>";
    if (s.weight) {
      c.frozen("cw", {4}, {0.5f, 2.0f, 1.5f, 0.25f});
      operands += ", %cw";
      types += ", tensor<4xf32>";
    }
    std::string result = s.none ? "tensor<5xf32>" : "tensor<f32>";
    c.code(std::string(s.none ? "%l" : "%loss") +
           " = heterps.weighted_nll_loss " + operands + " " + s.attrs + " : (" +
           types + ") -> " + result);
    if (s.none)
      c.mseLoss("%l", {5});
    checkGradients(c);
  }
}

/// A small network, all parameters at once.
TEST(GradientCheck, Composite) {
  GradCase c("gemm-relu-gemm-sigmoid-bce network");
  c.input("x", "tensor<?x4xf32>",
          floatTensor({3, 4}, c.rng.uniform(12, -1.0f, 1.0f)));
  c.input("label", "tensor<?x1xf32>", floatTensor({3, 1}, {1.0f, 0.0f, 1.0f}));
  c.param("w1", {4, 5}, c.rng.uniform(20, -1.0f, 1.0f));
  c.param("b1", {5}, c.rng.uniform(5, 0.2f, 0.6f));
  c.param("w2", {1, 5}, c.rng.uniform(5, -1.0f, 1.0f));
  c.param("b2", {1}, {0.1f});
  c.code("%h = heterps.gemm %x, %w1, %b1 : (tensor<?x4xf32>, tensor<4x5xf32>, "
         "tensor<5xf32>) -> tensor<?x5xf32>");
  c.code("%a = heterps.tanh %h : tensor<?x5xf32>");
  c.code("%z = heterps.gemm %a, %w2, %b2 {trans_b = true} : (tensor<?x5xf32>, "
         "tensor<1x5xf32>, tensor<1xf32>) -> tensor<?x1xf32>");
  c.code("%p = heterps.sigmoid %z : tensor<?x1xf32>");
  c.code("%loss = heterps.bce_loss %p, %label : (tensor<?x1xf32>, "
         "tensor<?x1xf32>) -> tensor<f32>");
  checkGradients(c);
}

//===----------------------------------------------------------------------===//
// Imported models train
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SOURCE_DIR
#error "HETERPS_SOURCE_DIR must name the source tree"
#endif

/// Imports an ONNX fixture, adds `loss`, and returns the losses of `steps`
/// SGD steps on one fixed batch.
std::vector<float> trainImported(const std::string &file,
                                 mlir::heterps::AddedLoss loss, double lr,
                                 int steps) {
  std::vector<float> losses;
  auto context = makeContext();
  std::string error;
  llvm::raw_string_ostream os(error);
  mlir::ScopedDiagnosticHandler handler(context.get(),
                                        [&](mlir::Diagnostic &d) {
                                          os << d << "\n";
                                          return mlir::success();
                                        });
  std::string path =
      std::string(HETERPS_SOURCE_DIR) + "/test/Import/ONNX/Inputs/" + file;
  auto module = mlir::heterps::importONNXFile(path, context.get());
  if (mlir::failed(module)) {
    ADD_FAILURE() << file << " does not import: " << error;
    return losses;
  }
  mlir::heterps::AutodiffPassOptions options = sgdOptions();
  options.loss = loss;
  options.learningRate = lr;
  plan::Plan plan;
  if (!compileModule(**module, options, plan, error)) {
    ADD_FAILURE() << file << ": autodiff / emit-plan failed: " << error;
    return losses;
  }
  ParamStore params(plan, 7);
  LocalEmbeddingStore tables(plan, 7);
  Program program(plan, params, tables, ProgramOptions());
  Rng rng(file);
  const int64_t batch = 8;
  std::vector<Tensor> storage;
  std::vector<const Tensor *> inputs(plan.inputs_size(), nullptr);
  storage.reserve(plan.inputs_size());
  for (int i = 0; i < plan.inputs_size(); ++i) {
    TensorType t = program.inputType(i);
    Shape s = t.dims;
    if (!s.empty() && s[0] < 0)
      s[0] = batch;
    int64_t n = numElements(s);
    if (program.isLabelInput(i)) {
      if (t.dtype == DType::F32 && loss == mlir::heterps::AddedLoss::bce) {
        Values v(n);
        for (int64_t j = 0; j < n; ++j)
          v[j] = static_cast<float>(j % 2);
        storage.push_back(floatTensor(s, v));
      } else if (t.dtype == DType::F32) {
        // One-hot targets.
        Values v(n, 0.0f);
        for (int64_t r = 0; r < s[0]; ++r)
          v[r * s[1] + (r * 3) % s[1]] = 1.0f;
        storage.push_back(floatTensor(s, v));
      } else {
        storage.push_back(intTensor(s, rng.ints(n, 0, 9)));
      }
    } else if (t.dtype == DType::F32) {
      storage.push_back(floatTensor(s, rng.uniform(n, -1.0f, 1.0f)));
    } else {
      storage.push_back(intTensor(s, rng.ints(n, 0, 1000)));
    }
    inputs[i] = &storage.back();
  }
  int lossOutput = static_cast<int>(plan.training().loss_output());
  try {
    for (int step = 0; step < steps; ++step)
      losses.push_back(
          program.run(inputs, true, {lossOutput})[0]->as<float>()[0]);
  } catch (const std::exception &e) {
    ADD_FAILURE() << file << ": the runtime failed: " << e.what();
  }
  return losses;
}

TEST(GradientCheck, TorchMLPTrains) {
  std::vector<float> l =
      trainImported("torch-mlp.onnx", mlir::heterps::AddedLoss::mse, 10.0, 50);
  ASSERT_EQ(l.size(), 50u);
  std::printf("[gradcheck] torch-mlp.onnx mse: loss %.5f -> %.5f\n", l.front(),
              l.back());
  EXPECT_LT(l.back(), 0.8f * l.front())
      << "torch-mlp.onnx: the loss does not decrease over 50 SGD steps ("
      << l.front() << " -> " << l.back() << ")";
}

TEST(GradientCheck, TorchCTRTrains) {
  std::vector<float> l =
      trainImported("torch-ctr.onnx", mlir::heterps::AddedLoss::bce, 0.1, 50);
  ASSERT_EQ(l.size(), 50u);
  std::printf("[gradcheck] torch-ctr.onnx bce: loss %.5f -> %.5f\n", l.front(),
              l.back());
  EXPECT_LT(l.back(), 0.8f * l.front())
      << "torch-ctr.onnx: the loss does not decrease over 50 SGD steps ("
      << l.front() << " -> " << l.back() << ")";
}

} // namespace
