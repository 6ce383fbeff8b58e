//===- Problem.cpp - Placement problems and profile tables ----------------===//

#include "heterps/Schedule/Problem.h"
#include "JSONReader.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace heterps::schedule;
using llvm::json::Array;
using llvm::json::Object;

static llvm::Error problemError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "invalid placement problem: " + message.str());
}

llvm::Error PlacementProblem::validate() const {
  if (cluster.resources.empty())
    return problemError("the cluster has no resource types");
  if (ops.empty())
    return problemError("there are no ops to place");
  if (batchSize < 1)
    return problemError(
        llvm::formatv("batch size {0} is not positive", batchSize));
  if (!(throughput > 0) || !std::isfinite(throughput))
    return problemError(llvm::formatv(
        "throughput target {0} samples/s is not a positive finite number",
        throughput));
  if (!(samples > 0) || !std::isfinite(samples))
    return problemError(llvm::formatv(
        "sample count {0} is not a positive finite number", samples));
  if (microBatches < 1)
    return problemError(
        llvm::formatv("micro-batch count {0} is not positive", microBatches));
  if (microBatches > batchSize)
    return problemError(
        llvm::formatv("{0} micro-batches of a batch of {1} samples: a "
                      "micro-batch needs at least one sample",
                      microBatches, batchSize));
  for (const TableInfo &table : tables)
    if (!(table.bytes >= 0) || !std::isfinite(table.bytes))
      return problemError(llvm::formatv(
          "table {0} has a negative or non-finite size", table.name));
  int numResources = static_cast<int>(cluster.resources.size());
  for (size_t l = 0; l < ops.size(); ++l) {
    const OpInfo &op = ops[l];
    for (int producer : op.operands)
      if (producer < 0 || producer >= static_cast<int>(l))
        return problemError(llvm::formatv(
            "op {0} ({1}) uses op {2}, which does not come before it", l,
            op.name, producer));
    if (op.pinned >= numResources)
      return problemError(
          llvm::formatv("op {0} ({1}) is pinned to resource type {2} of {3}", l,
                        op.name, op.pinned, numResources));
    for (double value : {op.forwardFlops, op.backwardFlops, op.forwardBytes,
                         op.backwardBytes, op.parameterBytes, op.embeddingBytes,
                         op.outputBytes, op.residentBytes})
      if (!(value >= 0) || !std::isfinite(value))
        return problemError(llvm::formatv(
            "op {0} ({1}) has a negative or non-finite cost figure", l,
            op.name));
    if (!op.seconds.empty() &&
        op.seconds.size() != static_cast<size_t>(numResources))
      return problemError(llvm::formatv(
          "op {0} ({1}) has times for {2} resource types, expected {3}", l,
          op.name, op.seconds.size(), numResources));
    for (double value : op.seconds)
      if (!(value >= 0) || !std::isfinite(value))
        return problemError(llvm::formatv(
            "op {0} ({1}) has a negative or non-finite time", l, op.name));
  }
  if (!crossingBytes.empty() && crossingBytes.size() != ops.size())
    return problemError(llvm::formatv("{0} crossing figures for {1} ops",
                                      crossingBytes.size(), ops.size()));
  for (double value : crossingBytes)
    if (!(value >= 0) || !std::isfinite(value))
      return problemError("a crossing figure is negative or non-finite");
  if (profile) {
    // A misspelled name would silently leave the roofline estimate.
    auto nearest = [](llvm::StringRef word, auto names) {
      std::string best;
      unsigned bestDistance = std::max<unsigned>(2, word.size() / 3) + 1;
      for (llvm::StringRef name : names)
        if (unsigned d = word.edit_distance(name); d < bestDistance) {
          bestDistance = d;
          best = name.str();
        }
      return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
    };
    std::vector<llvm::StringRef> opNames, typeNames;
    for (const OpInfo &op : ops)
      opNames.push_back(op.name);
    for (const ResourceType &type : cluster.resources)
      typeNames.push_back(type.name);
    for (const auto &[op, times] : profile->seconds) {
      if (!llvm::is_contained(opNames, op))
        return problemError("the profile table times op '" + op +
                            "', which the model does not have" +
                            nearest(op, opNames));
      // A type of another cluster (a table measured on a larger one) is
      // left out; one a letter or two from this cluster's is a typo.
      for (const auto &[type, seconds] : times)
        if (std::string near = nearest(type, typeNames);
            !llvm::is_contained(typeNames, type) && !near.empty())
          return problemError("the profile table times op '" + op + "' on '" +
                              type + "', which the cluster does not have" +
                              near);
    }
  }
  return llvm::Error::success();
}

llvm::Expected<ProfileTable>
heterps::schedule::parseProfileTable(llvm::StringRef text,
                                     llvm::StringRef fileName) {
  JSONReader reader(fileName);
  llvm::Expected<llvm::json::Value> root = reader.parse(text);
  if (!root)
    return root.takeError();
  const Object *top = root->getAsObject();
  if (!top)
    return reader.error("$", "a profile table is a JSON object");
  if (llvm::Error error = reader.knownKeys(*top, "$", {"batch_size", "ops"}))
    return error;
  ProfileTable table;
  if (llvm::Error error =
          reader.count(*top, "batch_size", "$", table.batchSize))
    return error;
  const Array *ops = top->getArray("ops");
  if (!ops)
    return reader.error("$.ops", "expected an array of measurements");
  for (size_t i = 0; i < ops->size(); ++i) {
    std::string path = "$.ops[" + std::to_string(i) + "]";
    const Object *entry = (*ops)[i].getAsObject();
    if (!entry)
      return reader.error(path, "expected an object");
    if (llvm::Error error =
            reader.knownKeys(*entry, path, {"op", "resource", "seconds"}))
      return error;
    std::optional<llvm::StringRef> op = entry->getString("op");
    std::optional<llvm::StringRef> resource = entry->getString("resource");
    if (!op || op->empty())
      return reader.error(path + ".op", "expected the op's name");
    if (!resource || resource->empty())
      return reader.error(path + ".resource", "expected a resource type name");
    double seconds = 0;
    if (llvm::Error error =
            reader.number(*entry, "seconds", path, seconds, false))
      return error;
    auto [it, inserted] =
        table.seconds[op->str()].try_emplace(resource->str(), seconds);
    if (!inserted)
      return reader.error(path, "a second time of op '" + op->str() + "' on '" +
                                    resource->str() + "'");
  }
  return table;
}

llvm::Expected<ProfileTable>
heterps::schedule::loadProfileTable(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readTextFile(path, "profile table");
  if (!buffer)
    return buffer.takeError();
  return parseProfileTable((*buffer)->getBuffer(), path);
}
