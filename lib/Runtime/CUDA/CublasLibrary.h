//===- CublasLibrary.h - cuBLAS, loaded when first needed -------*- C++ -*-===//
//
// The GPU column calls cuBLAS through this table rather than linking it:
// loading libcublas runs cuBLASLt's initialisers, which take about a
// second per process whether or not it uses a GPU. Linked, every
// heterps-run, `import heterps` and test process of a CUDA build paid that
// second; loaded here, only a process whose thread makes its first GPU
// stream does (gpuDevice()). The library stays loaded until the process ends.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_CUBLASLIBRARY_H
#define HETERPS_LIB_RUNTIME_CUDA_CUBLASLIBRARY_H

#include <cublas_v2.h>

#include <string>

namespace heterps::runtime::cuda {

/// The cuBLAS functions the GPU column calls. The types are taken from
/// cuBLAS's own declarations (unevaluated, so nothing is linked): a
/// signature that changes in a new toolkit fails to compile here.
struct CublasLibrary {
  decltype(&::cublasCreate_v2) create;
  decltype(&::cublasDestroy_v2) destroy;
  decltype(&::cublasSetStream_v2) setStream;
  decltype(&::cublasSetMathMode) setMathMode;
  decltype(&::cublasGetStatusString) statusString;
  // cublas_api.h overloads these two with inline wrappers for the old
  // cudaDataType compute type; the casts pick the library's functions.
  decltype(static_cast<cublasStatus_t (*)(
               cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
               int, const void *, const void *, cudaDataType, int, const void *,
               cudaDataType, int, const void *, void *, cudaDataType, int,
               cublasComputeType_t, cublasGemmAlgo_t)>(&::cublasGemmEx)) gemmEx;
  decltype(static_cast<cublasStatus_t (*)(
               cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
               int, const void *, const void *, cudaDataType, int, long long,
               const void *, cudaDataType, int, long long, const void *, void *,
               cudaDataType, int, long long, int, cublasComputeType_t,
               cublasGemmAlgo_t)>(
      &::cublasGemmStridedBatchedEx)) gemmStridedBatchedEx;

  /// The file the functions came from (as dlopen was given it).
  std::string file;
};

/// cuBLAS, loaded on the first call from any thread: by its soname (the
/// loader's search: LD_LIBRARY_PATH, the caller's RUNPATH, ld.so.cache),
/// then from the CUDA toolkit the build found. Throws a RuntimeError that
/// names every file tried and why it failed, or the missing function.
const CublasLibrary &cublas();

/// Whether this process has loaded cuBLAS (for tests: a process that runs
/// no GPU kernel does not).
bool cublasLoaded();

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_CUBLASLIBRARY_H
