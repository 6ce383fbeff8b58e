//===- FuzzScheduleJSON.cpp - Cluster and profile files ---------*- C++ -*-===//
//
// The first byte picks the reader (even: cluster file, odd: profile table);
// the rest is the file's text. Either reader returns a value or an error;
// anything else (a crash, a sanitizer report) is a bug.
//
//===----------------------------------------------------------------------===//

#include "heterps/Schedule/Cluster.h"
#include "heterps/Schedule/Problem.h"

#include "llvm/Support/Error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  llvm::StringRef text(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    llvm::Expected<heterps::schedule::Cluster> cluster =
        heterps::schedule::parseCluster(text, "fuzz.json");
    if (!cluster)
      llvm::consumeError(cluster.takeError());
  } else {
    llvm::Expected<heterps::schedule::ProfileTable> profile =
        heterps::schedule::parseProfileTable(text, "fuzz.json");
    if (!profile)
      llvm::consumeError(profile.takeError());
  }
  return 0;
}
