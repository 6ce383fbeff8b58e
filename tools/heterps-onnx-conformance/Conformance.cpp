//===- Conformance.cpp - ONNX backend node tests through the importer -----===//

#include "Conformance.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Import/ONNX/ImportONNX.h"
#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/Program.h"
#include "heterps/Target/Plan/PlanEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fs = std::filesystem;
namespace rt = ::heterps::runtime;
using namespace heterps::conformance;

const char *heterps::conformance::statusName(Status status) {
  switch (status) {
  case Status::Pass:
    return "pass";
  case Status::ImportFails:
    return "import-fails";
  case Status::RuntimeError:
    return "runtime-error";
  case Status::WrongResult:
    return "wrong-result";
  }
  return "?";
}

std::string Outcome::describe() const {
  if (passes())
    return "pass";
  return std::string(statusName(status)) + ": " + reason;
}

/// Why known failures fail, for docs/SupportedOps.md (shown only while the
/// case still fails).
static const std::map<std::string, std::string> kKnownCauses = {
    {"test_cast_FLOAT_to_BFLOAT16",
     "the test data truncates to bfloat16; the runtime rounds to nearest "
     "even, as PyTorch does"},
    {"test_castlike_FLOAT_to_BFLOAT16_expanded",
     "the test data truncates to bfloat16; the runtime rounds to nearest "
     "even, as PyTorch does"},
    {"test_training_dropout",
     "the expected output has NumPy's random mask; an inference pass keeps "
     "every element"},
    {"test_training_dropout_default",
     "the expected output has NumPy's random mask; an inference pass keeps "
     "every element"},
};

/// The op a case is about. A single node's op; for the `_expanded` cases
/// (an op's function body spelled out in several nodes) the op named by the
/// case, so that they count under that op rather than under Constant.
static std::string mainOpOf(const std::string &name,
                            const std::vector<std::string> &opTypes,
                            const std::set<std::string> &supported) {
  auto squash = [](std::string s) {
    std::string out;
    for (char ch : s)
      if (ch != '_')
        out += (char)std::tolower((unsigned char)ch);
    return out;
  };
  if (opTypes.size() > 1) {
    std::string key = squash(name.substr(name.rfind("test_", 0) == 0 ? 5 : 0));
    static const std::map<std::string, std::string> aliases = {
        {"sce", "SoftmaxCrossEntropyLoss"},
        {"nllloss", "NegativeLogLikelihoodLoss"}};
    for (const auto &[prefix, op] : aliases)
      if (key.rfind(prefix, 0) == 0)
        return op;
    std::string best;
    for (const std::string &op : supported)
      if (key.rfind(squash(op), 0) == 0 && op.size() > best.size())
        best = op;
    if (!best.empty())
      return best;
    for (const std::string &op : opTypes)
      if (op != "Constant")
        return op;
  }
  return opTypes.front();
}

std::vector<Case> heterps::conformance::findCases(const std::string &dataDir) {
  std::set<std::string> supported;
  for (const mlir::heterps::ONNXOpInfo &op :
       mlir::heterps::getSupportedONNXOps())
    supported.insert(op.name.str());
  std::vector<Case> cases;
  std::error_code ec;
  for (const fs::directory_entry &entry : fs::directory_iterator(dataDir, ec)) {
    fs::path model = entry.path() / "model.onnx";
    if (!fs::exists(model))
      continue;
    std::ifstream in(model, std::ios::binary);
    onnx::ModelProto proto;
    if (!proto.ParseFromIstream(&in))
      continue;
    Case c;
    c.name = entry.path().filename().string();
    c.modelPath = model.string();
    bool inScope = proto.graph().node_size() > 0;
    for (const onnx::NodeProto &node : proto.graph().node()) {
      c.opTypes.push_back(node.op_type());
      if (!node.domain().empty() && node.domain() != "ai.onnx")
        inScope = false;
      if (!supported.count(node.op_type()))
        inScope = false;
    }
    if (!inScope)
      continue;
    c.mainOp = mainOpOf(c.name, c.opTypes, supported);
    for (const onnx::OperatorSetIdProto &o : proto.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx")
        c.opset = o.version();
    for (const fs::directory_entry &d : fs::directory_iterator(entry.path()))
      if (d.is_directory() &&
          d.path().filename().string().rfind("test_data_set_", 0) == 0)
        c.dataSets.push_back(d.path().string());
    std::sort(c.dataSets.begin(), c.dataSets.end());
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(),
            [](const Case &a, const Case &b) { return a.name < b.name; });
  return cases;
}

/// One line, without the data directory, so that expectations do not depend
/// on where the test data is installed.
static std::string clean(std::string s, const std::string &dataDir) {
  std::string prefix = dataDir + "/";
  for (size_t at; (at = s.find(prefix)) != std::string::npos;)
    s.erase(at, prefix.size());
  for (char &ch : s)
    if (ch == '\n' || ch == '\t')
      ch = ' ';
  return s;
}

/// The MLIR type an ONNX value info declares, or null when it has no full
/// static shape (then there is nothing to compare).
static mlir::Type declaredType(const onnx::ValueInfoProto &info,
                               mlir::MLIRContext &ctx) {
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
    return {};
  const auto &tt = info.type().tensor_type();
  llvm::SmallVector<int64_t> shape;
  for (const auto &dim : tt.shape().dim()) {
    if (!dim.has_dim_value())
      return {};
    shape.push_back(dim.dim_value());
  }
  mlir::Builder b(&ctx);
  mlir::Type elem;
  switch (tt.elem_type()) {
  case onnx::TensorProto::FLOAT:
    elem = b.getF32Type();
    break;
  case onnx::TensorProto::DOUBLE:
    elem = b.getF64Type();
    break;
  case onnx::TensorProto::FLOAT16:
    elem = b.getF16Type();
    break;
  case onnx::TensorProto::INT64:
    elem = b.getI64Type();
    break;
  case onnx::TensorProto::INT32:
    elem = b.getI32Type();
    break;
  case onnx::TensorProto::BOOL:
    elem = b.getI1Type();
    break;
  default:
    return {};
  }
  return mlir::RankedTensorType::get(shape, elem);
}

/// Operands that HeterPS needs at import time (static shapes, constant
/// attributes) but that a node test may feed as graph inputs.
static bool isConstantOperand(const std::string &op, int index) {
  static const std::map<std::string, std::set<int>> operands = {
      {"Reshape", {1}},         {"Expand", {1}},         {"Unsqueeze", {1}},
      {"Squeeze", {1}},         {"ReduceSum", {1}},      {"ReduceMean", {1}},
      {"ReduceMax", {1}},       {"Slice", {1, 2, 3, 4}}, {"Clip", {1, 2}},
      {"Dropout", {1, 2}},      {"Pad", {1, 2, 3}},      {"Split", {1}},
      {"ConstantOfShape", {0}}, {"Tile", {1}},           {"Range", {0, 1, 2}},
      {"CumSum", {1}},          {"TopK", {1}},           {"Resize", {1, 2, 3}},
  };
  auto it = operands.find(op);
  return it != operands.end() && it->second.count(index);
}

/// Binds the graph inputs that feed constant operands to the values of the
/// first data set, as an exporter would have written them: initializers.
/// Returns the names it bound.
static std::vector<std::string> specialize(onnx::ModelProto &model,
                                           const Case &c) {
  std::vector<std::string> bound;
  if (c.dataSets.empty())
    return bound;
  onnx::GraphProto &graph = *model.mutable_graph();
  std::set<std::string> initializers;
  for (const onnx::TensorProto &t : graph.initializer())
    initializers.insert(t.name());
  for (const onnx::NodeProto &node : graph.node())
    for (int i = 0; i < node.input_size(); ++i) {
      if (!isConstantOperand(node.op_type(), i) ||
          initializers.count(node.input(i)))
        continue;
      for (int n = 0; n < graph.input_size(); ++n) {
        if (graph.input(n).name() != node.input(i))
          continue;
        std::ifstream in(c.dataSets.front() + "/input_" + std::to_string(n) +
                             ".pb",
                         std::ios::binary);
        onnx::TensorProto value;
        if (!in || !value.ParseFromIstream(&in))
          break;
        value.set_name(node.input(i));
        *graph.add_initializer() = value;
        initializers.insert(node.input(i));
        bound.push_back(node.input(i));
      }
    }
  return bound;
}

/// A number as the expectations print it: short, and the same on every run.
static std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

/// "[1, 0, 2]": the position of flat element `flat` in `shape`.
static std::string position(const rt::Shape &shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < index.size(); ++d)
    s += (d ? ", " : "") + std::to_string(index[d]);
  return s + "]";
}

/// Element `i` of a float tensor as a double.
static double floatAt(const rt::Tensor &t, int64_t i) {
  switch (t.dtype()) {
  case rt::DType::F32:
    return t.as<float>()[i];
  case rt::DType::F64:
    return t.as<double>()[i];
  case rt::DType::F16:
  case rt::DType::BF16:
    return rt::halfToFloat(t.as<uint16_t>()[i], t.dtype() == rt::DType::BF16);
  default:
    return 0;
  }
}

/// Element `i` of an integer or bool tensor, widened (u64 reinterpreted).
static int64_t intAt(const rt::Tensor &t, int64_t i) {
  switch (t.dtype()) {
  case rt::DType::I8:
    return t.as<int8_t>()[i];
  case rt::DType::I16:
    return t.as<int16_t>()[i];
  case rt::DType::I32:
    return t.as<int32_t>()[i];
  case rt::DType::I64:
    return t.as<int64_t>()[i];
  case rt::DType::U8:
    return t.as<uint8_t>()[i];
  case rt::DType::U16:
    return t.as<uint16_t>()[i];
  case rt::DType::U32:
    return t.as<uint32_t>()[i];
  case rt::DType::U64:
    return static_cast<int64_t>(t.as<uint64_t>()[i]);
  case rt::DType::Bool:
    return t.as<uint8_t>()[i] != 0;
  default:
    return 0;
  }
}

/// Compares `actual` with `expected` as onnx/backend/test/runner does:
/// the element type and shape exactly, integers and bools exactly, floats
/// with np.testing.assert_allclose (NaN equals NaN, infinities must agree).
/// Returns an empty string when they match, else the worst element.
static std::string compare(const std::string &name, const rt::Tensor &expected,
                           const rt::Tensor &actual) {
  if (expected.dtype() != actual.dtype())
    return "output '" + name + "' is " + actual.typeString() + ", expected " +
           expected.typeString();
  auto dims = [](const rt::Shape &shape) {
    std::string s = "[";
    for (size_t d = 0; d < shape.size(); ++d)
      s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + "]";
  };
  if (expected.shape() != actual.shape())
    return "output '" + name + "' has shape " + dims(actual.shape()) +
           ", expected " + dims(expected.shape());
  int64_t n = expected.numElements(), differ = 0, worst = -1;
  double worstExcess = 0;
  bool floats = rt::isFloat(expected.dtype());
  for (int64_t i = 0; i < n; ++i) {
    double excess;
    if (floats) {
      double e = floatAt(expected, i), a = floatAt(actual, i);
      if (std::isnan(e) || std::isnan(a) || std::isinf(e) || std::isinf(a))
        excess = (std::isnan(e) && std::isnan(a)) || e == a ? 0 : HUGE_VAL;
      else
        excess = std::fabs(a - e) -
                 (kAbsoluteTolerance + kRelativeTolerance * std::fabs(e));
      if (!(excess > 0))
        continue;
    } else {
      int64_t e = intAt(expected, i), a = intAt(actual, i);
      if (e == a)
        continue;
      excess = std::fabs(double(a) - double(e));
    }
    ++differ;
    if (worst < 0 || excess > worstExcess) {
      worst = i;
      worstExcess = excess;
    }
  }
  if (!differ)
    return "";
  auto value = [&](const rt::Tensor &t) {
    return floats ? number(floatAt(t, worst)) : std::to_string(intAt(t, worst));
  };
  return "output '" + name + "' " + position(expected.shape(), worst) +
         ": expected " + value(expected) + ", got " + value(actual) + " (" +
         std::to_string(differ) + " of " + std::to_string(n) +
         " elements differ)";
}

/// ONNX's test data holds bfloat16 tensors as uint16 (NumPy has no
/// bfloat16): the same bits, read as bf16.
static rt::Tensor asBFloat16(const rt::Tensor &t) {
  if (t.dtype() != rt::DType::U16)
    return t;
  rt::Tensor out(rt::DType::BF16, t.shape());
  std::memcpy(out.data(), t.data(), t.byteSize());
  return out;
}

/// Emits the plan of `module` and runs it on every data set of `c`.
static Outcome execute(const Case &c, const onnx::ModelProto &proto,
                       mlir::ModuleOp module, std::string &firstError,
                       const std::string &dataDir) {
  Outcome outcome;
  outcome.status = Status::RuntimeError;
  ::heterps::plan::Plan plan;
  mlir::heterps::PlanEmitterOptions options;
  options.passName = "plan emitter";
  firstError.clear();
  if (mlir::failed(mlir::heterps::emitPlan(module, options, plan))) {
    outcome.reason = clean(firstError, dataDir);
    return outcome;
  }
  try {
    rt::ParamStore params(plan, /*seed=*/1);
    rt::LocalEmbeddingStore tables(plan, /*seed=*/1);
    rt::Program program(plan, params, tables, rt::ProgramOptions{});
    const onnx::GraphProto &graph = proto.graph();
    if (plan.outputs_size() != graph.output_size()) {
      outcome.reason = "the plan has " + std::to_string(plan.outputs_size()) +
                       " outputs, the model " +
                       std::to_string(graph.output_size());
      return outcome;
    }
    std::vector<int> outputs;
    for (int i = 0; i < plan.outputs_size(); ++i)
      outputs.push_back(i);
    for (const std::string &set : c.dataSets) {
      // Graph inputs bound to constants at import are not plan inputs.
      std::vector<rt::Tensor> values(plan.inputs_size());
      std::vector<const rt::Tensor *> inputs(plan.inputs_size(), nullptr);
      for (int n = 0; n < graph.input_size(); ++n) {
        int index = program.inputIndex(graph.input(n).name());
        if (index < 0)
          continue;
        values[index] =
            rt::readTensorProto(set + "/input_" + std::to_string(n) + ".pb");
        if (program.inputType(index).dtype == rt::DType::BF16)
          values[index] = asBFloat16(values[index]);
        inputs[index] = &values[index];
      }
      std::vector<const rt::Tensor *> results =
          program.run(inputs, /*training=*/false, outputs);
      for (int i = 0; i < graph.output_size(); ++i) {
        rt::Tensor want =
            rt::readTensorProto(set + "/output_" + std::to_string(i) + ".pb");
        if (graph.output(i).type().tensor_type().elem_type() ==
            onnx::TensorProto::BFLOAT16)
          want = asBFloat16(want);
        std::string diff = compare(graph.output(i).name(), want, *results[i]);
        if (diff.empty())
          continue;
        outcome.status = Status::WrongResult;
        if (c.dataSets.size() > 1)
          diff = fs::path(set).filename().string() + ": " + diff;
        outcome.reason = clean(diff, dataDir);
        return outcome;
      }
    }
  } catch (const rt::RuntimeError &e) {
    outcome.reason = clean(e.what(), dataDir);
    return outcome;
  } catch (const std::exception &e) {
    outcome.reason = clean(std::string("exception: ") + e.what(), dataDir);
    return outcome;
  }
  outcome.status = Status::Pass;
  return outcome;
}

Outcome heterps::conformance::runCase(const Case &c, const std::string &dataDir,
                                      bool executeIt) {
  Outcome outcome;
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect>();
  std::string firstError;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() != mlir::DiagnosticSeverity::Error ||
        !firstError.empty())
      return mlir::success();
    firstError = diag.str();
    return mlir::success();
  });
  try {
    onnx::ModelProto proto;
    std::ifstream in(c.modelPath, std::ios::binary);
    if (!proto.ParseFromIstream(&in)) {
      outcome.reason = "the model does not parse";
      return outcome;
    }
    specialize(proto, c);
    std::string bytes = proto.SerializeAsString();
    std::string dir = fs::path(c.modelPath).parent_path().string();
    auto module = mlir::heterps::importONNXModel(bytes, c.name + "/model.onnx",
                                                 dir, &ctx);
    if (mlir::failed(module)) {
      outcome.reason = clean(firstError, dataDir);
      return outcome;
    }
    auto func = (*module)->lookupSymbol<mlir::func::FuncOp>("main");
    auto results = func.getFunctionType().getResults();
    for (int i = 0; i < proto.graph().output_size(); ++i) {
      mlir::Type want = declaredType(proto.graph().output(i), ctx);
      if (!want || want == results[i])
        continue;
      std::string msg;
      llvm::raw_string_ostream os(msg);
      os << "output '" << proto.graph().output(i).name() << "' is "
         << results[i] << ", ONNX declares " << want;
      outcome.reason = msg;
      return outcome;
    }
    // specialize only adds initializers: the graph's inputs and outputs
    // are those of the data sets.
    if (executeIt)
      return execute(c, proto, module->get(), firstError, dataDir);
  } catch (const std::exception &e) {
    outcome.reason = std::string("exception: ") + e.what();
    return outcome;
  }
  outcome.status = Status::Pass;
  return outcome;
}

bool heterps::conformance::readExpected(
    const std::string &path, std::map<std::string, Outcome> &expected) {
  std::ifstream in(path);
  if (!in)
    return false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream fields(line);
    std::string name, status, reason;
    std::getline(fields, name, '\t');
    std::getline(fields, status, '\t');
    std::getline(fields, reason);
    Outcome o;
    o.reason = reason;
    bool known = false;
    for (Status s : {Status::Pass, Status::ImportFails, Status::RuntimeError,
                     Status::WrongResult})
      if (status == statusName(s)) {
        o.status = s;
        known = true;
      }
    // An unknown status never matches a run.
    if (!known)
      o.reason = "unknown status '" + status + "' " + reason;
    expected[name] = o;
  }
  return true;
}

bool heterps::conformance::writeExpected(const std::string &path,
                                         const std::vector<Case> &cases,
                                         const std::vector<Outcome> &outcomes) {
  std::ostringstream out;
  out << "# Expected outcomes of ONNX's backend node tests whose ops are all "
         "supported\n"
         "# (heterps-onnx-conformance; regenerate with --update). Each case "
         "is imported,\n"
         "# emitted as a plan and run on the CPU runtime with the inputs of "
         "its\n"
         "# <data-dir>/<name>/test_data_set_*/input_N.pb; the results are "
         "compared with\n"
         "# output_N.pb (floats: |actual - expected| <= 1e-7 + 1e-3 * "
         "|expected|; other\n"
         "# types exactly; shapes and element types exactly). Graph inputs "
         "that feed\n"
         "# operands HeterPS needs at import time (shapes, axes, slice "
         "bounds, clip\n"
         "# bounds, dropout ratio) are bound to test_data_set_0's values "
         "first.\n"
         "# name<TAB>pass|import-fails|runtime-error|wrong-result<TAB>reason\n";
  for (size_t i = 0; i < cases.size(); ++i)
    out << cases[i].name << '\t' << statusName(outcomes[i].status) << '\t'
        << outcomes[i].reason << '\n';
  return true;
}

std::string
heterps::conformance::renderSupportedOps(const std::vector<Case> &cases,
                                         const std::vector<Outcome> &outcomes) {
  struct Failure {
    std::string name, op, reason;
  };
  struct Stats {
    std::set<int> opsets;
    int imports = 0, pass = 0, total = 0;
  };
  std::map<std::string, Stats> byOp;
  std::map<Status, std::vector<Failure>> failures;
  for (const mlir::heterps::ONNXOpInfo &op :
       mlir::heterps::getSupportedONNXOps())
    byOp[op.name.str()];
  int imports = 0, pass = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    Stats &s = byOp[cases[i].mainOp];
    s.opsets.insert(cases[i].opset);
    ++s.total;
    const Outcome &o = outcomes[i];
    s.imports += o.imports();
    imports += o.imports();
    s.pass += o.passes();
    pass += o.passes();
    if (!o.passes())
      failures[o.status].push_back({cases[i].name, cases[i].mainOp, o.reason});
  }
  // Failures grouped by op, as in the table.
  for (auto &[status, list] : failures)
    std::stable_sort(
        list.begin(), list.end(),
        [](const Failure &a, const Failure &b) { return a.op < b.op; });
  std::ostringstream out;
  out << "# Supported ONNX ops\n\n"
         "<!-- Generated by `heterps-onnx-conformance --update`; do not "
         "edit. -->\n\n"
         "The ONNX importer (see [ONNX.md](ONNX.md)) converts the ops below "
         "(default domain).\nAn op outside this list is an error naming the "
         "node, its op type and the opset.\n\n"
         "Cases are ONNX's backend node tests (`libonnx-testdata`) whose "
         "nodes all have\nsupported ops, counted under their first node's "
         "op. A case *imports* when it\nimports, verifies and its result "
         "types match the outputs the model declares;\nit *passes* when, "
         "in addition, its plan runs on the CPU runtime with the\ncase's "
         "inputs and gives the expected outputs: the same shapes and element "
         "types,\nintegers and bools exactly, floats within ONNX's backend "
         "tolerance\n(`|actual - expected| <= 1e-7 + 1e-3 * |expected|`).\n"
         "*Opsets* are those whose signature of the op the importer "
         "converts (it\nfollows each op's signature changes, for example "
         "Squeeze/Unsqueeze/ReduceSum\naxes as an input from opset 13, "
         "Clip min/max as inputs from 11); the limits\nare the importer's "
         "own (`getSupportedONNXOps()`, lib/Import/ONNX/OpTable.cpp).\n\n"
      << "In total " << imports << " of " << cases.size()
      << " cases import and " << pass << " of " << cases.size()
      << " pass.\n\n"
         "| op | opsets | opsets of the cases | cases importing | cases "
         "passing | limits |\n"
         "|----|--------|---------------------|-----------------|-----------"
         "----|--------|\n";
  for (const mlir::heterps::ONNXOpInfo &info :
       mlir::heterps::getSupportedONNXOps()) {
    const Stats &s = byOp[info.name.str()];
    std::string opsets;
    for (int v : s.opsets)
      opsets += (opsets.empty() ? "" : ", ") + std::to_string(v);
    out << "| " << info.name.str() << " | " << info.minOpset << "-"
        << mlir::heterps::getMaxONNXOpset() << " | "
        << (opsets.empty() ? "-" : opsets) << " | " << s.imports << " / "
        << s.total << " | " << s.pass << " / " << s.total << " | "
        << info.limits.str() << " |\n";
  }
  auto section = [&](Status status, const char *title) {
    out << "\n## " << title << "\n\n";
    if (failures[status].empty())
      out << "None.\n";
    for (const Failure &f : failures[status]) {
      std::string r = f.reason;
      for (char &ch : r)
        if (ch == '|')
          ch = '/';
      out << "- `" << f.name << "` (" << f.op << "): " << r;
      auto cause = kKnownCauses.find(f.name);
      if (cause != kKnownCauses.end())
        out << ". Known cause: " << cause->second << ".";
      out << "\n";
    }
  };
  section(Status::ImportFails, "Cases that do not import");
  section(Status::RuntimeError, "Cases that fail at run time");
  section(Status::WrongResult, "Cases with wrong results");
  return out.str();
}

bool heterps::conformance::writeSupportedOps(
    const std::string &path, const std::vector<Case> &cases,
    const std::vector<Outcome> &outcomes) {
  std::ofstream out(path);
  out << renderSupportedOps(cases, outcomes);
  return static_cast<bool>(out);
}

int heterps::conformance::runAll(const std::string &dataDir,
                                 const std::string &expectedPath,
                                 const std::string &docPath, bool update,
                                 bool verbose) {
  std::vector<Case> cases = findCases(dataDir);
  if (cases.empty()) {
    std::cerr << "no ONNX node tests found under '" << dataDir << "'\n";
    return 1;
  }
  std::vector<Outcome> outcomes;
  std::map<Status, int> count;
  for (const Case &c : cases) {
    outcomes.push_back(runCase(c, dataDir));
    ++count[outcomes.back().status];
    if (verbose)
      std::cerr << c.name << ": " << outcomes.back().describe() << "\n";
  }
  int total = cases.size(), pass = count[Status::Pass],
      imports = total - count[Status::ImportFails];
  std::cerr << imports << " of " << total
            << " node tests of supported ops import and verify ("
            << (100.0 * imports / total) << "%); " << pass
            << " run and match the expected outputs (" << (100.0 * pass / total)
            << "%), " << count[Status::RuntimeError] << " fail at run time, "
            << count[Status::WrongResult] << " give wrong results\n";
  if (update) {
    bool ok = writeExpected(expectedPath, cases, outcomes);
    if (!docPath.empty())
      ok &= writeSupportedOps(docPath, cases, outcomes);
    if (!ok) {
      std::cerr << "cannot write '" << expectedPath << "' or '" << docPath
                << "'\n";
      return 1;
    }
    return 0;
  }
  std::map<std::string, Outcome> expected;
  if (!readExpected(expectedPath, expected)) {
    std::cerr << "cannot read expectations '" << expectedPath << "'\n";
    return 1;
  }
  int differences = 0;
  std::set<std::string> seen;
  for (size_t i = 0; i < cases.size(); ++i) {
    seen.insert(cases[i].name);
    auto it = expected.find(cases[i].name);
    const Outcome &got = outcomes[i];
    if (it == expected.end()) {
      std::cerr << cases[i].name << ": not in the expectations (now "
                << got.describe() << ")\n";
      ++differences;
    } else if (it->second != got) {
      std::cerr << cases[i].name << ": expected " << it->second.describe()
                << ", got " << got.describe() << "\n";
      ++differences;
    }
  }
  for (const auto &[name, outcome] : expected)
    if (!seen.count(name)) {
      std::cerr << name << ": expected but not found under '" << dataDir
                << "'\n";
      ++differences;
    }
  if (differences)
    std::cerr << differences
              << " outcome(s) differ from the expectations; rerun with "
                 "--update if the change is intended\n";
  if (!docPath.empty()) {
    std::ifstream in(docPath);
    std::stringstream current;
    current << in.rdbuf();
    if (!in || current.str() != renderSupportedOps(cases, outcomes)) {
      std::cerr << "'" << docPath
                << "' is not what these outcomes and the importer's op "
                   "table give; rerun with --update --doc="
                << docPath << "\n";
      ++differences;
    }
  }
  return differences ? 1 : 0;
}
