//===- PlanFile.h - Reading and writing plan files --------------*- C++ -*-===//
//
// The plan file is the contract between the compiler and the runtime: a
// magic "HPSPLAN\n", a little-endian uint32 format version, then one
// serialized heterps.plan.Plan (proto/heterps/plan.proto). heterps-opt writes
// plans and heterps-run reads them; this library links neither MLIR nor the
// runtime. The format version changes whenever a reader of the old version
// would misread a new plan.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLAN_PLANFILE_H
#define HETERPS_PLAN_PLANFILE_H

#include "heterps/plan.pb.h"

#include <cstdint>
#include <string>

namespace heterps::plan {

/// Version 2 ends in the FNV-1a-64 of the serialized plan (8 bytes, little
/// endian), so that a changed byte is found; version 1 (no checksum) is
/// still read.
constexpr uint32_t kFormatVersion = 2;
constexpr char kMagic[8] = {'H', 'P', 'S', 'P', 'L', 'A', 'N', '\n'};

/// Reads, parses and verifies a plan file. On failure returns false and
/// sets `error` to a message naming the file and what is wrong (not a plan,
/// another format version, corrupt, ids that point nowhere).
bool readPlanFile(const std::string &path, Plan &plan, std::string &error);
/// Parses plan bytes (with the header) as readPlanFile does; `source` names
/// them in errors.
bool parsePlan(const std::string &bytes, const std::string &source, Plan &plan,
               std::string &error);
/// The header and the serialized message.
std::string serializePlan(const Plan &plan);
/// Writes through a temporary file that is renamed into place, so a reader
/// never sees half a plan.
bool writePlanFile(const Plan &plan, const std::string &path,
                   std::string &error);

/// Checks the references inside a plan: value ids in range, every operand
/// defined before its use in stage order, parameters, tables and channels
/// named by ops exist, channels have one send and one recv. Returns the
/// first problem found, or "" when there is none.
std::string verifyPlan(const Plan &plan);

} // namespace heterps::plan

#endif // HETERPS_PLAN_PLANFILE_H
