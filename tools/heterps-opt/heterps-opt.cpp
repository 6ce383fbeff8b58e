//===- heterps-opt.cpp - The HeterPS optimizer driver ---------------------===//
//
// Parses HeterPS IR, runs HeterPS and upstream passes over it and prints the
// result, like mlir-opt. An ONNX input (a `.onnx` file, or one that starts
// as a protobuf does: isONNXModelFile) is first imported into the HeterPS
// dialect; the imported module (with its locations) then runs the
// pass pipeline MlirOptMain's options configure, in place, and is printed
// as MlirOptMain prints: every pass and printing option still applies.
//
// Three departures from mlir-opt: an option that is not registered is
// always an error (LLVM's parser reads any unknown option that starts with
// `h` as the grouped `-h` and prints the help with exit code 0, so a
// misspelled `--heterps-autodif=...` did nothing, successfully); diagnostics
// do not dump the failing op in generic form unless
// --mlir-print-op-on-diagnostic asks for it (a missing cluster file printed
// the whole module); and --help lists the passes and MLIR's options, not
// the hundreds of LLVM backend options that libLLVM registers (they still
// work, and --help-hidden lists them).
//
//===----------------------------------------------------------------------===//

#include "heterps/Compiler/Compile.h"
#include "heterps/Import/ONNX/ImportONNX.h"
#include "heterps/Transforms/Passes.h"
#include "heterps/Version.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Debug/Counter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <malloc.h>

/// Whether the imported module can go straight to the pass pipeline: the
/// MlirOptMain features that need the input as a source buffer (split
/// input, diagnostics checked against the file, reproducers, round-trip
/// checks, remarks) take the bytecode hand-over instead.
static bool runsInPlace(const mlir::MlirOptMainConfig &config) {
  return !config.shouldVerifyDiagnostics() &&
         config.inputSplitMarker().empty() && !config.shouldRunReproducer() &&
         !config.shouldVerifyRoundtrip() &&
         config.getReproducerFilename().empty() &&
         !config.shouldEmitRemarks() && !config.shouldListPasses() &&
         !config.shouldShowDialects() && config.getIrdlFile().empty();
}

/// Runs the configured pass pipeline on the imported module in its own
/// context and prints it as MlirOptMain would: a 640 MB table is neither
/// written out nor parsed back (which held three copies of it at once).
static int runInPlace(mlir::ModuleOp module,
                      const mlir::MlirOptMainConfig &config,
                      llvm::raw_ostream *os) {
  mlir::MLIRContext *context = module.getContext();
  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope root = timing.getRootScope();
  mlir::PassManager pm(context, module->getName().getStringRef(),
                       mlir::OpPassManager::Nesting::Implicit);
  pm.enableVerifier(config.shouldVerifyPasses());
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return 1;
  pm.enableTiming(root);
  if (mlir::failed(config.setupPassPipeline(pm)))
    return 1;
  if (config.shouldDumpPassPipeline()) {
    pm.dump();
    llvm::errs() << "\n";
  }
  if (mlir::failed(pm.run(module)))
    return 1;
  if (!os)
    return 0;
  mlir::TimingScope output = root.nest("Output");
  if (config.shouldEmitBytecode()) {
    mlir::BytecodeWriterConfig writer;
    if (std::optional<int64_t> version = config.bytecodeVersionToEmit())
      writer.setDesiredBytecodeVersion(*version);
    if (config.shouldElideResourceDataFromBytecode())
      writer.setElideResourceDataFlag();
    return mlir::failed(mlir::writeBytecodeToFile(module, *os, writer)) ? 1 : 0;
  }
  module->print(*os, mlir::OpPrintingFlags());
  *os << "\n";
  return 0;
}

/// Imports `inputFilename` and runs the rest of MlirOptMain on the module:
/// in place (runInPlace) unless an option needs a source buffer, then
/// handed over as MLIR bytecode, which keeps initializers as raw bytes and
/// every location.
static int importAndRun(llvm::StringRef inputFilename,
                        llvm::StringRef outputFilename,
                        mlir::DialectRegistry &registry) {
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  std::string error;
  auto output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  std::string text;
  {
    mlir::MLIRContext context(registry);
    context.allowUnregisteredDialects(config.shouldAllowUnregisteredDialects());
    auto module = mlir::heterps::loadModel(inputFilename, &context);
    if (mlir::failed(module))
      return 1;
    if (runsInPlace(config)) {
      // Pass diagnostics print as MlirOptMain prints them (file:line:col).
      llvm::SourceMgr sources;
      mlir::SourceMgrDiagnosticHandler handler(sources, &context);
      // `-o /dev/null` (the plan file is the result) prints nothing: the
      // text of a 640 MB table is 1.3 GB of hex, built twice in memory.
      bool discarded = llvm::sys::fs::equivalent(outputFilename, "/dev/null");
      if (int rc = runInPlace(module->get(), config,
                              discarded ? nullptr : &output->os()))
        return rc;
      output->keep();
      return 0;
    }
    llvm::raw_string_ostream os(text);
    if (mlir::failed(mlir::writeBytecodeToFile(module->get(), os))) {
      llvm::errs() << inputFilename
                   << ": the imported module cannot be written as bytecode\n";
      return 1;
    }
  }
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(text, inputFilename);
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(buffer), registry, config)))
    return 1;
  output->keep();
  return 0;
}

/// Hides from --help the options registered before main ran: libLLVM's
/// code generation and instrumentation options, which no HeterPS or MLIR
/// pass reads. --help and --version stay.
static void hideLLVMOptions() {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::StringRef name = entry.first;
    if (name.starts_with("help") || name == "version" ||
        (name.starts_with("print-") && name.ends_with("options")))
      continue;
    entry.second->setHiddenFlag(llvm::cl::Hidden);
  }
}

/// Registers the options registerAndParseCLIOptions registers (each
/// registration happens once, so its own call later changes nothing) and
/// returns false, having said why, when an argument names an option that
/// none of them is. `-o` and the input file are its own.
static bool checkOptionNames(int argc, char **argv,
                             mlir::DialectRegistry &registry) {
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::tracing::DebugCounter::registerCLOptions();
  const auto &options = llvm::cl::getRegisteredOptions();
  if (llvm::cl::Option *printOp = options.lookup("mlir-print-op-on-diagnostic"))
    static_cast<llvm::cl::opt<bool> *>(printOp)->setInitialValue(false);
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--")
      break;
    if (arg.size() < 2 || arg[0] != '-')
      continue;
    llvm::StringRef name =
        arg.drop_front(arg.starts_with("--") ? 2 : 1).split('=').first;
    if (name == "o" || options.count(name))
      continue;
    llvm::StringRef nearest;
    unsigned distance = ~0u;
    for (const auto &entry : options) {
      if (entry.second->getOptionHiddenFlag() != llvm::cl::NotHidden)
        continue;
      unsigned d = name.edit_distance(entry.first, true, distance);
      if (d < distance) {
        distance = d;
        nearest = entry.first;
      }
    }
    llvm::errs() << "heterps-opt: unknown option '" << arg << "'";
    if (!nearest.empty() && distance <= std::max<size_t>(2, name.size() / 3))
      llvm::errs() << "; did you mean '--" << nearest << "'?";
    llvm::errs() << " (--help lists the options)\n";
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
#ifdef M_MMAP_THRESHOLD
  // An import copies the weights a few times (protobuf, attribute,
  // bytecode). glibc maps blocks from 128 KB on and unmaps them on free,
  // so every copy faulted in fresh pages: a third of resnet18's import and
  // schedule. Blocks up to 32 MB (any one layer's weights) now come from
  // the heap and are reused; the heap is trimmed as before.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
  // Before MLIR registers its options: what is registered now is LLVM's.
  hideLLVMOptions();
  mlir::DialectRegistry registry;
  mlir::heterps::registerCompilerDialects(registry);
  mlir::heterps::registerHeterPSPasses();
  // The generic cleanups users chain with HeterPS passes.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();

  if (!checkOptionNames(argc, argv, registry))
    return 1;
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "heterps-opt (HeterPS) " << HETERPS_VERSION << "\n  with LLVM/MLIR "
       << LLVM_VERSION_STRING << "\n";
  });
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "HeterPS optimizer driver\n", registry);
  if (mlir::heterps::isONNXModelFile(inputFilename))
    return importAndRun(inputFilename, outputFilename, registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
