//===- HeterPSOps.cpp - HeterPS operations --------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"
#include "heterps/Support/CheckedMath.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::heterps;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static int64_t mulDims(int64_t a, int64_t b) {
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
    return ShapedType::kDynamic;
  return a * b;
}

static RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Resolves `symbol` to an op of type `OpTy` in the nearest symbol table.
template <typename OpTy>
static FailureOr<OpTy> lookupSymbol(Operation *user, FlatSymbolRefAttr symbol,
                                    SymbolTableCollection &symbolTable,
                                    StringRef what) {
  Operation *target =
      symbolTable.lookupNearestSymbolFrom(user, symbol.getAttr());
  auto typed = dyn_cast_or_null<OpTy>(target);
  if (!typed)
    return user->emitOpError()
           << "@" << symbol.getValue() << " does not name a " << what;
  return typed;
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

static ParseResult parseParamValue(OpAsmParser &parser, TypeAttr type,
                                   Attribute &value) {
  // A dense value takes the parameter's type, so it is not written twice.
  return parser.parseAttribute(value, type.getValue());
}

static void printParamValue(OpAsmPrinter &printer, ParamOp, TypeAttr,
                            Attribute value) {
  if (isa<ElementsAttr>(value))
    printer.printAttributeWithoutType(value);
  else
    printer.printAttribute(value);
}

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  if (!type.hasStaticShape())
    return emitOpError() << "parameter @" << getSymName()
                         << " must have a static shape, got " << type;
  if (auto elements = dyn_cast<ElementsAttr>(getValue())) {
    if (elements.getType() != type)
      return emitOpError() << "initial value of @" << getSymName()
                           << " has type " << elements.getType()
                           << ", expected " << type;
    return success();
  }
  auto init = cast<InitAttr>(getValue());
  switch (init.getKind()) {
  case InitKind::xavier_uniform:
  case InitKind::xavier_normal:
  case InitKind::kaiming_uniform:
  case InitKind::kaiming_normal:
    if (type.getRank() < 2)
      return emitOpError() << stringifyInitKind(init.getKind())
                           << " needs a parameter of rank 2 or more to "
                              "compute its fans, @"
                           << getSymName() << " has rank " << type.getRank();
    break;
  default:
    break;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingTableOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingTableOp::verify() {
  if (getVocabAttr().getInt() < 1)
    return emitOpError() << "table @" << getSymName()
                         << " needs a positive vocab, got "
                         << getVocabAttr().getInt();
  if (getDimAttr().getInt() < 1)
    return emitOpError() << "table @" << getSymName()
                         << " needs a positive dim, got "
                         << getDimAttr().getInt();
  if (std::optional<ElementsAttr> value = getValue()) {
    auto type = dyn_cast<RankedTensorType>(value->getType());
    int64_t vocab = getVocab(), dim = getDim();
    if (!type || type.getRank() != 2 || type.getDimSize(0) != vocab ||
        type.getDimSize(1) != dim || !type.getElementType().isF32())
      return emitOpError() << "initial value of table @" << getSymName()
                           << " has type " << value->getType()
                           << ", expected 'tensor<" << vocab << "x" << dim
                           << "xf32>'";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// LoadParamOp
//===----------------------------------------------------------------------===//

LogicalResult
LoadParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ParamOp> param =
      lookupSymbol<ParamOp>(*this, getNameAttr(), symbolTable, "heterps.param");
  if (failed(param))
    return failure();
  if (param->getType() != getType())
    return emitOpError() << "result type " << getType()
                         << " does not match parameter @" << param->getSymName()
                         << " of type " << param->getType();
  return success();
}

OpCost LoadParamOp::getCost(int64_t batchSize) {
  OpCost cost;
  cost.parameterBytes = getNumBytes(getType(), batchSize);
  return cost;
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpCost ConstantOp::getCost(int64_t) { return {}; }

//===----------------------------------------------------------------------===//
// EmbeddingLookupOp
//===----------------------------------------------------------------------===//

LogicalResult
EmbeddingLookupOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<EmbeddingTableOp> table = lookupSymbol<EmbeddingTableOp>(
      *this, getTableAttr(), symbolTable, "heterps.embedding_table");
  if (failed(table))
    return failure();
  ArrayRef<int64_t> ids = getIds().getType().getShape();
  SmallVector<int64_t> expected(ids);
  if (getCombiner() != Combiner::none) {
    if (expected.empty())
      return emitOpError() << "a " << stringifyCombiner(getCombiner())
                           << " combiner needs ids of rank 1 or more";
    expected.pop_back();
  }
  expected.push_back(table->getDim());
  RankedTensorType result = getResult().getType();
  if (!result.getElementType().isF32())
    return emitOpError() << "table rows are f32, the result has element type "
                         << result.getElementType();
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape " << formatShape(result.getShape())
                         << " does not match the expected "
                         << formatShape(expected) << " (ids "
                         << formatShape(ids) << ", dim " << table->getDim()
                         << ", combiner " << stringifyCombiner(getCombiner())
                         << ")";
  return success();
}

OpCost EmbeddingLookupOp::getCost(int64_t batchSize) {
  OpCost cost;
  double rows = getNumElements(getIds().getType(), batchSize);
  double dim = getResult().getType().getShape().back();
  cost.embeddingBytes = rows * dim * 4;
  // Combining a bag adds its rows; without a combiner the rows are copied.
  if (getCombiner() != Combiner::none)
    cost.forwardFlops = rows * dim;
  cost.backwardFlops = cost.forwardFlops;
  cost.forwardBytes = getOperandAndResultBytes(*this, batchSize);
  cost.backwardBytes = cost.forwardBytes;
  return cost;
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto a = cast<RankedTensorType>(adaptor.getA().getType());
  auto b = cast<RankedTensorType>(adaptor.getB().getType());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc,
                             "'heterps.gemm' op A and B must be matrices, "
                             "got ranks ",
                             a.getRank(), " and ", b.getRank());
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(loc,
                             "'heterps.gemm' op A and B have different "
                             "element types: ",
                             a.getElementType(), " and ", b.getElementType());
  bool transA = adaptor.getTransA(), transB = adaptor.getTransB();
  int64_t m = a.getDimSize(transA ? 1 : 0), ka = a.getDimSize(transA ? 0 : 1);
  int64_t kb = b.getDimSize(transB ? 1 : 0), n = b.getDimSize(transB ? 0 : 1);
  if (!dimsAgree(ka, kb))
    return emitOptionalError(loc,
                             "'heterps.gemm' op inner dimensions differ: "
                             "op(A) is ",
                             formatShape({m, ka}), ", op(B) is ",
                             formatShape({kb, n}));
  if (Value c = adaptor.getC()) {
    auto cType = cast<RankedTensorType>(c.getType());
    ArrayRef<int64_t> cs = cType.getShape();
    SmallVector<int64_t> mn = {m, n};
    bool ok = cs.size() <= 2 && cType.getElementType() == a.getElementType();
    for (size_t i = 0; ok && i < cs.size(); ++i) {
      int64_t target = mn[2 - cs.size() + i];
      ok = cs[i] == 1 || dimsAgree(cs[i], target);
    }
    if (!ok)
      return emitOptionalError(
          loc, "'heterps.gemm' op C of shape ", formatShape(cs), " and type ",
          cType, " does not broadcast to the ", formatShape(mn), " result");
  }
  inferred.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

OpCost GemmOp::getCost(int64_t batchSize) {
  RankedTensorType a = getA().getType();
  int64_t kDim = a.getDimSize(getTransA() ? 0 : 1);
  double kSize = ShapedType::isDynamic(kDim) ? batchSize : kDim;
  double mn = getNumElements(getResult().getType(), batchSize);
  OpCost cost;
  cost.forwardFlops = 2 * mn * kSize + (getC() ? 2 * mn : 0);
  // dA = dY * B^T and dB = A^T * dY.
  cost.backwardFlops = 4 * mn * kSize;
  cost.forwardBytes = getOperandAndResultBytes(*this, batchSize);
  cost.backwardBytes = 2 * cost.forwardBytes;
  return cost;
}

//===----------------------------------------------------------------------===//
// MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lhs.getRank() < 1 || rhs.getRank() < 1)
    return emitOptionalError(loc, "'heterps.matmul' op operands must have "
                                  "rank 1 or more");
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc,
                             "'heterps.matmul' op operands have "
                             "different element types: ",
                             lhs.getElementType(), " and ",
                             rhs.getElementType());
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  bool vectorLhs = a.size() == 1, vectorRhs = b.size() == 1;
  if (vectorLhs)
    a.insert(a.begin(), 1);
  if (vectorRhs)
    b.push_back(1);
  int64_t m = a[a.size() - 2], ka = a.back();
  int64_t kb = b[b.size() - 2], n = b.back();
  if (!dimsAgree(ka, kb))
    return emitOptionalError(loc,
                             "'heterps.matmul' op inner dimensions "
                             "differ: ",
                             formatShape(lhs.getShape()), " times ",
                             formatShape(rhs.getShape()));
  // Leading dimensions broadcast like an elementwise op.
  SmallVector<Type> batch;
  auto batchOf = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape.drop_back(2), lhs.getElementType());
  };
  if (failed(inferBroadcastResultType(loc, "heterps.matmul", batchOf(a),
                                      batchOf(b), batch)))
    return failure();
  SmallVector<int64_t> shape(cast<RankedTensorType>(batch[0]).getShape());
  if (!vectorLhs)
    shape.push_back(m);
  if (!vectorRhs)
    shape.push_back(n);
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

OpCost MatMulOp::getCost(int64_t batchSize) {
  RankedTensorType lhs = getLhs().getType();
  int64_t kDim = lhs.getShape().back();
  double k = ShapedType::isDynamic(kDim) ? batchSize : kDim;
  double outputs = getNumElements(getResult().getType(), batchSize);
  OpCost cost;
  cost.forwardFlops = 2 * outputs * k;
  cost.backwardFlops = 2 * cost.forwardFlops;
  cost.forwardBytes = getOperandAndResultBytes(*this, batchSize);
  cost.backwardBytes = 2 * cost.forwardBytes;
  return cost;
}

//===----------------------------------------------------------------------===//
// ClipOp, DropoutOp
//===----------------------------------------------------------------------===//

LogicalResult ClipOp::verify() {
  if (getMinAttr() && getMaxAttr() &&
      getMinAttr().getValueAsDouble() > getMaxAttr().getValueAsDouble())
    return emitOpError() << "min " << getMinAttr().getValueAsDouble()
                         << " is greater than max "
                         << getMaxAttr().getValueAsDouble();
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (ratio < 0 || ratio >= 1)
    return emitOpError() << "ratio must be in [0, 1), got " << ratio;
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "'heterps.concat' op needs at least one "
                                  "input");
  auto first = cast<RankedTensorType>(inputs[0].getType());
  std::optional<int64_t> axis =
      normalizeAxis(adaptor.getAxis(), first.getRank());
  if (!axis)
    return emitOptionalError(loc, "'heterps.concat' op axis ",
                             static_cast<int64_t>(adaptor.getAxis()),
                             " is out of range for rank-", first.getRank(),
                             " inputs");
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, input] : llvm::enumerate(inputs.drop_front())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getRank() != first.getRank() ||
        type.getElementType() != first.getElementType())
      return emitOptionalError(loc, "'heterps.concat' op input ", i + 1, " is ",
                               type, " but input 0 is ", first);
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (d == *axis) {
        shape[d] = ShapedType::isDynamic(shape[d]) || type.isDynamicDim(d)
                       ? ShapedType::kDynamic
                       : shape[d] + type.getDimSize(d);
        continue;
      }
      if (!dimsAgree(shape[d], type.getDimSize(d)))
        return emitOptionalError(loc, "'heterps.concat' op input ", i + 1,
                                 " has size ", type.getDimSize(d),
                                 " in dimension ", d, " where input 0 has ",
                                 shape[d]);
      if (ShapedType::isDynamic(shape[d]))
        shape[d] = type.getDimSize(d);
    }
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

/// The product of the static dimensions (-1 when it does not fit in 64
/// bits) and the number of dynamic ones.
static std::pair<int64_t, int64_t> staticProduct(ArrayRef<int64_t> shape) {
  int64_t product = 1, dynamic = 0;
  for (int64_t dim : shape) {
    if (ShapedType::isDynamic(dim))
      ++dynamic;
    else if (product >= 0)
      product = ::heterps::checkedMul(product, dim).value_or(-1);
  }
  return {product, dynamic};
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "changes the element type from "
                         << input.getElementType() << " to "
                         << result.getElementType();
  auto [inProduct, inDynamic] = staticProduct(input.getShape());
  auto [outProduct, outDynamic] = staticProduct(result.getShape());
  if (inDynamic > 1 || outDynamic > 1)
    return emitOpError() << "may have one dynamic (batch) dimension on each "
                            "side, got "
                         << formatShape(input.getShape()) << " to "
                         << formatShape(result.getShape());
  if (inDynamic != outDynamic)
    return emitOpError() << "cannot reshape " << formatShape(input.getShape())
                         << " to " << formatShape(result.getShape())
                         << ": the batch dimension must stay dynamic";
  if (inProduct < 0 || outProduct < 0)
    return emitOpError() << "has more elements than a 64-bit size holds ("
                         << formatShape(input.getShape()) << " to "
                         << formatShape(result.getShape()) << ")";
  // With a dynamic dimension on each side, that of the result may be a
  // multiple of the input's (B -> B*H) or a whole part of it (B*H -> B): the
  // static products must then divide one another.
  bool divides = inProduct != 0 && outProduct != 0 &&
                 (inProduct % outProduct == 0 || outProduct % inProduct == 0);
  if (inProduct != outProduct && !(inDynamic && divides))
    return emitOpError() << "changes the number of elements"
                         << (inDynamic ? " per sample" : "") << " from "
                         << inProduct << " to " << outProduct << " ("
                         << formatShape(input.getShape()) << " to "
                         << formatShape(result.getShape()) << ")"
                         << (inDynamic ? ", and neither divides the other"
                                       : "");
  return success();
}

OpCost ReshapeOp::getCost(int64_t) {
  // A reshape is a view: no FLOPs and no copy.
  return {};
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  llvm::SmallBitVector seen(input.getRank());
  bool valid = static_cast<int64_t>(perm.size()) == input.getRank();
  for (int64_t p : perm) {
    if (!valid)
      break;
    valid = p >= 0 && p < input.getRank() && !seen.test(p);
    if (valid)
      seen.set(p);
  }
  if (!valid) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleaveComma(perm, os);
    return emitOptionalError(loc, "'heterps.transpose' op perm [", text,
                             "] is not a permutation of the ", input.getRank(),
                             " dimensions of the input");
  }
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getDimSize(p));
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// BatchNormOp, LayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::verify() {
  return verifyBatchNormOperands(*this, getInput().getType(),
                                 {{"scale", getScale()},
                                  {"bias", getBias()},
                                  {"mean", getMean()},
                                  {"variance", getVariance()}});
}

OpCost BatchNormOp::getCost(int64_t batchSize) {
  return getElementwiseCost(*this, batchSize, 5.0);
}

LogicalResult LayerNormOp::verify() {
  RankedTensorType input = getInput().getType();
  std::optional<int64_t> axis = normalizeAxis(getAxis(), input.getRank());
  if (!axis)
    return emitOpError() << "axis " << static_cast<int64_t>(getAxis())
                         << " is out of range for a rank-" << input.getRank()
                         << " input";
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*axis);
  for (Value value : {getScale(), getBias()}) {
    if (!value)
      continue;
    ArrayRef<int64_t> shape = tensorOf(value).getShape();
    if (!shapesAgree(shape, normalized))
      return emitOpError() << (value == getScale() ? "scale" : "bias")
                           << " must have shape " << formatShape(normalized)
                           << " (the normalised dimensions), got "
                           << formatShape(shape);
  }
  return success();
}

OpCost LayerNormOp::getCost(int64_t batchSize) {
  return getElementwiseCost(*this, batchSize, 8.0);
}

//===----------------------------------------------------------------------===//
// ConvOp
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto filter = cast<RankedTensorType>(adaptor.getFilter().getType());
  int64_t spatial = input.getRank() - 2;
  if (spatial < 1)
    return emitOptionalError(loc,
                             "'heterps.conv' op input must be N x C x "
                             "spatial..., got rank ",
                             input.getRank());
  if (filter.getRank() != input.getRank())
    return emitOptionalError(loc, "'heterps.conv' op filter has rank ",
                             filter.getRank(), ", expected ", input.getRank(),
                             " (M x C/group x kernel...)");
  if (filter.getElementType() != input.getElementType())
    return emitOptionalError(
        loc, "'heterps.conv' op filter element type ", filter.getElementType(),
        " differs from the input's ", input.getElementType());
  int64_t group = adaptor.getGroup();
  int64_t outChannels = filter.getDimSize(0);
  if (group < 1 ||
      (!ShapedType::isDynamic(outChannels) && outChannels % group != 0))
    return emitOptionalError(loc, "'heterps.conv' op group ", group,
                             " must be positive and divide the ", outChannels,
                             " output channels");
  if (!dimsAgree(input.getDimSize(1), mulDims(filter.getDimSize(1), group)))
    return emitOptionalError(loc, "'heterps.conv' op input has ",
                             input.getDimSize(1), " channels, filter expects ",
                             filter.getDimSize(1), " x group ", group);
  if (Value bias = adaptor.getBias()) {
    ArrayRef<int64_t> shape = tensorOf(bias).getShape();
    if (shape.size() != 1 || !dimsAgree(shape[0], outChannels))
      return emitOptionalError(loc, "'heterps.conv' op bias must have shape ",
                               outChannels, ", got ", formatShape(shape));
  }
  auto strides = adaptor.getStrides();
  auto pads = adaptor.getPads();
  auto dilations = adaptor.getDilations();
  if (strides && static_cast<int64_t>(strides->size()) != spatial)
    return emitOptionalError(loc, "'heterps.conv' op strides has ",
                             strides->size(), " entries for ", spatial,
                             " spatial dimensions");
  if (dilations && static_cast<int64_t>(dilations->size()) != spatial)
    return emitOptionalError(loc, "'heterps.conv' op dilations has ",
                             dilations->size(), " entries for ", spatial,
                             " spatial dimensions");
  if (pads && static_cast<int64_t>(pads->size()) != 2 * spatial)
    return emitOptionalError(loc, "'heterps.conv' op pads has ", pads->size(),
                             " entries, expected ", 2 * spatial,
                             " (begins then ends)");
  SmallVector<int64_t> shape = {input.getDimSize(0), outChannels};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t stride = strides ? (*strides)[i] : 1;
    int64_t dilation = dilations ? (*dilations)[i] : 1;
    int64_t pad = pads ? (*pads)[i] + (*pads)[i + spatial] : 0;
    int64_t size = input.getDimSize(i + 2), kernel = filter.getDimSize(i + 2);
    if (stride < 1 || dilation < 1 || pad < 0)
      return emitOptionalError(loc, "'heterps.conv' op spatial dimension ", i,
                               " has stride ", stride, ", dilation ", dilation,
                               ", padding ", pad,
                               ": strides and dilations must be positive, "
                               "padding non-negative");
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(kernel)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    int64_t span = size + pad - dilation * (kernel - 1) - 1;
    if (span < 0)
      return emitOptionalError(loc, "'heterps.conv' op kernel of ", kernel,
                               " (dilation ", dilation,
                               ") does not fit spatial size ", size,
                               " (padding ", pad, ") in dimension ", i + 2);
    shape.push_back(span / stride + 1);
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpCost ConvOp::getCost(int64_t batchSize) {
  RankedTensorType filter = getFilter().getType();
  // Every output element is a dot product over C/group x kernel inputs.
  double window = getNumElements(filter, batchSize) / filter.getDimSize(0);
  double outputs = getNumElements(getResult().getType(), batchSize);
  OpCost cost;
  cost.forwardFlops = 2 * outputs * window + (getBias() ? outputs : 0);
  cost.backwardFlops = 4 * outputs * window;
  cost.forwardBytes = getOperandAndResultBytes(*this, batchSize);
  cost.backwardBytes = 2 * cost.forwardBytes;
  return cost;
}

//===----------------------------------------------------------------------===//
// GlobalAvgPoolOp
//===----------------------------------------------------------------------===//

LogicalResult
GlobalAvgPoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (input.getRank() < 3)
    return emitOptionalError(loc,
                             "'heterps.global_avg_pool' op input must be "
                             "N x C x spatial..., got rank ",
                             input.getRank());
  SmallVector<int64_t> shape(input.getRank(), 1);
  shape[0] = input.getDimSize(0);
  shape[1] = input.getDimSize(1);
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The result of a loss whose per-sample values have `perSample` shape.
static Type getLossType(ArrayRef<int64_t> perSample, Type elementType,
                        LossReduction reduction) {
  if (reduction == LossReduction::none)
    return RankedTensorType::get(perSample, elementType);
  return RankedTensorType::get({}, elementType);
}

/// Losses of predictions against targets of one shape.
static LogicalResult inferPairwiseLoss(std::optional<Location> loc,
                                       StringRef opName, Value prediction,
                                       Value target, LossReduction reduction,
                                       SmallVectorImpl<Type> &inferred) {
  RankedTensorType p = tensorOf(prediction), t = tensorOf(target);
  if (!shapesAgree(p.getShape(), t.getShape()) ||
      p.getElementType() != t.getElementType())
    return emitOptionalError(loc, "'", opName, "' op prediction ", p,
                             " and target ", t, " differ");
  inferred.push_back(getLossType(p.getShape(), p.getElementType(), reduction));
  return success();
}

/// Losses of class scores (N x C x ...) against class indices (N x ...).
static LogicalResult inferClassLoss(std::optional<Location> loc,
                                    StringRef opName, Value scores,
                                    Value labels, LossReduction reduction,
                                    SmallVectorImpl<Type> &inferred) {
  RankedTensorType s = tensorOf(scores), l = tensorOf(labels);
  if (s.getRank() < 2)
    return emitOptionalError(loc, "'", opName,
                             "' op scores must be N x C x ..., got rank ",
                             s.getRank());
  SmallVector<int64_t> expected(s.getShape());
  expected.erase(expected.begin() + 1);
  if (!shapesAgree(l.getShape(), expected))
    return emitOptionalError(
        loc, "'", opName, "' op labels must have shape ", formatShape(expected),
        " (the scores ", formatShape(s.getShape()),
        " without the class dimension), got ", formatShape(l.getShape()));
  inferred.push_back(getLossType(expected, s.getElementType(), reduction));
  return success();
}

LogicalResult BCELossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPairwiseLoss(loc, getOperationName(), adaptor.getPrediction(),
                           adaptor.getLabel(), adaptor.getReduction(),
                           inferred);
}

LogicalResult MSELossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPairwiseLoss(loc, getOperationName(), adaptor.getPrediction(),
                           adaptor.getTarget(), adaptor.getReduction(),
                           inferred);
}

LogicalResult
SoftmaxCELossOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  return inferClassLoss(loc, getOperationName(), adaptor.getLogits(),
                        adaptor.getLabel(), adaptor.getReduction(), inferred);
}

LogicalResult NLLLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferClassLoss(loc, getOperationName(), adaptor.getLogProbs(),
                        adaptor.getLabel(), adaptor.getReduction(), inferred);
}

//===----------------------------------------------------------------------===//
// PipelineOp, StageOp, YieldOp
//===----------------------------------------------------------------------===//

/// Checks that the entry block of `region` takes `inputs` as arguments.
static LogicalResult verifyBodyArguments(Operation *op, Region &region,
                                         ValueRange inputs) {
  Block &body = region.front();
  if (body.getNumArguments() != inputs.size())
    return op->emitOpError()
           << "body has " << body.getNumArguments()
           << " arguments but the op has " << inputs.size() << " inputs";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip_equal(body.getArgumentTypes(), inputs)))
    if (std::get<0>(pair) != std::get<1>(pair).getType())
      return op->emitOpError()
             << "body argument " << i << " has type " << std::get<0>(pair)
             << " but input " << i << " is " << std::get<1>(pair).getType();
  return success();
}

namespace {
/// The two ends of one channel.
struct ChannelEnds {
  SendOp send;
  RecvOp recv;
  int64_t sendStage = -1;
  int64_t recvStage = -1;
};
} // namespace

LogicalResult PipelineOp::verifyRegions() {
  if (failed(verifyBodyArguments(*this, getBody(), getInputs())))
    return failure();
  if (getMicroBatchesAttr().getInt() < 1)
    return emitOpError() << "needs at least one micro-batch, got "
                         << getMicroBatchesAttr().getInt();

  // The first part of every stage, by index; new indices come in order.
  SmallVector<StageOp> firstParts;
  llvm::MapVector<int64_t, ChannelEnds> channels;
  for (Operation &op : getBody().front()) {
    if (isa<YieldOp>(op))
      continue;
    auto stage = dyn_cast<StageOp>(op);
    if (!stage)
      return op.emitOpError()
             << "cannot appear in a heterps.pipeline, which holds only "
                "heterps.stage ops";
    int64_t index = stage.getIndexAttr().getInt();
    int64_t next = static_cast<int64_t>(firstParts.size());
    if (index < 0 || index > next)
      return stage.emitOpError()
             << "has index " << index << " after stages 0.." << next - 1
             << "; stages are numbered 0, 1, ... in order of their first part";
    if (index == next) {
      firstParts.push_back(stage);
    } else {
      StageOp first = firstParts[index];
      if (first.getDevice() != stage.getDevice() ||
          first.getUnits() != stage.getUnits())
        return stage.emitOpError()
               << "is a part of stage " << index << ", which runs on "
               << first.getDevice() << " with " << first.getUnits()
               << " units; this part has " << stage.getDevice() << " and "
               << stage.getUnits();
    }
    WalkResult walk = stage.getBody().walk([&](Operation *nested) {
      if (auto send = dyn_cast<SendOp>(nested)) {
        ChannelEnds &ends = channels[send.getChannel()];
        if (ends.send) {
          send.emitOpError()
              << "reuses channel " << send.getChannel()
              << ", which already has a sender in stage " << ends.sendStage;
          return WalkResult::interrupt();
        }
        ends.send = send;
        ends.sendStage = index;
      } else if (auto recv = dyn_cast<RecvOp>(nested)) {
        ChannelEnds &ends = channels[recv.getChannel()];
        if (ends.recv) {
          recv.emitOpError()
              << "reuses channel " << recv.getChannel()
              << ", which already has a receiver in stage " << ends.recvStage;
          return WalkResult::interrupt();
        }
        ends.recv = recv;
        ends.recvStage = index;
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  if (firstParts.empty())
    return emitOpError() << "needs at least one heterps.stage";

  for (auto &[channel, ends] : channels) {
    if (!ends.recv)
      return ends.send.emitOpError() << "sends on channel " << channel
                                     << ", which no stage receives from";
    if (!ends.send)
      return ends.recv.emitOpError() << "receives from channel " << channel
                                     << ", which no stage sends on";
    if (ends.sendStage == ends.recvStage)
      return ends.recv.emitOpError()
             << "receives from channel " << channel << " in stage "
             << ends.recvStage << ", the stage that sends on it";
    if (ends.send.getValue().getType() != ends.recv.getType())
      return ends.recv.emitOpError()
             << "receives " << ends.recv.getType() << " from channel "
             << channel << ", which sends " << ends.send.getValue().getType();
  }
  return success();
}

LogicalResult StageOp::verifyRegions() {
  if (getUnitsAttr().getInt() < 1)
    return emitOpError() << "needs at least one unit, got "
                         << getUnitsAttr().getInt();
  if (failed(verifyDeviceInCluster(*this, getDevice())))
    return failure();
  if (failed(verifyBodyArguments(*this, getBody(), getInputs())))
    return failure();
  DeviceAttr stageDevice = getDevice();
  WalkResult walk = getBody().walk([&](Operation *nested) {
    DeviceAttr device = heterps::getDevice(nested);
    if (device && device != stageDevice) {
      nested->emitOpError()
          << "is placed on \"" << device.getResource() << "\" inside stage "
          << getIndex() << " on \"" << stageDevice.getResource() << "\"";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult YieldOp::verify() {
  Operation *parent = (*this)->getParentOp();
  TypeRange expected = parent->getResultTypes();
  if (getValues().size() != expected.size())
    return emitOpError() << "yields " << getValues().size()
                         << " values but the enclosing " << parent->getName()
                         << " has " << expected.size() << " results";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip_equal(getValues().getTypes(), expected)))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError() << "yields " << std::get<0>(pair) << " as value "
                           << i << " but result " << i << " of the enclosing "
                           << parent->getName() << " is " << std::get<1>(pair);
  return success();
}

LogicalResult SendOp::verify() {
  if (getChannelAttr().getInt() < 0)
    return emitOpError() << "channel must be non-negative, got "
                         << getChannelAttr().getInt();
  return success();
}

LogicalResult RecvOp::verify() {
  if (getChannelAttr().getInt() < 0)
    return emitOpError() << "channel must be non-negative, got "
                         << getChannelAttr().getInt();
  return success();
}

//===----------------------------------------------------------------------===//
// PSPullOp, PSPushOp
//===----------------------------------------------------------------------===//

/// Checks `keys` (1-D) against `rows` (keys x dim).
static LogicalResult verifyKeysAndRows(Operation *op, Value keys, Value rows,
                                       StringRef rowsName) {
  RankedTensorType k = tensorOf(keys), r = tensorOf(rows);
  if (k.getRank() != 1)
    return op->emitOpError()
           << "keys must be 1-D, got shape " << formatShape(k.getShape());
  if (r.getRank() != 2 || !dimsAgree(r.getDimSize(0), k.getDimSize(0)))
    return op->emitOpError()
           << rowsName << " must be " << formatShape(k.getShape())
           << " x dim (one row per key), got " << formatShape(r.getShape());
  return success();
}

static LogicalResult verifyTableDim(Operation *op, FlatSymbolRefAttr table,
                                    Value rows, StringRef rowsName,
                                    SymbolTableCollection &symbolTable) {
  FailureOr<EmbeddingTableOp> target = lookupSymbol<EmbeddingTableOp>(
      op, table, symbolTable, "heterps.embedding_table");
  if (failed(target))
    return failure();
  RankedTensorType type = tensorOf(rows);
  if (type.getDimSize(1) != static_cast<int64_t>(target->getDim()) ||
      !type.getElementType().isF32())
    return op->emitOpError() << rowsName << " are " << type << " but table @"
                             << target->getSymName() << " has rows of "
                             << target->getDim() << " x f32";
  return success();
}

LogicalResult PSPullOp::verify() {
  return verifyKeysAndRows(*this, getKeys(), getRows(), "rows");
}

LogicalResult PSPullOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyTableDim(*this, getTableAttr(), getRows(), "rows", symbolTable);
}

OpCost PSPullOp::getCost(int64_t batchSize) {
  OpCost cost;
  cost.embeddingBytes = getNumBytes(getRows().getType(), batchSize);
  cost.forwardBytes = getOperandAndResultBytes(*this, batchSize);
  return cost;
}

LogicalResult PSPushOp::verify() {
  return verifyKeysAndRows(*this, getKeys(), getGradients(), "gradients");
}

LogicalResult PSPushOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyTableDim(*this, getTableAttr(), getGradients(), "gradients",
                        symbolTable);
}

OpCost PSPushOp::getCost(int64_t batchSize) {
  OpCost cost;
  cost.embeddingBytes = getNumBytes(getGradients().getType(), batchSize);
  cost.backwardBytes = getOperandAndResultBytes(*this, batchSize);
  return cost;
}

//===----------------------------------------------------------------------===//
// TableGen'd op definitions
//===----------------------------------------------------------------------===//

#define GET_OP_CLASSES
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.cpp.inc"
