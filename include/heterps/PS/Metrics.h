//===- Metrics.h - The PS servers' metrics as one exposition ----*- C++ -*-===//
//
// Each server answers its metrics in Prometheus's text format. A scraper
// of several servers through `heterps-ps metrics` needs one exposition:
// every family's HELP and TYPE once, its samples together, and a label
// that tells the servers apart.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_METRICS_H
#define HETERPS_PS_METRICS_H

#include <string>
#include <vector>

namespace heterps::ps {

/// Merges the expositions of servers 0, 1, ...: each sample gets the label
/// shard="i" of its server, and the families keep the order in which they
/// first appear. A sample line before any HELP or TYPE line is its own
/// family; other comment lines are dropped.
std::string mergeMetrics(const std::vector<std::string> &expositions);

} // namespace heterps::ps

#endif // HETERPS_PS_METRICS_H
