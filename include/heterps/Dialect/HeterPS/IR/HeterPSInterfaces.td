//===- HeterPSInterfaces.td - Cost and gradient interfaces -*- tablegen -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSINTERFACES_TD
#define HETERPS_DIALECT_HETERPS_IR_HETERPSINTERFACES_TD

include "mlir/IR/OpBase.td"

def HeterPS_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::heterps";
  let description = [{
    The work an op does for one batch, which the cost model turns into time on
    a resource type (a roofline: the larger of FLOPs over peak and bytes over
    memory bandwidth). Dynamic dimensions are bound to the batch size given;
    dividing by it gives the cost per sample.

    The default implementation treats the op as elementwise: one FLOP per
    result element forward, two backward, and every operand and result read
    or written once.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the forward and backward work of the op for one batch of
        `batchSize` samples.
      }],
      "::mlir::heterps::OpCost", "getCost", (ins "int64_t":$batchSize),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::heterps::getElementwiseCost($_op, batchSize,
                                                   /*flopsPerElement=*/1.0);
      }]>
  ];
}

def HeterPS_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::heterps";
  let description = [{
    How an op builds its backward computation. The autodiff pass walks the
    forward ops in reverse and, for each one, calls `buildGradient` with the
    gradients of its results (a null value for a result that does not reach
    the loss); the op appends the ops that compute the gradient of each
    operand and returns them in operand order (null where an operand is not
    differentiable, such as integer ids).
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the operands from `resultGradients` at the
        builder's insertion point and appends one value (or null) per operand
        to `operandGradients`.
      }],
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGradients,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>
  ];
}

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSINTERFACES_TD
