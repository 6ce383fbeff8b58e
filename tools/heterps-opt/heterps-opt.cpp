//===- heterps-opt.cpp - The HeterPS optimizer driver ---------------------===//
//
// Parses HeterPS IR, runs HeterPS and upstream passes over it and prints the
// result, like mlir-opt. An input ending in `.onnx` is first imported into the
// HeterPS dialect; the imported module (with its locations) then goes through
// MlirOptMain like any parsed file, so every pass option still applies.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Import/ONNX/ImportONNX.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

/// Imports `inputFilename` and runs the rest of MlirOptMain on the printed
/// module.
static int importAndRun(llvm::StringRef inputFilename,
                        llvm::StringRef outputFilename,
                        mlir::DialectRegistry &registry) {
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  std::string text;
  {
    mlir::MLIRContext context(registry);
    auto module = mlir::heterps::importONNXFile(inputFilename, &context);
    if (mlir::failed(module))
      return 1;
    // Print with locations so that node names (`loc("fc1")`) survive the
    // round trip into MlirOptMain's context.
    llvm::raw_string_ostream os(text);
    (*module)->print(os, mlir::OpPrintingFlags().enableDebugInfo());
  }
  std::string error;
  auto output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(text, inputFilename);
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(buffer), registry, config)))
    return 1;
  output->keep();
  return 0;
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
  mlir::heterps::registerHeterPSPasses();
  // The generic cleanups users chain with HeterPS passes.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "HeterPS optimizer driver\n", registry);
  if (llvm::StringRef(inputFilename).ends_with(".onnx"))
    return importAndRun(inputFilename, outputFilename, registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
