//===- OpInfo.cpp - An op of a plan, as kernels see it --------------------===//

#include "heterps/Runtime/OpInfo.h"

#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/plan.pb.h"

using namespace heterps;
using namespace heterps::runtime;

OpInfo::OpInfo(const plan::Op &op, std::vector<TensorType> inputTypes,
               std::vector<TensorType> outputTypes)
    : op(&op), inputs(std::move(inputTypes)), outputs(std::move(outputTypes)) {}

const std::string &OpInfo::name() const { return op->name(); }
const std::string &OpInfo::location() const { return op->location(); }

std::string OpInfo::describe() const {
  if (op->location().empty())
    return op->name();
  return op->name() + " at " + op->location();
}

bool OpInfo::has(const std::string &key) const {
  return op->attrs().count(key) != 0;
}

static const plan::Attribute *lookup(const plan::Op &op,
                                     const std::string &key) {
  auto it = op.attrs().find(key);
  return it == op.attrs().end() ? nullptr : &it->second;
}

static const char *kindName(const plan::Attribute &a) {
  switch (a.kind_case()) {
  case plan::Attribute::kI:
    return "an integer";
  case plan::Attribute::kF:
    return "a float";
  case plan::Attribute::kS:
    return "a string";
  case plan::Attribute::kB:
    return "a bool";
  case plan::Attribute::kInts:
    return "an integer array";
  case plan::Attribute::kFloats:
    return "a float array";
  case plan::Attribute::kTensor:
    return "a tensor";
  default:
    return "empty";
  }
}

[[noreturn]] static void wrongKind(const OpInfo &info, const std::string &key,
                                   const plan::Attribute &a,
                                   const char *expected) {
  fail(info.describe(), ": attribute '", key, "' is ", kindName(a),
       ", expected ", expected);
}

int64_t OpInfo::getInt(const std::string &key, int64_t dflt) const {
  const plan::Attribute *a = lookup(*op, key);
  if (!a)
    return dflt;
  if (a->kind_case() == plan::Attribute::kI)
    return a->i();
  if (a->kind_case() == plan::Attribute::kB)
    return a->b();
  wrongKind(*this, key, *a, "an integer");
}

int64_t OpInfo::getInt(const std::string &key) const {
  if (!has(key))
    fail(describe(), ": missing integer attribute '", key, "'");
  return getInt(key, 0);
}

double OpInfo::getFloat(const std::string &key, double dflt) const {
  const plan::Attribute *a = lookup(*op, key);
  if (!a)
    return dflt;
  if (a->kind_case() == plan::Attribute::kF)
    return a->f();
  if (a->kind_case() == plan::Attribute::kI)
    return static_cast<double>(a->i());
  wrongKind(*this, key, *a, "a float");
}

double OpInfo::getFloat(const std::string &key) const {
  if (!has(key))
    fail(describe(), ": missing float attribute '", key, "'");
  return getFloat(key, 0);
}

bool OpInfo::getBool(const std::string &key, bool dflt) const {
  const plan::Attribute *a = lookup(*op, key);
  if (!a)
    return dflt;
  if (a->kind_case() == plan::Attribute::kB)
    return a->b();
  if (a->kind_case() == plan::Attribute::kI)
    return a->i() != 0;
  wrongKind(*this, key, *a, "a bool");
}

std::string OpInfo::getString(const std::string &key,
                              const std::string &dflt) const {
  const plan::Attribute *a = lookup(*op, key);
  if (!a)
    return dflt;
  if (a->kind_case() == plan::Attribute::kS)
    return a->s();
  wrongKind(*this, key, *a, "a string");
}

std::string OpInfo::getString(const std::string &key) const {
  if (!has(key))
    fail(describe(), ": missing string attribute '", key, "'");
  return getString(key, "");
}

std::vector<int64_t> OpInfo::getInts(const std::string &key,
                                     std::vector<int64_t> dflt) const {
  const plan::Attribute *a = lookup(*op, key);
  if (!a)
    return dflt;
  if (a->kind_case() == plan::Attribute::kInts)
    return {a->ints().values().begin(), a->ints().values().end()};
  wrongKind(*this, key, *a, "an integer array");
}

std::vector<double> OpInfo::getFloats(const std::string &key,
                                      std::vector<double> dflt) const {
  const plan::Attribute *a = lookup(*op, key);
  if (!a)
    return dflt;
  if (a->kind_case() == plan::Attribute::kFloats)
    return {a->floats().values().begin(), a->floats().values().end()};
  wrongKind(*this, key, *a, "a float array");
}

Tensor OpInfo::getTensor(const std::string &key) const {
  const plan::Attribute *a = lookup(*op, key);
  if (!a)
    fail(describe(), ": missing tensor attribute '", key, "'");
  if (a->kind_case() != plan::Attribute::kTensor)
    wrongKind(*this, key, *a, "a tensor");
  return tensorFromData(a->tensor(), describe());
}
