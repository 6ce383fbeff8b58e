//===- LocalConnection.h - The embedded server in process -------*- C++ -*-===//
//
// A Connection to a Shard of this process: the embedded default of
// heterps-run and the Python Trainer, and the servers of tests. Apart from
// the client so that a client of remote servers (heterps-ps) links neither
// the shard nor its RocksDB tier.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_LOCALCONNECTION_H
#define HETERPS_PS_LOCALCONNECTION_H

#include "heterps/PS/Client.h"
#include "heterps/PS/Shard.h"

#include <memory>

namespace heterps::ps {

/// Calls `shard` in this process.
std::unique_ptr<Connection> connectLocal(Shard &shard);

} // namespace heterps::ps

#endif // HETERPS_PS_LOCALCONNECTION_H
