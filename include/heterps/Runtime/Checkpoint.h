//===- Checkpoint.h - Saving and restoring a training run -------*- C++ -*-===//
//
// A checkpoint is a directory: MANIFEST (format, step, the caller's
// entries, one line per file with its size and FNV-1a checksum) and one
// ONNX TensorProto file per dense parameter and optimizer state. The
// embedding tables are written by their store through a callback (the PS
// servers write theirs). It is written into a temporary directory, every
// file fsynced, and renamed into place, so a crash leaves either the old
// checkpoint or the new one. Only a checkpoint (or an empty directory) is
// ever replaced: a path that holds anything else is refused, not deleted.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_CHECKPOINT_H
#define HETERPS_RUNTIME_CHECKPOINT_H

#include "heterps/Runtime/ParamStore.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace heterps::runtime {

struct CheckpointInfo {
  int64_t step = 0;
  /// Single-word keys and their values ("epoch" -> "2"), kept in MANIFEST.
  std::map<std::string, std::string> entries;
  /// What loading the checkpoint changed that the user should hear about
  /// (not written).
  std::vector<std::string> notes;
};

/// Writes checkpoint `dir`, replacing the checkpoint there. `dir`, and the
/// `dir.tmp` and `dir.old` it writes and renames through, must not exist or
/// be empty directories or checkpoints (throws naming the path otherwise).
/// `writeTables(tmpDir, info)` writes the tables while the checkpoint is
/// being assembled in `tmpDir` (an absolute path that becomes `dir`) and
/// may add entries.
void saveCheckpoint(const std::string &dir, ParamStore &params,
                    CheckpointInfo info,
                    const std::function<void(const std::string &,
                                             CheckpointInfo &)> &writeTables);
/// A checkpoint's dense parameters, read and checked but not yet in the
/// ParamStore: a load that fails later (its tables refused) leaves the
/// parameters as they were.
class PendingCheckpoint {
public:
  CheckpointInfo info;
  /// Moves the parameters and their optimizer state into the store.
  void apply();

private:
  friend PendingCheckpoint readCheckpoint(const std::string &, ParamStore &);
  struct Staged {
    DenseParameter *param;
    Tensor value, state;
    int64_t steps;
  };
  std::vector<Staged> staged;
};
/// Reads the dense parameters of a plan's ParamStore from checkpoint `dir`
/// with its step and entries. Throws naming the file (and the MANIFEST's
/// line) when a file is missing, its checksum or its shape differs, or
/// MANIFEST is malformed: a step that is not one count, a file or entry
/// named twice, an entry key this runtime does not write.
PendingCheckpoint readCheckpoint(const std::string &dir, ParamStore &params);
/// readCheckpoint() and apply(): the store changes only when every file
/// was read.
CheckpointInfo loadCheckpoint(const std::string &dir, ParamStore &params);
/// The step and entries of checkpoint `dir`, checked as loadCheckpoint()
/// checks them, without its parameters.
CheckpointInfo readCheckpointManifest(const std::string &dir);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_CHECKPOINT_H
