//===- OpInfo.h - An op of a plan, as kernels see it ------------*- C++ -*-===//
//
// Kernels read their attributes through OpInfo, so they do not depend on the
// plan's protobuf classes. Every accessor that finds an attribute of the
// wrong kind throws a RuntimeError naming the op, its location and the key.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_OPINFO_H
#define HETERPS_RUNTIME_OPINFO_H

#include "heterps/Runtime/Optimizer.h"
#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace heterps::plan {
class Op;
} // namespace heterps::plan

namespace heterps::runtime {

/// A static tensor type from the plan: -1 is a dynamic dimension.
struct TensorType {
  DType dtype = DType::Invalid;
  Shape dims;
};

class OpInfo {
public:
  OpInfo(const plan::Op &op, std::vector<TensorType> inputTypes,
         std::vector<TensorType> outputTypes);

  const plan::Op &planOp() const { return *op; }
  const std::string &name() const;
  const std::string &location() const;
  /// "heterps.gemm at loc(...)", for messages.
  std::string describe() const;

  const std::vector<TensorType> &inputTypes() const { return inputs; }
  const std::vector<TensorType> &outputTypes() const { return outputs; }
  size_t numInputs() const { return inputs.size(); }
  size_t numOutputs() const { return outputs.size(); }

  bool has(const std::string &key) const;
  int64_t getInt(const std::string &key, int64_t dflt) const;
  int64_t getInt(const std::string &key) const;
  double getFloat(const std::string &key, double dflt) const;
  double getFloat(const std::string &key) const;
  bool getBool(const std::string &key, bool dflt) const;
  std::string getString(const std::string &key, const std::string &dflt) const;
  std::string getString(const std::string &key) const;
  std::vector<int64_t> getInts(const std::string &key,
                               std::vector<int64_t> dflt = {}) const;
  std::vector<double> getFloats(const std::string &key,
                                std::vector<double> dflt = {}) const;
  /// A tensor-valued attribute (heterps.constant's value).
  Tensor getTensor(const std::string &key) const;

private:
  const plan::Op *op;
  std::vector<TensorType> inputs, outputs;
};

/// The optimizer a heterps.update_param op applies (its kind and
/// hyper-parameters); throws naming the op for an unknown kind.
OptimizerConfig updateOptimizerOf(const OpInfo &op);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_OPINFO_H
