//===- Checkpoint.cpp - Saving and restoring a training run ---------------===//

#include "heterps/Runtime/Checkpoint.h"

#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/Hash.h"
#include "heterps/Support/Paths.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

using namespace heterps::runtime;
namespace fs = std::filesystem;

static constexpr const char *kFormat = "heterps-checkpoint 1";

static std::string fileName(const std::string &prefix,
                            const std::string &name) {
  std::string safe = name;
  for (char &c : safe)
    if (c == '/' || c == '\\')
      c = '_';
  return prefix + safe + ".pb";
}

static uint64_t checksum(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t h = kFnv1aOffset;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof(buf));
    h = fnv1a(buf, static_cast<size_t>(in.gcount()), h);
  }
  return h;
}

/// The MANIFEST entries the runtime writes (the trainer's position in the
/// data, the job's data lanes, the PS servers' checkpoint, the optimizer
/// whose state the dense parameters' state is).
static const char *const kEntryKeys[] = {
    "epoch",         "epoch-batches",   "batch", "data-lanes",
    "ps-checkpoint", "dense-optimizer", "seed"};

/// Marks a directory being assembled, so that a later save may remove it
/// (a crashed save leaves one behind).
static constexpr const char *kAssembling = ".heterps-checkpoint-partial";

/// Whether `path` may be removed to make room for a checkpoint: it does not
/// exist, or is an empty directory, a checkpoint (its MANIFEST starts with
/// the format line) or one being assembled. Anything else is the user's.
static bool replaceable(const fs::path &path) {
  std::error_code ec;
  fs::file_status status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status))
    return true;
  if (!fs::is_directory(status))
    return false;
  if (fs::is_empty(path, ec) || fs::exists(path / kAssembling, ec))
    return true;
  std::ifstream manifest(path / "MANIFEST");
  std::string first;
  return manifest && std::getline(manifest, first) && first == kFormat;
}

static void requireReplaceable(const fs::path &path, const std::string &dir) {
  if (!replaceable(path))
    fail("cannot write checkpoint '", dir, "': '", path.string(),
         "' exists and is not a HeterPS checkpoint; it is left as it is "
         "(give another directory, or remove it)");
}

static void fsyncPath(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    fail("cannot open '", path, "' to sync it: ", std::strerror(errno));
  ::fsync(fd);
  ::close(fd);
}

void heterps::runtime::saveCheckpoint(
    const std::string &dir, ParamStore &params, CheckpointInfo info,
    const std::function<void(const std::string &, CheckpointInfo &)>
        &writeTables) {
  // "ckpt/" is ckpt: its .tmp and .old are beside it, not in it.
  fs::path target = directoryPath(dir);
  fs::path tmp = target.string() + ".tmp";
  fs::path old = target.string() + ".old";
  for (const fs::path &path : {target, tmp, old})
    requireReplaceable(path, dir);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec)
    fail("cannot create checkpoint directory '", tmp.string(),
         "': ", ec.message());
  std::ofstream(tmp / kAssembling).put('\n');
  std::ostringstream manifest;
  manifest << kFormat << "\nstep " << info.step << "\n";
  auto write = [&](const std::string &file, const std::string &name,
                   const Tensor &t) {
    std::string path = (tmp / file).string();
    writeTensorProto(path, name, t);
    fsyncPath(path);
    manifest << "file " << file << " " << fs::file_size(path) << " "
             << checksum(path) << "\n";
  };
  for (auto &[name, p] : params.all()) {
    write(fileName("param.", name), name, p.value);
    if (!p.state.empty()) {
      write(fileName("param-state.", name), name, p.state);
      Tensor steps(DType::I64, {1});
      steps.as<int64_t>()[0] = p.steps;
      write(fileName("param-steps.", name), name, steps);
    }
  }
  if (writeTables)
    writeTables(tmp.string(), info);
  for (auto &[key, value] : info.entries)
    manifest << "entry " << key << " " << value << "\n";
  std::string manifestPath = (tmp / "MANIFEST").string();
  {
    std::ofstream out(manifestPath);
    out << manifest.str();
    if (!out)
      fail("cannot write '", manifestPath, "'");
  }
  fsyncPath(manifestPath);
  fs::remove(tmp / kAssembling, ec);
  fsyncPath(tmp.string());
  fs::remove_all(old, ec);
  if (fs::exists(target))
    fs::rename(target, old, ec);
  fs::rename(tmp, target, ec);
  if (ec)
    fail("cannot rename '", tmp.string(), "' to '", dir, "': ", ec.message());
  fs::remove_all(old, ec);
  fsyncPath(target.parent_path().empty() ? "." : target.parent_path().string());
}

namespace {
/// The step and entries of `dir`'s MANIFEST, and its files' sizes and
/// checksums.
CheckpointInfo
readManifest(const std::string &dir,
             std::map<std::string, std::pair<uint64_t, uint64_t>> &files) {
  std::string manifestPath = (fs::path(dir) / "MANIFEST").string();
  std::ifstream in(manifestPath);
  if (!in)
    fail("cannot open checkpoint manifest '", manifestPath, "'");
  // Lines end in \n; a \r before it (a copy through Windows) is dropped.
  auto next = [&](std::string &line) {
    if (!std::getline(in, line))
      return false;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    return true;
  };
  std::string line;
  next(line);
  if (line != kFormat)
    fail(manifestPath, ": not a checkpoint of this format (first line '", line,
         "', expected '", kFormat, "')");
  CheckpointInfo info;
  bool haveStep = false;
  int lineNo = 1;
  while (next(line)) {
    ++lineNo;
    std::istringstream is(line);
    std::string word, rest;
    is >> word;
    if (word == "step") {
      std::string count;
      is >> count;
      char *end = nullptr;
      errno = 0;
      long long step = std::strtoll(count.c_str(), &end, 10);
      if (haveStep || count.empty() || *end || errno == ERANGE || step < 0 ||
          (is >> rest))
        fail(manifestPath, ":", lineNo, ": '", line, "': expected one line ",
             "'step N' with N a count below 2^63");
      info.step = step;
      haveStep = true;
    } else if (word == "entry") {
      std::string key, value;
      if (!(is >> key) || !std::getline(is >> std::ws, value))
        fail(manifestPath, ":", lineNo, ": malformed entry line");
      if (std::find(std::begin(kEntryKeys), std::end(kEntryKeys), key) ==
          std::end(kEntryKeys)) {
        std::string known;
        for (const char *k : kEntryKeys)
          known += (known.empty() ? "" : ", ") + std::string(k);
        fail(manifestPath, ":", lineNo, ": unknown entry key '", key,
             "' (this runtime writes ", known, ")");
      }
      if (!info.entries.emplace(key, value).second)
        fail(manifestPath, ":", lineNo, ": entry '", key, "' given twice");
    } else if (word == "file") {
      std::string name;
      uint64_t size, sum;
      if (!(is >> name >> size >> sum) || (is >> rest))
        fail(manifestPath, ":", lineNo, ": malformed file line");
      if (!files.emplace(name, std::make_pair(size, sum)).second)
        fail(manifestPath, ":", lineNo, ": file '", name, "' listed twice");
    } else if (!word.empty()) {
      fail(manifestPath, ":", lineNo, ": unknown entry '", word, "'");
    }
  }
  if (!haveStep)
    fail(manifestPath, ": no 'step N' line");
  return info;
}
} // namespace

CheckpointInfo
heterps::runtime::readCheckpointManifest(const std::string &dir) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> files;
  return readManifest(dir, files);
}

void PendingCheckpoint::apply() {
  for (Staged &s : staged) {
    s.param->value = std::move(s.value);
    s.param->state = std::move(s.state);
    s.param->steps = s.steps;
  }
  staged.clear();
}

CheckpointInfo heterps::runtime::loadCheckpoint(const std::string &dir,
                                                ParamStore &params) {
  PendingCheckpoint pending = readCheckpoint(dir, params);
  pending.apply();
  return std::move(pending.info);
}

PendingCheckpoint heterps::runtime::readCheckpoint(const std::string &dir,
                                                   ParamStore &params) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> files;
  PendingCheckpoint pending;
  pending.info = readManifest(dir, files);
  auto read = [&](const std::string &file, bool required) -> Tensor {
    auto it = files.find(file);
    if (it == files.end()) {
      if (required)
        fail("checkpoint '", dir, "' has no ", file);
      return Tensor();
    }
    std::string path = (fs::path(dir) / file).string();
    if (!fs::exists(path) || fs::file_size(path) != it->second.first ||
        checksum(path) != it->second.second)
      fail("checkpoint file '", path,
           "' is missing or does not match its checksum in MANIFEST");
    return readTensorProto(path);
  };
  for (auto &[name, p] : params.all()) {
    Tensor v = read(fileName("param.", name), true);
    if (v.shape() != p.value.shape() || v.dtype() != p.value.dtype())
      fail("checkpoint parameter '", name, "' is ", v.typeString(),
           ", the plan's is ", p.value.typeString());
    // Optimizer state and its step count come together: [slots, elements]
    // f32 (1 slot for momentum and Adagrad, 2 for Adam) and one i64.
    Tensor state = read(fileName("param-state.", name), false);
    Tensor steps = read(fileName("param-steps.", name), false);
    if (state.empty() != steps.empty())
      fail("checkpoint '", dir, "' holds ",
           state.empty() ? "a step count but no optimizer state"
                         : "optimizer state but no step count",
           " of parameter '", name, "'");
    if (!state.empty() &&
        (state.dtype() != DType::F32 || state.rank() != 2 || state.dim(0) < 1 ||
         state.dim(0) > 2 || state.dim(1) != p.value.numElements()))
      fail("checkpoint optimizer state of parameter '", name, "' is ",
           state.typeString(), "; expected 1 or 2 slots of its ",
           p.value.numElements(), " elements (f32)");
    if (!steps.empty() &&
        (steps.dtype() != DType::I64 || steps.numElements() != 1 ||
         steps.as<int64_t>()[0] < 0))
      fail("checkpoint step count of parameter '", name, "' is ",
           steps.typeString(), "; expected one non-negative i64");
    int64_t stepCount = steps.empty() ? 0 : steps.as<int64_t>()[0];
    pending.staged.push_back({&p, std::move(v), std::move(state), stepCount});
  }
  return pending;
}
