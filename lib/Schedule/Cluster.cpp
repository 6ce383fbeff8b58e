//===- Cluster.cpp - Reading and validating cluster files -----------------===//

#include "heterps/Schedule/Cluster.h"
#include "JSONReader.h"

#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace heterps::schedule;
using llvm::json::Array;
using llvm::json::Object;

llvm::StringRef heterps::schedule::stringifyResourceKind(ResourceKind kind) {
  return kind == ResourceKind::CPU ? "cpu" : "gpu";
}

int Cluster::find(llvm::StringRef name) const {
  for (size_t i = 0; i < resources.size(); ++i)
    if (resources[i].name == name)
      return static_cast<int>(i);
  return -1;
}

std::vector<int> Cluster::ofKind(ResourceKind kind) const {
  std::vector<int> result;
  for (size_t i = 0; i < resources.size(); ++i)
    if (resources[i].kind == kind)
      result.push_back(static_cast<int>(i));
  return result;
}

/// Reads a link's bandwidth and latency from `object` at `path`.
static llvm::Expected<Link> readLink(JSONReader &reader, const Object &object,
                                     const std::string &path) {
  Link link;
  if (llvm::Error error = reader.number(object, "gbps", path, link.gbps,
                                        /*positive=*/true))
    return error;
  if (llvm::Error error = reader.number(object, "latency_us", path,
                                        link.latencyUs, /*positive=*/false))
    return error;
  return link;
}

llvm::Expected<Cluster>
heterps::schedule::parseCluster(llvm::StringRef text,
                                llvm::StringRef fileName) {
  JSONReader reader(fileName);
  llvm::Expected<llvm::json::Value> root = reader.parse(text);
  if (!root)
    return root.takeError();
  const Object *top = root->getAsObject();
  if (!top)
    return reader.error("$", "a cluster file is a JSON object");
  if (llvm::Error error = reader.knownKeys(
          *top, "$",
          {"name", "description", "resources", "links", "parameter_server"}))
    return error;

  Cluster cluster;
  if (std::optional<llvm::StringRef> name = top->getString("name"))
    cluster.name = name->str();

  const Array *resources = top->getArray("resources");
  if (!resources || resources->empty())
    return reader.error("$.resources",
                        "expected a non-empty array of resource types");
  for (size_t i = 0; i < resources->size(); ++i) {
    std::string path = "$.resources[" + std::to_string(i) + "]";
    const Object *object = (*resources)[i].getAsObject();
    if (!object)
      return reader.error(path, "expected an object");
    if (llvm::Error error = reader.knownKeys(
            *object, path,
            {"name", "kind", "peak_gflops", "memory_gbps", "memory_gb",
             "price_per_hour", "units", "op_overhead_us"}))
      return error;
    ResourceType type;
    std::optional<llvm::StringRef> name = object->getString("name");
    if (!name || name->empty())
      return reader.error(path + ".name", "expected a non-empty string");
    type.name = name->str();
    if (cluster.find(type.name) >= 0)
      return reader.error(path + ".name",
                          "resource type '" + type.name + "' is listed twice");
    std::optional<llvm::StringRef> kind = object->getString("kind");
    if (!kind || (*kind != "cpu" && *kind != "gpu"))
      return reader.error(path + ".kind", "expected \"cpu\" or \"gpu\"");
    type.kind = *kind == "cpu" ? ResourceKind::CPU : ResourceKind::GPU;
    if (llvm::Error error =
            reader.number(*object, "peak_gflops", path, type.peakGflops, true))
      return error;
    if (llvm::Error error =
            reader.number(*object, "memory_gbps", path, type.memoryGBps, true))
      return error;
    if (llvm::Error error =
            reader.number(*object, "memory_gb", path, type.memoryGB, true))
      return error;
    if (llvm::Error error = reader.number(*object, "price_per_hour", path,
                                          type.pricePerHour, true))
      return error;
    if (llvm::Error error = reader.count(*object, "units", path, type.units))
      return error;
    // Dispatching an op costs a few microseconds on a CPU thread pool and a
    // kernel launch on a GPU.
    type.opOverheadUs = type.kind == ResourceKind::CPU ? 2.0 : 6.0;
    if (object->get("op_overhead_us"))
      if (llvm::Error error = reader.number(*object, "op_overhead_us", path,
                                            type.opOverheadUs, false))
        return error;
    cluster.resources.push_back(type);
  }

  size_t numTypes = cluster.resources.size();
  std::vector<std::vector<bool>> given(numTypes,
                                       std::vector<bool>(numTypes, false));
  cluster.links.assign(numTypes, std::vector<Link>(numTypes));
  const Array *links = top->getArray("links");
  if (!links)
    return reader.error("$.links", "expected an array of links");
  for (size_t i = 0; i < links->size(); ++i) {
    std::string path = "$.links[" + std::to_string(i) + "]";
    const Object *object = (*links)[i].getAsObject();
    if (!object)
      return reader.error(path, "expected an object");
    if (llvm::Error error = reader.knownKeys(
            *object, path, {"from", "to", "gbps", "latency_us"}))
      return error;
    int ends[2];
    const char *keys[2] = {"from", "to"};
    for (int e = 0; e < 2; ++e) {
      std::optional<llvm::StringRef> name = object->getString(keys[e]);
      ends[e] = name ? cluster.find(*name) : -1;
      if (ends[e] < 0)
        return reader.error(
            path + "." + keys[e],
            "expected the name of a resource type" +
                (name ? ", got '" + name->str() + "'" : std::string()));
    }
    llvm::Expected<Link> link = readLink(reader, *object, path);
    if (!link)
      return link.takeError();
    if (given[ends[0]][ends[1]])
      return reader.error(path, "a second link from '" +
                                    cluster.resources[ends[0]].name + "' to '" +
                                    cluster.resources[ends[1]].name + "'");
    cluster.links[ends[0]][ends[1]] = *link;
    given[ends[0]][ends[1]] = true;
  }
  // A link given in one direction serves both.
  for (size_t a = 0; a < numTypes; ++a)
    for (size_t b = 0; b < numTypes; ++b) {
      if (given[a][b])
        continue;
      if (!given[b][a])
        return reader.error(
            "$.links", "no link between '" + cluster.resources[a].name +
                           "' and '" + cluster.resources[b].name +
                           "' (links are symmetric unless both directions "
                           "are given; a type also needs a link to itself)");
      cluster.links[a][b] = cluster.links[b][a];
    }

  cluster.psLinks.assign(numTypes, Link());
  std::vector<bool> psGiven(numTypes, false);
  const Object *server = top->getObject("parameter_server");
  if (server)
    if (llvm::Error error =
            reader.knownKeys(*server, "$.parameter_server", {"links"}))
      return error;
  const Array *psLinks = server ? server->getArray("links") : nullptr;
  if (!psLinks)
    return reader.error("$.parameter_server.links",
                        "expected an array of links to the parameter server");
  for (size_t i = 0; i < psLinks->size(); ++i) {
    std::string path = "$.parameter_server.links[" + std::to_string(i) + "]";
    const Object *object = (*psLinks)[i].getAsObject();
    if (!object)
      return reader.error(path, "expected an object");
    if (llvm::Error error =
            reader.knownKeys(*object, path, {"from", "gbps", "latency_us"}))
      return error;
    std::optional<llvm::StringRef> name = object->getString("from");
    int from = name ? cluster.find(*name) : -1;
    if (from < 0)
      return reader.error(path + ".from",
                          "expected the name of a resource type");
    if (psGiven[from])
      return reader.error(path + ".from", "a second link from '" + name->str() +
                                              "' to the parameter server");
    llvm::Expected<Link> link = readLink(reader, *object, path);
    if (!link)
      return link.takeError();
    cluster.psLinks[from] = *link;
    psGiven[from] = true;
  }
  for (size_t a = 0; a < numTypes; ++a)
    if (!psGiven[a])
      return reader.error("$.parameter_server.links",
                          "no link from '" + cluster.resources[a].name +
                              "' to the parameter server");
  return cluster;
}

llvm::Expected<Cluster> heterps::schedule::loadCluster(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readTextFile(path, "cluster file");
  if (!buffer)
    return buffer.takeError();
  return parseCluster((*buffer)->getBuffer(), path);
}
