//===- OpTable.cpp - The ONNX ops the importer converts -------------------===//
//
// One row per ONNX op type: the first opset whose signature the converter
// reads (the importer takes opsets up to getMaxONNXOpset()), the limits
// docs/SupportedOps.md lists, and the converter. importNode dispatches
// through it; heterps-onnx-conformance generates the docs from it.
//
// Earlier signatures that are refused: Concat before 4 (optional axis),
// Cast before 6 (the type as a string), Pad before 2 (`paddings`), Split
// before 2 and Clip before 6 (`consumed_inputs`), Dropout before 7
// (`is_test`), BatchNormalization before 9 (`spatial`), RNN, GRU and LSTM
// before 7.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/STLExtras.h"

#include <vector>

using namespace mlir;
using namespace mlir::heterps;
using namespace mlir::heterps::onnx_import;

/// The newest opset of the default domain the importer reads.
static constexpr int64_t kMaxOpset = 18;

ArrayRef<OpRegistration> Importer::registrations() {
  // Converters are private members: the lambdas, defined in a member
  // function, may call them.
  static const OpRegistration table[] = {
      {{"Abs", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"Add", 1,
        "float or integer tensors of one type; NumPy broadcasting (not the "
        "pre-opset-7 `axis`)"},
       [](Importer &i, StringRef op) { return i.convertBinary(op); }},
      {{"And", 1, ""},
       [](Importer &i, StringRef op) { return i.convertLogical(op); }},
      {{"ArgMax", 1, ""},
       [](Importer &i, StringRef op) { return i.convertArgExtreme(op); }},
      {{"ArgMin", 1, ""},
       [](Importer &i, StringRef op) { return i.convertArgExtreme(op); }},
      {{"AveragePool", 1, "auto_pad needs static spatial sizes"},
       [](Importer &i, StringRef op) { return i.convertConvPool(op); }},
      {{"BatchNormalization", 9,
        "spatial = 1; the running statistics become frozen parameters; "
        "training_mode = 1 normalises with the batch statistics (spelled out "
        "when its statistics outputs are read)"},
       [](Importer &i, StringRef op) { return i.convertBatchNorm(); }},
      {{"Cast", 6, "numbers only (no strings); folds when its input is known"},
       [](Importer &i, StringRef op) { return i.convertCast(); }},
      {{"Clip", 6, "min/max must be constants"},
       [](Importer &i, StringRef op) { return i.convertClip(); }},
      {{"Concat", 4, "float tensors, or integer tensors known at import time"},
       [](Importer &i, StringRef op) { return i.convertConcat(); }},
      {{"Constant", 1, ""},
       [](Importer &i, StringRef op) { return i.convertConstant(); }},
      {{"ConstantOfShape", 1,
        "folded (at most 2^20 elements) when the shape is known at import "
        "time; a shape holding the batch only as a recurrent layer's zero "
        "initial state"},
       [](Importer &i, StringRef op) { return i.convertConstantOfShape(); }},
      {{"Conv", 1, "auto_pad needs static spatial sizes"},
       [](Importer &i, StringRef op) { return i.convertConvPool(op); }},
      {{"ConvTranspose", 1,
        "static filter; output_shape and auto_pad need static spatial sizes; a "
        "requested size may not need negative padding at the beginning"},
       [](Importer &i, StringRef op) { return i.convertConvTranspose(); }},
      {{"CumSum", 1, "the axis must be a constant"},
       [](Importer &i, StringRef op) { return i.convertCumSum(); }},
      {{"Div", 1, "float or integer tensors of one type"},
       [](Importer &i, StringRef op) { return i.convertBinary(op); }},
      {{"Dropout", 7,
        "ratio and training_mode must be constants; the mask output only in "
        "inference (all ones)"},
       [](Importer &i, StringRef op) { return i.convertDropout(); }},
      {{"Einsum", 1,
        "float operands; a '...' stands for as many dimensions in every "
        "operand; a diagonal needs a known size up to 4096"},
       [](Importer &i, StringRef op) { return i.convertEinsum(); }},
      {{"Equal", 1,
        "folded when both inputs are known; on data heterps.compare"},
       [](Importer &i, StringRef op) { return i.convertCompare(op); }},
      {{"Erf", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"Exp", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"Expand", 1, "the target shape must be known at import time"},
       [](Importer &i, StringRef op) { return i.convertExpand(); }},
      {{"Flatten", 1, ""},
       [](Importer &i, StringRef op) { return i.convertReshapeLike(op); }},
      {{"GRU", 7,
        "default activations, no clip; W and R of static shape; "
        "linear_before_reset 0 or 1; sequence_lens masks steps"},
       [](Importer &i, StringRef op) { return i.convertRecurrent(op); }},
      {{"Gather", 1,
        "from a float initializer by computed ids: an embedding table; "
        "otherwise a dense gather"},
       [](Importer &i, StringRef op) { return i.convertGather(); }},
      {{"GatherElements", 1, ""},
       [](Importer &i, StringRef op) { return i.convertGatherElements(); }},
      {{"Gemm", 1, ""},
       [](Importer &i, StringRef op) { return i.convertGemm(); }},
      {{"GlobalAveragePool", 1, ""},
       [](Importer &i, StringRef op) { return i.convertConvPool(op); }},
      {{"Greater", 1,
        "folded when both inputs are known; on data heterps.compare"},
       [](Importer &i, StringRef op) { return i.convertCompare(op); }},
      {{"GreaterOrEqual", 1,
        "folded when both inputs are known; on data heterps.compare"},
       [](Importer &i, StringRef op) { return i.convertCompare(op); }},
      {{"Identity", 1, "tensors only (no sequences or optionals)"},
       [](Importer &i, StringRef op) { return i.convertIdentity(); }},
      {{"InstanceNormalization", 1,
        "spelled out with reduce_mean, sub, mul, sqrt, div and a per-channel "
        "scale and bias"},
       [](Importer &i, StringRef op) { return i.convertInstanceNorm(); }},
      {{"LSTM", 7,
        "default activations, no clip, input_forget 0; W and R of static "
        "shape; peepholes and sequence_lens supported"},
       [](Importer &i, StringRef op) { return i.convertRecurrent(op); }},
      {{"LayerNormalization", 1,
        "Mean and InvStdDev outputs are spelled out with reduce_mean"},
       [](Importer &i, StringRef op) { return i.convertLayerNorm(); }},
      {{"LeakyRelu", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"Less", 1,
        "folded when both inputs are known; on data heterps.compare"},
       [](Importer &i, StringRef op) { return i.convertCompare(op); }},
      {{"LessOrEqual", 1,
        "folded when both inputs are known; on data heterps.compare"},
       [](Importer &i, StringRef op) { return i.convertCompare(op); }},
      {{"Log", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"LogSoftmax", 1, ""},
       [](Importer &i, StringRef op) {
         return i.convertSoftmax(op == "LogSoftmax");
       }},
      {{"MatMul", 1, ""},
       [](Importer &i, StringRef op) { return i.convertMatMul(); }},
      {{"MaxPool", 1,
        "one output (no Indices), storage_order 0, float tensors"},
       [](Importer &i, StringRef op) { return i.convertConvPool(op); }},
      {{"Mul", 1, "float or integer tensors of one type"},
       [](Importer &i, StringRef op) { return i.convertBinary(op); }},
      {{"Neg", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"NegativeLogLikelihoodLoss", 1,
        "with weights or ignore_index: heterps.weighted_nll_loss"},
       [](Importer &i, StringRef op) {
         return i.convertLoss(op == "SoftmaxCrossEntropyLoss");
       }},
      {{"Not", 1, ""},
       [](Importer &i, StringRef op) { return i.convertLogical(op); }},
      {{"Or", 1, ""},
       [](Importer &i, StringRef op) { return i.convertLogical(op); }},
      {{"Pad", 2,
        "pads and constant_value must be constants (no axes input); modes "
        "constant, reflect and edge; no negative pads; the batch is not "
        "padded; all-zero pads are dropped"},
       [](Importer &i, StringRef op) { return i.convertPad(); }},
      {{"Pow", 1, "float base; the exponent is cast to the base type"},
       [](Importer &i, StringRef op) { return i.convertBinary(op); }},
      {{"RNN", 7,
        "activations Tanh or Relu (one for every direction), no clip; W and R "
        "of static shape"},
       [](Importer &i, StringRef op) { return i.convertRecurrent(op); }},
      {{"Range", 1,
        "start, limit and delta must be known at import time (folded)"},
       [](Importer &i, StringRef op) { return i.convertRange(); }},
      {{"ReduceL2", 1, ""},
       [](Importer &i, StringRef op) { return i.convertReduce(op); }},
      {{"ReduceMax", 1, ""},
       [](Importer &i, StringRef op) { return i.convertReduce(op); }},
      {{"ReduceMean", 1, ""},
       [](Importer &i, StringRef op) { return i.convertReduce(op); }},
      {{"ReduceMin", 1, ""},
       [](Importer &i, StringRef op) { return i.convertReduce(op); }},
      {{"ReduceProd", 1, ""},
       [](Importer &i, StringRef op) { return i.convertReduce(op); }},
      {{"ReduceSum", 1, ""},
       [](Importer &i, StringRef op) { return i.convertReduce(op); }},
      {{"Relu", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"Reshape", 1, "the shape must be known at import time"},
       [](Importer &i, StringRef op) { return i.convertReshapeLike(op); }},
      {{"Resize", 1,
        "roi, scales and sizes must be constants; a dynamic (batch) dimension "
        "is not resized; no antialias, axes or keep_aspect_ratio_policy"},
       [](Importer &i, StringRef op) { return i.convertResize(); }},
      {{"Scatter", 1, "as ScatterElements"},
       [](Importer &i, StringRef op) { return i.convertScatterElements(); }},
      {{"ScatterElements", 1,
        "reduction none or add; with none, the gradient of duplicate indices "
        "goes to every duplicate update"},
       [](Importer &i, StringRef op) { return i.convertScatterElements(); }},
      {{"ScatterND", 1,
        "reduction none, add or mul (mul has no gradient); with none, the "
        "gradient of duplicate tuples goes to every duplicate update"},
       [](Importer &i, StringRef op) { return i.convertScatterND(); }},
      {{"Shape", 1, "folded; a dynamic batch stays symbolic"},
       [](Importer &i, StringRef op) { return i.convertShape(); }},
      {{"Sigmoid", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"Slice", 1,
        "starts/ends/axes/steps must be constants; the batch is kept"},
       [](Importer &i, StringRef op) { return i.convertSlice(); }},
      {{"Softmax", 1, ""},
       [](Importer &i,
          StringRef op) { return i.convertSoftmax(op == "LogSoftmax"); }},
      {{"SoftmaxCrossEntropyLoss", 1,
        "with weights, ignore_index or log_prob: log_softmax + "
        "weighted_nll_loss"},
       [](Importer &i, StringRef op) {
         return i.convertLoss(op == "SoftmaxCrossEntropyLoss");
       }},
      {{"Split", 2,
        "split sizes must be constants; the batch is not split; each output is "
        "a heterps.slice"},
       [](Importer &i, StringRef op) { return i.convertSplit(); }},
      {{"Sqrt", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"Squeeze", 1, "axes must be constants"},
       [](Importer &i, StringRef op) { return i.convertReshapeLike(op); }},
      {{"Sub", 1, "float or integer tensors of one type"},
       [](Importer &i, StringRef op) { return i.convertBinary(op); }},
      {{"Tanh", 1, ""},
       [](Importer &i, StringRef op) { return i.convertUnary(op); }},
      {{"Tile", 1,
        "repeats must be constants; the batch is not repeated; imported as "
        "reshape, expand, reshape"},
       [](Importer &i, StringRef op) { return i.convertTile(); }},
      {{"TopK", 1,
        "K must be a constant; the results are sorted (equal values by "
        "position); the values' gradient is a scatter-add"},
       [](Importer &i, StringRef op) { return i.convertTopK(); }},
      {{"Transpose", 1, ""},
       [](Importer &i, StringRef op) { return i.convertTranspose(); }},
      {{"Unsqueeze", 1, "axes must be constants"},
       [](Importer &i, StringRef op) { return i.convertReshapeLike(op); }},
      {{"Where", 1,
        "folded when all inputs are known; the gradient goes to x and y"},
       [](Importer &i, StringRef op) { return i.convertWhere(); }},
      {{"Xor", 1, ""},
       [](Importer &i, StringRef op) { return i.convertLogical(op); }},
  };
  return table;
}

const OpRegistration *Importer::findRegistration(StringRef opType) {
  ArrayRef<OpRegistration> table = registrations();
  const OpRegistration *it = llvm::lower_bound(
      table, opType,
      [](const OpRegistration &r, StringRef n) { return r.info.name < n; });
  return it != table.end() && it->info.name == opType ? it : nullptr;
}

ArrayRef<ONNXOpInfo> mlir::heterps::getSupportedONNXOps() {
  static const std::vector<ONNXOpInfo> infos = [] {
    std::vector<ONNXOpInfo> v;
    for (const OpRegistration &r : Importer::registrations())
      v.push_back(r.info);
    return v;
  }();
  return infos;
}

int64_t mlir::heterps::getMaxONNXOpset() { return kMaxOpset; }
