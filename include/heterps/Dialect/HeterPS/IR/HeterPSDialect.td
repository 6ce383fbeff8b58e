//===- HeterPSDialect.td - HeterPS dialect definition ------*- tablegen -*-===//
//
// The HeterPS dialect: the layers of a deep model (dense parameters, sparse
// embedding tables and the ops between them) and the structure the scheduler
// gives them (placement on resource types, pipeline stages, the channels
// between stages and the parameter-server traffic).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSDIALECT_TD
#define HETERPS_DIALECT_HETERPS_IR_HETERPSDIALECT_TD

include "mlir/IR/OpBase.td"

def HeterPS_Dialect : Dialect {
  let name = "heterps";
  let cppNamespace = "::mlir::heterps";
  let summary = "Deep models scheduled over heterogeneous CPUs and GPUs";
  let description = [{
    The HeterPS dialect describes a training job the way the HeterPS scheduler
    (Liu et al., arXiv 2111.10635) sees it: a sequence of layers over builtin
    tensors whose leading dimension is the (possibly dynamic) batch, dense
    parameters held as module-level symbols, and sparse embedding tables whose
    rows live in a parameter server.

    The compiler imports a model into this dialect, places every op on a
    resource type of a cluster (the `heterps.device` attribute), groups
    consecutive ops on one type into pipeline stages (`heterps.stage` inside a
    `heterps.pipeline`), connects the stages with channels (`heterps.send` and
    `heterps.recv`) and routes embedding traffic through the parameter server
    (`heterps.ps_pull`, `heterps.ps_push`).

    ```mlir
    module attributes {heterps.resources = [#heterps.device<"c6i", cpu>,
                                             #heterps.device<"a100", gpu>]} {
      heterps.embedding_table @slot0 {vocab = 100000 : i64, dim = 16 : i64,
                                      initializer = #heterps.init<uniform(-0.05, 0.05)>}
      heterps.param @fc.weight : tensor<16x1xf32> = #heterps.init<xavier_uniform>
      func.func @forward(%ids: tensor<?x1xi64>) -> tensor<?x1xf32> {
        %e = heterps.embedding_lookup @slot0[%ids] {combiner = #heterps.combiner<sum>,
               heterps.device = #heterps.device<"c6i", cpu>}
               : (tensor<?x1xi64>) -> tensor<?x16xf32>
        %w = heterps.load_param @fc.weight : tensor<16x1xf32>
        %y = heterps.matmul %e, %w {heterps.device = #heterps.device<"a100", gpu>}
               : (tensor<?x16xf32>, tensor<16x1xf32>) -> tensor<?x1xf32>
        return %y : tensor<?x1xf32>
      }
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let extraClassDeclaration = [{
    void registerAttributes();

    /// The discardable attribute that places an op on a resource type.
    static constexpr ::llvm::StringLiteral getDeviceAttrName() {
      return ::llvm::StringLiteral("heterps.device");
    }
    /// The discardable attribute that assigns an op to a pipeline stage.
    static constexpr ::llvm::StringLiteral getStageAttrName() {
      return ::llvm::StringLiteral("heterps.stage");
    }
    /// The discardable unit attribute heterps-place-ops sets on an op that
    /// starts a pipeline stage although the op before it runs on the same
    /// resource type; heterps-provision cuts the stages there.
    static constexpr ::llvm::StringLiteral getStageCutAttrName() {
      return ::llvm::StringLiteral("heterps.stage_cut");
    }
    /// The module attribute that records the scheduler's predicted
    /// throughput and cost.
    static constexpr ::llvm::StringLiteral getPredictionAttrName() {
      return ::llvm::StringLiteral("heterps.prediction");
    }
    /// The function attribute that heterps-autodiff writes on a training
    /// step: the loss kind and the index of the result carrying the loss.
    static constexpr ::llvm::StringLiteral getTrainingAttrName() {
      return ::llvm::StringLiteral("heterps.training");
    }
    /// Numbers a dropout op of a training step, so that its gradient redraws
    /// the same mask.
    static constexpr ::llvm::StringLiteral getDropoutIdAttrName() {
      return ::llvm::StringLiteral("heterps.dropout_id");
    }
    /// Ties the ops heterps-autodiff builds for the backward of a forward op
    /// (its gradients, their sums, the parameter update, the table push) to
    /// that op: all carry the same non-negative integer, the forward op
    /// first in the block. The scheduler places a layer as one unit, so a
    /// stage owns the forward and the backward ops of its layers.
    static constexpr ::llvm::StringLiteral getLayerAttrName() {
      return ::llvm::StringLiteral("heterps.layer");
    }
    /// The argument and result attribute naming a function input or output
    /// (the ONNX graph's names); heterps-run binds data by these names.
    static constexpr ::llvm::StringLiteral getNameAttrName() {
      return ::llvm::StringLiteral("heterps.name");
    }
    /// The argument attribute marking a label input of a training step.
    static constexpr ::llvm::StringLiteral getLabelAttrName() {
      return ::llvm::StringLiteral("heterps.label");
    }
    /// The argument attribute of a bag input (nn.EmbeddingBag's ids with
    /// offsets): its dimension 0 is the batch's bags, concatenated, and the
    /// argument it names (by number) holds where each bag starts.
    static constexpr ::llvm::StringLiteral getBagOffsetsAttrName() {
      return ::llvm::StringLiteral("heterps.bag_offsets");
    }
    /// The module attribute that lists the resource types of the cluster.
    static constexpr ::llvm::StringLiteral getResourcesAttrName() {
      return ::llvm::StringLiteral("heterps.resources");
    }
  }];
}

class HeterPS_Op<string mnemonic, list<Trait> traits = []>
    : Op<HeterPS_Dialect, mnemonic, traits>;

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSDIALECT_TD
