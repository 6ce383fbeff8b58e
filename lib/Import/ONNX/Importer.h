//===- Importer.h - The ONNX importer's state and converters ----*- C++ -*-===//
//
// The importer is one class whose converters live in several files, one per
// family of ONNX ops (ImportONNX.cpp holds the graph walk and the rest).
// Private to lib/Import/ONNX.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_IMPORT_ONNX_IMPORTER_H
#define HETERPS_LIB_IMPORT_ONNX_IMPORTER_H

#include "EmbeddingBagPattern.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSBatch.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Import/ONNX/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>

namespace mlir::heterps::onnx_import {

class Importer;

/// Converts the importer's current node, of ONNX op type `opType`.
using Converter = LogicalResult (*)(Importer &importer, StringRef opType);

/// One row of the importer's op table (OpTable.cpp).
struct OpRegistration {
  ONNXOpInfo info;
  Converter convert;
};

using Ints = SmallVector<int64_t>;

constexpr int64_t kDyn = ShapedType::kDynamic;
/// The most elements the importer computes at import time (shape
/// arithmetic, small constants); larger results stay ops.
constexpr int64_t kMaxFoldedElements = int64_t(1) << 20;
/// From this many elements an f32 initializer stays in its raw bytes.
constexpr int64_t kRawElements = int64_t(1) << 12;

/// A tensor whose value is known while importing.
/// The f32 elements of a Known's `data` (dense or resource), in place.
const float *rawFloats(ElementsAttr data);

struct Known {
  Ints shape;
  Type elementType;
  /// Float elements (any float type, widened to double), unless `data`
  /// holds them.
  SmallVector<double> floats;
  /// A large f32 initializer, kept as the attribute built from its raw
  /// bytes: no widened copy, and no second copy when it becomes a
  /// parameter or table. From external data, a DenseResourceElementsAttr
  /// whose blob is the file's bytes as read (no copy at all); otherwise a
  /// DenseElementsAttr.
  ElementsAttr data;
  /// Integer elements; `kDyn` stands for a value known only at run time.
  Ints ints;
  /// An initializer (trainable when float), not a Constant node.
  bool initializer = false;
  /// For `kDyn` entries of `ints`, by index: how they relate to the batch.
  std::map<int64_t, BatchMultiple> batch;

  bool isFloat() const { return isa<FloatType>(elementType); }
  /// The element count: every Known holds all of its elements.
  int64_t size() const {
    if (data)
      return data.getNumElements();
    return static_cast<int64_t>(isFloat() ? floats.size() : ints.size());
  }
  bool complete() const { return !llvm::is_contained(ints, kDyn); }
  double at(int64_t i) const {
    if (data)
      return rawFloats(data)[i];
    return isFloat() ? floats[i] : ints[i];
  }
  BatchMultiple batchAt(int64_t i) const {
    auto it = batch.find(i);
    return it == batch.end() || isFloat() || ints[i] != kDyn ? BatchMultiple()
                                                             : it->second;
  }
  /// Appends a run-time size.
  void pushDynamic(BatchMultiple m) {
    ints.push_back(kDyn);
    if (m.known())
      batch[static_cast<int64_t>(ints.size()) - 1] = m;
  }
};

/// Adds `value` as element of `known` of the given type.
inline void push(Known &known, double value) {
  if (known.isFloat())
    known.floats.push_back(value);
  else
    known.ints.push_back(value == kDyn ? kDyn : (int64_t)value);
}
inline void pushFrom(Known &to, const Known &from, int64_t i) {
  if (to.isFloat())
    to.floats.push_back(from.at(i));
  else if (!from.isFloat() && from.ints[i] == kDyn)
    to.pushDynamic(from.batchAt(i));
  else
    to.ints.push_back(from.isFloat() ? (int64_t)from.at(i) : from.ints[i]);
}
inline Ints stridesOf(ArrayRef<int64_t> shape) {
  Ints strides(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Folds Add, Sub, Mul, Div (and Pow of floats) of known values with NumPy
/// broadcasting; nullopt when it cannot, with `overflow` set when integers
/// would overflow (ImportElementwise.cpp).
std::optional<Known> foldBinary(StringRef op, const Known &x, const Known &y,
                                bool *overflow = nullptr);

/// Folds an elementwise op of known values with NumPy broadcasting: `f`
/// gives each result element from its operands' indices, nullopt when it
/// cannot be known (ImportElementwise.cpp).
std::optional<Known>
foldBroadcast(ArrayRef<const Known *> in, Type resultType,
              llvm::function_ref<std::optional<double>(ArrayRef<int64_t>)> f);

class Importer {
public:
  Importer(MLIRContext *context, StringRef sourceName, StringRef baseDir,
           StringRef modelPath)
      : ctx(context), b(context), sourceName(sourceName.str()),
        baseDir(baseDir.str()), modelPath(modelPath.str()) {}

  FailureOr<OwningOpRef<ModuleOp>> run(StringRef bytes);

  /// The op table, sorted by op type: every ONNX op the importer converts,
  /// the opsets it converts, its limits and its converter.
  static ArrayRef<OpRegistration> registrations();
  /// The row of `opType`, or null.
  static const OpRegistration *findRegistration(StringRef opType);

private:
  // Diagnostics.
  Location fileLoc() { return FileLineColLoc::get(ctx, sourceName, 0, 0); }
  InFlightDiagnostic fileError() { return emitError(fileLoc()); }
  Location nodeLoc(const onnx::NodeProto &node, size_t index);
  InFlightDiagnostic nodeError() {
    return emitError(loc) << "ONNX node '" << nodeName << "' ("
                          << node->op_type() << ", opset " << opset << ") in "
                          << sourceName << ": ";
  }

  // Types and tensors.
  FailureOr<Type> elementType(int32_t onnxType, StringRef what);
  /// The tensor's values; with `keepRaw`, a large f32 tensor is kept as an
  /// attribute of its raw bytes (initializers, which are never folded).
  FailureOr<Known> readTensor(const onnx::TensorProto &tensor,
                              bool keepRaw = false);
  FailureOr<std::unique_ptr<llvm::MemoryBuffer>>
  readExternal(const onnx::TensorProto &tensor);
  ElementsAttr toAttr(const Known &known);

  // Graph structure.
  LogicalResult importInputs(const onnx::GraphProto &graph,
                             SmallVectorImpl<Type> &types,
                             SmallVectorImpl<std::string> &names);
  LogicalResult importNode(const onnx::NodeProto &node);
  /// Verifies the ops built for the current node: those after `before` (or
  /// all of `block` when it is null).
  LogicalResult verifyNewOps(Operation *before, Block *block);
  /// Records how the dynamic dimensions of `op`'s results relate to the
  /// batch.
  void recordBatchMultiples(Operation *op);
  BatchMultiple batchMultipleOf(Value v) const {
    return batchMultiples.lookup(v);
  }

  // Values.
  bool has(int i) const {
    return i < node->input_size() && !node->input(i).empty();
  }
  const Known *known(int i) const {
    if (!has(i))
      return nullptr;
    auto it = knowns.find(node->input(i));
    return it == knowns.end() ? nullptr : &it->second;
  }
  /// A known input that may be folded: not a trainable (float) initializer.
  const Known *foldable(int i) const {
    const Known *k = known(i);
    return k && !(k->initializer && k->isFloat()) ? k : nullptr;
  }
  /// Parameters and constants are read at the top of @main, in the order
  /// of first use, so that they dominate every use.
  void setPrologueInsertionPoint() {
    if (prologueEnd)
      b.setInsertionPointAfter(prologueEnd);
    else
      b.setInsertionPointToStart(&func.getBody().front());
  }
  FailureOr<Value> input(int i, bool frozen = false);
  /// Input `i`, or a null Value when the node leaves it out.
  FailureOr<Value> optionalInput(int i) {
    return has(i) ? input(i) : FailureOr<Value>(Value());
  }
  FailureOr<Value> materialize(StringRef name, bool frozen);
  FailureOr<Ints> constInts(int i, StringRef what);
  /// Operand `i` as a value known at import time (`known`, to fold), or
  /// else as an SSA value (`value`); `shape` is its shape either way.
  LogicalResult foldableOrInput(int i, const Known *&known, Value &value,
                                Ints &shape) {
    known = foldable(i);
    if (known) {
      shape = known->shape;
      return success();
    }
    FailureOr<Value> v = input(i);
    if (failed(v))
      return failure();
    value = *v;
    shape.assign(typeOf(value).getShape().begin(),
                 typeOf(value).getShape().end());
    return success();
  }
  RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  void setOutput(Value v, int i = 0) { values[node->output(i)] = v; }
  void setKnown(Known k, int i = 0) {
    k.initializer = false;
    knowns[node->output(i)] = std::move(k);
  }
  LogicalResult onlyFirstOutput();
  /// Whether output `i` of the node is read by a later node or is a graph
  /// output: PyTorch's exporter names outputs nothing reads (a training
  /// Dropout's mask), which need not be imported.
  bool used(int i) const {
    return i < node->output_size() && !node->output(i).empty() &&
           consumed.contains(node->output(i));
  }

  // Attributes.
  const onnx::AttributeProto *attr(StringRef name) const;
  int64_t intAttr(StringRef name, int64_t def) const {
    const onnx::AttributeProto *a = attr(name);
    return a ? a->i() : def;
  }
  float floatAttr(StringRef name, float def) const {
    const onnx::AttributeProto *a = attr(name);
    return a ? a->f() : def;
  }
  /// A float attribute that must be a finite number (a coefficient, an
  /// epsilon): NaN or infinity is an error naming it.
  FailureOr<float> finiteFloatAttr(StringRef name, float def) {
    float v = floatAttr(name, def);
    if (!std::isfinite(v))
      return nodeError() << "attribute '" << name << "' is " << v
                         << "; expected a finite number";
    return v;
  }
  /// The `axes` of a reduction or (un)squeeze: its constant input 1 (none
  /// when absent) when `fromInput`, else its attribute.
  FailureOr<std::optional<Ints>> axesInputOrAttr(bool fromInput) {
    if (!fromInput)
      return intsAttr("axes");
    if (!has(1))
      return std::optional<Ints>();
    FailureOr<Ints> axes = constInts(1, "axes");
    if (failed(axes))
      return failure();
    return std::optional<Ints>(*axes);
  }
  std::optional<Ints> intsAttr(StringRef name) const {
    const onnx::AttributeProto *a = attr(name);
    if (!a)
      return std::nullopt;
    return Ints(a->ints().begin(), a->ints().end());
  }
  std::string stringAttr(StringRef name, StringRef def) const {
    const onnx::AttributeProto *a = attr(name);
    return a ? a->s() : def.str();
  }

  /// Builds `OpTy` with its result type inferred; an inference failure is
  /// reported at the node (never the fatal error of the inferring builders).
  template <typename OpTy, typename... Args>
  FailureOr<Value> make(Args &&...args) {
    OperationState state(loc, OpTy::getOperationName());
    Type none;
    OpTy::build(b, state, none, std::forward<Args>(args)...);
    state.types.clear();
    SmallVector<Type> types;
    if (failed(OpTy::inferReturnTypes(
            ctx, loc, state.operands, state.attributes.getDictionary(ctx),
            state.getRawProperties(), state.regions, types)))
      return failure();
    state.addTypes(types);
    return b.create(state)->getResult(0);
  }
  LogicalResult emit(FailureOr<Value> v) {
    if (failed(v))
      return failure();
    setOutput(*v);
    return success();
  }

  // Converters.
  LogicalResult convertBinary(StringRef op);
  LogicalResult convertUnary(StringRef op);
  LogicalResult convertSoftmax(bool log);
  LogicalResult convertReshapeLike(StringRef op);
  LogicalResult convertReshapeTo(Value x, Ints target);
  LogicalResult convertGather();
  LogicalResult convertSlice();
  LogicalResult convertConcat();
  LogicalResult convertCast();
  LogicalResult convertExpand();
  LogicalResult convertPad();
  FailureOr<std::pair<Value, Value>> centeredAndStddev(Value x, Value mean,
                                                       DenseI64ArrayAttr axes,
                                                       double epsilon);
  LogicalResult convertInstanceNorm();
  LogicalResult convertTile();
  LogicalResult convertRange();
  LogicalResult convertCompare(StringRef op);
  LogicalResult convertLogical(StringRef op);
  LogicalResult convertWhere();
  LogicalResult convertConstantOfShape();
  LogicalResult convertSplit();
  LogicalResult convertReduce(StringRef op);
  LogicalResult convertClip();
  /// Convolution and pooling (ImportNN.cpp).
  LogicalResult convertConvPool(StringRef op);
  /// A window attribute of `size` values (`dflt` each when absent), each in
  /// [0, 2^20].
  FailureOr<Ints> windowAttr(StringRef name, int64_t size, int64_t dflt,
                             int64_t spatial);
  LogicalResult convertConvTranspose();
  LogicalResult convertResize();
  LogicalResult convertLoss(bool softmax);
  LogicalResult convertConstant();
  LogicalResult convertLayerNorm();
  LogicalResult convertBatchNorm();
  LogicalResult convertEinsum();
  LogicalResult convertTopK();
  // Indexing and layout (ImportTensor.cpp).
  LogicalResult convertScatterElements();
  LogicalResult convertScatterND();
  LogicalResult convertGatherElements();
  LogicalResult convertCumSum();
  LogicalResult convertArgExtreme(StringRef op);
  LogicalResult convertIdentity();
  LogicalResult convertShape();
  LogicalResult convertTranspose();
  // Gemm, MatMul, Dropout (ImportNN.cpp).
  LogicalResult convertGemm();
  LogicalResult convertMatMul();
  LogicalResult convertDropout();
  /// RNN, GRU and LSTM (ImportRecurrent.cpp).
  LogicalResult convertRecurrent(StringRef op);
  LogicalResult convertEmbeddingBag(const EmbeddingBagMatch &bag);
  LogicalResult convertEmbeddingBagWithOffsets(const EmbeddingBagMatch &bag,
                                               const Known &table);
  /// The embedding table made of a float initializer (made on first use).
  std::string tableSymbol(const std::string &initializer, const Known &table);

  MLIRContext *ctx;
  OpBuilder b;
  std::string sourceName, baseDir;
  /// The model's file, when it is one: the checker then resolves external
  /// data against its directory rather than the working directory.
  std::string modelPath;
  ModuleOp module;
  func::FuncOp func;
  Operation *prologueEnd = nullptr;
  int64_t opset = 0;

  llvm::StringMap<Value> values;
  llvm::StringMap<Known> knowns;
  /// The names nodes read and the graph outputs.
  llvm::StringSet<> consumed;
  /// For values with a dynamic dimension: its size against the batch.
  DenseMap<Value, BatchMultiple> batchMultiples;
  /// Materialized known values and the symbols created for initializers.
  llvm::StringMap<Value> materialized;
  llvm::StringMap<std::string> tableOf;
  llvm::StringSet<> symbols;
  /// ConstantOfShape results whose shape holds the run-time batch, by
  /// name: their fill value.
  llvm::StringMap<double> batchShapedFills;

  // The node being converted.
  const onnx::NodeProto *node = nullptr;
  std::string nodeName;
  Location loc = UnknownLoc::get(ctx);
};

} // namespace mlir::heterps::onnx_import

#endif // HETERPS_LIB_IMPORT_ONNX_IMPORTER_H
