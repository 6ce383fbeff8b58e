//===- PlanTypes.cpp - Plan types as runtime types ------------------------===//

#include "heterps/Runtime/PlanTypes.h"

#include "heterps/Plan/PlanFile.h"
#include "heterps/Runtime/Error.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

using namespace heterps;
using namespace heterps::runtime;

DType runtime::fromPlanType(plan::DataType type) {
  switch (type) {
  case plan::F32:
    return DType::F32;
  case plan::F64:
    return DType::F64;
  case plan::F16:
    return DType::F16;
  case plan::BF16:
    return DType::BF16;
  case plan::I8:
    return DType::I8;
  case plan::I16:
    return DType::I16;
  case plan::I32:
    return DType::I32;
  case plan::I64:
    return DType::I64;
  case plan::U8:
    return DType::U8;
  case plan::U16:
    return DType::U16;
  case plan::U32:
    return DType::U32;
  case plan::U64:
    return DType::U64;
  case plan::BOOL:
    return DType::Bool;
  default:
    return DType::Invalid;
  }
}

plan::DataType runtime::toPlanType(DType type) {
  switch (type) {
  case DType::F32:
    return plan::F32;
  case DType::F64:
    return plan::F64;
  case DType::F16:
    return plan::F16;
  case DType::BF16:
    return plan::BF16;
  case DType::I8:
    return plan::I8;
  case DType::I16:
    return plan::I16;
  case DType::I32:
    return plan::I32;
  case DType::I64:
    return plan::I64;
  case DType::U8:
    return plan::U8;
  case DType::U16:
    return plan::U16;
  case DType::U32:
    return plan::U32;
  case DType::U64:
    return plan::U64;
  case DType::Bool:
    return plan::BOOL;
  case DType::Invalid:
    break;
  }
  return plan::DT_INVALID;
}

TensorType runtime::fromPlanType(const plan::TensorType &type) {
  TensorType t;
  t.dtype = fromPlanType(type.dtype());
  t.dims.assign(type.dims().begin(), type.dims().end());
  return t;
}

Tensor runtime::viewOfData(const plan::TensorData &data,
                           const std::string &what) {
  TensorType type = fromPlanType(data.type());
  if (type.dtype == DType::Invalid)
    fail(what, ": tensor of unknown element type ", data.type().dtype());
  for (int64_t d : type.dims)
    if (d < 0)
      fail(what, ": tensor data with a dynamic dimension");
  Tensor view = Tensor::view(type.dtype, type.dims,
                             const_cast<char *>(data.raw().data()));
  if (data.raw().size() != view.byteSize())
    fail(what, ": ", view.typeString(), " needs ", view.byteSize(),
         " bytes, the plan holds ", data.raw().size());
  if (reinterpret_cast<uintptr_t>(data.raw().data()) %
          std::max<size_t>(dtypeSize(type.dtype), 1) !=
      0)
    fail(what, ": the plan's bytes are not aligned for ",
         dtypeName(type.dtype));
  return view;
}

Tensor runtime::tensorFromData(const plan::TensorData &data,
                               const std::string &what) {
  return viewOfData(data, what).clone();
}

void runtime::tensorToData(const Tensor &tensor, plan::TensorData &data) {
  data.mutable_type()->set_dtype(toPlanType(tensor.dtype()));
  data.mutable_type()->clear_dims();
  for (int64_t d : tensor.shape())
    data.mutable_type()->add_dims(d);
  data.set_raw(tensor.data(), tensor.byteSize());
}

plan::Plan runtime::loadPlan(const std::string &path) {
  plan::Plan p;
  std::string error;
  if (!plan::readPlanFile(path, p, error))
    fail(error);
  return p;
}
