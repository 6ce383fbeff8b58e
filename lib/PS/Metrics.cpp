//===- Metrics.cpp - The PS servers' metrics as one exposition ------------===//

#include "heterps/PS/Metrics.h"

#include <map>
#include <sstream>

using namespace heterps;

namespace {
struct Family {
  std::string help, type;
  std::vector<std::string> samples;
};

/// "name{a="b"} 1" -> "name{shard="i",a="b"} 1"; "name 1" ->
/// "name{shard="i"} 1".
std::string withShard(const std::string &sample, size_t shard) {
  std::string label = "shard=\"" + std::to_string(shard) + "\"";
  size_t nameEnd = sample.find_first_of("{ ");
  if (nameEnd == std::string::npos)
    return sample;
  if (sample[nameEnd] == '{')
    return sample.substr(0, nameEnd + 1) + label +
           (sample.compare(nameEnd + 1, 1, "}") == 0 ? "" : ",") +
           sample.substr(nameEnd + 1);
  return sample.substr(0, nameEnd) + "{" + label + "}" + sample.substr(nameEnd);
}

/// The family a HELP or TYPE comment names ("" for other comments).
std::string familyOfComment(const std::string &line, std::string *rest) {
  for (const char *kind : {"# HELP ", "# TYPE "}) {
    std::string prefix = kind;
    if (line.compare(0, prefix.size(), prefix) != 0)
      continue;
    size_t end = line.find(' ', prefix.size());
    *rest = line;
    return line.substr(prefix.size(), end == std::string::npos
                                          ? std::string::npos
                                          : end - prefix.size());
  }
  return "";
}
} // namespace

std::string ps::mergeMetrics(const std::vector<std::string> &expositions) {
  std::vector<std::string> order;
  std::map<std::string, Family> families;
  auto family = [&](const std::string &name) -> Family & {
    auto [it, added] = families.try_emplace(name);
    if (added)
      order.push_back(name);
    return it->second;
  };
  for (size_t shard = 0; shard < expositions.size(); ++shard) {
    std::istringstream in(expositions[shard]);
    std::string line, current;
    while (std::getline(in, line)) {
      if (line.empty())
        continue;
      if (line[0] == '#') {
        std::string comment;
        std::string name = familyOfComment(line, &comment);
        if (name.empty())
          continue;
        current = name;
        Family &f = family(name);
        std::string &slot = line[2] == 'H' ? f.help : f.type;
        if (slot.empty())
          slot = comment;
        continue;
      }
      if (current.empty())
        current = line.substr(0, line.find_first_of("{ "));
      family(current).samples.push_back(withShard(line, shard));
    }
  }
  std::string out;
  for (const std::string &name : order) {
    const Family &f = families[name];
    for (const std::string *line : {&f.help, &f.type})
      if (!line->empty())
        out += *line + "\n";
    for (const std::string &sample : f.samples)
      out += sample + "\n";
  }
  return out;
}
