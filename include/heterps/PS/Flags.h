//===- Flags.h - The PS options every tool names alike ----------*- C++ -*-===//
//
// How a tool reaches the PS servers (--ps, --ps-deadline, --ps-tls-*,
// --ps-token-file, --ps-wire) and the table settings a tool can give
// (--admit-min-count, --ttl-seconds, --skip-non-finite, --table-storage,
// --table-cache-rows): declared once here, so heterps-run and heterps-ps
// spell, range-check and document them the same way.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_FLAGS_H
#define HETERPS_PS_FLAGS_H

#include "heterps/PS/Client.h"
#include "heterps/Support/Flags.h"

namespace heterps::ps {

struct ClientFlags {
  /// HOST:PORT,... in shard order (empty: not given).
  std::string servers;
  double deadlineSeconds = 10;
  std::string tlsCA, tlsCert, tlsKey, tlsServerName, tokenFile;
  std::string wire = "f32";

  void declare(Flags &flags);
  /// The combinations that do not go together ("" when they do).
  std::string check() const;
  /// Whether any option but --ps and --ps-deadline was given.
  bool anySecurityOrWire() const;
  /// The client's options, the credential files read (throws naming the
  /// option and the file).
  ClientOptions clientOptions() const;
};

struct TableFlags {
  uint32_t admitMinCount = 0;
  double ttlSeconds = 0;
  bool skipNonFinite = false;
  std::string storage = "memory";
  uint64_t cacheRows = 1 << 20;

  void declare(Flags &flags);
  /// What is wrong with the settings `flags` parsed (an option that does
  /// nothing with the others), or "".
  std::string check(const Flags &flags) const;
  /// Sets these settings on `config`.
  void applyTo(v1::TableConfig &config) const;
};

} // namespace heterps::ps

#endif // HETERPS_PS_FLAGS_H
