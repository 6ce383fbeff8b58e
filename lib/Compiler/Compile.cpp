//===- Compile.cpp - A model to a plan, in process ------------------------===//

#include "heterps/Compiler/Compile.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Import/ONNX/ImportONNX.h"
#include "heterps/Target/Plan/PlanEmitter.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <mutex>
#include <unistd.h>

using namespace mlir;
using namespace mlir::heterps;

void mlir::heterps::registerCompilerDialects(DialectRegistry &registry) {
  registry.insert<HeterPSDialect, func::FuncDialect, arith::ArithDialect>();
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::heterps::loadModel(StringRef path, MLIRContext *context) {
  if (isONNXModelFile(path))
    return importONNXFile(path, context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, context);
  if (!module)
    return failure();
  return module;
}

/// The passes a pipeline may name: HeterPS's and the generic clean-ups
/// heterps-opt registers. Registration is global and happens once.
static void registerPipelinePasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerHeterPSPasses();
    registerCanonicalizerPass();
    registerCSEPass();
    registerInlinerPass();
    registerSymbolDCEPass();
  });
}

/// Parses `pipeline`, with every message in `errors`. A pass option's bad
/// value ("Cannot find option named 'adamw'!") is written by LLVM's option
/// parser to stderr, not to the pipeline's error stream, so stderr is
/// taken for the parse; the compile API has no terminal to show it on.
static FailureOr<OpPassManager> parsePipeline(StringRef pipeline,
                                              std::string &errors) {
  static std::mutex stderrMutex;
  std::lock_guard<std::mutex> lock(stderrMutex);
  llvm::raw_string_ostream stream(errors);
  llvm::errs().flush();
  std::fflush(stderr);
  std::FILE *captured = std::tmpfile();
  int saved = captured ? ::dup(STDERR_FILENO) : -1;
  if (saved >= 0)
    ::dup2(::fileno(captured), STDERR_FILENO);
  FailureOr<OpPassManager> parsed = parsePassPipeline(pipeline, stream);
  if (saved >= 0) {
    llvm::errs().flush();
    std::fflush(stderr);
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    std::rewind(captured);
    std::string text;
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), captured)) > 0;)
      text.append(buffer, n);
    // LLVM's message starts with the program's name, which is empty here.
    if (!text.empty() && text[0] == ':')
      text = text.substr(1);
    while (!text.empty() && (text[0] == ' ' || text.back() == '\n'))
      text = text[0] == ' ' ? text.substr(1) : text.substr(0, text.size() - 1);
    if (!text.empty())
      errors = text + (errors.rfind("\n", 0) == 0 ? "" : "\n") + errors;
  }
  if (captured)
    std::fclose(captured);
  return parsed;
}

static std::string formatDiagnostic(Diagnostic &diag) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto one = [&](Diagnostic &d) {
    // Locations as heterps-opt prints them: `file:line:col`, other kinds
    // (an ONNX node's name) in MLIR's syntax.
    Location loc = d.getLocation();
    if (auto file = dyn_cast<FileLineColLoc>(loc))
      os << file.getFilename().getValue() << ":" << file.getLine() << ":"
         << file.getColumn() << ": ";
    else if (!isa<UnknownLoc>(loc))
      os << loc << ": ";
    switch (d.getSeverity()) {
    case DiagnosticSeverity::Error:
      os << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      os << "warning: ";
      break;
    case DiagnosticSeverity::Note:
      os << "note: ";
      break;
    case DiagnosticSeverity::Remark:
      os << "remark: ";
      break;
    }
    os << d.str();
  };
  one(diag);
  for (Diagnostic &note : diag.getNotes()) {
    os << "\n";
    one(note);
  }
  return text;
}

CompileResult mlir::heterps::compileModel(const CompileRequest &request) {
  CompileResult result;
  registerPipelinePasses();
  DialectRegistry registry;
  registerCompilerDialects(registry);
  MLIRContext context(registry);
  // As in heterps-opt: a diagnostic says what is wrong, without the op in
  // generic form (a schedule error would carry the whole function).
  context.printOpOnDiagnostic(false);
  // Passes may run on several threads; the handler is called under the
  // context's diagnostic lock.
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    result.diagnostics.push_back(formatDiagnostic(diag));
    return success();
  });
  auto error = [&](const std::string &message) {
    result.diagnostics.push_back("error: " + message);
    return std::move(result);
  };

  FailureOr<OwningOpRef<ModuleOp>> module = failure();
  if (!request.modelBytes.empty())
    module = importONNXModel(request.modelBytes,
                             request.modelPath.empty() ? "<bytes>"
                                                       : request.modelPath,
                             request.baseDir, &context);
  else if (!request.modelPath.empty())
    module = loadModel(request.modelPath, &context);
  else
    return error("no model: give a file or ONNX bytes");
  if (failed(module))
    return result;

  if (!request.pipeline.empty()) {
    // The pipeline names its anchor (`builtin.module(...)`), as
    // heterps-opt's --pass-pipeline does.
    std::string parseError;
    FailureOr<OpPassManager> parsed =
        parsePipeline(request.pipeline, parseError);
    if (failed(parsed))
      return error("invalid pass pipeline '" + request.pipeline +
                   "': " + parseError);
    if (parsed->getOpAnchorName() != ModuleOp::getOperationName())
      return error("the pass pipeline '" + request.pipeline +
                   "' must run on builtin.module");
    PassManager pm(&context, ModuleOp::getOperationName());
    static_cast<OpPassManager &>(pm) = std::move(*parsed);
    if (failed(pm.run(**module)))
      return result;
  }

  PlanEmitterOptions options;
  options.passName = "compile";
  options.functionName = request.function;
  options.batchSize = request.batchSize;
  if (request.batchSize < 1)
    return error("the batch size must be positive, got " +
                 std::to_string(request.batchSize));
  if (failed(emitPlan(**module, options, result.plan)))
    return result;
  result.succeeded = true;
  return result;
}
