//===- Hash.h - The runtime's hash functions --------------------*- C++ -*-===//
//
// The fixed hashes of heterps/Support/Hash.h under the runtime's namespace,
// where its code names them.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_HASH_H
#define HETERPS_RUNTIME_HASH_H

#include "heterps/Support/Hash.h"

namespace heterps::runtime {

using heterps::fnv1a;
using heterps::kFnv1aOffset;
using heterps::splitmix64;

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_HASH_H
