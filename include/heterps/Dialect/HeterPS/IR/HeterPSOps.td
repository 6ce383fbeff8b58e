//===- HeterPSOps.td - HeterPS operations ------------------*- tablegen -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSOPS_TD
#define HETERPS_DIALECT_HETERPS_IR_HETERPSOPS_TD

include "heterps/Dialect/HeterPS/IR/HeterPSAttrs.td"
include "heterps/Dialect/HeterPS/IR/HeterPSDialect.td"
include "heterps/Dialect/HeterPS/IR/HeterPSInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def HeterPS_FloatTensor : RankedTensorOf<[AnyFloat]>;
def HeterPS_IdTensor : RankedTensorOf<[AnySignlessInteger]>;
// Arithmetic that ONNX also defines on integers (signed or unsigned).
def HeterPS_NumericTensor : RankedTensorOf<[AnyFloat, AnyInteger]>;

// Ops whose cost differs from one FLOP per result element override getCost.
defvar CustomCost = DeclareOpInterfaceMethods<HeterPS_CostOpInterface,
                                              ["getCost"]>;

//===----------------------------------------------------------------------===//
// Parameters, tables and constants
//===----------------------------------------------------------------------===//

def HeterPS_ParamOp : HeterPS_Op<"param", [Symbol]> {
  let summary = "A dense trainable parameter";
  let description = [{
    A dense parameter of the model, at module level. Its value is either given
    (`dense<...>`, imported from an ONNX initializer) or an initializer
    specification (`#heterps.init<...>`) that the runtime draws from. A
    `frozen` parameter (such as batch-norm running statistics) is state the
    optimizer does not update. Ops read it with `heterps.load_param`.

    ```mlir
    heterps.param @fc1.weight : tensor<13x64xf32> = #heterps.init<xavier_uniform>
    heterps.param @fc1.bias : tensor<64xf32> = dense<0.0>
    heterps.param frozen @bn.running_mean : tensor<64xf32> = #heterps.init<zeros>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<HeterPS_FloatTensor>:$type,
                       AnyAttrOf<[ElementsAttr, HeterPS_InitAttr]>:$value,
                       UnitAttr:$frozen);
  let assemblyFormat = [{
    (`frozen` $frozen^)? $sym_name `:` $type `=`
    custom<ParamValue>(ref($type), $value) attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def HeterPS_EmbeddingTableOp : HeterPS_Op<"embedding_table", [Symbol]> {
  let summary = "A sparse embedding table held by the parameter server";
  let description = [{
    A table of `vocab` rows of `dim` f32 values, at module level. Its rows live
    in the parameter server, not on the workers: a worker pulls the rows a
    batch needs and pushes their gradients back. Ids are hashed onto the
    vocabulary by the server, so any 64-bit id is valid. `optimizer`
    (written by `heterps-autodiff`, a `#heterps.optimizer`) is the update the
    server applies to pushed gradients.

    ```mlir
    heterps.embedding_table @slot3 {vocab = 1000000 : i64, dim = 16 : i64,
        initializer = #heterps.init<uniform(-0.01, 0.01)>}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       I64Attr:$vocab,
                       I64Attr:$dim,
                       HeterPS_InitAttr:$initializer,
                       OptionalAttr<ElementsAttr>:$value,
                       OptionalAttr<HeterPS_OptimizerAttr>:$optimizer);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

// What the stateful ops touch, so that CSE and DCE see them: the dense
// parameters (load_param reads, update_param writes) and the random stream
// dropout draws from.
def HeterPS_ParameterResource : Resource<"::mlir::heterps::ParameterResource">;
def HeterPS_RandomResource : Resource<"::mlir::heterps::RandomResource">;

def HeterPS_LoadParamOp : HeterPS_Op<"load_param",
    [MemoryEffects<[MemRead<HeterPS_ParameterResource>]>, CustomCost,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reads a dense parameter";
  let description = [{
    The current value of the parameter `@name`; the result type is the
    parameter's type.

    ```mlir
    %w = heterps.load_param @fc1.weight : tensor<13x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def HeterPS_ConstantOp : HeterPS_Op<"constant",
    [ConstantLike, Pure, CustomCost, AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor that is not trained";
  let description = [{
    ```mlir
    %c = heterps.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Embedding lookup
//===----------------------------------------------------------------------===//

def HeterPS_EmbeddingLookupOp : HeterPS_Op<"embedding_lookup",
    [Pure, CustomCost, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Looks up rows of a sparse embedding table";
  let description = [{
    Gathers the rows of `@table` named by `ids`. With `combiner` `none` (the
    default) every id gets its row and the result shape is the ids shape
    followed by the table's `dim`; with `sum` or `mean` the last ids dimension
    is a bag that is reduced, so the result shape is the ids shape with its
    last dimension replaced by `dim`.

    ```mlir
    %e = heterps.embedding_lookup @slot0[%ids] : (tensor<?x26xi64>) -> tensor<?x26x16xf32>
    %b = heterps.embedding_lookup @hist[%bag] {combiner = #heterps.combiner<mean>}
           : (tensor<?x50xi64>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$table,
                       HeterPS_IdTensor:$ids,
                       DefaultValuedAttr<HeterPS_CombinerAttr,
                                         "Combiner::none">:$combiner);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` functional-type($ids, $result)
  }];
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def HeterPS_GemmOp : HeterPS_Op<"gemm",
    [Pure, CustomCost, InferTypeOpAdaptor]> {
  let summary = "General matrix multiply: alpha * op(A) * op(B) + beta * C";
  let description = [{
    ONNX's Gemm: `op(X)` is `X` or its transpose as `trans_a` / `trans_b` say;
    `C` is optional and broadcast to the M x N result.

    ```mlir
    %y = heterps.gemm %x, %w, %b {trans_b = true}
           : (tensor<?x13xf32>, tensor<64x13xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$a, HeterPS_FloatTensor:$b,
                       Optional<HeterPS_FloatTensor>:$c,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                       DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0f">:$beta);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
}

def HeterPS_MatMulOp : HeterPS_Op<"matmul",
    [Pure, CustomCost, InferTypeOpAdaptor]> {
  let summary = "Matrix product with NumPy semantics";
  let description = [{
    ONNX's MatMul: the last two dimensions multiply, leading dimensions
    broadcast; a 1-D operand is promoted to a matrix and the added dimension
    removed from the result.

    ```mlir
    %y = heterps.matmul %x, %w : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$lhs, HeterPS_FloatTensor:$rhs);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class HeterPS_BinaryOp<string mnemonic, string opSummary>
    : HeterPS_Op<mnemonic, [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = opSummary;
  let description = [{
    Elementwise, with NumPy (multidirectional) broadcasting of the operands;
    both have the same element type, floating-point or integer (integer
    arithmetic wraps; division truncates towards zero).

    ```mlir
    %z = heterps.}] # mnemonic # [{ %x, %y : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins HeterPS_NumericTensor:$lhs,
                       HeterPS_NumericTensor:$rhs);
  let results = (outs HeterPS_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::mlir::heterps::inferBroadcastResultType(
          location, getOperationName(), adaptor.getLhs().getType(),
          adaptor.getRhs().getType(), inferred);
    }
  }];
}

def HeterPS_AddOp : HeterPS_BinaryOp<"add", "Elementwise addition">;
def HeterPS_SubOp : HeterPS_BinaryOp<"sub", "Elementwise subtraction">;
def HeterPS_MulOp : HeterPS_BinaryOp<"mul", "Elementwise multiplication">;
def HeterPS_DivOp : HeterPS_BinaryOp<"div", "Elementwise division">;
def HeterPS_PowOp : HeterPS_BinaryOp<"pow", "Elementwise power">;

def HeterPS_BoolTensor : RankedTensorOf<[I1]>;

def HeterPS_CompareOp : HeterPS_Op<"compare",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Elementwise comparison (ONNX Equal, Less, Greater, ...)";
  let description = [{
    `kind` is `eq`, `lt`, `gt`, `le` or `ge`; the operands (one element
    type) broadcast as NumPy's do and the result is `i1`. The importer
    folds comparisons of values it knows (shape computations); this op
    compares data.

    ```mlir
    %m = heterps.compare lt %x, %t : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xi1>
    ```
  }];
  let arguments = (ins HeterPS_CompareKindAttr:$kind, HeterPS_NumericTensor:$lhs,
                       HeterPS_NumericTensor:$rhs);
  let results = (outs HeterPS_BoolTensor:$result);
  let assemblyFormat = [{
    $kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def HeterPS_LogicalOp : HeterPS_Op<"logical",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Elementwise and, or, xor of booleans (ONNX And, Or, Xor)";
  let description = [{
    `kind` is `and`, `or` or `xor`; the operands broadcast.

    ```mlir
    %m = heterps.logical and %a, %b : (tensor<?x8xi1>, tensor<8xi1>) -> tensor<?x8xi1>
    ```
  }];
  let arguments = (ins HeterPS_LogicKindAttr:$kind, HeterPS_BoolTensor:$lhs,
                       HeterPS_BoolTensor:$rhs);
  let results = (outs HeterPS_BoolTensor:$result);
  let assemblyFormat = [{
    $kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def HeterPS_NotOp : HeterPS_Op<"not",
    [Pure, SameOperandsAndResultType, HeterPS_CostOpInterface]> {
  let summary = "Elementwise negation of booleans (ONNX Not)";
  let description = [{
    ```mlir
    %n = heterps.not %m : tensor<?x8xi1>
    ```
  }];
  let arguments = (ins HeterPS_BoolTensor:$input);
  let results = (outs HeterPS_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def HeterPS_WhereOp : HeterPS_Op<"where",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Picks x where the condition holds, else y (ONNX Where)";
  let description = [{
    The three operands broadcast; `x` and `y` have one element type, the
    result's. Its gradient goes to `x` where the condition holds and to `y`
    elsewhere.

    ```mlir
    %z = heterps.where %m, %x, %zero
           : (tensor<?x8xi1>, tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins HeterPS_BoolTensor:$condition,
                       HeterPS_NumericTensor:$x, HeterPS_NumericTensor:$y);
  let results = (outs HeterPS_NumericTensor:$result);
  let assemblyFormat = [{
    $condition `,` $x `,` $y attr-dict `:` functional-type(operands, results)
  }];
}

// `flops` is the cost of one element, forward. `effects` replaces Pure for
// the ops that have some.
class HeterPS_UnaryOp<string mnemonic, string opSummary, string flops,
                      dag extraArgs = (ins),
                      Type tensorType = HeterPS_FloatTensor,
                      list<Trait> effects = [Pure]>
    : HeterPS_Op<mnemonic, !listconcat(effects,
                                       [SameOperandsAndResultType,
                                        CustomCost])> {
  let summary = opSummary;
  let description = [{
    Elementwise; the result has the type of the input.

    ```mlir
    %y = heterps.}] # mnemonic # [{ %x : tensor<?x64xf32>
    ```
  }];
  let arguments = !con((ins tensorType:$input), extraArgs);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDefinition = [{
    ::mlir::heterps::OpCost $cppClass::getCost(int64_t batchSize) {
      return ::mlir::heterps::getElementwiseCost(*this, batchSize, }] # flops # [{);
    }
  }];
}

def HeterPS_NegOp : HeterPS_UnaryOp<"neg", "Elementwise negation", "1.0">;
def HeterPS_AbsOp : HeterPS_UnaryOp<"abs", "Elementwise absolute value", "1.0">;
def HeterPS_ExpOp : HeterPS_UnaryOp<"exp", "Elementwise exponential", "4.0">;
def HeterPS_LogOp : HeterPS_UnaryOp<"log", "Elementwise natural logarithm",
                                    "4.0">;
def HeterPS_SqrtOp : HeterPS_UnaryOp<"sqrt", "Elementwise square root", "2.0">;
def HeterPS_ReluOp : HeterPS_UnaryOp<"relu", "Rectified linear unit", "1.0">;
def HeterPS_SigmoidOp : HeterPS_UnaryOp<"sigmoid", "Logistic sigmoid", "6.0">;
def HeterPS_TanhOp : HeterPS_UnaryOp<"tanh", "Hyperbolic tangent", "6.0">;
def HeterPS_ErfOp : HeterPS_UnaryOp<"erf",
    "Gauss error function (GELU as exporters write it: x/2 (1 + erf(x/sqrt 2)))",
    "8.0">;
def HeterPS_LeakyReluOp : HeterPS_UnaryOp<"leaky_relu",
    "Leaky rectified linear unit: x if x >= 0 else alpha * x", "2.0",
    (ins DefaultValuedAttr<F32Attr, "0.01f">:$alpha)>;
def HeterPS_ClipOp : HeterPS_UnaryOp<"clip",
    "Clamps every element to [min, max] (integers too)", "2.0",
    (ins OptionalAttr<F32Attr>:$min, OptionalAttr<F32Attr>:$max),
    HeterPS_NumericTensor> {
  let hasVerifier = 1;
}
def HeterPS_DropoutOp : HeterPS_UnaryOp<"dropout",
    "Zeroes elements with probability `ratio` in training, scaling the rest",
    "2.0", (ins DefaultValuedAttr<F32Attr, "0.5f">:$ratio), HeterPS_FloatTensor,
    [MemoryEffects<[MemRead<HeterPS_RandomResource>,
                    MemWrite<HeterPS_RandomResource>]>]> {
  let hasVerifier = 1;
}

class HeterPS_SoftmaxBase<string mnemonic, string opSummary>
    : HeterPS_Op<mnemonic, [Pure, SameOperandsAndResultType, CustomCost]> {
  let summary = opSummary;
  let description = [{
    Normalises along `axis` (negative counts from the end; default -1).

    ```mlir
    %p = heterps.}] # mnemonic # [{ %logits {axis = 1 : i64} : tensor<?x10xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return ::mlir::heterps::verifyAxis(*this, getAxis(),
                                         getInput().getType().getRank());
    }
    ::mlir::heterps::OpCost $cppClass::getCost(int64_t batchSize) {
      return ::mlir::heterps::getElementwiseCost(*this, batchSize, 8.0);
    }
  }];
}

def HeterPS_SoftmaxOp : HeterPS_SoftmaxBase<"softmax", "Softmax along an axis">;
def HeterPS_LogSoftmaxOp : HeterPS_SoftmaxBase<"log_softmax",
                                               "Log-softmax along an axis">;

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def HeterPS_ConcatOp : HeterPS_Op<"concat",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Joins tensors along an axis";
  let description = [{
    All inputs have the same rank and element type, and equal sizes except
    along `axis` (negative counts from the end).

    ```mlir
    %c = heterps.concat %a, %b {axis = 1 : i64}
           : (tensor<?x13xf32>, tensor<?x416xf32>) -> tensor<?x429xf32>
    ```
  }];
  let arguments = (ins Variadic<HeterPS_FloatTensor>:$inputs, I64Attr:$axis);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, $result)
  }];
}

def HeterPS_ReshapeOp : HeterPS_Op<"reshape", [Pure, CustomCost]> {
  let summary = "Reinterprets a tensor with another shape";
  let description = [{
    The result type gives the new shape. The number of elements is kept: when
    both shapes are static they have the same element count. A dynamic
    dimension (the batch, or a dimension that holds it) may appear once on
    each side; it takes the elements the static dimensions leave, so the
    static products must divide one another. The batch may be merged with
    other dimensions (`B x H -> B*H`) or split from them again.

    ```mlir
    %f = heterps.reshape %e : (tensor<?x26x16xf32>) -> tensor<?x416xf32>
    // Multi-head attention's [T, B, E] -> [T, B*H, E/H], and back.
    %h = heterps.reshape %q : (tensor<6x?x16xf32>) -> tensor<6x?x8xf32>
    %m = heterps.reshape %h : (tensor<6x?x8xf32>) -> tensor<6x?x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
  let hasVerifier = 1;
}

def HeterPS_TransposeOp : HeterPS_Op<"transpose",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`.

    ```mlir
    %t = heterps.transpose %x {perm = array<i64: 0, 2, 1>}
           : (tensor<?x4x8xf32>) -> tensor<?x8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class HeterPS_ReduceOp<string mnemonic, string opSummary>
    : HeterPS_Op<mnemonic, [Pure, InferTypeOpAdaptor, CustomCost]> {
  let summary = opSummary;
  let description = [{
    Reduces over `axes` (negative counts from the end; empty means every
    axis). With `keepdims` (the default) reduced dimensions stay as size 1.

    ```mlir
    %s = heterps.}] # mnemonic # [{ %x {axes = array<i64: 1>, keepdims = false}
           : (tensor<?x26x16xf32>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::mlir::heterps::inferReduceResultType(
          location, getOperationName(), adaptor.getInput().getType(),
          adaptor.getAxes(), adaptor.getKeepdims(), inferred);
    }
    ::mlir::heterps::OpCost $cppClass::getCost(int64_t batchSize) {
      return ::mlir::heterps::getReduceCost(*this, batchSize);
    }
  }];
}

def HeterPS_ReduceSumOp : HeterPS_ReduceOp<"reduce_sum", "Sum over axes">;
def HeterPS_ReduceMeanOp : HeterPS_ReduceOp<"reduce_mean", "Mean over axes">;
def HeterPS_ReduceMaxOp : HeterPS_ReduceOp<"reduce_max", "Maximum over axes">;

def HeterPS_CumSumOp : HeterPS_Op<"cumsum",
    [Pure, SameOperandsAndResultType, HeterPS_CostOpInterface]> {
  let summary = "Cumulative sum along an axis (ONNX CumSum)";
  let description = [{
    Element `i` along `axis` is the sum of elements `0..i` (`exclusive`:
    `0..i-1`; `reverse`: from the end). Its gradient is the cumulative sum
    of the result's gradient in the other direction.

    ```mlir
    %c = heterps.cumsum %x {axis = 1 : i64, exclusive = true} : tensor<?x8xf32>
    ```
  }];
  let arguments = (ins HeterPS_NumericTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs HeterPS_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def HeterPS_ArgExtremeOp : HeterPS_Op<"arg_extreme",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Index of the maximum or minimum along an axis (ONNX ArgMax, ArgMin)";
  let description = [{
    `kind` is `max` or `min`; ties give the first index, or the last with
    `select_last_index`. The result is `i64`, the axis kept as size 1 with
    `keepdims` (the default).

    ```mlir
    %i = heterps.arg_extreme max %logits {axis = 1 : i64, keepdims = false}
           : (tensor<?x10xf32>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins HeterPS_ExtremeKindAttr:$kind, HeterPS_NumericTensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = [{
    $kind $input attr-dict `:` functional-type($input, $result)
  }];
}
def HeterPS_TopKIndicesOp : HeterPS_Op<"top_k_indices",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Indices of the k largest (or smallest) elements along an axis (ONNX TopK)";
  let description = [{
    The `k` positions along `axis` of the largest elements, or of the
    smallest with `largest = false`, in order of value; equal values in the
    order of their positions. NaN orders above every number (first among
    the largest, last among the smallest), as PyTorch's `topk` orders it.
    The result is `i64`, the input's shape with `k` along `axis`. The
    importer takes ONNX TopK's values as a `gather_elements` of these
    indices, which carries their gradient.

    ```mlir
    %i = heterps.top_k_indices %scores {axis = 1 : i64, k = 3 : i64}
           : (tensor<?x10xf32>) -> tensor<?x3xi64>
    %v = heterps.gather_elements %scores, %i {axis = 1 : i64}
           : (tensor<?x10xf32>, tensor<?x3xi64>) -> tensor<?x3xf32>
    ```
  }];
  let arguments = (ins HeterPS_NumericTensor:$input, I64Attr:$k,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type($input, $result)
  }];
}
def HeterPS_ReduceMinOp : HeterPS_ReduceOp<"reduce_min", "Minimum over axes">;
def HeterPS_ReduceProdOp : HeterPS_ReduceOp<"reduce_prod", "Product over axes">;
def HeterPS_ReduceL2Op : HeterPS_ReduceOp<"reduce_l2",
    "Euclidean norm over axes (F.normalize divides by it)">;

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

def HeterPS_BatchNormOp : HeterPS_Op<"batch_norm",
    [Pure, CustomCost, AllTypesMatch<["input", "result"]>]> {
  let summary = "Batch normalisation over the channel dimension (dim 1)";
  let description = [{
    `scale`, `bias`, `mean` and `variance` are 1-D of the channel count. In
    training the batch statistics normalise and update the running `mean` and
    `variance` (frozen parameters) with `momentum`; in inference the running
    statistics are used, or with `batch_statistics` (ONNX's
    `training_mode = 1`) the batch's again, leaving the running ones as they
    are.

    ```mlir
    %y = heterps.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
           : (tensor<?x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>,
              tensor<64xf32>, tensor<64xf32>) -> tensor<?x64x8x8xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input, HeterPS_FloatTensor:$scale,
                       HeterPS_FloatTensor:$bias, HeterPS_FloatTensor:$mean,
                       HeterPS_FloatTensor:$variance,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9f">:$momentum,
                       DefaultValuedAttr<BoolAttr, "false">:$batch_statistics);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_LayerNormOp : HeterPS_Op<"layer_norm",
    [Pure, CustomCost, AllTypesMatch<["input", "result"]>]> {
  let summary = "Layer normalisation over the trailing dimensions";
  let description = [{
    Normalises over dimensions `axis` .. rank-1; `scale` and the optional
    `bias` have the shape of those dimensions.

    ```mlir
    %y = heterps.layer_norm %x, %g, %b {axis = -1 : i64}
           : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input, HeterPS_FloatTensor:$scale,
                       Optional<HeterPS_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW, any number of spatial dimensions)
//===----------------------------------------------------------------------===//

def HeterPS_ConvOp : HeterPS_Op<"conv",
    [Pure, CustomCost, InferTypeOpAdaptor]> {
  let summary = "Grouped convolution, N x C x spatial...";
  let description = [{
    ONNX's Conv: the filter is `M x C/group x k...`, the optional bias has M
    elements. `strides` and `dilations` default to 1, `pads` (begins then
    ends) to 0.

    ```mlir
    %y = heterps.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>}
           : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>)
           -> tensor<?x16x32x32xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input, HeterPS_FloatTensor:$filter,
                       Optional<HeterPS_FloatTensor>:$bias,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def HeterPS_ConvTransposeOp : HeterPS_Op<"conv_transpose",
    [Pure, CustomCost, InferTypeOpAdaptor]> {
  let summary = "Transposed convolution, N x C x spatial...";
  let description = [{
    ONNX's ConvTranspose: the gradient of a `heterps.conv` with respect to
    its input, run forward. The filter is `C x M/group x k...` (the input's
    channels first), the optional bias has M elements. Each output spatial
    size is `strides * (in - 1) + output_padding + (k - 1) * dilations + 1
    - pad_begin - pad_end`; `strides`, `dilations` default to 1, `pads`
    (begins then ends) and `output_padding` (extra rows at the end) to 0.

    ```mlir
    %y = heterps.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>}
           : (tensor<?x16x8x8xf32>, tensor<16x8x3x3xf32>, tensor<8xf32>)
           -> tensor<?x8x16x16xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input, HeterPS_FloatTensor:$filter,
                       Optional<HeterPS_FloatTensor>:$bias,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       OptionalAttr<DenseI64ArrayAttr>:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

class HeterPS_PoolOp<string mnemonic, string opSummary, dag extraArgs = (ins)>
    : HeterPS_Op<mnemonic, [Pure, CustomCost, InferTypeOpAdaptor]> {
  let summary = opSummary;
  let description = [{
    Pools windows of `kernel_shape` over the spatial dimensions; `strides`
    and `dilations` default to 1 and `pads` (begins then ends) to 0. A
    window with dilation `d` reads every `d`-th element, spanning
    `(kernel - 1) * d + 1` of them. With `ceil_mode` the output size rounds
    up.

    ```mlir
    %p = heterps.}] # mnemonic # [{ %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
           : (tensor<?x16x32x32xf32>) -> tensor<?x16x16x16xf32>
    ```
  }];
  let arguments = !con((ins HeterPS_FloatTensor:$input,
                            DenseI64ArrayAttr:$kernel_shape,
                            OptionalAttr<DenseI64ArrayAttr>:$strides,
                            OptionalAttr<DenseI64ArrayAttr>:$pads,
                            OptionalAttr<DenseI64ArrayAttr>:$dilations,
                            DefaultValuedAttr<BoolAttr, "false">:$ceil_mode),
                       extraArgs);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::mlir::heterps::inferPoolResultType(
          location, getOperationName(), adaptor.getInput().getType(),
          adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
          adaptor.getDilations(), adaptor.getCeilMode(), inferred);
    }
    ::mlir::heterps::OpCost $cppClass::getCost(int64_t batchSize) {
      return ::mlir::heterps::getPoolCost(*this, getKernelShape(), batchSize);
    }
  }];
}

def HeterPS_MaxPoolOp : HeterPS_PoolOp<"max_pool", "Max pooling">;
def HeterPS_AvgPoolOp : HeterPS_PoolOp<"avg_pool", "Average pooling",
    (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad)>;

def HeterPS_GlobalAvgPoolOp : HeterPS_Op<"global_avg_pool",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Averages every channel over all spatial positions";
  let description = [{
    ```mlir
    %g = heterps.global_avg_pool %x : (tensor<?x512x7x7xf32>) -> tensor<?x512x1x1xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

class HeterPS_LossOp<string mnemonic, string opSummary, string opDescription,
                     dag args>
    : HeterPS_Op<mnemonic, [Pure, InferTypeOpAdaptor, CustomCost]> {
  let summary = opSummary;
  let description = opDescription # [{

    `reduction` (`mean` by default, or `sum`) gives a 0-D result; `none`
    keeps one loss per sample.
  }];
  let arguments = !con(args, (ins DefaultValuedAttr<HeterPS_LossReductionAttr,
                                  "LossReduction::mean">:$reduction));
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    operands attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDefinition = [{
    ::mlir::heterps::OpCost $cppClass::getCost(int64_t batchSize) {
      return ::mlir::heterps::getElementwiseCost(*this, batchSize, 8.0);
    }
  }];
}

def HeterPS_BCELossOp : HeterPS_LossOp<"bce_loss", "Binary cross-entropy", [{
    Binary cross-entropy of predictions against labels in [0, 1], both of one
    shape. With `from_logits` the predictions are logits and the sigmoid is
    fused into the loss (numerically stable).

    ```mlir
    %l = heterps.bce_loss %p, %y {from_logits = true}
           : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
    ```
  }], (ins HeterPS_FloatTensor:$prediction, HeterPS_FloatTensor:$label,
           DefaultValuedAttr<BoolAttr, "false">:$from_logits)>;

def HeterPS_MSELossOp : HeterPS_LossOp<"mse_loss", "Mean squared error", [{
    Squared difference of predictions and targets of one shape, averaged over
    the non-batch dimensions.

    ```mlir
    %l = heterps.mse_loss %p, %t : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
    ```
  }], (ins HeterPS_FloatTensor:$prediction, HeterPS_FloatTensor:$target)>;

def HeterPS_SoftmaxCELossOp : HeterPS_LossOp<"softmax_ce_loss",
    "Softmax cross-entropy against class indices", [{
    Cross-entropy of `softmax(logits)` along dimension 1 against integer class
    labels; the labels have the logits shape without dimension 1.

    ```mlir
    %l = heterps.softmax_ce_loss %logits, %y
           : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
    ```
  }], (ins HeterPS_FloatTensor:$logits, HeterPS_IdTensor:$label)>;

def HeterPS_NLLLossOp : HeterPS_LossOp<"nll_loss",
    "Negative log-likelihood against class indices", [{
    `-log_probs[label]` along dimension 1; the labels have the shape of
    `log_probs` without dimension 1.

    ```mlir
    %l = heterps.nll_loss %lp, %y : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
    ```
  }], (ins HeterPS_FloatTensor:$log_probs, HeterPS_IdTensor:$label)>;

//===----------------------------------------------------------------------===//
// Pipeline structure
//===----------------------------------------------------------------------===//

def HeterPS_PipelineOp : HeterPS_Op<"pipeline",
    [IsolatedFromAbove, SingleBlockImplicitTerminator<"YieldOp">,
     RecursiveMemoryEffects]> {
  let summary = "The pipeline of stages that one training step runs";
  let description = [{
    Holds the `heterps.stage` ops of a placed model, in stage order, and a
    `heterps.yield` of the pipeline's results. The inputs of the pipeline are
    the block arguments of its body. A batch is cut into `micro_batches`
    micro-batches that flow through the stages one after the other; the
    stages exchange tensors only through channels (`heterps.send` /
    `heterps.recv`), every channel having exactly one sender and one receiver
    in two different stages with the same tensor type.

    Before (placed, not staged):

    ```mlir
    func.func @f(%ids: tensor<?x1xi64>) -> tensor<?x1xf32> {
      %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<sum>,
             heterps.device = #heterps.device<"cpu", cpu>} : (tensor<?x1xi64>) -> tensor<?x8xf32>
      %y = heterps.reduce_sum %e {axes = array<i64: 1>,
             heterps.device = #heterps.device<"gpu", gpu>} : (tensor<?x8xf32>) -> tensor<?x1xf32>
      return %y : tensor<?x1xf32>
    }
    ```

    After outlining:

    ```mlir
    func.func @f(%ids: tensor<?x1xi64>) -> tensor<?x1xf32> {
      %r = heterps.pipeline ins(%ids : tensor<?x1xi64>) {micro_batches = 4 : i64} {
      ^bb0(%a: tensor<?x1xi64>):
        heterps.stage 0 on <"cpu", cpu> units 2 ins(%a : tensor<?x1xi64>) {
        ^bb0(%i: tensor<?x1xi64>):
          %e = heterps.embedding_lookup @t[%i] {combiner = #heterps.combiner<sum>}
                 : (tensor<?x1xi64>) -> tensor<?x8xf32>
          heterps.send %e channel 0 : tensor<?x8xf32>
          heterps.yield
        }
        %y = heterps.stage 1 on <"gpu", gpu> units 1 {
          %e = heterps.recv channel 0 : tensor<?x8xf32>
          %s = heterps.reduce_sum %e {axes = array<i64: 1>} : (tensor<?x8xf32>) -> tensor<?x1xf32>
          heterps.yield %s : tensor<?x1xf32>
        } -> tensor<?x1xf32>
        heterps.yield %y : tensor<?x1xf32>
      } -> tensor<?x1xf32>
      return %r : tensor<?x1xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       DefaultValuedAttr<I64Attr, "1">:$micro_batches);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)? attr-dict-with-keyword $body
    (`->` type($results)^)?
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The stages, in order.
    auto getStages() { return getBody().front().getOps<StageOp>(); }
  }];
}

def HeterPS_StageOp : HeterPS_Op<"stage",
    [IsolatedFromAbove, HasParent<"PipelineOp">,
     SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "A pipeline stage (or a part of one) on one resource type";
  let description = [{
    Runs its body on `units` data-parallel units of the resource type
    `device`, once per micro-batch. `index` is the stage's position in the
    pipeline. Values come in as `ins` (pipeline inputs, or results of an
    earlier part of the same stage, bound to the body's block arguments) or
    through `heterps.recv`; they leave as results or through `heterps.send`.
    An op inside a stage that carries its own `heterps.device` must name the
    stage's resource type.

    In a training step a stage owns the forward and the backward ops of its
    layers, so one stage index appears twice in the pipeline: the forward
    part, and after the later stages the backward part, which receives the
    gradient of its activations from the next stage, sends the gradient of
    its inputs back, and updates the stage's parameters. Both parts run on
    the same workers; the activations the backward part needs stay there as
    plain SSA values (a result of the first part bound to an input of the
    second), not channels. Every part of a stage has the same `device` and
    `units`.

    ```mlir
    heterps.stage 0 on <"c6i", cpu> units 4 ins(%ids : tensor<?x1xi64>) {
      ...  // forward: the embedding lookup
      heterps.send %e channel 0 : tensor<?x16xf32>
    }
    heterps.stage 1 on <"a100", gpu> units 2 {
      ...  // forward, loss and backward of the MLP
      heterps.send %de channel 1 : tensor<?x16xf32>
    }
    heterps.stage 0 on <"c6i", cpu> units 4 ins(%ids : tensor<?x1xi64>) {
      %de = heterps.recv channel 1 : tensor<?x16xf32>
      ...  // backward: embedding_grad and ps_push
    }
    ```

    ```mlir
    %y = heterps.stage 1 on <"a100", gpu> units 2 ins(%x : tensor<?x13xf32>) {
    ^bb0(%in: tensor<?x13xf32>):
      %e = heterps.recv channel 0 : tensor<?x16xf32>
      ...
      heterps.yield %out : tensor<?x1xf32>
    } -> tensor<?x1xf32>
    ```
  }];
  let arguments = (ins I64Attr:$index, HeterPS_DeviceAttr:$device,
                       I64Attr:$units, Variadic<AnyRankedTensor>:$inputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $index `on` $device `units` $units (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    attr-dict-with-keyword $body (`->` type($results)^)?
  }];
  let hasRegionVerifier = 1;
}

def HeterPS_YieldOp : HeterPS_Op<"yield",
    [Pure, Terminator, ReturnLike, ParentOneOf<["PipelineOp", "StageOp"]>]> {
  let summary = "Returns the results of a stage or of a pipeline";
  let description = [{
    ```mlir
    heterps.yield %out : tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let builders = [OpBuilder<(ins), [{ /* no values */ }]>];
  let hasVerifier = 1;
}

def HeterPS_SendOp : HeterPS_Op<"send", [HasParent<"StageOp">]> {
  let summary = "Sends a tensor to the next stage through a channel";
  let description = [{
    Once per micro-batch, enqueues `value` on channel `channel`; the stage
    holding the matching `heterps.recv` dequeues it, in micro-batch order.
    Forward activations flow from a stage to a later one, gradients of a
    training graph from a later stage to an earlier one.

    ```mlir
    heterps.send %act channel 0 : tensor<?x208xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, I64Attr:$channel);
  let assemblyFormat = "$value `channel` $channel attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def HeterPS_RecvOp : HeterPS_Op<"recv", [HasParent<"StageOp">]> {
  let summary = "Receives a tensor from another stage through a channel";
  let description = [{
    Dequeues the tensor that the matching `heterps.send` enqueued for the
    current micro-batch; waits until it is there.

    ```mlir
    %act = heterps.recv channel 0 : tensor<?x208xf32>
    ```
  }];
  let arguments = (ins I64Attr:$channel);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "`channel` $channel attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Parameter server
//===----------------------------------------------------------------------===//

def HeterPS_PSPullOp : HeterPS_Op<"ps_pull",
    [CustomCost, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Pulls rows of an embedding table from the parameter server";
  let description = [{
    Fetches the rows of `@table` for the 1-D `keys` (a worker dedups keys
    first); the result is `keys x dim`.

    ```mlir
    %rows = heterps.ps_pull @slot0[%keys] : (tensor<?xi64>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$table, HeterPS_IdTensor:$keys);
  let results = (outs HeterPS_FloatTensor:$rows);
  let assemblyFormat = [{
    $table `[` $keys `]` attr-dict `:` functional-type($keys, $rows)
  }];
  let hasVerifier = 1;
}

def HeterPS_PSPushOp : HeterPS_Op<"ps_push",
    [CustomCost, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Pushes row gradients of an embedding table to the server";
  let description = [{
    Sends the gradients of the rows `keys` of `@table`; the server applies the
    table's optimizer. `gradients` is `keys x dim`.

    ```mlir
    heterps.ps_push @slot0[%keys], %grads : tensor<?xi64>, tensor<?x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$table, HeterPS_IdTensor:$keys,
                       HeterPS_FloatTensor:$gradients);
  let assemblyFormat = [{
    $table `[` $keys `]` `,` $gradients attr-dict `:` type($keys) `,`
    type($gradients)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ONNX frontend ops
//===----------------------------------------------------------------------===//

def HeterPS_GatherOp : HeterPS_Op<"gather",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Dense gather of slices along an axis (ONNX Gather)";
  let description = [{
    Takes the slices of `data` along `axis` named by `indices` (negative
    indices count from the end): the result shape is `data.shape[:axis] +
    indices.shape + data.shape[axis+1:]`. The importer uses it for a Gather
    whose data is computed (for instance picking a column of an id tensor);
    a Gather from a float initializer by computed ids is an
    `heterps.embedding_lookup` instead.

    ```mlir
    %c = heterps.gather %ids, %i {axis = 1 : i64}
           : (tensor<?x26xi64>, tensor<i64>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, HeterPS_IdTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, results)
  }];
}

def HeterPS_GatherElementsOp : HeterPS_Op<"gather_elements",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Gathers elements by an index tensor (ONNX GatherElements)";
  let description = [{
    `indices` has `data`'s rank and is no larger in any dimension; the
    result has its shape: element `p` is `data` at `p` with coordinate
    `axis` replaced by `indices[p]` (negative counts from the end).

    ```mlir
    %g = heterps.gather_elements %scores, %top {axis = 1 : i64}
           : (tensor<?x10xf32>, tensor<?x3xi64>) -> tensor<?x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, HeterPS_IdTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, results)
  }];
}

def HeterPS_ScatterElementsOp : HeterPS_Op<"scatter_elements",
    [Pure, AllTypesMatch<["data", "result"]>, HeterPS_CostOpInterface]> {
  let summary = "Writes elements at an index tensor (ONNX ScatterElements)";
  let description = [{
    `data` with element `p` of `updates` written where `gather_elements`
    with the same `indices` and `axis` would read element `p`: stored
    (`reduction = "none"`, the last write of an index wins) or added
    (`"add"`). `updates` has the shape of `indices`.

    ```mlir
    %s = heterps.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"}
           : (tensor<?x10xf32>, tensor<?x3xi64>, tensor<?x3xf32>) -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins HeterPS_NumericTensor:$data, HeterPS_IdTensor:$indices,
                       HeterPS_NumericTensor:$updates,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs HeterPS_NumericTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_ScatterNDOp : HeterPS_Op<"scatter_nd",
    [Pure, AllTypesMatch<["data", "result"]>, HeterPS_CostOpInterface]> {
  let summary = "Writes slices at index tuples (ONNX ScatterND)";
  let description = [{
    `data` with slices of `updates` written at the index tuples of
    `indices` (`... x k`: each tuple names `data[i0, ..., ik-1]`, a slice
    of `data`'s trailing rank - k dimensions): stored (`reduction =
    "none"`, the last write wins), added (`"add"`) or multiplied (`"mul"`,
    which has no gradient). `updates` is `indices.shape[:-1] +
    data.shape[k:]`; negative indices count from the end.

    ```mlir
    %s = heterps.scatter_nd %x, %i, %u {reduction = "add"}
           : (tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<4x4x4xf32>
    ```
  }];
  let arguments = (ins HeterPS_NumericTensor:$data, HeterPS_IdTensor:$indices,
                       HeterPS_NumericTensor:$updates,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs HeterPS_NumericTensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_SegmentReduceOp : HeterPS_Op<"segment_reduce",
    [Pure, HeterPS_CostOpInterface]> {
  let summary = "Reduces runs of rows that start at offsets (nn.EmbeddingBag)";
  let description = [{
    Row `i` of the result reduces the rows `data[offsets[i] : offsets[i+1]]`
    of `data` (the last run ends with `data`): their `sum`, `mean` or
    elementwise `max`. An empty run gives zeros, as `nn.EmbeddingBag` does.
    `offsets` start at 0 and do not decrease; the kernels check them at run
    time. This is how bags of different sizes are pooled: the rows of the
    bags' ids, concatenated, are looked up (`data` then has one row per id,
    not per example) and reduced per bag, one result row per example.

    ```mlir
    %rows = heterps.embedding_lookup @bag[%ids] : (tensor<?xi64>) -> tensor<?x16xf32>
    %e = heterps.segment_reduce mean %rows, %offsets
           : (tensor<?x16xf32>, tensor<?xi64>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins HeterPS_ReduceKindAttr:$kind, HeterPS_FloatTensor:$data,
                       HeterPS_IdTensor:$offsets);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $data `,` $offsets attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_SliceOp : HeterPS_Op<"slice",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Strided slice with static bounds (ONNX Slice)";
  let description = [{
    For every dimension `d`, keeps the elements `starts[d]`, `starts[d] +
    steps[d]`, ... up to but excluding `ends[d]`. The bounds are already
    normalised by the importer (non-negative, clamped to the dimension), one
    per dimension; `steps` are non-zero. A dynamic (batch) dimension must be
    kept whole: `starts` 0, `ends` `INT64_MAX`, step 1.

    ```mlir
    %s = heterps.slice %x {starts = array<i64: 0, 2>,
                           ends = array<i64: 9223372036854775807, 4>,
                           steps = array<i64: 1, 1>}
           : (tensor<?x8xi64>) -> tensor<?x2xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
}

// The attributes of heterps.resize and its gradient.
defvar HeterPS_ResizeAttrs = (ins
    DefaultValuedAttr<StrAttr, "\"nearest\"">:$mode,
    DefaultValuedAttr<StrAttr, "\"half_pixel\"">:$coordinate_transformation_mode,
    DefaultValuedAttr<StrAttr, "\"round_prefer_floor\"">:$nearest_mode,
    DefaultValuedAttr<F64Attr, "-0.75">:$cubic_coeff_a,
    DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
    DefaultValuedAttr<F64Attr, "0.0">:$extrapolation_value,
    DenseF64ArrayAttr:$scales, OptionalAttr<DenseF64ArrayAttr>:$roi);

def HeterPS_ResizeOp : HeterPS_Op<"resize", [Pure, CustomCost]> {
  let summary = "Resizes by interpolation (ONNX Resize)";
  let description = [{
    Each output coordinate `x` of dimension `d` maps to an input coordinate
    by `coordinate_transformation_mode` (`half_pixel`, `pytorch_half_pixel`,
    `align_corners`, `asymmetric`, `tf_half_pixel_for_nn`,
    `tf_crop_and_resize` with `roi`) and the scale `scales[d]`, and is
    interpolated from its neighbours, the input's edges repeated: `nearest`
    (rounded by `nearest_mode`), `linear` or `cubic` (`cubic_coeff_a`,
    `exclude_outside`). The result type gives the output sizes; a dynamic
    (batch) dimension keeps its size. A coordinate outside the crop of
    `tf_crop_and_resize` is `extrapolation_value`.

    ```mlir
    %y = heterps.resize %x {mode = "linear", scales = array<f64: 1.0, 1.0, 2.0, 2.0>}
           : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x16xf32>
    ```
  }];
  let arguments = !con((ins HeterPS_FloatTensor:$input), HeterPS_ResizeAttrs);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
  let hasVerifier = 1;
}

def HeterPS_PadOp : HeterPS_Op<"pad",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Pads a tensor (ONNX Pad)";
  let description = [{
    Adds `pads[d]` elements before and `pads[rank + d]` after dimension `d`
    (ONNX's order): `value` (mode `constant`), the input mirrored without
    its edge (`reflect`, pads below the dimension's size), or the edge
    repeated (`edge`). Pads are not negative; a dynamic (batch) dimension
    is not padded. The importer drops a Pad whose pads are all zero.

    ```mlir
    %p = heterps.pad %x {mode = "reflect", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>}
           : (tensor<?x3x8x8xf32>) -> tensor<?x3x10x10xf32>
    ```
  }];
  let arguments = (ins HeterPS_NumericTensor:$input,
                       DefaultValuedAttr<StrAttr, "\"constant\"">:$mode,
                       DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs HeterPS_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
}

def HeterPS_ResizeGradOp : HeterPS_Op<"resize_grad",
    [Pure, AllTypesMatch<["input", "input_grad"]>, CustomCost]> {
  let summary = "Gradient of a resize";
  let description = [{
    The gradient of `heterps.resize`'s input: each element of `result_grad`
    added to the input elements it was interpolated from, with their
    weights (none for an extrapolated element). The values of `input` are
    not read.

    ```mlir
    %dx = heterps.resize_grad %x, %dy {mode = "linear", scales = array<f64: 1.0, 1.0, 2.0, 2.0>}
            : (tensor<?x3x8x8xf32>, tensor<?x3x16x16xf32>) -> tensor<?x3x8x8xf32>
    ```
  }];
  let arguments = !con((ins HeterPS_FloatTensor:$input,
                            HeterPS_FloatTensor:$result_grad),
                       HeterPS_ResizeAttrs);
  let results = (outs HeterPS_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $input `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_PadGradOp : HeterPS_Op<"pad_grad",
    [Pure, AllTypesMatch<["input", "input_grad"]>, HeterPS_CostOpInterface]> {
  let summary = "Gradient of a pad";
  let description = [{
    The gradient of `heterps.pad`'s input: each element of `result_grad`
    added to the input element it was copied from (the inner region; with
    `reflect` and `edge`, the mirrored and repeated elements too); padding
    with a constant contributes nothing. The values of `input` are not
    read.

    ```mlir
    %dx = heterps.pad_grad %x, %dy {mode = "edge", pads = array<i64: 0, 2, 0, 2>}
            : (tensor<?x4xf32>, tensor<?x8xf32>) -> tensor<?x4xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input,
                       HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<StrAttr, "\"constant\"">:$mode,
                       DenseI64ArrayAttr:$pads);
  let results = (outs HeterPS_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $input `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_CastOp : HeterPS_Op<"cast",
    [Pure, SameOperandsAndResultShape, HeterPS_CostOpInterface]> {
  let summary = "Converts the elements to another numeric type (ONNX Cast)";
  let description = [{
    Integer to float and back (truncating towards zero), and between widths.

    ```mlir
    %f = heterps.cast %ids : (tensor<?x4xi64>) -> tensor<?x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
  let hasVerifier = 1;
}

def HeterPS_WeightedNLLLossOp : HeterPS_Op<"weighted_nll_loss",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Negative log-likelihood with class weights and an ignored "
                "class (ONNX NegativeLogLikelihoodLoss)";
  let description = [{
    `-weight[label] * log_probs[label]` along dimension 1, where `weight` (one
    per class, optional: all ones) weighs each class and labels equal to
    `ignore_index` contribute nothing. The labels have the shape of
    `log_probs` without dimension 1. `mean` divides the sum by the total
    weight of the labels that are not ignored; `sum` sums; `none` keeps one
    loss per element. ONNX's SoftmaxCrossEntropyLoss imports as a
    `heterps.log_softmax` along dimension 1 followed by this op.

    ```mlir
    %l = heterps.weighted_nll_loss %lp, %y, %w {ignore_index = -1 : i64}
           : (tensor<?x10xf32>, tensor<?xi64>, tensor<10xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$log_probs,
                       HeterPS_IdTensor:$label,
                       Optional<HeterPS_FloatTensor>:$weight,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedAttr<HeterPS_LossReductionAttr,
                                         "LossReduction::mean">:$reduction);
  let results = (outs HeterPS_FloatTensor:$result);
  let assemblyFormat = [{
    operands attr-dict `:` functional-type(operands, results)
  }];
}

def HeterPS_ExpandOp : HeterPS_Op<"expand",
    [Pure, InferTypeOpAdaptor, HeterPS_CostOpInterface]> {
  let summary = "Broadcasts a tensor to a shape (ONNX Expand)";
  let description = [{
    The result shape is the NumPy broadcast of the input shape and `shape`
    (so a dimension of 1 in `shape` keeps the input's size, and the result
    may have a higher rank than the input).

    ```mlir
    %e = heterps.expand %x {shape = array<i64: 2, 1, 6>}
           : (tensor<3x1xf32>) -> tensor<2x3x6xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
}


//===----------------------------------------------------------------------===//
// Recurrent layers (ONNX RNN, GRU and LSTM: sequence first)
//===----------------------------------------------------------------------===//

// The operands and attributes every recurrent layer has. `input` is
// T x B x I; `weights` D x G*H x I and `recurrence` D x G*H x H stack the G
// gates of each of the D directions; `bias` is D x 2*G*H (the input biases of
// the gates, then the recurrent ones). A batch row `b` of `sequence_lens`
// runs its first lengths[b] steps: the state holds after them and `y` is 0
// there. `initial_h` (D x B x H) defaults to zeros.
defvar HeterPS_RecurrentArgs = (ins HeterPS_FloatTensor:$input,
    HeterPS_FloatTensor:$weights, HeterPS_FloatTensor:$recurrence,
    HeterPS_FloatTensor:$bias, Optional<HeterPS_IdTensor>:$sequence_lens,
    Optional<HeterPS_FloatTensor>:$initial_h, I64Attr:$hidden_size,
    DefaultValuedAttr<StrAttr, "\"forward\"">:$direction);

class HeterPS_RecurrentOp<string mnemonic, dag extraArgs, dag extraResults,
                          string extraFormat = "">
    : HeterPS_Op<mnemonic, [Pure, CustomCost, AttrSizedOperandSegments]> {
  let arguments = !con(HeterPS_RecurrentArgs, extraArgs);
  let results = !con((outs HeterPS_FloatTensor:$y, HeterPS_FloatTensor:$y_h),
                     extraResults);
  let assemblyFormat = [{
    $input `,` $weights `,` $recurrence `,` $bias
    (`lengths` `(` $sequence_lens^ `)`)? (`initial_h` `(` $initial_h^ `)`)?
  }] # extraFormat # [{ attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_RNNOp : HeterPS_RecurrentOp<"rnn",
    (ins DefaultValuedAttr<StrAttr, "\"tanh\"">:$activation), (outs)> {
  let summary = "Elman recurrent layer (ONNX RNN)";
  let description = [{
    `h[t] = f(x[t] W^T + h[t-1] R^T + Wb + Rb)` with `f` = tanh (or relu,
    `activation = "relu"`), run forward, in reverse or both
    (`direction = "bidirectional"`, two directions stacked in `weights`).
    `y` (T x D x B x H) holds every step's state and `y_h` (D x B x H) the
    last one of each direction.

    ```mlir
    %y, %yh = heterps.rnn %x, %w, %r, %b {hidden_size = 8 : i64}
        : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>)
        -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
    ```
  }];
}

def HeterPS_GRUOp : HeterPS_RecurrentOp<"gru",
    (ins DefaultValuedAttr<BoolAttr, "false">:$linear_before_reset), (outs)> {
  let summary = "Gated recurrent unit layer (ONNX GRU)";
  let description = [{
    The gates are stacked as update `z`, reset `r` and candidate `n` (ONNX's
    order; PyTorch's r, z, n is reordered by its exporter):

    ```
    z = sigmoid(x Wz^T + h Rz^T + Wbz + Rbz)
    r = sigmoid(x Wr^T + h Rr^T + Wbr + Rbr)
    n = tanh(x Wn^T + Wbn + (r * h) Rn^T + Rbn)      linear_before_reset = false
    n = tanh(x Wn^T + Wbn + r * (h Rn^T + Rbn))      linear_before_reset = true
    h' = (1 - z) * n + z * h
    ```

    `linear_before_reset = true` is PyTorch's nn.GRU.

    ```mlir
    %y, %yh = heterps.gru %x, %w, %r, %b initial_h(%h0)
          {hidden_size = 16 : i64, linear_before_reset = true}
        : (tensor<20x?x8xf32>, tensor<1x48x8xf32>, tensor<1x48x16xf32>,
           tensor<1x96xf32>, tensor<1x?x16xf32>)
        -> (tensor<20x1x?x16xf32>, tensor<1x?x16xf32>)
    ```
  }];
}

def HeterPS_LSTMOp : HeterPS_RecurrentOp<"lstm",
    (ins Optional<HeterPS_FloatTensor>:$initial_c,
         Optional<HeterPS_FloatTensor>:$peepholes),
    (outs HeterPS_FloatTensor:$y_c),
    [{ (`initial_c` `(` $initial_c^ `)`)? (`peepholes` `(` $peepholes^ `)`)? }]> {
  let summary = "Long short-term memory layer (ONNX LSTM)";
  let description = [{
    The gates are stacked as input `i`, output `o`, forget `f` and cell `g`
    (ONNX's order); the optional `peepholes` (D x 3*H) hold Pi, Po, Pf:

    ```
    i = sigmoid(x Wi^T + h Ri^T + Wbi + Rbi + Pi * c)
    f = sigmoid(x Wf^T + h Rf^T + Wbf + Rbf + Pf * c)
    g = tanh(x Wg^T + h Rg^T + Wbg + Rbg)
    c' = f * c + i * g
    o = sigmoid(x Wo^T + h Ro^T + Wbo + Rbo + Po * c')
    h' = o * tanh(c')
    ```

    `y_c` (D x B x H) is the last cell state; `initial_c` defaults to zeros.

    ```mlir
    %y, %yh, %yc = heterps.lstm %x, %w, %r, %b {hidden_size = 16 : i64}
        : (tensor<20x?x8xf32>, tensor<1x64x8xf32>, tensor<1x64x16xf32>, tensor<1x128xf32>)
        -> (tensor<20x1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>)
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Training: backward ops and optimizer updates (written by heterps-autodiff)
//===----------------------------------------------------------------------===//

def HeterPS_UnaryGradOp : HeterPS_Op<"unary_grad",
    [Pure, AllTypesMatch<["input", "result", "result_grad", "input_grad"]>,
     CustomCost]> {
  let summary = "Gradient of an elementwise unary op";
  let description = [{
    The gradient of `input` of the elementwise op `kind` (`relu`, `sigmoid`,
    `tanh`, `exp`, `log`, `sqrt`, `neg`, `abs`, `leaky_relu`, `clip`,
    `dropout`) given its `input`, its `result` and the gradient of the
    result. `alpha` is leaky_relu's slope, `min` / `max` clip's bounds;
    dropout's `ratio` and `dropout_id` redraw the forward mask (the runtime
    derives the mask from the run's seed, the step and `dropout_id`).

    ```mlir
    %dx = heterps.unary_grad relu %x, %y, %dy : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins HeterPS_UnaryKindAttr:$kind, HeterPS_FloatTensor:$input,
                       HeterPS_FloatTensor:$result,
                       HeterPS_FloatTensor:$result_grad,
                       OptionalAttr<F32Attr>:$alpha,
                       OptionalAttr<F32Attr>:$min, OptionalAttr<F32Attr>:$max,
                       OptionalAttr<F32Attr>:$ratio,
                       OptionalAttr<I64Attr>:$dropout_id);
  let results = (outs HeterPS_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $kind $input `,` $result `,` $result_grad attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def HeterPS_SoftmaxGradOp : HeterPS_Op<"softmax_grad",
    [Pure, AllTypesMatch<["result", "result_grad", "input_grad"]>,
     CustomCost]> {
  let summary = "Gradient of softmax or log-softmax";
  let description = [{
    From the forward `result` and its gradient: `y * (dy - sum(dy * y))`
    for softmax, `dy - exp(y) * sum(dy)` with `log` (log-softmax), the sums
    along `axis`.

    ```mlir
    %dx = heterps.softmax_grad %y, %dy {axis = 1 : i64, log = true} : tensor<?x10xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$result,
                       HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$log);
  let results = (outs HeterPS_FloatTensor:$input_grad);
  let assemblyFormat = "$result `,` $result_grad attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def HeterPS_SumToShapeOp : HeterPS_Op<"sum_to_shape",
    [Pure, AllTypesMatch<["like", "result"]>, HeterPS_CostOpInterface]> {
  let summary = "Sums a broadcast gradient back to an operand's shape";
  let description = [{
    The gradient of a broadcast operand: `value` (the shape of a broadcast
    result) summed over the dimensions that broadcasting added or stretched,
    so that the result has the shape of `like`, whose values are not read.

    ```mlir
    %db = heterps.sum_to_shape %dy, %b : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<64xf32>
    ```
  }];
  let arguments = (ins HeterPS_NumericTensor:$value, HeterPS_NumericTensor:$like);
  let results = (outs HeterPS_NumericTensor:$result);
  let assemblyFormat = [{
    $value `,` $like attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_SliceGradOp : HeterPS_Op<"slice_grad",
    [Pure, AllTypesMatch<["input", "input_grad"]>, HeterPS_CostOpInterface]> {
  let summary = "Gradient of a slice";
  let description = [{
    The gradient of `heterps.slice`'s input: `result_grad` at the positions
    the slice (same `starts`, `ends`, `steps`) took, zeros elsewhere. The
    values of `input` are not read; it gives the shape.

    ```mlir
    %dx = heterps.slice_grad %x, %dy {starts = array<i64: 0, 8>,
                                      ends = array<i64: 9223372036854775807, 16>,
                                      steps = array<i64: 1, 1>}
            : (tensor<?x24xf32>, tensor<?x8xf32>) -> tensor<?x24xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input,
                       HeterPS_FloatTensor:$result_grad,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                       DenseI64ArrayAttr:$steps);
  let results = (outs HeterPS_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $input `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_GatherGradOp : HeterPS_Op<"gather_grad",
    [Pure, AllTypesMatch<["data", "data_grad"]>, HeterPS_CostOpInterface]> {
  let summary = "Gradient of a dense gather: a scatter-add";
  let description = [{
    The gradient of `heterps.gather`'s float `data`: zeros, with the slices
    of `result_grad` added at the positions `indices` named along `axis`
    (an index named twice gets both). The values of `data` are not read.

    ```mlir
    %dz = heterps.gather_grad %z, %i, %dy {axis = 1 : i64}
            : (tensor<?x27x16xf32>, tensor<351xi64>, tensor<?x351x16xf32>)
            -> tensor<?x27x16xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$data, HeterPS_IdTensor:$indices,
                       HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs HeterPS_FloatTensor:$data_grad);
  let assemblyFormat = [{
    $data `,` $indices `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_ScatterElementsGradOp : HeterPS_Op<"scatter_elements_grad",
    [Pure, HeterPS_CostOpInterface]> {
  let summary = "Gradients of scatter_elements";
  let description = [{
    From the result's gradient: the data's (the result gradient with the
    written elements zeroed for `reduction = "none"`, whole for `"add"`) and
    the updates' (the result gradient where each update went).

    ```mlir
    %dd, %du = heterps.scatter_elements_grad %i, %ds {axis = 1 : i64}
        : (tensor<?x3xi64>, tensor<?x10xf32>) -> (tensor<?x10xf32>, tensor<?x3xf32>)
    ```
  }];
  let arguments = (ins HeterPS_IdTensor:$indices,
                       HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs HeterPS_FloatTensor:$data_grad,
                      HeterPS_FloatTensor:$updates_grad);
  let assemblyFormat = [{
    $indices `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_SegmentReduceGradOp : HeterPS_Op<"segment_reduce_grad",
    [Pure, AllTypesMatch<["data", "data_grad"]>, HeterPS_CostOpInterface]> {
  let summary = "Gradient of segment_reduce";
  let description = [{
    Each row of `data` gets the gradient of its run's result row: all of it
    for `sum`, divided by the run's length for `mean`, and for `max`, per
    element, only the first row of the run that holds the maximum.

    ```mlir
    %drows = heterps.segment_reduce_grad mean %rows, %offsets, %de
               : (tensor<?x16xf32>, tensor<?xi64>, tensor<?x16xf32>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins HeterPS_ReduceKindAttr:$kind, HeterPS_FloatTensor:$data,
                       HeterPS_IdTensor:$offsets,
                       HeterPS_FloatTensor:$result_grad);
  let results = (outs HeterPS_FloatTensor:$data_grad);
  let assemblyFormat = [{
    $kind $data `,` $offsets `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_ScatterNDGradOp : HeterPS_Op<"scatter_nd_grad",
    [Pure, HeterPS_CostOpInterface]> {
  let summary = "Gradients of scatter_nd";
  let description = [{
    From the result's gradient: the data's (with the written slices zeroed
    for `reduction = "none"`, whole for `"add"`) and the updates' (the
    result gradient's slices where each update went).

    ```mlir
    %dd, %du = heterps.scatter_nd_grad %i, %ds
        : (tensor<2x1xi64>, tensor<4x4x4xf32>) -> (tensor<4x4x4xf32>, tensor<2x4x4xf32>)
    ```
  }];
  let arguments = (ins HeterPS_IdTensor:$indices,
                       HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs HeterPS_FloatTensor:$data_grad,
                      HeterPS_FloatTensor:$updates_grad);
  let assemblyFormat = [{
    $indices `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_GatherElementsGradOp : HeterPS_Op<"gather_elements_grad",
    [Pure, AllTypesMatch<["data", "data_grad"]>, HeterPS_CostOpInterface]> {
  let summary = "Gradient of gather_elements: a scatter-add";
  let description = [{
    Zeros of `data`'s shape with each element of `result_grad` added where
    the gather read it (an element read twice gets both).

    ```mlir
    %dd = heterps.gather_elements_grad %scores, %top, %dg {axis = 1 : i64}
            : (tensor<?x10xf32>, tensor<?x3xi64>, tensor<?x3xf32>) -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$data, HeterPS_IdTensor:$indices,
                       HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs HeterPS_FloatTensor:$data_grad);
  let assemblyFormat = [{
    $data `,` $indices `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_ReduceGradOp : HeterPS_Op<"reduce_grad",
    [Pure, AllTypesMatch<["input", "input_grad"]>, CustomCost]> {
  let summary = "Gradient of a reduction";
  let description = [{
    Spreads the gradient of a `sum`, `mean` or `max` reduction over `axes`
    back onto the input: every element for `sum`, divided by the count for
    `mean`, for `max` (`min`) the first element, in index order, equal to
    the maximum (minimum), as PyTorch's `max(dim)` and EmbeddingBag's max
    mode give it. Global average
    pooling is a mean over the spatial axes.

    ```mlir
    %dx = heterps.reduce_grad mean %x, %y, %dy {axes = array<i64: 1>, keepdims = false}
            : (tensor<?x8x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x8x16xf32>
    ```
  }];
  let arguments = (ins HeterPS_ReduceKindAttr:$kind, HeterPS_FloatTensor:$input,
                       HeterPS_FloatTensor:$result,
                       HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs HeterPS_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $kind $input `,` $result `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_LossGradOp : HeterPS_Op<"loss_grad",
    [Pure, CustomCost]> {
  let summary = "Gradient of a loss with respect to its prediction";
  let description = [{
    The gradient of the loss `kind` (`bce`, `mse`, `softmax_ce`, `nll`,
    `weighted_nll`) with respect to its first operand, scaled by the
    gradient of the loss `loss_grad` (0-D for the `mean` and `sum`
    reductions, one per sample for `none`). `weight` is weighted_nll's
    class weights.

    ```mlir
    %dp = heterps.loss_grad bce %p, %y, %one {reduction = #heterps.reduction<mean>}
            : (tensor<?x1xf32>, tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
    ```
  }];
  let arguments = (ins HeterPS_LossKindAttr:$kind, HeterPS_FloatTensor:$prediction,
                       HeterPS_NumericTensor:$label,
                       HeterPS_FloatTensor:$loss_grad,
                       Optional<HeterPS_FloatTensor>:$weight,
                       DefaultValuedAttr<HeterPS_LossReductionAttr,
                                         "LossReduction::mean">:$reduction,
                       DefaultValuedAttr<BoolAttr, "false">:$from_logits,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs HeterPS_FloatTensor:$prediction_grad);
  let assemblyFormat = [{
    $kind $prediction `,` $label `,` $loss_grad (`,` $weight^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_EmbeddingGradOp : HeterPS_Op<"embedding_grad",
    [Pure, CustomCost]> {
  let summary = "Sparse gradient of an embedding lookup: keys and row grads";
  let description = [{
    Flattens the lookup's `ids` into `keys` and gives each key the gradient
    of its row: the gradient of its result row for `none` and `sum`, divided
    by the bag size for `mean`. Keys are not deduplicated; the parameter
    server merges duplicates before it applies the table's optimizer.

    ```mlir
    %k, %g = heterps.embedding_grad %ids, %de {combiner = #heterps.combiner<mean>}
               : (tensor<?x8xi64>, tensor<?x16xf32>) -> (tensor<?xi64>, tensor<?x16xf32>)
    ```
  }];
  let arguments = (ins HeterPS_IdTensor:$ids, HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<HeterPS_CombinerAttr,
                                         "Combiner::none">:$combiner);
  let results = (outs HeterPS_IdTensor:$keys, HeterPS_FloatTensor:$rows);
  let assemblyFormat = [{
    $ids `,` $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_ConvGradOp : HeterPS_Op<"conv_grad",
    [Pure, CustomCost]> {
  let summary = "Gradients of a convolution: input, filter and bias";
  let description = [{
    With the attributes of the forward `heterps.conv`; the bias gradient has
    the filter's first dimension.

    ```mlir
    %dx, %dw, %db = heterps.conv_grad %x, %w, %dy {pads = array<i64: 1, 1, 1, 1>}
        : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<?x4x8x8xf32>)
        -> (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input, HeterPS_FloatTensor:$filter,
                       HeterPS_FloatTensor:$result_grad,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs HeterPS_FloatTensor:$input_grad,
                      HeterPS_FloatTensor:$filter_grad,
                      HeterPS_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $filter `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// The gradient of a recurrent layer: its forward operands and attributes,
// then the gradients of its results that reach the loss (absent ones are
// zero). The kernels rerun the forward pass to recover the gates.
class HeterPS_RecurrentGradOp<string mnemonic, string forward, dag extraArgs,
                              dag extraResults, string extraFormat = "">
    : HeterPS_Op<mnemonic, [Pure, CustomCost, AttrSizedOperandSegments]> {
  let summary = "Gradients of heterps." # forward;
  let description = [{
    The gradients of the input, the weights, the recurrence, the bias and
    the initial state}] # !if(!eq(forward, "lstm"),
        [{s (and the peepholes, zero when the layer has none)}], "") # [{
    of a `heterps.}] # forward # [{` with the same attributes, from the
    gradients of its results: `y_grad` and `y_h_grad}] #
    !if(!eq(forward, "lstm"), [{` and `y_c_grad}], "") # [{` each when
    present.

    ```mlir
    %dx, %dw, %dr, %db, %dh0}] # !if(!eq(forward, "lstm"), [{, %dc0, %dp}], "")
    # [{ = heterps.}] # mnemonic # [{ %x, %w, %r, %b y_h_grad(%dyh) {hidden_size = 16 : i64}
        : (...) -> (...)
    ```
  }];
  let arguments = !con(HeterPS_RecurrentArgs, extraArgs);
  let results = !con((outs HeterPS_FloatTensor:$input_grad,
                           HeterPS_FloatTensor:$weights_grad,
                           HeterPS_FloatTensor:$recurrence_grad,
                           HeterPS_FloatTensor:$bias_grad,
                           HeterPS_FloatTensor:$initial_h_grad),
                     extraResults);
  let assemblyFormat = [{
    $input `,` $weights `,` $recurrence `,` $bias
    (`lengths` `(` $sequence_lens^ `)`)? (`initial_h` `(` $initial_h^ `)`)?
  }] # extraFormat # [{
    (`y_grad` `(` $y_grad^ `)`)? (`y_h_grad` `(` $y_h_grad^ `)`)?
  }] # !if(!eq(forward, "lstm"), [{(`y_c_grad` `(` $y_c_grad^ `)`)?}], "") # [{
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_RNNGradOp : HeterPS_RecurrentGradOp<"rnn_grad", "rnn",
    (ins DefaultValuedAttr<StrAttr, "\"tanh\"">:$activation,
         Optional<HeterPS_FloatTensor>:$y_grad,
         Optional<HeterPS_FloatTensor>:$y_h_grad), (outs)>;

def HeterPS_GRUGradOp : HeterPS_RecurrentGradOp<"gru_grad", "gru",
    (ins DefaultValuedAttr<BoolAttr, "false">:$linear_before_reset,
         Optional<HeterPS_FloatTensor>:$y_grad,
         Optional<HeterPS_FloatTensor>:$y_h_grad), (outs)>;

def HeterPS_LSTMGradOp : HeterPS_RecurrentGradOp<"lstm_grad", "lstm",
    (ins Optional<HeterPS_FloatTensor>:$initial_c,
         Optional<HeterPS_FloatTensor>:$peepholes,
         Optional<HeterPS_FloatTensor>:$y_grad,
         Optional<HeterPS_FloatTensor>:$y_h_grad,
         Optional<HeterPS_FloatTensor>:$y_c_grad),
    (outs HeterPS_FloatTensor:$initial_c_grad,
          HeterPS_FloatTensor:$peepholes_grad),
    [{ (`initial_c` `(` $initial_c^ `)`)? (`peepholes` `(` $peepholes^ `)`)? }]>;

def HeterPS_ConvTransposeGradOp : HeterPS_Op<"conv_transpose_grad",
    [Pure, CustomCost]> {
  let summary = "Gradients of a transposed convolution: input, filter, bias";
  let description = [{
    With the attributes of the forward `heterps.conv_transpose`: the input's
    gradient is the convolution of the result's gradient, the filter's that
    convolution's filter gradient, the bias's (M elements, whether or not
    the forward op had a bias) the result gradient summed per channel.

    ```mlir
    %dx, %dw, %db = heterps.conv_transpose_grad %x, %w, %dy {strides = array<i64: 2, 2>}
        : (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<?x2x7x7xf32>)
        -> (tensor<?x4x3x3xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>)
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input, HeterPS_FloatTensor:$filter,
                       HeterPS_FloatTensor:$result_grad,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       OptionalAttr<DenseI64ArrayAttr>:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs HeterPS_FloatTensor:$input_grad,
                      HeterPS_FloatTensor:$filter_grad,
                      HeterPS_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $filter `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_PoolGradOp : HeterPS_Op<"pool_grad",
    [Pure, AllTypesMatch<["input", "input_grad"]>, CustomCost]> {
  let summary = "Gradient of max or average pooling";
  let description = [{
    With the attributes of the forward pooling op; `kind` is `max` or `avg`.

    ```mlir
    %dx = heterps.pool_grad max %x, %y, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
            : (tensor<?x4x8x8xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x8x8xf32>
    ```
  }];
  let arguments = (ins HeterPS_PoolKindAttr:$kind, HeterPS_FloatTensor:$input,
                       HeterPS_FloatTensor:$result,
                       HeterPS_FloatTensor:$result_grad,
                       DenseI64ArrayAttr:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs HeterPS_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $kind $input `,` $result `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_BatchNormGradOp : HeterPS_Op<"batch_norm_grad",
    [Pure, CustomCost]> {
  let summary = "Training-mode gradients of batch normalisation";
  let description = [{
    The gradients of the input, scale and bias; the batch statistics are
    recomputed from `input`.

    ```mlir
    %dx, %ds, %db = heterps.batch_norm_grad %x, %s, %dy
        : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<?x4x8x8xf32>)
        -> (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input, HeterPS_FloatTensor:$scale,
                       HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon);
  let results = (outs HeterPS_FloatTensor:$input_grad,
                      HeterPS_FloatTensor:$scale_grad,
                      HeterPS_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_LayerNormGradOp : HeterPS_Op<"layer_norm_grad",
    [Pure, CustomCost]> {
  let summary = "Gradients of layer normalisation";
  let description = [{
    The gradients of the input, scale and bias over the dimensions `axis` ..
    rank-1.

    ```mlir
    %dx, %ds, %db = heterps.layer_norm_grad %x, %s, %dy {axis = -1 : i64}
        : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>)
        -> (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins HeterPS_FloatTensor:$input, HeterPS_FloatTensor:$scale,
                       HeterPS_FloatTensor:$result_grad,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon);
  let results = (outs HeterPS_FloatTensor:$input_grad,
                      HeterPS_FloatTensor:$scale_grad,
                      HeterPS_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HeterPS_UpdateParamOp : HeterPS_Op<"update_param",
    [MemoryEffects<[MemRead<HeterPS_ParameterResource>,
                    MemWrite<HeterPS_ParameterResource>]>,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     HeterPS_CostOpInterface]> {
  let summary = "Applies an optimizer step to a dense parameter";
  let description = [{
    Updates `@name` in place from its gradient with the optimizer `kind`
    (`sgd`, `momentum`, `adam`, `adagrad`); the runtime keeps the
    optimizer's state (momentum buffers, Adam moments and step count, Adagrad
    sums) beside the parameter and saves it in checkpoints. `weight_decay`
    adds `weight_decay * w` to the gradient (L2, as PyTorch's SGD and Adam
    do).

    ```mlir
    heterps.update_param adam @fc1.weight, %g {learning_rate = 1.0e-03 : f64}
        : tensor<13x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name, HeterPS_FloatTensor:$gradient,
                       HeterPS_OptimizerKindAttr:$kind,
                       F64Attr:$learning_rate,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let assemblyFormat = [{
    $kind $name `,` $gradient attr-dict `:` type($gradient)
  }];
  let hasVerifier = 1;
}

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSOPS_TD
