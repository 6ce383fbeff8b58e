//===- heterps-opt.cpp - The HeterPS optimizer driver ---------------------===//
//
// Parses HeterPS IR, runs HeterPS and upstream passes over it and prints the
// result, like mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
  mlir::heterps::registerHeterPSPasses();
  mlir::heterps::registerHeterPSPipelines();
  // The generic cleanups users chain with HeterPS passes.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "HeterPS optimizer driver\n", registry));
}
