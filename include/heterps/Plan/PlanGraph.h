//===- PlanGraph.h - A plan as a Graphviz graph -----------------*- C++ -*-===//
//
// The picture of a plan that `heterps-opt --heterps-view-plan` and
// `heterps-run --print-plan=dot` write: one box per stage (its resource,
// kind, units and ops), each op filled with its resource type's colour,
// edges along the values inside a stage, and one edge per channel from its
// send to its recv labelled with the bytes per sample it carries. Render it
// with Graphviz (scripts/render-plan.sh).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLAN_PLANGRAPH_H
#define HETERPS_PLAN_PLANGRAPH_H

#include "heterps/plan.pb.h"

#include <string>

namespace heterps::plan {

/// The plan in Graphviz's DOT language. The plan must have passed
/// verifyPlan.
std::string printPlanDot(const Plan &plan);

/// The bytes one sample of a value of `type` takes (its dimensions after
/// the first, the batch, times its element size), or -1 when a dimension
/// other than the first is unknown.
int64_t bytesPerSample(const TensorType &type);

} // namespace heterps::plan

#endif // HETERPS_PLAN_PLANGRAPH_H
