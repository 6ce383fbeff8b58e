//===- CublasLibrary.cpp - cuBLAS, loaded when a GPU first needs it -------===//

#include "CublasLibrary.h"

#include "heterps/Runtime/Error.h"

#include <dlfcn.h>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

/// Where to look, in order (HETERPS_CUBLAS_SONAME and
/// HETERPS_CUBLAS_TOOLKIT_FILE come from the build: CUDA's major version and
/// the toolkit's library folder).
const char *const kCandidates[] = {HETERPS_CUBLAS_SONAME,
                                   HETERPS_CUBLAS_TOOLKIT_FILE};

template <typename F>
void resolve(void *handle, const std::string &file, const char *symbol,
             F &slot) {
  dlerror();
  void *address = dlsym(handle, symbol);
  if (!address)
    fail("cuBLAS (", file, ") has no function ", symbol,
         ": it is not the cuBLAS of CUDA ", CUBLAS_VER_MAJOR,
         " this build was compiled against");
  slot = reinterpret_cast<F>(address);
}

CublasLibrary load() {
  void *handle = nullptr;
  std::string tried;
  CublasLibrary library;
  for (const char *candidate : kCandidates) {
    handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      library.file = candidate;
      break;
    }
    const char *why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + candidate + ": " +
             (why ? why : "not found");
  }
  if (!handle)
    fail("cannot load cuBLAS, which GPU stages need (", tried,
         "); install CUDA ", CUBLAS_VER_MAJOR,
         "'s cuBLAS, put its folder on LD_LIBRARY_PATH, or run GPU stages "
         "with --fallback=cpu");
  // The library stays loaded: thread-local handles are destroyed through
  // these functions when their threads end, up to the process's exit.
  resolve(handle, library.file, "cublasCreate_v2", library.create);
  resolve(handle, library.file, "cublasDestroy_v2", library.destroy);
  resolve(handle, library.file, "cublasSetStream_v2", library.setStream);
  resolve(handle, library.file, "cublasSetMathMode", library.setMathMode);
  resolve(handle, library.file, "cublasGetStatusString", library.statusString);
  resolve(handle, library.file, "cublasGemmEx", library.gemmEx);
  resolve(handle, library.file, "cublasGemmStridedBatchedEx",
          library.gemmStridedBatchedEx);
  return library;
}

} // namespace

const CublasLibrary &cuda::cublas() {
  // A failed load throws out of the initialisation: each later call tries
  // again and reports the same error.
  static const CublasLibrary library = load();
  return library;
}

bool cuda::cublasLoaded() {
  for (const char *candidate : kCandidates)
    if (void *handle = dlopen(candidate, RTLD_NOW | RTLD_NOLOAD)) {
      dlclose(handle); // drops the reference RTLD_NOLOAD took
      return true;
    }
  return false;
}
