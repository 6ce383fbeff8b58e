//===- Flags.cpp - The PS options every tool names alike ------------------===//

#include "heterps/PS/Flags.h"

using namespace heterps;
using namespace heterps::ps;

void ClientFlags::declare(Flags &flags) {
  flags.option("--ps", servers, "HOST:PORT,...",
               "the PS servers, in shard order");
  flags.option("--ps-deadline", deadlineSeconds, "SECONDS",
               "a PS call fails with UNAVAILABLE after this long, retries "
               "included (default 10)",
               0, 86400, /*minExclusive=*/true);
  flags.option("--ps-tls-ca", tlsCA, "FILE",
               "talk TLS to the servers, whose certificates this CA (PEM) "
               "signed");
  flags.option("--ps-tls-cert", tlsCert, "FILE",
               "this client's certificate (PEM), for servers that require "
               "client certificates (mutual TLS); with --ps-tls-key");
  flags.option("--ps-tls-key", tlsKey, "FILE",
               "the private key (PEM) of --ps-tls-cert");
  flags.option("--ps-tls-server-name", tlsServerName, "NAME",
               "check the servers' certificates against NAME instead of "
               "each address's host");
  flags.option("--ps-token-file", tokenFile, "FILE",
               "send this token (the file's first line) with every PS call");
  flags.choice("--ps-wire", wire, {"f32", "f16", "bf16"},
               "rows and gradients travel to the PS servers as 32-bit "
               "floats (default), or as 16-bit ones, half the bytes (f16: "
               "rows as f16, gradients as bf16; bf16: both bf16, f32's "
               "range with 8 bits of mantissa)");
}

std::string ClientFlags::check() const {
  if (!servers.empty())
    if (std::string error = checkServerList(servers); !error.empty())
      return "--ps: " + error;
  if ((!tlsCert.empty() || !tlsKey.empty() || !tlsServerName.empty()) &&
      tlsCA.empty())
    return "--ps-tls-cert, --ps-tls-key and --ps-tls-server-name need "
           "--ps-tls-ca";
  if (tlsCert.empty() != tlsKey.empty())
    return "--ps-tls-cert and --ps-tls-key go together";
  return "";
}

bool ClientFlags::anySecurityOrWire() const {
  return !tlsCA.empty() || !tlsCert.empty() || !tlsKey.empty() ||
         !tokenFile.empty() || !tlsServerName.empty() || wire != "f32";
}

ClientOptions ClientFlags::clientOptions() const {
  ClientOptions o;
  o.deadlineSeconds = deadlineSeconds;
  if (!tlsCA.empty()) {
    o.tlsCA = readCredentialFile(tlsCA, "--ps-tls-ca");
    // gRPC reports roots it cannot load only as calls that time out.
    if (o.tlsCA.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
      runtime::fail("--ps-tls-ca '", tlsCA,
                    "' is not PEM (no -----BEGIN CERTIFICATE----- line)");
  }
  if (!tlsCert.empty())
    o.tlsCert = readCredentialFile(tlsCert, "--ps-tls-cert");
  if (!tlsKey.empty())
    o.tlsKey = readCredentialFile(tlsKey, "--ps-tls-key");
  o.tlsServerName = tlsServerName;
  o.wire = wire;
  if (!tokenFile.empty())
    o.token = readCredentialFile(tokenFile, "--ps-token-file", true);
  return o;
}

void TableFlags::declare(Flags &flags) {
  flags.option("--admit-min-count", admitMinCount, "N",
               "a key gets a row after N sightings (default 0: at once); "
               "until then its pulls read zeros and its pushes are dropped");
  flags.option("--ttl-seconds", ttlSeconds, "X",
               "evict rows unused for X seconds (default 0: never)", 0);
  flags.flag("--skip-non-finite", skipNonFinite,
             "skip and count rows with NaN/Inf gradients instead of failing "
             "the push");
  flags.choice("--table-storage", storage, {"memory", "rocksdb"},
               "memory (default), or rocksdb: rows beyond --table-cache-rows "
               "per server live in the server's RocksDB");
  flags.option("--table-cache-rows", cacheRows, "N",
               "with --table-storage=rocksdb, rows kept in memory per server "
               "(default 1048576)",
               1);
}

std::string TableFlags::check(const Flags &flags) const {
  if (flags.given("table-cache-rows") && storage != "rocksdb")
    return "--table-cache-rows is for tables of --table-storage=rocksdb";
  return "";
}

void TableFlags::applyTo(v1::TableConfig &config) const {
  config.set_admit_min_count(admitMinCount);
  config.set_ttl_seconds(ttlSeconds);
  config.set_non_finite(skipNonFinite ? v1::NON_FINITE_SKIP
                                      : v1::NON_FINITE_REJECT);
  config.set_storage(storage == "rocksdb" ? v1::STORAGE_ROCKSDB
                                          : v1::STORAGE_MEMORY);
  config.set_cache_rows(cacheRows);
}
