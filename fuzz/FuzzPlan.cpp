//===- FuzzPlan.cpp - Plan files, from bytes to a step ----------*- C++ -*-===//
//
// The input is a plan file. It is read and verified as heterps-run reads
// it; a plan that passes must then build a Program against the embedded
// PS and run one inference pass (and, for a training plan, one training
// step) on a batch of two rows, or refuse with a RuntimeError. The runtime
// trusts verified plans, so a crash here is a hole in verifyPlan or a
// kernel. Plans whose parameters or tables hold more than 2^22 numbers are
// skipped: they are valid, only too big for a fuzzer's memory limit.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "heterps/PS/Client.h"
#include "heterps/PS/LocalConnection.h"
#include "heterps/PS/Shard.h"
#include "heterps/Plan/PlanFile.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/Runtime/Program.h"

#include <cstdio>
#include <cstring>

using namespace heterps;
using namespace heterps::runtime;

namespace {

constexpr int64_t kBatch = 2;
constexpr int64_t kMaxNumbers = int64_t(1) << 22;

/// Elements of `dims` with the batch dimension set to kBatch, or -1 when
/// they exceed kMaxNumbers.
int64_t boundedElements(const google::protobuf::RepeatedField<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      d = kBatch;
    if (d != 0 && n > kMaxNumbers / d)
      return -1;
    n *= d;
  }
  return n;
}

bool fitsInMemory(const plan::Plan &p) {
  int64_t total = 0;
  auto add = [&](int64_t n) {
    if (n < 0 || total > kMaxNumbers - n)
      return false;
    total += n;
    return true;
  };
  for (const plan::DenseParam &param : p.params())
    if (!add(boundedElements(param.type().dims())))
      return false;
  for (const plan::SparseTable &t : p.tables()) {
    if (t.vocab() < 0 || t.dim() < 0 ||
        (t.dim() != 0 && t.vocab() > kMaxNumbers / t.dim()) ||
        !add(t.vocab() * t.dim()))
      return false;
  }
  // Activations: every value at the fuzzing batch.
  int64_t values = 0;
  for (const plan::Value &v : p.values()) {
    int64_t n = boundedElements(v.type().dims());
    if (n < 0 || values > kMaxNumbers - n)
      return false;
    values += n;
  }
  return true;
}

Tensor inputFor(const TensorType &type, int64_t salt) {
  Shape dims = type.dims;
  for (int64_t &d : dims)
    if (d < 0)
      d = kBatch;
  Tensor t(type.dtype, dims);
  int64_t n = t.numElements();
  if (type.dtype == DType::F32) {
    for (int64_t i = 0; i < n; ++i)
      t.as<float>()[i] = static_cast<float>((i + salt) % 7) / 7.0f;
  } else if (type.dtype == DType::I64) {
    for (int64_t i = 0; i < n; ++i)
      t.as<int64_t>()[i] = (i + salt) % 2;
  } else if (t.byteSize()) {
    std::memset(t.data(), 0, t.byteSize());
  }
  return t;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  plan::Plan p;
  std::string error;
  if (!plan::parsePlan(std::string(reinterpret_cast<const char *>(data), size),
                       "fuzz.plan", p, error)) {
    if (fuzz::verbose())
      std::fprintf(stderr, "refused: %s\n", error.c_str());
    if (error.empty()) {
      std::fprintf(stderr, "a refused plan without a message\n");
      std::abort();
    }
    return 0;
  }
  if (!fitsInMemory(p)) {
    if (fuzz::verbose())
      std::fprintf(stderr, "skipped: too big\n");
    return 0;
  }
  try {
    ParamStore params(p, /*seed=*/1);
    ps::ShardOptions so;
    so.maxMemoryBytes = 256 << 20;
    ps::Shard shard(so);
    std::vector<std::unique_ptr<ps::Connection>> servers;
    servers.push_back(ps::connectLocal(shard));
    ps::Client tables(std::move(servers));
    tables.connect();
    tables.createTables(p, /*seed=*/1);
    Program program(p, params, tables, ProgramOptions{});
    std::vector<Tensor> inputs;
    for (int i = 0; i < p.inputs_size(); ++i)
      inputs.push_back(inputFor(program.inputType(i), i));
    std::vector<const Tensor *> bound;
    for (const Tensor &t : inputs)
      bound.push_back(&t);
    std::vector<int> outputs;
    for (int i = 0; i < p.outputs_size(); ++i)
      outputs.push_back(i);
    program.run(bound, /*training=*/false, outputs);
    if (program.isTraining())
      program.run(bound, /*training=*/true, outputs);
    if (fuzz::verbose())
      std::fprintf(stderr, "ran the plan\n");
  } catch (const RuntimeError &e) {
    if (fuzz::verbose())
      std::fprintf(stderr, "refused: %s\n", e.what());
    // A clear error naming what is wrong.
  }
  return 0;
}
