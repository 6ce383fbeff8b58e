//===- EmbeddingBagPattern.cpp - nn.EmbeddingBag in an ONNX graph ---------===//
//
// The shape PyTorch gives a bag loop, for ids X of shape [B, L] and mode m:
//
//   F  = Reshape(X, [-1])
//   R  = Range(0, Cast(ReduceProd(Shape(X))), Cast(Gather(Shape(X), 1)))
//   S  = Concat(R, Unsqueeze(Gather(Shape(F), 0)))      the bag starts + end
//   E  = Slice(S, [1], [big], [0])                      the bag ends
//   Y  = Loop(Gather(Shape(E), 0), cond) {
//          i -> Reduce<m>(Gather(table, Slice(F, [S[i]], [E[i]], [0])),
//                         axes [0], keepdims 0)
//        }
//
// so bag i is row i of X. With bags given by offsets (`bag(ids, offsets)`),
// F is the 1-D ids themselves and the offsets input takes R's place.
//
//===----------------------------------------------------------------------===//

#include "EmbeddingBagPattern.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

using namespace mlir::heterps::onnx_import;

namespace {

const onnx::AttributeProto *attrOf(const onnx::NodeProto &node,
                                   const std::string &name) {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t intAttrOf(const onnx::NodeProto &node, const std::string &name,
                  int64_t fallback) {
  const onnx::AttributeProto *a = attrOf(node, name);
  return a ? a->i() : fallback;
}

/// The integers of a small INT64 or INT32 tensor; nullopt for anything
/// else (other types, more than 64 elements, a short raw buffer).
std::optional<std::vector<int64_t>> intsOf(const onnx::TensorProto &t) {
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > 64)
      return std::nullopt;
    count *= d;
    if (count > 64)
      return std::nullopt;
  }
  std::vector<int64_t> values;
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (t.has_raw_data()) {
      if (t.raw_data().size() != static_cast<size_t>(count) * 8)
        return std::nullopt;
      values.resize(count);
      std::memcpy(values.data(), t.raw_data().data(), count * 8);
    } else {
      values.assign(t.int64_data().begin(), t.int64_data().end());
    }
  } else if (t.data_type() == onnx::TensorProto::INT32) {
    if (t.has_raw_data()) {
      if (t.raw_data().size() != static_cast<size_t>(count) * 4)
        return std::nullopt;
      std::vector<int32_t> narrow(count);
      std::memcpy(narrow.data(), t.raw_data().data(), count * 4);
      values.assign(narrow.begin(), narrow.end());
    } else {
      values.assign(t.int32_data().begin(), t.int32_data().end());
    }
  } else {
    return std::nullopt;
  }
  if (static_cast<int64_t>(values.size()) != count)
    return std::nullopt;
  return values;
}

/// The nodes of one graph by the names they produce, and its initializers.
class GraphIndex {
public:
  GraphIndex(const onnx::GraphProto &graph, const GraphIndex *outer = nullptr)
      : graph(graph), outer(outer) {
    for (int i = 0; i < graph.node_size(); ++i)
      for (const std::string &out : graph.node(i).output())
        producers[out] = i;
    for (const onnx::TensorProto &t : graph.initializer())
      initializers[t.name()] = &t;
  }

  /// The node of this graph that produces `name`, if any.
  const onnx::NodeProto *producer(const std::string &name,
                                  const std::string &opType = "") const {
    auto it = producers.find(name);
    if (it == producers.end())
      return nullptr;
    const onnx::NodeProto &node = graph.node(it->second);
    return opType.empty() || node.op_type() == opType ? &node : nullptr;
  }
  int producerIndex(const std::string &name) const {
    auto it = producers.find(name);
    return it == producers.end() ? -1 : it->second;
  }
  /// An initializer of this graph or an enclosing one.
  const onnx::TensorProto *initializer(const std::string &name) const {
    auto it = initializers.find(name);
    if (it != initializers.end())
      return it->second;
    return outer ? outer->initializer(name) : nullptr;
  }
  /// The value of an integer constant (an initializer or a Constant node,
  /// here or in an enclosing graph).
  std::optional<std::vector<int64_t>> constant(const std::string &name) const {
    if (const onnx::NodeProto *c = producer(name, "Constant")) {
      const onnx::AttributeProto *value = attrOf(*c, "value");
      return value && value->has_t() ? intsOf(value->t()) : std::nullopt;
    }
    if (producers.count(name))
      return std::nullopt;
    if (auto it = initializers.find(name); it != initializers.end())
      return intsOf(*it->second);
    return outer ? outer->constant(name) : std::nullopt;
  }
  bool isConstant(const std::string &name, std::vector<int64_t> values) const {
    std::optional<std::vector<int64_t>> c = constant(name);
    return c && *c == values;
  }

  const onnx::GraphProto &graph;

private:
  const GraphIndex *outer;
  std::map<std::string, int> producers;
  std::map<std::string, const onnx::TensorProto *> initializers;
};

/// `name` with the Casts and Unsqueezes before it stepped over.
std::string throughCasts(const GraphIndex &g, std::string name) {
  for (;;) {
    const onnx::NodeProto *n = g.producer(name);
    if (!n || n->input_size() < 1 ||
        (n->op_type() != "Cast" && n->op_type() != "Unsqueeze"))
      return name;
    name = n->input(0);
  }
}

/// Whether `name` is Gather(Shape(of), [index]) or Gather(Shape(of), index).
bool isShapeDim(const GraphIndex &g, const std::string &name,
                const std::string &of, int64_t index) {
  const onnx::NodeProto *gather = g.producer(throughCasts(g, name), "Gather");
  if (!gather || gather->input_size() != 2 ||
      intAttrOf(*gather, "axis", 0) != 0)
    return false;
  const onnx::NodeProto *shape = g.producer(gather->input(0), "Shape");
  std::optional<std::vector<int64_t>> at = g.constant(gather->input(1));
  return shape && shape->input_size() == 1 && shape->input(0) == of &&
         !attrOf(*shape, "start") && !attrOf(*shape, "end") && at &&
         at->size() == 1 && (*at)[0] == index;
}

/// The body of a bag loop: the reduction's mode, the table, the flattened
/// ids F and the names S and E of the bag starts and ends.
struct BagBody {
  std::string mode, table, flat, starts, ends;
};

/// Whether `name`, in the body, is Unsqueeze(Gather(outer, iteration)) (or
/// the Gather alone); the outer name then.
std::optional<std::string> perBag(const GraphIndex &body,
                                  const std::string &name,
                                  const std::string &iteration) {
  std::string at = name;
  if (const onnx::NodeProto *u = body.producer(at, "Unsqueeze");
      u && u->input_size() >= 1)
    at = u->input(0);
  const onnx::NodeProto *gather = body.producer(at, "Gather");
  if (!gather || gather->input_size() != 2 || gather->input(1) != iteration ||
      intAttrOf(*gather, "axis", 0) != 0 || body.producer(gather->input(0)))
    return std::nullopt;
  return gather->input(0);
}

std::optional<BagBody> matchBody(const GraphIndex &body,
                                 const onnx::NodeProto &loop) {
  const onnx::GraphProto &g = body.graph;
  // Inputs: the iteration number and the condition, nothing carried; the
  // outputs: the condition and one scanned value.
  if (loop.input_size() != 2 || loop.output_size() != 1 ||
      g.input_size() != 2 || g.output_size() != 2)
    return std::nullopt;
  const std::string &iteration = g.input(0).name();
  const onnx::NodeProto *reduce = body.producer(g.output(1).name());
  if (!reduce)
    return std::nullopt;
  BagBody bag;
  const std::string &op = reduce->op_type();
  bag.mode = op == "ReduceSum"    ? "sum"
             : op == "ReduceMean" ? "mean"
             : op == "ReduceMax"  ? "max"
                                  : "";
  if (bag.mode.empty() || intAttrOf(*reduce, "keepdims", 1) != 0)
    return std::nullopt;
  std::optional<std::vector<int64_t>> axes;
  if (reduce->input_size() > 1)
    axes = body.constant(reduce->input(1));
  else if (const onnx::AttributeProto *a = attrOf(*reduce, "axes"))
    axes = std::vector<int64_t>(a->ints().begin(), a->ints().end());
  if (!axes || *axes != std::vector<int64_t>{0})
    return std::nullopt;
  const onnx::NodeProto *rows = body.producer(reduce->input(0), "Gather");
  if (!rows || rows->input_size() != 2 || intAttrOf(*rows, "axis", 0) != 0)
    return std::nullopt;
  bag.table = rows->input(0);
  const onnx::TensorProto *table = body.initializer(bag.table);
  if (!table || table->dims_size() != 2 ||
      table->data_type() != onnx::TensorProto::FLOAT)
    return std::nullopt;
  const onnx::NodeProto *slice = body.producer(rows->input(1), "Slice");
  if (!slice || slice->input_size() < 3 || body.producer(slice->input(0)))
    return std::nullopt;
  if (slice->input_size() > 3 && !body.isConstant(slice->input(3), {0}))
    return std::nullopt;
  if (slice->input_size() > 4 && !body.isConstant(slice->input(4), {1}))
    return std::nullopt;
  std::optional<std::string> starts = perBag(body, slice->input(1), iteration),
                             ends = perBag(body, slice->input(2), iteration);
  if (!starts || !ends)
    return std::nullopt;
  bag.flat = slice->input(0);
  bag.starts = *starts;
  bag.ends = *ends;
  return bag;
}

/// Collects into `nodes` the producers of `name` and of their inputs, up to
/// (not including) `stops` and the graph's inputs and initializers.
void collectProducers(const GraphIndex &g, const std::string &name,
                      const std::set<std::string> &stops,
                      std::set<int> &nodes) {
  std::vector<std::string> work{name};
  while (!work.empty()) {
    std::string next = work.back();
    work.pop_back();
    if (stops.count(next) || next.empty())
      continue;
    int index = g.producerIndex(next);
    if (index < 0 || !nodes.insert(index).second)
      continue;
    for (const std::string &in : g.graph.node(index).input())
      work.push_back(in);
  }
}

} // namespace

std::vector<EmbeddingBagMatch>
mlir::heterps::onnx_import::findEmbeddingBags(const onnx::GraphProto &graph,
                                              std::set<int> &skipped) {
  // Most graphs have no Loop: they need no index of their names.
  if (std::none_of(
          graph.node().begin(), graph.node().end(),
          [](const onnx::NodeProto &n) { return n.op_type() == "Loop"; }))
    return {};
  GraphIndex outer(graph);
  std::vector<EmbeddingBagMatch> matches;
  std::set<int> helpers;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &loop = graph.node(i);
    const onnx::AttributeProto *bodyAttr = attrOf(loop, "body");
    if (loop.op_type() != "Loop" || !bodyAttr || !bodyAttr->has_g())
      continue;
    GraphIndex body(bodyAttr->g(), &outer);
    std::optional<BagBody> bag = matchBody(body, loop);
    if (!bag)
      continue;
    EmbeddingBagMatch match;
    match.loop = i;
    match.table = bag->table;
    match.mode = bag->mode;
    // The bag starts S = Concat(R or offsets, [len(F)]) and ends E = S[1:].
    const onnx::NodeProto *ends = outer.producer(bag->ends, "Slice");
    const onnx::NodeProto *starts = outer.producer(bag->starts, "Concat");
    bool bounds =
        ends && ends->input_size() >= 4 && ends->input(0) == bag->starts &&
        outer.isConstant(ends->input(1), {1}) &&
        outer.isConstant(ends->input(3), {0}) && starts &&
        starts->input_size() == 2 && intAttrOf(*starts, "axis", 0) == 0 &&
        isShapeDim(outer, starts->input(1), bag->flat, 0);
    const onnx::NodeProto *range =
        bounds ? outer.producer(starts->input(0), "Range") : nullptr;
    if (range && range->input_size() != 3)
      range = nullptr;
    if (bounds && !range) {
      // Bags given by offsets: the flattened ids are the ids.
      match.ids = bag->flat;
      match.offsets = starts->input(0);
      std::set<std::string> stops{match.ids, match.offsets};
      collectProducers(outer, loop.input(0), stops, helpers);
      collectProducers(outer, bag->ends, stops, helpers);
      matches.push_back(match);
      continue;
    }
    // Bags of equal size: the rows of X.
    const onnx::NodeProto *reshape = outer.producer(bag->flat, "Reshape");
    if (reshape && reshape->input_size() != 2)
      reshape = nullptr;
    std::string ids = reshape ? reshape->input(0) : std::string();
    bool fixed = bounds && reshape &&
                 outer.isConstant(reshape->input(1), {-1}) && range &&
                 outer.isConstant(throughCasts(outer, range->input(0)), {0}) &&
                 isShapeDim(outer, range->input(2), ids, 1);
    if (fixed) {
      const onnx::NodeProto *count =
          outer.producer(throughCasts(outer, range->input(1)), "ReduceProd");
      const onnx::NodeProto *shape =
          count && count->input_size() >= 1
              ? outer.producer(count->input(0), "Shape")
              : nullptr;
      fixed = shape && shape->input_size() == 1 && shape->input(0) == ids;
    }
    if (!fixed) {
      match.unsupported =
          "nn.EmbeddingBag whose bags are neither the rows of a 2-D ids "
          "input nor given by an offsets input is not supported";
      // Its offsets are not imported either, so that the loop's error is
      // the one reported.
      collectProducers(outer, loop.input(0), {}, helpers);
      collectProducers(outer, bag->ends, {}, helpers);
      matches.push_back(match);
      continue;
    }
    match.ids = ids;
    // Everything that computes the offsets, the trip count and the
    // flattened ids from X.
    collectProducers(outer, loop.input(0), {ids}, helpers);
    collectProducers(outer, bag->ends, {ids}, helpers);
    collectProducers(outer, bag->flat, {ids}, helpers);
    matches.push_back(match);
  }
  // A helper whose result something else reads is imported as usual.
  std::set<int> loops;
  for (const EmbeddingBagMatch &m : matches)
    loops.insert(m.loop);
  for (int helper : helpers) {
    bool private_ = true;
    for (const std::string &out : graph.node(helper).output()) {
      for (int j = 0; j < graph.node_size() && private_; ++j) {
        if (helpers.count(j) || loops.count(j))
          continue;
        for (const std::string &in : graph.node(j).input())
          private_ &= in != out;
      }
      for (const onnx::ValueInfoProto &o : graph.output())
        private_ &= o.name() != out;
    }
    if (private_)
      skipped.insert(helper);
  }
  return matches;
}
