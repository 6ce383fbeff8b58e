//===- FuzzCheckpoint.cpp - Checkpoint readers ------------------*- C++ -*-===//
//
// Byte 0 picks the reader:
// - even: a heterps-run checkpoint of a plan with one parameter 'w' (f32
//   [3, 4]). Then three length-prefixed files (the value, the optimizer
//   state, the step count as TensorProto files) and extra MANIFEST lines.
//   The harness writes MANIFEST with the right sizes and checksums, so the
//   input reaches the tensor reader and the checks behind it; a loaded
//   parameter must then take an optimizer update.
// - odd: a PS checkpoint: a length-prefixed ShardManifest (protobuf) and a
//   rows file. Where the manifest parses, its file entries are renamed to
//   the rows file and their checksums fixed, so the input reaches the row
//   decoder; a restored shard must then answer pulls.
// Either reader must load or refuse with an error naming the problem.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "heterps/PS/Shard.h"
#include "heterps/Runtime/Checkpoint.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/Hash.h"
#include "heterps/Runtime/Optimizer.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/plan.pb.h"

using namespace heterps;
using namespace heterps::runtime;
namespace fs = std::filesystem;

namespace {

uint64_t checksumOf(const std::string &bytes) {
  return fnv1a(bytes.data(), bytes.size());
}

void runtimeCheckpoint(fuzz::InputReader &in) {
  std::string dir = fuzz::scratchDir() + "/run";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  plan::Plan p;
  plan::DenseParam *w = p.add_params();
  w->set_name("w");
  w->mutable_type()->set_dtype(plan::F32);
  w->mutable_type()->add_dims(3);
  w->mutable_type()->add_dims(4);
  w->mutable_init()->set_kind("zeros");
  ParamStore params(p, 1);

  uint8_t present = in.byte();
  std::string manifest = "heterps-checkpoint 1\nstep 7\n";
  const char *names[] = {"param.w.pb", "param-state.w.pb", "param-steps.w.pb"};
  for (int i = 0; i < 3; ++i) {
    std::string bytes = in.bytes(in.byte() | (in.byte() << 8));
    if (!(present & (1 << i)))
      continue;
    fuzz::writeFile(dir + "/" + names[i], bytes.data(), bytes.size());
    manifest += std::string("file ") + names[i] + " " +
                std::to_string(bytes.size()) + " " +
                std::to_string(checksumOf(bytes)) + "\n";
  }
  manifest += in.rest();
  fuzz::writeFile(dir + "/MANIFEST", manifest.data(), manifest.size());
  try {
    loadCheckpoint(dir, params);
  } catch (const RuntimeError &e) {
    if (fuzz::verbose())
      std::fprintf(stderr, "refused: %s\n", e.what());
    return;
  }
  if (fuzz::verbose())
    std::fprintf(stderr, "loaded\n");
  OptimizerConfig config;
  config.kind = static_cast<OptimizerConfig::Kind>(present >> 6);
  Tensor grad(DType::F32, {3, 4});
  for (int i = 0; i < 12; ++i)
    grad.as<float>()[i] = 0.5f;
  params.update("w", grad, config);
}

void psCheckpoint(fuzz::InputReader &in) {
  std::string root = fuzz::scratchDir() + "/ps";
  std::string dir = root + "/ckpt";
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(dir);
  uint8_t flags = in.byte();
  std::string manifestBytes = in.bytes(in.u32() & 0xffff);
  std::string rows = in.rest();
  ps::v1::ShardManifest manifest;
  if (manifest.ParseFromString(manifestBytes)) {
    if (flags & 1) {
      manifest.set_shard_index(0);
      manifest.set_shard_count(1);
    }
    for (ps::v1::ShardManifest::File &f : *manifest.mutable_files()) {
      if (flags & 2)
        f.set_name("t.rows");
      if (f.offset() <= rows.size() && f.bytes() <= rows.size() - f.offset())
        f.set_fnv1a(fnv1a(rows.data() + f.offset(), f.bytes()));
    }
    manifestBytes = manifest.SerializeAsString();
  }
  std::string file("HPSCKPT\n", 8);
  uint32_t version = 1;
  file.append(reinterpret_cast<const char *>(&version), 4);
  file += manifestBytes;
  fuzz::writeFile(dir + "/MANIFEST.0-of-1", file.data(), file.size());
  fuzz::writeFile(dir + "/t.rows", rows.data(), rows.size());

  ps::ShardOptions options;
  options.checkpointDir = root;
  options.maxMemoryBytes = 256 << 20;
  ps::Shard shard(options);
  ps::v1::RestoreResponse response;
  ps::Status restored = shard.restore(flags & 4 ? "latest" : "ckpt", &response);
  if (fuzz::verbose())
    std::fprintf(stderr, "restore: %s (%llu rows)\n", restored.message.c_str(),
                 static_cast<unsigned long long>(response.rows()));
  if (!restored.ok())
    return;
  for (const ps::v1::TableConfig &t : manifest.tables()) {
    uint32_t dim;
    if (!shard.tableDim(t.table_id(), &dim).ok())
      continue;
    std::vector<uint64_t> keys = {0, 1, 2, 1ull << 40};
    std::vector<float> out(keys.size() * dim);
    (void)shard.pull(t.table_id(), keys.data(), keys.size(), out.data());
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::InputReader in(data, size);
  if (in.byte() % 2 == 0)
    runtimeCheckpoint(in);
  else
    psCheckpoint(in);
  return 0;
}
