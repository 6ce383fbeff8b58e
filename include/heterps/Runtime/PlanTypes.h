//===- PlanTypes.h - Plan types as runtime types ----------------*- C++ -*-===//

#ifndef HETERPS_RUNTIME_PLANTYPES_H
#define HETERPS_RUNTIME_PLANTYPES_H

#include "heterps/Runtime/OpInfo.h"
#include "heterps/plan.pb.h"

namespace heterps::runtime {

DType fromPlanType(plan::DataType type);
plan::DataType toPlanType(DType type);
TensorType fromPlanType(const plan::TensorType &type);
/// A tensor owning a copy of a TensorData's bytes; throws when the byte
/// count does not match the type.
Tensor tensorFromData(const plan::TensorData &data, const std::string &what);
/// The same checks, and a view of the TensorData's bytes instead of a copy
/// (valid while the message lives).
Tensor viewOfData(const plan::TensorData &data, const std::string &what);
void tensorToData(const Tensor &tensor, plan::TensorData &data);

/// Reads a plan file; throws RuntimeError with the reader's message.
plan::Plan loadPlan(const std::string &path);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_PLANTYPES_H
