//===- ImportControlFlow.cpp - ONNX Loop as EmbeddingBag ------------------===//
//
// ONNX's control flow: the Loop PyTorch exports for nn.EmbeddingBag
// (EmbeddingBagPattern.cpp finds it) becomes a lookup of an embedding
// table (made of a float initializer on first use) with a combiner.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

using namespace mlir;
using namespace mlir::heterps;
using namespace mlir::heterps::onnx_import;

std::string Importer::tableSymbol(const std::string &initializer,
                                  const Known &table) {
  std::string &symbol = tableOf[initializer];
  if (!symbol.empty())
    return symbol;
  symbol = initializer;
  if (symbols.contains(symbol))
    symbol += ".table";
  symbols.insert(symbol);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(func);
  EmbeddingTableOp::create(
      b, NameLoc::get(b.getStringAttr(initializer)), symbol, table.shape[0],
      table.shape[1],
      // The initializer's rows are the table's initial value; the
      // initializer spec only applies to rows the server adds later.
      InitAttr::get(ctx, InitKind::zeros, ArrayRef<double>{}), toAttr(table),
      /*optimizer=*/OptimizerAttr());
  return symbol;
}
/// nn.EmbeddingBag's loop over bags of one size: the rows of the ids are
/// the bags, looked up with a sum or mean combiner, or gathered and reduced
/// with reduce_max. Bags given by offsets are looked up row by row and
/// reduced by segment_reduce.
LogicalResult Importer::convertEmbeddingBag(const EmbeddingBagMatch &bag) {
  if (!bag.unsupported.empty())
    return nodeError() << bag.unsupported;
  auto it = knowns.find(bag.table);
  if (it == knowns.end() || !it->second.initializer ||
      !it->second.elementType.isF32() || it->second.shape.size() != 2)
    return nodeError() << "the table '" << bag.table
                       << "' of the nn.EmbeddingBag must be a 2-D float "
                          "initializer";
  if (!bag.offsets.empty())
    return convertEmbeddingBagWithOffsets(bag, it->second);
  auto ids = values.find(bag.ids);
  if (ids == values.end())
    return nodeError() << "the ids '" << bag.ids
                       << "' of the nn.EmbeddingBag must be computed at run "
                          "time";
  RankedTensorType idsType = typeOf(ids->second);
  if (idsType.getRank() != 2 || !isa<IntegerType>(idsType.getElementType()))
    return nodeError() << "the ids '" << bag.ids
                       << "' of the nn.EmbeddingBag must be a 2-D integer "
                          "tensor, got "
                       << idsType;
  std::string symbol = tableSymbol(bag.table, it->second);
  int64_t dim = it->second.shape[1];
  Type f32 = b.getF32Type();
  if (bag.mode != "max") {
    setOutput(EmbeddingLookupOp::create(
        b, loc, RankedTensorType::get({idsType.getDimSize(0), dim}, f32),
        symbol, ids->second,
        bag.mode == "sum" ? Combiner::sum : Combiner::mean));
    return success();
  }
  Value rows = EmbeddingLookupOp::create(
      b, loc,
      RankedTensorType::get({idsType.getDimSize(0), idsType.getDimSize(1), dim},
                            f32),
      symbol, ids->second, Combiner::none);
  return emit(make<ReduceMaxOp>(rows, b.getDenseI64ArrayAttr({1}),
                                b.getBoolAttr(false)));
}

/// nn.EmbeddingBag(ids, offsets): every id's row, then a segment_reduce by
/// the offsets. The ids input is marked as bags (heterps.bag_offsets), so
/// that the runtime splits a batch by its offsets and not by its rows: both
/// must be inputs of the graph.
LogicalResult
Importer::convertEmbeddingBagWithOffsets(const EmbeddingBagMatch &bag,
                                         const Known &table) {
  auto argumentOf = [&](const std::string &name,
                        const char *role) -> FailureOr<BlockArgument> {
    auto it = values.find(name);
    auto arg = it == values.end() ? BlockArgument()
                                  : dyn_cast<BlockArgument>(it->second);
    RankedTensorType type = arg ? typeOf(arg) : RankedTensorType();
    if (!arg || arg.getOwner() != &func.getBody().front())
      return nodeError() << "the " << role << " '" << name
                         << "' of an nn.EmbeddingBag with offsets must be an "
                            "input of the graph (the runtime splits a batch "
                            "by the offsets)";
    if (type.getRank() != 1 || !isa<IntegerType>(type.getElementType()) ||
        !type.isDynamicDim(0))
      return nodeError() << "the " << role << " '" << name
                         << "' of an nn.EmbeddingBag with offsets must be a "
                            "1-D integer input of dynamic size, got "
                         << type;
    return arg;
  };
  FailureOr<BlockArgument> ids = argumentOf(bag.ids, "ids");
  if (failed(ids))
    return failure();
  FailureOr<BlockArgument> offsets = argumentOf(bag.offsets, "offsets");
  if (failed(offsets))
    return failure();
  StringRef mark = HeterPSDialect::getBagOffsetsAttrName();
  if (auto previous =
          func.getArgAttrOfType<IntegerAttr>(ids->getArgNumber(), mark);
      previous && previous.getInt() != offsets->getArgNumber())
    return nodeError() << "the ids '" << bag.ids
                       << "' are bags of two nn.EmbeddingBag with different "
                          "offsets";
  if (func.getArgAttr(offsets->getArgNumber(), mark))
    return nodeError() << "the offsets '" << bag.offsets
                       << "' are themselves the ids of an nn.EmbeddingBag";
  func.setArgAttr(ids->getArgNumber(), mark,
                  b.getI64IntegerAttr(offsets->getArgNumber()));
  // The ids' dimension 0 counts ids, not examples.
  batchMultiples.erase(*ids);
  std::string symbol = tableSymbol(bag.table, table);
  Type f32 = b.getF32Type();
  int64_t dim = table.shape[1];
  Value rows = EmbeddingLookupOp::create(
      b, loc, RankedTensorType::get({ShapedType::kDynamic, dim}, f32), symbol,
      *ids, Combiner::none);
  ReduceKind kind = bag.mode == "sum"    ? ReduceKind::sum
                    : bag.mode == "mean" ? ReduceKind::mean
                                         : ReduceKind::max;
  setOutput(SegmentReduceOp::create(
      b, loc, RankedTensorType::get({typeOf(*offsets).getDimSize(0), dim}, f32),
      kind, rows, *offsets));
  return success();
}
