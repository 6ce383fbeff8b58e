//===- HeterPSAttrs.td - HeterPS attributes and enums ------*- tablegen -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_TD
#define HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_TD

include "heterps/Dialect/HeterPS/IR/HeterPSDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

// The dialect's enums. An unknown keyword is an error that names what the
// enum is and lists the valid words (MLIR's default names the C++ type).
class HeterPS_Enum<string name, string summary, list<I32EnumAttrCase> cases>
    : I32EnumAttr<name, summary, cases> {
  let cppNamespace = "::mlir::heterps";
  let genSpecializedAttr = 0;
  let parameterParser = [{[&]() -> ::mlir::FailureOr<}] # cppType # [{> {
    auto loc = $_parser.getCurrentLocation();
    std::string keyword;
    if (::mlir::failed($_parser.parseKeywordOrString(&keyword)))
      return ::mlir::failure();
    if (auto value = }] # cppNamespace # "::" # stringToSymbolFnName #
        [{(keyword))
      return *value;
    return {(::llvm::LogicalResult)($_parser.emitError(loc)
        << "'" << keyword << "' is not }] # summary # [{; expected one of: "
        << "}] # !interleave(!foreach(c, cases, c.str), ", ") # [{")};
  }()}];
}

def HeterPS_ResourceKind : HeterPS_Enum<"ResourceKind",
    "a resource kind", [
      I32EnumAttrCase<"cpu", 0>,
      I32EnumAttrCase<"gpu", 1>
    ]>;

def HeterPS_InitKind : HeterPS_Enum<"InitKind",
    "an initializer", [
      I32EnumAttrCase<"zeros", 0>,
      I32EnumAttrCase<"ones", 1>,
      I32EnumAttrCase<"constant", 2>,
      I32EnumAttrCase<"uniform", 3>,
      I32EnumAttrCase<"normal", 4>,
      I32EnumAttrCase<"truncated_normal", 5>,
      I32EnumAttrCase<"xavier_uniform", 6>,
      I32EnumAttrCase<"xavier_normal", 7>,
      I32EnumAttrCase<"kaiming_uniform", 8>,
      I32EnumAttrCase<"kaiming_normal", 9>
    ]>;

def HeterPS_Combiner : HeterPS_Enum<"Combiner",
    "an embedding bag combiner", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"sum", 1>,
      I32EnumAttrCase<"mean", 2>
    ]>;

def HeterPS_LossReduction : HeterPS_Enum<"LossReduction",
    "a loss reduction", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"mean", 1>,
      I32EnumAttrCase<"sum", 2>
    ]>;

// The kinds an op carries as its first word (`heterps.unary_grad relu ...`):
// the enum lists what the runtime implements, so an unknown kind is a parse
// error naming the valid ones. The plan file writes a kind as its name.

def HeterPS_OptimizerKind : HeterPS_Enum<"OptimizerKind",
    "an optimizer's update rule", [
      I32EnumAttrCase<"sgd", 0>,
      I32EnumAttrCase<"momentum", 1>,
      I32EnumAttrCase<"adam", 2>,
      I32EnumAttrCase<"adagrad", 3>
    ]>;

def HeterPS_UnaryKind : HeterPS_Enum<"UnaryKind",
    "an elementwise op that unary_grad differentiates", [
      I32EnumAttrCase<"relu", 0>,
      I32EnumAttrCase<"sigmoid", 1>,
      I32EnumAttrCase<"tanh", 2>,
      I32EnumAttrCase<"erf", 3>,
      I32EnumAttrCase<"exp", 4>,
      I32EnumAttrCase<"log", 5>,
      I32EnumAttrCase<"sqrt", 6>,
      I32EnumAttrCase<"neg", 7>,
      I32EnumAttrCase<"abs", 8>,
      I32EnumAttrCase<"leaky_relu", 9>,
      I32EnumAttrCase<"clip", 10>,
      I32EnumAttrCase<"dropout", 11>
    ]>;

def HeterPS_LossKind : HeterPS_Enum<"LossKind",
    "a loss that loss_grad differentiates", [
      I32EnumAttrCase<"bce", 0>,
      I32EnumAttrCase<"mse", 1>,
      I32EnumAttrCase<"softmax_ce", 2>,
      I32EnumAttrCase<"nll", 3>,
      I32EnumAttrCase<"weighted_nll", 4>
    ]>;

def HeterPS_PoolKind : HeterPS_Enum<"PoolKind",
    "a pooling kind", [
      I32EnumAttrCase<"max", 0>,
      I32EnumAttrCase<"avg", 1>
    ]>;

def HeterPS_ReduceKind : HeterPS_Enum<"ReduceKind",
    "a reduction", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"mean", 1>,
      I32EnumAttrCase<"max", 2>,
      I32EnumAttrCase<"min", 3>,
      I32EnumAttrCase<"prod", 4>,
      I32EnumAttrCase<"l2", 5>
    ]>;

def HeterPS_CompareKind : HeterPS_Enum<"CompareKind",
    "an elementwise comparison", [
      I32EnumAttrCase<"eq", 0>,
      I32EnumAttrCase<"lt", 1>,
      I32EnumAttrCase<"gt", 2>,
      I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"ge", 4>
    ]>;

def HeterPS_LogicKind : HeterPS_Enum<"LogicKind",
    "an elementwise boolean operation", [
      I32EnumAttrCase<"and_", 0, "and">,
      I32EnumAttrCase<"or_", 1, "or">,
      I32EnumAttrCase<"xor_", 2, "xor">
    ]>;

def HeterPS_ExtremeKind : HeterPS_Enum<"ExtremeKind",
    "an extreme that arg_extreme finds", [
      I32EnumAttrCase<"max", 0>,
      I32EnumAttrCase<"min", 1>
    ]>;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class HeterPS_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<HeterPS_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def HeterPS_CombinerAttr : EnumAttr<HeterPS_Dialect, HeterPS_Combiner,
                                    "combiner"> {
  let assemblyFormat = "`<` $value `>`";
}
def HeterPS_LossReductionAttr : EnumAttr<HeterPS_Dialect, HeterPS_LossReduction,
                                         "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

// Kinds as op attributes: printed bare in an op's format (`relu`), accepted
// quoted too.
class HeterPS_KindAttr<EnumAttrInfo info, string attrMnemonic>
    : EnumAttr<HeterPS_Dialect, info, attrMnemonic> {
  let assemblyFormat = "$value";
}
def HeterPS_OptimizerKindAttr : HeterPS_KindAttr<HeterPS_OptimizerKind,
                                                 "optimizer_kind">;
def HeterPS_UnaryKindAttr : HeterPS_KindAttr<HeterPS_UnaryKind, "unary_kind">;
def HeterPS_LossKindAttr : HeterPS_KindAttr<HeterPS_LossKind, "loss_kind">;
def HeterPS_PoolKindAttr : HeterPS_KindAttr<HeterPS_PoolKind, "pool_kind">;
def HeterPS_ReduceKindAttr : HeterPS_KindAttr<HeterPS_ReduceKind,
                                              "reduce_kind">;
def HeterPS_CompareKindAttr : HeterPS_KindAttr<HeterPS_CompareKind,
                                               "compare_kind">;
def HeterPS_LogicKindAttr : HeterPS_KindAttr<HeterPS_LogicKind, "logic_kind">;
def HeterPS_ExtremeKindAttr : HeterPS_KindAttr<HeterPS_ExtremeKind,
                                               "extreme_kind">;

def HeterPS_DeviceAttr : HeterPS_Attr<"Device", "device"> {
  let summary = "A resource type of the cluster";
  let description = [{
    Names a resource type of the cluster (as the cluster file names it) and
    its kind. As the discardable attribute `heterps.device` it places an op;
    as the module attribute `heterps.resources` (an array of these) it lists
    the resource types an op may be placed on; on `heterps.stage` it is the
    type every unit of the stage has.

    ```mlir
    #heterps.device<"a100-40g", gpu>
    #heterps.device<"c6i.4xlarge", cpu>
    ```
  }];
  let parameters = (ins StringRefParameter<"resource type name">:$resource,
                        EnumParameter<HeterPS_ResourceKind>:$kind);
  let assemblyFormat = "`<` $resource `,` $kind `>`";
  let genVerifyDecl = 1;
}

def HeterPS_StageAssignmentAttr
    : HeterPS_Attr<"StageAssignment", "stage_assignment"> {
  let summary = "The pipeline stage an op belongs to and the stage's units";
  let description = [{
    Written by `heterps-provision` as the discardable attribute
    `heterps.stage` on every placed op; `heterps-outline-stages` groups the
    ops by it into `heterps.stage` ops.

    ```mlir
    %y = heterps.relu %x {heterps.device = #heterps.device<"a100", gpu>,
                          heterps.stage = #heterps.stage_assignment<index = 1, units = 4>}
           : tensor<?x64xf32>
    ```
  }];
  let parameters = (ins "int64_t":$index, "int64_t":$units);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def HeterPS_InitAttr : HeterPS_Attr<"Init", "init"> {
  let summary = "An initializer specification";
  let description = [{
    How a dense parameter or the rows of an embedding table start. Kinds that
    take arguments write them in parentheses:

    | kind | arguments |
    |------|-----------|
    | `zeros`, `ones` | none |
    | `constant` | value |
    | `uniform` | low, high |
    | `normal`, `truncated_normal` | mean, standard deviation (truncated at 2 std) |
    | `xavier_uniform`, `xavier_normal`, `kaiming_uniform`, `kaiming_normal` | none: the fans come from the shape |

    ```mlir
    #heterps.init<xavier_uniform>
    #heterps.init<uniform(-0.05, 0.05)>
    #heterps.init<constant(0.1)>
    ```
  }];
  let parameters = (ins EnumParameter<HeterPS_InitKind>:$kind,
                        "::mlir::DenseF64ArrayAttr":$args);
  let builders = [
    AttrBuilder<(ins "InitKind":$kind, "::llvm::ArrayRef<double>":$args), [{
      return $_get($_ctxt, kind, ::mlir::DenseF64ArrayAttr::get($_ctxt, args));
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The number of arguments an initializer of `kind` takes.
    static unsigned getNumArgs(InitKind kind);
  }];
}

// A binary64 float, printed exactly (`printFloat`) and parsed from a float
// or an integer literal; with a default it may be left out of a struct
// format. APFloat rather than double, since attribute storage hashes it.
class HeterPS_F64Parameter<string desc, string default = "">
    : AttrOrTypeParameter<"::llvm::APFloat", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if (::mlir::failed($_parser.parseFloat(value)))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = "$_printer.printFloat($_self)";
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let defaultValue = !if(!empty(default), ?, "::llvm::APFloat(" # default # ")");
}

def HeterPS_OptimizerAttr : HeterPS_Attr<"Optimizer", "optimizer"> {
  let summary = "An optimizer and its hyper-parameters";
  let description = [{
    The update the parameter server applies to an embedding table's pushed
    gradients (the `optimizer` of `heterps.embedding_table`, written by
    `heterps-autodiff`). The hyper-parameters are those of
    `heterps.update_param`; the ones left out take their defaults
    (momentum 0, beta1 0.9, beta2 0.999, epsilon 1e-8, weight_decay 0).

    ```mlir
    #heterps.optimizer<kind = adagrad, learning_rate = 5.000000e-02, epsilon = 1.000000e-10>
    ```
  }];
  let parameters = (ins
    EnumParameter<HeterPS_OptimizerKind>:$kind,
    HeterPS_F64Parameter<"learning rate">:$learning_rate,
    HeterPS_F64Parameter<"momentum (kind = momentum)", "0.0">:$momentum,
    HeterPS_F64Parameter<"Adam's beta1", "0.9">:$beta1,
    HeterPS_F64Parameter<"Adam's beta2", "0.999">:$beta2,
    HeterPS_F64Parameter<"Adam's and Adagrad's epsilon", "1.0e-8">:$epsilon,
    HeterPS_F64Parameter<"L2 weight decay", "0.0">:$weight_decay);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def HeterPS_TrainingAttr : HeterPS_Attr<"Training", "training"> {
  let summary = "Marks a function as a training step";
  let description = [{
    Written by `heterps-autodiff` on the function it differentiates, as the
    discardable attribute `heterps.training`: the loss the step minimises
    (`bce`, `mse`, `softmax_ce`, ..., or `graph` for a loss spelled out in
    the model) and which result of the function is that loss.

    ```mlir
    func.func @main(...) -> (tensor<?x1xf32>, tensor<f32>)
        attributes {heterps.training = #heterps.training<loss = "bce", loss_output = 1>}
    ```
  }];
  let parameters = (ins StringRefParameter<"the loss">:$loss,
                        "int64_t":$loss_output);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

/// A list of doubles, `[1.5e-03, 2.0e-04]` (held as APFloats, which hash);
/// empty, and not printed in a struct, by default.
class HeterPS_F64ArrayParameter<string desc>
    : OptionalArrayRefParameter<"::llvm::APFloat", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::SmallVector<::llvm::APFloat>> {
    ::llvm::SmallVector<::llvm::APFloat> values;
    if (::mlir::failed($_parser.parseCommaSeparatedList(
            ::mlir::AsmParser::Delimiter::Square, [&]() -> ::mlir::ParseResult {
              double value;
              if (::mlir::failed($_parser.parseFloat(value)))
                return ::mlir::failure();
              values.push_back(::llvm::APFloat(value));
              return ::mlir::success();
            })))
      return ::mlir::failure();
    return values;
  }() }];
  let printer = [{
    $_printer << '[';
    ::llvm::interleaveComma($_self, $_printer, [&](const ::llvm::APFloat &value) {
      $_printer.printFloat(value);
    });
    $_printer << ']';
  }];
  let comparator = [{ ::llvm::equal($_lhs, $_rhs,
      [](const ::llvm::APFloat &a, const ::llvm::APFloat &b) {
        return a.bitwiseIsEqual(b);
      }) }];
}

def HeterPS_PredictionAttr : HeterPS_Attr<"Prediction", "prediction"> {
  let summary = "The cost model's prediction for a provisioned plan";
  let description = [{
    Written by `heterps-provision` on the module as the discardable attribute
    `heterps.prediction`: the predicted throughput (samples/s), the cost of
    the whole job in US dollars, the cluster's cost per hour, and each
    stage's throughput with its units (samples/s: the batch over ET_i(k) of
    the cost model, which counts the compute over the units, the transfer to
    the next stage and the parameter synchronisation), in stage order; the
    slowest stage's is the plan's; and the batch size the figures are for
    (omitted: not recorded). The plan file carries them, and
    `heterps-emit-plan` records that batch as the plan's.

    ```mlir
    module attributes {heterps.prediction = #heterps.prediction<
        throughput = 1.200000e+04, cost_usd = 3.500000e+00, cost_per_hour = 1.530000e+00,
        stage_throughputs = [1.200000e+04, 2.500000e+04], batch = 512>} {
    ```
  }];
  let parameters = (ins HeterPS_F64Parameter<"samples per second">:$throughput,
                        HeterPS_F64Parameter<"job cost, US dollars">:$cost_usd,
                        HeterPS_F64Parameter<"US dollars per hour">:$cost_per_hour,
                        HeterPS_F64ArrayParameter<"samples per second of each stage">:$stage_throughputs,
                        DefaultValuedParameter<"int64_t", "0", "samples per batch the figures are for (0: not recorded)">:$batch);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_TD
