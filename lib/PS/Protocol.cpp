//===- Protocol.cpp - What clients and servers of the PS agree on ---------===//

#include "heterps/PS/Protocol.h"

#include "heterps/Runtime/Hash.h"

using namespace heterps;
using namespace heterps::ps;

using runtime::fnv1a;
using runtime::splitmix64;

uint32_t ps::virtualShardOf(uint64_t key) {
  return static_cast<uint32_t>(splitmix64(key) % kVirtualShards);
}

uint32_t ps::serverOfName(const std::string &name, uint32_t servers) {
  return static_cast<uint32_t>(fnv1a(name.data(), name.size()) % servers);
}

const char *ps::codeName(Code code) {
  switch (code) {
  case Code::OK:
    return "OK";
  case Code::InvalidArgument:
    return "INVALID_ARGUMENT";
  case Code::NotFound:
    return "NOT_FOUND";
  case Code::AlreadyExists:
    return "ALREADY_EXISTS";
  case Code::ResourceExhausted:
    return "RESOURCE_EXHAUSTED";
  case Code::FailedPrecondition:
    return "FAILED_PRECONDITION";
  case Code::Internal:
    return "INTERNAL";
  case Code::Unavailable:
    return "UNAVAILABLE";
  case Code::PermissionDenied:
    return "PERMISSION_DENIED";
  case Code::Unauthenticated:
    return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}
