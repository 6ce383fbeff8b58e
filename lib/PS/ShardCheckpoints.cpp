//===- ShardCheckpoints.cpp - A PS shard's checkpoints and restores -------===//
//
// A checkpoint is a directory of row files and one manifest per server,
// each written whole or not at all (heterps/Support/AtomicFile.h); a
// restore reads a complete set of manifests and checks every block.
//
//===----------------------------------------------------------------------===//

#include "ShardState.h"

#include "heterps/Support/AtomicFile.h"
#include "heterps/Support/CheckedMath.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <tuple>
#include <unistd.h>

using namespace heterps;
using namespace heterps::ps;
using namespace heterps::ps::detail;
namespace fs = std::filesystem;

using runtime::fnv1a;

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

/// Whether `name` is usable as one file or directory name: not empty, not
/// "." or "..", no "/", NUL or control characters.
static bool plainFileName(const std::string &name) {
  if (name.empty() || name == "." || name == "..")
    return false;
  for (unsigned char c : name)
    if (c == '/' || c < 0x20 || c == 0x7f)
      return false;
  return true;
}

Status Shard::resolvePath(const std::string &name, std::string *path) {
  if (name.empty())
    return Status::error(Code::InvalidArgument, "empty checkpoint name");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f)
      return Status::error(Code::InvalidArgument,
                           "checkpoint name '" + name.substr(0, 64) +
                               "' contains a control character");
  if (name == "latest")
    return Status::error(Code::InvalidArgument,
                         "'latest' names the newest checkpoint on restore; a "
                         "checkpoint cannot be called that");
  if (name == "auto")
    return Status::error(Code::InvalidArgument,
                         "'auto' is serve --restore's choice of the newest "
                         "checkpoint or none; it names no checkpoint (restore "
                         "'latest' loads the newest)");
  fs::path p(name);
  if (p.is_absolute()) {
    if (!opts.absoluteCheckpointPaths)
      return Status::error(Code::InvalidArgument,
                           "checkpoint name '" + name +
                               "' is absolute; names are directories under "
                               "the server's --checkpoint-dir");
    *path = name;
    return {};
  }
  for (const fs::path &part : p)
    if (part == ".." || part == ".")
      return Status::error(Code::InvalidArgument, "checkpoint name '" + name +
                                                      "' contains '" +
                                                      part.string() + "'");
  if (opts.checkpointDir.empty())
    return Status::error(Code::FailedPrecondition,
                         "PS server " + std::to_string(opts.index) +
                             " has no --checkpoint-dir");
  // A symbolic link under the checkpoint directory could lead out of it.
  fs::path at(opts.checkpointDir);
  for (const fs::path &part : p) {
    at /= part;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(at, ec)))
      return Status::error(Code::InvalidArgument,
                           "checkpoint name '" + name + "': '" + at.string() +
                               "' is a symbolic link, which the server does "
                               "not follow");
  }
  *path = (fs::path(opts.checkpointDir) / p).string();
  return {};
}

namespace {

/// heterps::writeFileAtomically, as a Status.
Status writeAtomically(const std::string &path, const std::string &data) {
  std::string error = heterps::writeFileAtomically(path, data);
  if (!error.empty())
    return Status::error(Code::Internal, error);
  return {};
}

template <typename T> void append(std::string &s, const T &v) {
  s.append(reinterpret_cast<const char *>(&v), sizeof(T));
}

std::string manifestName(uint32_t index, uint32_t count) {
  return "MANIFEST." + std::to_string(index) + "-of-" + std::to_string(count);
}

Status readFile(const std::string &path, std::string *data) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(Code::NotFound, "cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  *data = s.str();
  return {};
}

/// Bytes [offset, offset + n) of a file.
Status readFileRange(const std::string &path, uint64_t offset, uint64_t n,
                     std::string *data) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(Code::NotFound, "cannot read '" + path + "'");
  in.seekg(0, std::ios::end);
  uint64_t size = static_cast<uint64_t>(in.tellg());
  if (offset > size || n > size - offset)
    return Status::error(Code::FailedPrecondition,
                         str("checkpoint file '", path, "' has ", size,
                             " bytes, the manifest needs ", offset + n));
  data->resize(n);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(data->data(), static_cast<std::streamsize>(n));
  if (!in)
    return Status::error(Code::Internal, "cannot read '" + path + "'");
  return {};
}

Status readManifest(const std::string &path, v1::ShardManifest *m) {
  std::string data;
  if (Status s = readFile(path, &data); !s.ok())
    return s;
  if (data.size() < 12 || std::memcmp(data.data(), kManifestMagic, 8) != 0)
    return Status::error(Code::InvalidArgument,
                         "'" + path + "' is not a PS checkpoint manifest");
  uint32_t version;
  std::memcpy(&version, data.data() + 8, 4);
  if (version != kFileVersion)
    return Status::error(Code::InvalidArgument,
                         str("'", path, "' has format version ", version,
                             ", this server reads ", kFileVersion));
  if (!m->ParseFromArray(data.data() + 12, static_cast<int>(data.size() - 12)))
    return Status::error(Code::InvalidArgument,
                         "'" + path + "' is truncated or corrupt");
  return {};
}

/// The manifests of a complete checkpoint in `dir`: every server of one
/// count wrote its own, all at one step.
/// The first entry of `dir` that no server's checkpoint writes (its
/// manifests, table files and their temporaries), or "" when there is none.
/// A checkpoint is never written into, nor pruned from, a directory that
/// holds anything else: it is someone's.
std::string strangerIn(const fs::path &dir) {
  std::error_code ec;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    std::string f = e.path().filename().string();
    bool ours = !e.is_symlink() && e.is_regular_file() &&
                (f.rfind("MANIFEST.", 0) == 0 || f.rfind("table-", 0) == 0);
    if (!ours)
      return f;
  }
  return "";
}

Status completeManifests(const std::string &dir,
                         std::vector<v1::ShardManifest> *out,
                         fs::file_time_type *written = nullptr) {
  std::error_code ec;
  std::map<uint32_t, std::map<uint32_t, v1::ShardManifest>> byCount;
  std::map<uint32_t, fs::file_time_type> writtenByCount;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    std::string f = e.path().filename().string();
    if (f.rfind("MANIFEST.", 0) != 0 || isAtomicFileTemporary(f) ||
        (f.size() >= 4 && f.substr(f.size() - 4) == ".tmp"))
      continue;
    v1::ShardManifest m;
    if (Status s = readManifest(e.path().string(), &m); !s.ok())
      return s;
    byCount[m.shard_count()][m.shard_index()] = m;
    std::error_code timeError;
    fs::file_time_type time = fs::last_write_time(e.path(), timeError);
    // (file_time_type's zero is in 2174 on libstdc++.)
    fs::file_time_type &last =
        writtenByCount.try_emplace(m.shard_count(), fs::file_time_type::min())
            .first->second;
    if (!timeError && time > last)
      last = time;
  }
  if (ec)
    return Status::error(Code::NotFound,
                         "no checkpoint '" + dir + "': " + ec.message());
  for (auto &[count, shards] : byCount) {
    if (shards.size() != count)
      continue;
    int64_t step = shards.begin()->second.step();
    bool same = std::all_of(shards.begin(), shards.end(),
                            [&](auto &s) { return s.second.step() == step; });
    if (!same)
      return Status::error(Code::FailedPrecondition,
                           "checkpoint '" + dir +
                               "' has manifests of different steps");
    for (auto &[i, m] : shards)
      out->push_back(m);
    if (written)
      *written = writtenByCount[count];
    return {};
  }
  return Status::error(Code::FailedPrecondition,
                       "checkpoint '" + dir +
                           "' is incomplete: not every server wrote its "
                           "manifest (was the checkpoint interrupted?)");
}

struct CompleteCheckpoint {
  fs::path path;
  int64_t step;
  /// When its last manifest was written.
  fs::file_time_type written;
};

/// The complete checkpoints under `root`, the newest first: the one whose
/// manifests were written last, then the higher step. A resumed or new run
/// writes lower steps than an old run in the same directory, and its
/// checkpoints are the ones to restore and to keep. Links are skipped: a
/// checkpoint is a directory of `root` itself.
std::vector<CompleteCheckpoint> completeCheckpoints(const std::string &root) {
  std::vector<CompleteCheckpoint> out;
  std::error_code ec;
  for (const fs::directory_entry &e : fs::directory_iterator(root, ec)) {
    std::vector<v1::ShardManifest> ms;
    fs::file_time_type written;
    if (e.is_symlink() || !e.is_directory() ||
        !completeManifests(e.path().string(), &ms, &written).ok())
      continue;
    out.push_back({e.path(), ms[0].step(), written});
  }
  std::sort(out.begin(), out.end(),
            [](const CompleteCheckpoint &a, const CompleteCheckpoint &b) {
              return std::tie(a.written, a.step) > std::tie(b.written, b.step);
            });
  return out;
}

} // namespace

Status Shard::checkpoint(const std::string &name, int64_t step,
                         v1::CheckpointResponse *response) {
  std::string dir;
  if (Status s = resolvePath(name, &dir); !s.ok())
    return s;
  if (Status s = writeCheckpoint(dir, step, response); !s.ok())
    return s;
  // Old checkpoints go after the locks are released: deleting them may
  // take long on network storage, and requests need not wait for it.
  pruneCheckpoints(dir, response);
  return {};
}

Status Shard::writeCheckpoint(const std::string &dir, int64_t step,
                              v1::CheckpointResponse *response) {
  std::lock_guard<std::mutex> m(maintenanceMutex);
  // The writer lock stops every request, so the files of all tables are
  // one consistent state.
  std::unique_lock<std::shared_mutex> lock(tablesMutex);
  std::error_code ec;
  if (std::string stranger = strangerIn(dir); !stranger.empty())
    return Status::error(Code::FailedPrecondition,
                         "checkpoint directory '" + dir + "' holds '" +
                             stranger +
                             "', which is not a PS checkpoint's; it is left "
                             "as it is: give another name");
  fs::create_directories(dir, ec);
  if (ec)
    return Status::error(Code::Internal,
                         "cannot create checkpoint directory '" + dir +
                             "': " + ec.message());
  v1::ShardManifest manifest;
  manifest.set_protocol_version(kProtocolVersion);
  manifest.set_step(step);
  manifest.set_shard_index(opts.index);
  manifest.set_shard_count(opts.count);
  manifest.set_virtual_shards(kVirtualShards);
  uint64_t bytes = 0;
  uint32_t files = 0;
  bool crash =
      opts.crashInCheckpoint && ++checkpointsStarted == opts.crashInCheckpoint;
  // One file per table: the blocks of its virtual shards one after the
  // other, each with its own header and checksum, so a restore onto another
  // server count reads only the blocks it owns, and a checkpoint costs one
  // fsync per table rather than one per virtual shard.
  for (auto &[id, t] : tables) {
    *manifest.add_tables() = t->config;
    std::string file = "table-" + std::to_string(id) + ".shard-" +
                       std::to_string(opts.index) + "-of-" +
                       std::to_string(opts.count) + ".rows";
    std::string data;
    for (uint32_t v = 0; v < kVirtualShards; ++v) {
      if (!t->parts[v])
        continue;
      Table::Part &p = *t->parts[v];
      size_t offset = data.size();
      data.append(kRowsMagic, 8);
      append(data, kFileVersion);
      append(data, id);
      append(data, v);
      append(data, t->dim);
      append(data, static_cast<uint32_t>(t->slots));
      append(data, static_cast<uint64_t>(p.index.size()));
      size_t stride = t->stride;
      p.index.forEach([&](uint64_t key, uint32_t slot) {
        append(data, key);
        append(data, p.steps[slot]);
        data.append(
            reinterpret_cast<const char *>(p.data.data() + slot * stride),
            stride * sizeof(float));
      });
      if (t->onDisk && p.diskRows) {
        // The rows in RocksDB follow those in memory: same layout, the
        // stored value being the step and the floats.
        std::string prefix = diskPrefix(id, t->generation, v);
        std::unique_ptr<rocksdb::Iterator> it(
            disk->db->NewIterator(disk->read));
        uint64_t count = p.index.size();
        for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
             it->Next(), ++count) {
          append(data, keyOfDiskKey(it->key()));
          data.append(it->value().data(), it->value().size());
        }
        if (!it->status().ok())
          return Status::error(Code::Internal, "RocksDB read failed: " +
                                                   it->status().ToString());
        std::memcpy(&data[offset + 8 + 5 * sizeof(uint32_t)], &count,
                    sizeof(count));
      }
      v1::ShardManifest::File *f = manifest.add_files();
      f->set_name(file);
      f->set_table_id(id);
      f->set_virtual_shard(v);
      f->set_offset(offset);
      f->set_bytes(data.size() - offset);
      f->set_fnv1a(fnv1a(data.data() + offset, data.size() - offset));
    }
    if (Status s = writeAtomically(dir + "/" + file, data); !s.ok())
      return s;
    bytes += data.size();
    ++files;
    if (crash)
      ::raise(SIGKILL);
  }
  {
    std::lock_guard<std::mutex> l(denseMutex);
    for (auto &[dname, d] : dense) {
      std::lock_guard<std::mutex> dl(d->mutex);
      v1::DenseTensor *value = manifest.add_dense();
      value->set_name(dname);
      for (int64_t s : d->shape)
        value->add_shape(s);
      value->set_values(d->value.data(), d->value.size() * sizeof(float));
      // The state rides along as a second tensor: name#state, its step
      // count as the only dimension.
      v1::DenseTensor *state = manifest.add_dense();
      state->set_name(dname + "#state");
      state->add_shape(d->steps);
      state->set_values(d->state.data(), d->state.size() * sizeof(float));
      *manifest.add_dense_optimizers() = d->optimizerProto;
    }
  }
  std::string data(kManifestMagic, 8);
  append(data, kFileVersion);
  data += manifest.SerializeAsString();
  if (Status s = writeAtomically(
          dir + "/" + manifestName(opts.index, opts.count), data);
      !s.ok())
    return s;
  response->set_bytes(bytes + data.size());
  // The tables' files and the manifest (manifest.files() lists blocks).
  response->set_files(files + 1);
  return {};
}

void Shard::pruneCheckpoints(const std::string &written,
                             v1::CheckpointResponse *response) {
  if (opts.keepCheckpoints <= 0 || opts.checkpointDir.empty())
    return;
  // Only complete checkpoints count, so a checkpoint other servers are still
  // writing never makes an older complete one go. The one just written
  // stays whatever the clock says.
  std::vector<CompleteCheckpoint> complete =
      completeCheckpoints(opts.checkpointDir);
  complete.erase(std::remove_if(complete.begin(), complete.end(),
                                [](const CompleteCheckpoint &c) {
                                  return !strangerIn(c.path).empty();
                                }),
                 complete.end());
  std::stable_partition(complete.begin(), complete.end(),
                        [&](const CompleteCheckpoint &c) {
                          std::error_code same;
                          return fs::equivalent(c.path, written, same);
                        });
  std::error_code ec;
  for (size_t i = static_cast<size_t>(opts.keepCheckpoints);
       i < complete.size(); ++i)
    if (fs::remove_all(complete[i].path, ec) != static_cast<uintmax_t>(-1))
      response->add_pruned(complete[i].path.filename().string());
}

namespace {

/// What of `expected` checkpoint `dir` does not hold as the caller trains
/// it; empty when it holds them all.
std::string unexpectedTables(
    const std::string &dir,
    const google::protobuf::RepeatedPtrField<v1::TableConfig> &held,
    const google::protobuf::RepeatedPtrField<v1::TableConfig> &expected) {
  // Tables with the same problem are named together: (problem, tables).
  std::vector<std::pair<std::string, std::vector<std::string>>> problems;
  auto note = [&](const std::string &problem, const std::string &table) {
    auto it = std::find_if(problems.begin(), problems.end(),
                           [&](const auto &p) { return p.first == problem; });
    if (it == problems.end())
      it = problems.insert(problems.end(), {problem, {}});
    it->second.push_back(table);
  };
  // Kinds are compared as the optimizers read them ("" is SGD); a caller
  // that does not train (no optimizer) takes any.
  auto kind = [](const v1::Optimizer &o) {
    try {
      return std::optional(runtime::OptimizerConfig::parseKind(o.kind(), ""));
    } catch (const std::exception &) {
      return std::optional<runtime::OptimizerConfig::Kind>();
    }
  };
  auto kindName = [](const v1::Optimizer &o) {
    return o.kind().empty() ? std::string("sgd") : o.kind();
  };
  bool optimizers = false;
  for (const v1::TableConfig &want : expected) {
    std::string table =
        std::to_string(want.table_id()) + " '" + want.name() + "'";
    auto had =
        std::find_if(held.begin(), held.end(), [&](const v1::TableConfig &c) {
          return c.table_id() == want.table_id();
        });
    if (had == held.end()) {
      note("not in it", table);
    } else if (had->dim() != want.dim() || had->vocab() != want.vocab()) {
      note(str("dim ", had->dim(), " and vocab ", had->vocab(),
               " there, expected dim ", want.dim(), " and vocab ",
               want.vocab()),
           table);
    } else if (want.has_optimizer() &&
               (!kind(had->optimizer()) ||
                kind(had->optimizer()) != kind(want.optimizer()))) {
      note("trained with " + kindName(had->optimizer()) + " there, expected " +
               kindName(want.optimizer()),
           table);
      optimizers = true;
    }
  }
  if (problems.empty())
    return "";
  std::string text =
      "checkpoint '" + dir + "' does not hold the tables as expected: ";
  for (size_t i = 0; i < problems.size(); ++i) {
    const auto &[problem, tables] = problems[i];
    text += i ? "; " : "";
    text += tables.size() == 1 ? "table " : "tables ";
    for (size_t t = 0; t < tables.size(); ++t)
      text += (t ? ", " : "") + tables[t];
    text += ": " + problem;
  }
  if (optimizers)
    text += " (a restored table keeps its kind of optimizer, whose state "
            "its rows hold: train with the checkpoint's, or start the tables "
            "afresh without it)";
  return text + "; the tables are unchanged";
}

} // namespace

Status Shard::restore(const v1::RestoreRequest &request,
                      v1::RestoreResponse *response) {
  const std::string &name = request.name();
  std::string dir;
  if (name == "latest") {
    if (opts.checkpointDir.empty())
      return Status::error(Code::FailedPrecondition,
                           "restore 'latest' needs a --checkpoint-dir");
    std::vector<CompleteCheckpoint> complete =
        completeCheckpoints(opts.checkpointDir);
    if (complete.empty())
      return Status::error(Code::NotFound, "no complete checkpoint under '" +
                                               opts.checkpointDir + "'");
    dir = complete.front().path.string();
  } else if (Status s = resolvePath(name, &dir); !s.ok()) {
    return s;
  }
  std::vector<v1::ShardManifest> manifests;
  if (Status s = completeManifests(dir, &manifests); !s.ok())
    return s;
  for (const v1::ShardManifest &m : manifests)
    if (m.virtual_shards() != kVirtualShards)
      return Status::error(
          Code::FailedPrecondition,
          str("checkpoint '", dir, "' has ", m.virtual_shards(),
              " virtual shards, this server ", kVirtualShards));
  if (std::string problem =
          unexpectedTables(dir, manifests[0].tables(), request.expect_tables());
      !problem.empty())
    return Status::error(Code::FailedPrecondition, problem);
  // Build the new state aside, then swap it in: a bad file leaves the
  // tables as they were.
  Shard fresh(opts);
  fresh.disk = disk;
  // RocksDB rows of the new tables go under new generations; they are
  // dropped when the restore fails, and the old ones when it succeeds.
  struct DropGenerations {
    Shard &shard;
    bool keep = false;
    ~DropGenerations() {
      if (!keep)
        shard.dropDiskRows();
    }
  } dropFresh{fresh};
  for (const v1::TableConfig &c : manifests[0].tables()) {
    bool created;
    if (Status s = fresh.createTable(c, &created); !s.ok())
      return s;
  }
  uint64_t rows = 0;
  for (const v1::ShardManifest &m : manifests) {
    for (const v1::ShardManifest::File &f : m.files()) {
      if (f.virtual_shard() >= kVirtualShards)
        return Status::error(Code::FailedPrecondition,
                             str("checkpoint '", dir,
                                 "': its manifest names "
                                 "virtual shard ",
                                 f.virtual_shard(), " of ", kVirtualShards));
      if (serverOfShard(f.virtual_shard(), opts.count) != opts.index)
        continue;
      if (!plainFileName(f.name()))
        return Status::error(Code::FailedPrecondition,
                             "checkpoint '" + dir +
                                 "': its manifest names "
                                 "file '" +
                                 f.name().substr(0, 64) +
                                 "', which is not a file in it");
      std::string path = dir + "/" + f.name();
      std::string data;
      if (Status s = readFileRange(path, f.offset(), f.bytes(), &data); !s.ok())
        return s;
      if (fnv1a(data.data(), data.size()) != f.fnv1a())
        return Status::error(
            Code::FailedPrecondition,
            str("checkpoint file '", path, "': the block of virtual shard ",
                f.virtual_shard(), " (", f.bytes(), " bytes at ", f.offset(),
                ") has checksum ", fnv1a(data.data(), data.size()),
                ", the manifest says ", f.fnv1a()));
      Table *t;
      if (Status s = fresh.findTable(f.table_id(), &t); !s.ok())
        return s;
      uint32_t header[5];
      uint64_t count;
      if (data.size() < 8 + sizeof(header) + 8 ||
          std::memcmp(data.data(), kRowsMagic, 8) != 0)
        return Status::error(Code::FailedPrecondition,
                             "'" + path + "' is not a PS rows file");
      std::memcpy(header, data.data() + 8, sizeof(header));
      std::memcpy(&count, data.data() + 8 + sizeof(header), 8);
      size_t rowBytes = 16 + t->stride * sizeof(float);
      size_t body = data.size() - (8 + sizeof(header) + 8);
      // Compared by division: a count near 2^64 times rowBytes wraps.
      if (header[1] != f.table_id() || header[2] != f.virtual_shard() ||
          header[3] != t->dim || header[4] != static_cast<uint32_t>(t->slots) ||
          body % rowBytes != 0 || count != body / rowBytes)
        return Status::error(Code::FailedPrecondition,
                             "'" + path + "' does not match its table");
      Table::Part &p = *t->parts[f.virtual_shard()];
      const char *r = data.data() + 8 + sizeof(header) + 8;
      if (t->onDisk) {
        rocksdb::WriteBatch batch;
        for (uint64_t i = 0; i < count; ++i, r += rowBytes) {
          uint64_t key;
          std::memcpy(&key, r, 8);
          batch.Put(
              diskKey(f.table_id(), t->generation, f.virtual_shard(), key),
              rocksdb::Slice(r + 8, rowBytes - 8));
        }
        rocksdb::Status st = fresh.disk->db->Write(fresh.disk->write, &batch);
        if (!st.ok())
          return Status::error(Code::Internal,
                               "RocksDB write failed: " + st.ToString());
        p.diskRows += count;
        rows += count;
        continue;
      }
      for (uint64_t i = 0; i < count; ++i, r += rowBytes) {
        uint64_t key;
        int64_t step;
        std::memcpy(&key, r, 8);
        std::memcpy(&step, r + 8, 8);
        if (p.index.find(key) != KeyIndex::kNone ||
            virtualShardOf(key) != f.virtual_shard())
          return Status::error(Code::FailedPrecondition,
                               str("checkpoint file '", path, "' holds key ",
                                   key, " twice or in the wrong shard"));
        uint32_t slot = static_cast<uint32_t>(p.keys.size());
        p.index.insert(key, slot);
        p.keys.push_back(key);
        p.steps.push_back(step);
        p.touched.push_back(opts.clock());
        p.data.insert(p.data.end(), reinterpret_cast<const float *>(r + 16),
                      reinterpret_cast<const float *>(r + 16) + t->stride);
      }
      rows += count;
      fresh.memory += count * t->rowBytes();
    }
    if (m.dense_size() != 2 * m.dense_optimizers_size())
      return Status::error(Code::FailedPrecondition,
                           str("checkpoint '", dir, "': its manifest has ",
                               m.dense_size(), " dense tensors and ",
                               m.dense_optimizers_size(),
                               " optimizers; expected two tensors (value "
                               "and state) per optimizer"));
    for (int i = 0; i + 1 < m.dense_size(); i += 2) {
      const v1::DenseTensor &value = m.dense(i), &state = m.dense(i + 1);
      if (serverOfName(value.name(), opts.count) != opts.index)
        continue;
      bool created;
      if (Status s =
              fresh.createDense(value, m.dense_optimizers(i / 2), &created);
          !s.ok())
        return s;
      Dense &d = *fresh.dense[value.name()];
      if (state.values().size() != d.state.size() * sizeof(float))
        return Status::error(Code::FailedPrecondition,
                             "dense state of '" + value.name() +
                                 "' does not match its tensor");
      if (!state.values().empty())
        std::memcpy(d.state.data(), state.values().data(),
                    state.values().size());
      if (state.shape_size() > 1 ||
          (state.shape_size() == 1 && state.shape(0) < 0))
        return Status::error(Code::FailedPrecondition,
                             "dense state of '" + value.name() +
                                 "' has a malformed step count");
      d.steps = state.shape_size() ? state.shape(0) : 0;
    }
  }
  std::lock_guard<std::mutex> m(maintenanceMutex);
  std::unique_lock<std::shared_mutex> lock(tablesMutex);
  std::lock_guard<std::mutex> dl(denseMutex);
  tables.swap(fresh.tables);
  dense.swap(fresh.dense);
  disk = fresh.disk;
  dropFresh.keep = true;
  // `fresh` now holds the old tables: their RocksDB rows go.
  fresh.dropDiskRows();
  memory = fresh.memory.load();
  response->set_step(manifests[0].step());
  response->set_name(dir);
  response->set_rows(rows);
  return {};
}

void Shard::dropDiskRows() {
  if (!disk)
    return;
  for (auto &[id, t] : tables)
    if (t->onDisk) {
      rocksdb::Status st = disk->db->DeleteRange(
          disk->write, disk->db->DefaultColumnFamily(),
          diskPrefix(id, t->generation), diskPrefix(id, t->generation + 1));
      (void)st; // Left-over rows of a dropped generation are unreachable.
    }
}
