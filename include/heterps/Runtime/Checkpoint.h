//===- Checkpoint.h - Saving and restoring a training run -------*- C++ -*-===//
//
// A checkpoint is a directory: MANIFEST (format, step, one line per file
// with its size and FNV-1a checksum) and one ONNX TensorProto file per
// dense parameter, per table and per optimizer state. It is written into a
// temporary directory, every file fsynced, and renamed into place, so a
// crash leaves either the old checkpoint or the new one.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_CHECKPOINT_H
#define HETERPS_RUNTIME_CHECKPOINT_H

#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/ParamStore.h"

#include <string>

namespace heterps::runtime {

void saveCheckpoint(const std::string &dir, ParamStore &params,
                    LocalEmbeddingStore &tables, int64_t step);
/// Restores into stores built from the same plan; returns the step. Throws
/// naming the file when a file is missing, its checksum or its shape differs.
int64_t loadCheckpoint(const std::string &dir, ParamStore &params,
                       LocalEmbeddingStore &tables);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_CHECKPOINT_H
