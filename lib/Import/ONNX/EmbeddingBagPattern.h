//===- EmbeddingBagPattern.h - nn.EmbeddingBag in an ONNX graph -*- C++ -*-===//
//
// PyTorch (1.13) exports nn.EmbeddingBag as a Loop over the bags: the body
// slices the flattened ids between two offsets, gathers those rows of the
// table and reduces them (ReduceSum, ReduceMean or ReduceMax over axis 0);
// the offsets are built outside the loop from Shape, ReduceProd, Range,
// Concat and Slice, or given as an input (bags of different sizes). This finds
// that pattern in a graph, before import, so that the importer can take it as
// one table lookup with a combiner and skip the nodes that only compute the
// offsets (they depend on the run-time batch and would not import on their
// own).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_IMPORT_ONNX_EMBEDDINGBAGPATTERN_H
#define HETERPS_LIB_IMPORT_ONNX_EMBEDDINGBAGPATTERN_H

#include <onnx/onnx_pb.h>

#include <set>
#include <string>
#include <vector>

namespace mlir::heterps::onnx_import {

/// One nn.EmbeddingBag found in a graph.
struct EmbeddingBagMatch {
  /// The Loop node, by its index in the graph.
  int loop = -1;
  /// The float initializer the bags are looked up in.
  std::string table;
  /// The 2-D ids whose rows are the bags (bags of equal size), or with
  /// `offsets` the 1-D ids of all bags, concatenated.
  std::string ids;
  /// Where each bag starts in `ids` (bags given by offsets); empty for
  /// bags of equal size.
  std::string offsets;
  /// "sum", "mean" or "max".
  std::string mode;
  /// When the Loop is an EmbeddingBag that cannot be imported, why; empty
  /// otherwise.
  std::string unsupported;
};

/// The EmbeddingBag loops of `graph`, and in `skipped` the indices of the
/// nodes that only compute their offsets (read by nothing else).
std::vector<EmbeddingBagMatch> findEmbeddingBags(const onnx::GraphProto &graph,
                                                 std::set<int> &skipped);

} // namespace mlir::heterps::onnx_import

#endif // HETERPS_LIB_IMPORT_ONNX_EMBEDDINGBAGPATTERN_H
