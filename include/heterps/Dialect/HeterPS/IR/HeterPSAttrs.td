//===- HeterPSAttrs.td - HeterPS attributes and enums ------*- tablegen -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_TD
#define HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_TD

include "heterps/Dialect/HeterPS/IR/HeterPSDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def HeterPS_ResourceKind : I32EnumAttr<"ResourceKind",
    "the kind of a resource type", [
      I32EnumAttrCase<"cpu", 0>,
      I32EnumAttrCase<"gpu", 1>
    ]> {
  let cppNamespace = "::mlir::heterps";
  let genSpecializedAttr = 0;
}

def HeterPS_InitKind : I32EnumAttr<"InitKind",
    "how a parameter or an embedding row is initialised", [
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
    ]> {
  let cppNamespace = "::mlir::heterps";
  let genSpecializedAttr = 0;
}

def HeterPS_Combiner : I32EnumAttr<"Combiner",
    "how the rows of one bag of embedding ids are combined", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"sum", 1>,
      I32EnumAttrCase<"mean", 2>
    ]> {
  let cppNamespace = "::mlir::heterps";
  let genSpecializedAttr = 0;
}

def HeterPS_LossReduction : I32EnumAttr<"LossReduction",
    "how per-sample losses are reduced", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"mean", 1>,
      I32EnumAttrCase<"sum", 2>
    ]> {
  let cppNamespace = "::mlir::heterps";
  let genSpecializedAttr = 0;
}

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

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSATTRS_TD
