//===- Conformance.cpp - ONNX backend node tests through the importer -----===//

#include "Conformance.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Import/ONNX/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fs = std::filesystem;
using namespace heterps::conformance;

/// What the importer does not do for an op, for docs/SupportedOps.md.
static const std::map<std::string, std::string> kLimits = {
    {"Add", "float or integer tensors of one type; NumPy broadcasting (not the "
            "pre-opset-7 `axis`)"},
    {"AveragePool", "no dilations; auto_pad needs static spatial sizes"},
    {"BatchNormalization",
     "spatial = 1; the running statistics become frozen parameters; the "
     "training-mode statistics outputs are spelled out"},
    {"Cast", "numbers only (no strings); folds when its input is known"},
    {"Clip", "min/max must be constants"},
    {"Concat", "float tensors, or integer tensors known at import time"},
    {"Conv", "auto_pad needs static spatial sizes"},
    {"Div", "float or integer tensors of one type"},
    {"Dropout",
     "ratio and training_mode must be constants; the mask output only in "
     "inference (all ones)"},
    {"Expand", "the target shape must be known at import time"},
    {"Gather", "from a float initializer by computed ids: an embedding table; "
               "otherwise a dense gather"},
    {"Identity", "tensors only (no sequences or optionals)"},
    {"LayerNormalization",
     "Mean and InvStdDev outputs are spelled out with reduce_mean"},
    {"MaxPool", "one output (no Indices), no dilations, storage_order 0"},
    {"Mul", "float or integer tensors of one type"},
    {"NegativeLogLikelihoodLoss",
     "with weights or ignore_index: heterps.weighted_nll_loss"},
    {"Pow", "float base; the exponent is cast to the base type"},
    {"Reshape", "the shape must be known at import time"},
    {"Shape", "folded; a dynamic batch stays symbolic"},
    {"Slice", "starts/ends/axes/steps must be constants; the batch is kept"},
    {"SoftmaxCrossEntropyLoss",
     "with weights, ignore_index or log_prob: log_softmax + "
     "weighted_nll_loss"},
    {"Squeeze", "axes must be constants"},
    {"Sub", "float or integer tensors of one type"},
    {"Unsqueeze", "axes must be constants"},
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
  for (llvm::StringRef op : mlir::heterps::getSupportedONNXOps())
    supported.insert(op.str());
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
      {"Reshape", {1}},    {"Expand", {1}},         {"Unsqueeze", {1}},
      {"Squeeze", {1}},    {"ReduceSum", {1}},      {"ReduceMean", {1}},
      {"ReduceMax", {1}},  {"Slice", {1, 2, 3, 4}}, {"Clip", {1, 2}},
      {"Dropout", {1, 2}},
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

Outcome heterps::conformance::runCase(const Case &c,
                                      const std::string &dataDir) {
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
  } catch (const std::exception &e) {
    outcome.reason = std::string("exception: ") + e.what();
    return outcome;
  }
  outcome.pass = true;
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
    expected[name] = Outcome{status == "pass", reason};
  }
  return true;
}

bool heterps::conformance::writeExpected(const std::string &path,
                                         const std::vector<Case> &cases,
                                         const std::vector<Outcome> &outcomes) {
  std::ofstream out(path);
  if (!out)
    return false;
  out << "# Expected outcomes of importing ONNX's backend node tests whose "
         "ops are all\n"
         "# supported (heterps-onnx-conformance; regenerate with --update).\n"
         "# name<TAB>pass|fail<TAB>reason. The inputs and outputs of each "
         "case are in\n"
         "# <data-dir>/<name>/test_data_set_*/{input,output}_N.pb. Graph "
         "inputs that feed\n"
         "# operands HeterPS needs at import time (shapes, axes, slice "
         "bounds, clip\n"
         "# bounds, dropout ratio) are bound to test_data_set_0's values "
         "first.\n";
  for (size_t i = 0; i < cases.size(); ++i)
    out << cases[i].name << '\t' << (outcomes[i].pass ? "pass" : "fail") << '\t'
        << outcomes[i].reason << '\n';
  return true;
}

bool heterps::conformance::writeSupportedOps(
    const std::string &path, const std::vector<Case> &cases,
    const std::vector<Outcome> &outcomes) {
  struct Stats {
    std::set<int> opsets;
    int pass = 0, total = 0;
    std::vector<std::pair<std::string, std::string>> failures;
  };
  std::map<std::string, Stats> byOp;
  for (llvm::StringRef op : mlir::heterps::getSupportedONNXOps())
    byOp[op.str()];
  int pass = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    Stats &s = byOp[cases[i].mainOp];
    s.opsets.insert(cases[i].opset);
    ++s.total;
    if (outcomes[i].pass) {
      ++s.pass;
      ++pass;
    } else {
      s.failures.push_back({cases[i].name, outcomes[i].reason});
    }
  }
  std::ofstream out(path);
  if (!out)
    return false;
  out << "# Supported ONNX ops\n\n"
         "<!-- Generated by `heterps-onnx-conformance --update`; do not "
         "edit. -->\n\n"
         "The ONNX importer (see [ONNX.md](ONNX.md)) converts the ops below "
         "(default domain).\nAn op outside this list is an error naming the "
         "node, its op type and the opset.\n\n"
         "Cases are ONNX's backend node tests (`libonnx-testdata`) whose "
         "nodes all have\nsupported ops, counted under their first node's "
         "op; a case passes when it\nimports, verifies and its result types "
         "match the outputs the model declares.\n"
         "Opsets are those of the cases; the importer follows each op's "
         "signature\nchanges (for example Squeeze/Unsqueeze/ReduceSum axes "
         "as an input from\nopset 13, Clip min/max as inputs from 11).\n\n"
      << "In total " << pass << " of " << cases.size()
      << " cases pass.\n\n"
         "| op | opsets of the cases | cases passing | limits |\n"
         "|----|---------------------|---------------|--------|\n";
  for (const auto &[op, s] : byOp) {
    std::string opsets;
    for (int v : s.opsets)
      opsets += (opsets.empty() ? "" : ", ") + std::to_string(v);
    auto limit = kLimits.find(op);
    out << "| " << op << " | " << (opsets.empty() ? "-" : opsets) << " | "
        << s.pass << " / " << s.total << " | "
        << (limit == kLimits.end() ? "" : limit->second) << " |\n";
  }
  out << "\n## Cases that do not import\n\n";
  for (const auto &[op, s] : byOp)
    for (const auto &[name, reason] : s.failures) {
      std::string r = reason;
      for (char &ch : r)
        if (ch == '|')
          ch = '/';
      out << "- `" << name << "` (" << op << "): " << r << "\n";
    }
  return true;
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
  int pass = 0;
  for (const Case &c : cases) {
    outcomes.push_back(runCase(c, dataDir));
    pass += outcomes.back().pass;
    if (verbose)
      std::cerr << c.name << ": "
                << (outcomes.back().pass ? "pass" : outcomes.back().reason)
                << "\n";
  }
  std::cerr << pass << " of " << cases.size()
            << " node tests of supported ops import and verify ("
            << (100.0 * pass / cases.size()) << "%)\n";
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
                << (got.pass ? "pass" : "fail: " + got.reason) << ")\n";
      ++differences;
    } else if (it->second.pass != got.pass || it->second.reason != got.reason) {
      std::cerr << cases[i].name << ": expected "
                << (it->second.pass ? "pass" : "fail: " + it->second.reason)
                << ", got " << (got.pass ? "pass" : "fail: " + got.reason)
                << "\n";
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
  return differences ? 1 : 0;
}
