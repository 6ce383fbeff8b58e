//===- PlanGraph.cpp - A plan as a Graphviz graph -------------------------===//

#include "heterps/Plan/PlanGraph.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

using namespace heterps::plan;

static int64_t elementBytes(DataType dtype) {
  switch (dtype) {
  case F64:
  case I64:
  case U64:
    return 8;
  case F32:
  case I32:
  case U32:
    return 4;
  case F16:
  case BF16:
  case I16:
  case U16:
    return 2;
  case I8:
  case U8:
  case BOOL:
    return 1;
  default:
    return 0;
  }
}

int64_t heterps::plan::bytesPerSample(const TensorType &type) {
  int64_t bytes = elementBytes(type.dtype());
  for (int i = 1; i < type.dims_size(); ++i) {
    if (type.dims(i) < 0)
      return -1;
    bytes *= type.dims(i);
  }
  return bytes;
}

/// `text` as a DOT string literal's contents.
static std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20)
      continue;
    out += c;
  }
  return out;
}

/// What a reader recognises an op by: its name without the dialect, and the
/// name in its location (`loc("fc1")`, an ONNX node's name) or its file's
/// base name and line (`loc("model.mlir":12:3)`).
static std::string opLabel(const Op &op) {
  std::string name = op.name();
  if (name.rfind("heterps.", 0) == 0)
    name = name.substr(8);
  auto channel = op.attrs().find("channel");
  if (channel != op.attrs().end() && channel->second.has_i())
    name += " " + std::to_string(channel->second.i());
  const std::string &loc = op.location();
  size_t open = loc.find('"');
  size_t close = open == std::string::npos ? open : loc.find('"', open + 1);
  if (close == std::string::npos || close == open + 1)
    return name;
  std::string quoted = loc.substr(open + 1, close - open - 1);
  if (loc.compare(close + 1, 1, ":") != 0)
    return name + "\n" + quoted;
  size_t slash = quoted.rfind('/');
  if (slash != std::string::npos)
    quoted = quoted.substr(slash + 1);
  size_t lineEnd = loc.find(':', close + 2);
  return name + "\n" + quoted + ":" +
         loc.substr(close + 2, lineEnd == std::string::npos
                                   ? std::string::npos
                                   : lineEnd - close - 2);
}

static std::string formatBytes(int64_t bytes) {
  if (bytes < 0)
    return "? B/sample";
  char buffer[64];
  if (bytes < 10000)
    std::snprintf(buffer, sizeof(buffer), "%lld B/sample",
                  static_cast<long long>(bytes));
  else
    std::snprintf(buffer, sizeof(buffer), "%.1f KB/sample", bytes / 1000.0);
  return buffer;
}

std::string heterps::plan::printPlanDot(const Plan &plan) {
  // A colour per resource type, from a family per kind: blues for CPU
  // types, greens for GPU types, oranges for anything else.
  static const char *const kCPU[] = {"#c6dbef", "#9ecae1", "#6baed6",
                                     "#4292c6"};
  static const char *const kGPU[] = {"#c7e9c0", "#a1d99b", "#74c476",
                                     "#41ab5d"};
  static const char *const kOther[] = {"#fdd0a2", "#fdae6b", "#fd8d3c",
                                       "#f16913"};
  std::map<std::string, std::string> colours;
  std::map<std::string, int> usedPerKind;
  for (const Stage &stage : plan.stages()) {
    if (colours.count(stage.resource()))
      continue;
    const char *const *palette = stage.kind() == "cpu"   ? kCPU
                                 : stage.kind() == "gpu" ? kGPU
                                                         : kOther;
    colours[stage.resource()] = palette[usedPerKind[stage.kind()]++ % 4];
  }

  std::ostringstream os;
  os << "digraph plan {\n";
  os << "  graph [fontname=\"Helvetica\", fontsize=12, labelloc=t, "
        "rankdir=TB];\n";
  os << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", "
        "fontsize=10];\n";
  os << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  std::ostringstream title;
  title << "@" << plan.function() << ": " << plan.stages_size()
        << (plan.stages_size() == 1 ? " stage" : " stages");
  if (plan.micro_batches() > 1)
    title << ", " << plan.micro_batches() << " micro-batches";
  if (plan.has_prediction()) {
    char buffer[160];
    std::snprintf(buffer, sizeof(buffer),
                  "\npredicted %.0f samples/s, $%.2f per hour, $%.2f in all",
                  plan.prediction().throughput(),
                  plan.prediction().cost_per_hour(),
                  plan.prediction().cost_usd());
    title << buffer;
  }
  os << "  label=\"" << escape(title.str()) << "\";\n";

  // Where each value is produced: stage and op index.
  std::map<int, std::pair<int, int>> producer;
  // The send and recv op of each channel.
  std::map<int64_t, std::string> sends, recvs;
  for (int s = 0; s < plan.stages_size(); ++s) {
    const Stage &stage = plan.stages(s);
    os << "  subgraph cluster_stage" << s << " {\n";
    std::ostringstream label;
    label << "stage " << stage.index() << ": " << stage.resource() << " ("
          << stage.kind() << ") x" << stage.units() << ", " << stage.ops_size()
          << (stage.ops_size() == 1 ? " op" : " ops");
    if (stage.predicted_throughput() > 0) {
      char buffer[64];
      std::snprintf(buffer, sizeof(buffer), "\npredicted %.0f samples/s",
                    stage.predicted_throughput());
      label << buffer;
    }
    os << "    label=\"" << escape(label.str()) << "\";\n";
    os << "    style=\"rounded\"; color=\"#888888\";\n";
    const std::string &colour = colours[stage.resource()];
    for (int o = 0; o < stage.ops_size(); ++o) {
      const Op &op = stage.ops(o);
      std::string node = "s" + std::to_string(s) + "_" + std::to_string(o);
      os << "    " << node << " [label=\"" << escape(opLabel(op))
         << "\", fillcolor=\"" << colour << "\"];\n";
      for (int input : op.inputs()) {
        auto it = producer.find(input);
        if (it != producer.end() && it->second.first == s)
          os << "    s" << s << "_" << it->second.second << " -> " << node
             << ";\n";
      }
      for (int output : op.outputs())
        producer[output] = {s, o};
      auto channel = op.attrs().find("channel");
      if (channel != op.attrs().end() && channel->second.has_i()) {
        if (op.name() == "heterps.send")
          sends[channel->second.i()] = node;
        else if (op.name() == "heterps.recv")
          recvs[channel->second.i()] = node;
      }
    }
    os << "  }\n";
  }
  for (const Channel &channel : plan.channels()) {
    auto send = sends.find(channel.id()), recv = recvs.find(channel.id());
    if (send == sends.end() || recv == recvs.end())
      continue;
    os << "  " << send->second << " -> " << recv->second << " [label=\""
       << formatBytes(bytesPerSample(channel.type()))
       << "\", style=bold, color=\"#555555\"];\n";
  }
  os << "}\n";
  return os.str();
}
