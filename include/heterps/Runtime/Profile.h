//===- Profile.h - Measured op times as a scheduler profile table -*- C++ -*-=//
//
// heterps-run --profile writes the kernel time of a training step per op in
// the profile-table format that the scheduling passes read (`profile=FILE`,
// docs/Scheduling.md), so that measured times replace the roofline
// estimates. The scheduler names an op by its name location and costs a
// layer (a forward op with its backward ops, `heterps.layer`, and a
// parameter load or constant only it uses) as one op; the table names and
// groups the plan's ops the same way.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PROFILE_H
#define HETERPS_RUNTIME_PROFILE_H

#include "heterps/Runtime/Program.h"

#include <string>
#include <vector>

namespace heterps::runtime {

/// The name `loc("NAME")` (or `loc("NAME"(...))`) gives an op, or "" when
/// its location is not a name.
std::string opNameFromLocation(const std::string &location);

struct ProfileOptions {
  /// The resource type the times are for; "" names each layer's stage's.
  std::string resource;
  /// Stages whose times are not their resource type's (a GPU stage run on
  /// the CPU with --fallback=cpu): left out unless `resource` is given.
  std::vector<bool> foreignStages;
};

struct ProfileSummary {
  /// Entries written; ops left out (no name location, a name that several
  /// layers share, a stage run on another device) and their time.
  int entries = 0;
  int leftOutOps = 0;
  double leftOutSeconds = 0;
};

/// Writes `times` (summed over `steps` training steps of `batchSize`
/// examples) as a profile table: one entry per named layer and resource
/// type, seconds per step.
ProfileSummary writeProfileTable(const std::string &path,
                                 const plan::Plan &plan, const OpTimes &times,
                                 int64_t steps, int64_t batchSize,
                                 const ProfileOptions &options);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_PROFILE_H
