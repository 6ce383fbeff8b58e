//===- Profile.cpp - Measured op times as a scheduler profile table -------===//

#include "heterps/Runtime/Profile.h"

#include "TextOutput.h"

#include "heterps/Runtime/Error.h"

#include <cstdio>
#include <map>
#include <set>

using namespace heterps;
using namespace heterps::runtime;

std::string runtime::opNameFromLocation(const std::string &location) {
  const std::string prefix = "loc(\"";
  if (location.compare(0, prefix.size(), prefix) != 0)
    return "";
  std::string name;
  size_t i = prefix.size();
  for (; i < location.size() && location[i] != '"'; ++i) {
    if (location[i] != '\\') {
      name.push_back(location[i]);
      continue;
    }
    // MLIR escapes a byte as \XX (hex) and a backslash as \\.
    if (i + 1 < location.size() && location[i + 1] == '\\') {
      name.push_back('\\');
      ++i;
    } else if (i + 2 < location.size()) {
      name.push_back(
          static_cast<char>(std::stoi(location.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    }
  }
  // A name location goes on with ")" or its child "("; a file location
  // ("file":line:col) with ":".
  if (i + 1 >= location.size() ||
      (location[i + 1] != ')' && location[i + 1] != '('))
    return "";
  return name;
}

namespace {

int64_t layerOf(const plan::Op &op) {
  auto it = op.attrs().find("heterps.layer");
  return it == op.attrs().end() ? -1 : it->second.i();
}

} // namespace

ProfileSummary runtime::writeProfileTable(const std::string &path,
                                          const plan::Plan &plan,
                                          const OpTimes &times, int64_t steps,
                                          int64_t batchSize,
                                          const ProfileOptions &options) {
  if (steps <= 0)
    fail("--profile: no training step was profiled");
  // Every op's layer leader: its layer's first op (the forward op), or
  // itself. A load or constant whose results only one other layer uses
  // belongs to that layer, as in the scheduler's problem.
  std::map<int64_t, const plan::Op *> leaderOfLayer;
  std::map<const plan::Op *, int> stageOf;
  std::map<int, std::set<const plan::Op *>> usersOfValue;
  for (const plan::Stage &stage : plan.stages())
    for (const plan::Op &op : stage.ops()) {
      stageOf[&op] = stage.index();
      int64_t layer = layerOf(op);
      if (layer >= 0)
        leaderOfLayer.try_emplace(layer, &op);
      for (int id : op.inputs())
        usersOfValue[id].insert(&op);
    }
  auto directLeader = [&](const plan::Op &op) {
    int64_t layer = layerOf(op);
    return layer >= 0 ? leaderOfLayer.at(layer) : &op;
  };
  std::map<const plan::Op *, const plan::Op *> leaderOf;
  for (const plan::Stage &stage : plan.stages())
    for (const plan::Op &op : stage.ops()) {
      const plan::Op *leader = directLeader(op);
      bool source = leader->name() == "heterps.load_param" ||
                    leader->name() == "heterps.constant";
      if (source) {
        const plan::Op *owner = nullptr;
        bool single = true;
        for (int id : leader->outputs())
          for (const plan::Op *user : usersOfValue[id]) {
            const plan::Op *userLeader = directLeader(*user);
            single &= !owner || owner == userLeader;
            owner = userLeader;
          }
        if (owner && single)
          leader = owner;
      }
      leaderOf[&op] = leader;
    }

  // Seconds per (name, resource); a name that two layers share is
  // ambiguous to the scheduler and left out.
  std::map<std::pair<std::string, std::string>, double> seconds;
  std::map<std::string, std::set<const plan::Op *>> leadersNamed;
  ProfileSummary summary;
  for (const auto &[op, time] : times) {
    const plan::Op *leader = leaderOf.count(op) ? leaderOf[op] : op;
    std::string name = opNameFromLocation(leader->location());
    int stage = stageOf[leader];
    bool foreign = options.resource.empty() &&
                   stage < static_cast<int>(options.foreignStages.size()) &&
                   options.foreignStages[stage];
    if (name.empty() || foreign) {
      ++summary.leftOutOps;
      summary.leftOutSeconds += time / steps;
      continue;
    }
    leadersNamed[name].insert(leader);
    std::string resource = options.resource.empty()
                               ? plan.stages(stage).resource()
                               : options.resource;
    seconds[{name, resource}] += time / steps;
  }

  std::string text =
      "{\"batch_size\": " + std::to_string(batchSize) + ",\n \"ops\": [";
  for (const auto &[key, time] : seconds) {
    if (leadersNamed[key.first].size() > 1) {
      summary.leftOutOps += leadersNamed[key.first].size();
      summary.leftOutSeconds += time;
      continue;
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.9g", time);
    text += std::string(summary.entries ? ",\n  " : "\n  ") +
            "{\"op\": " + jsonString(key.first) +
            ", \"resource\": " + jsonString(key.second) +
            ", \"seconds\": " + buf + "}";
    ++summary.entries;
  }
  text += "]}\n";

  writeTextFileAtomically(path, text, "profile");
  return summary;
}
