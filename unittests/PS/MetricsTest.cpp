//===- MetricsTest.cpp - The PS servers' metrics as one exposition --------===//

#include "heterps/PS/Metrics.h"

#include <gtest/gtest.h>

using namespace heterps::ps;

// Two servers' expositions: each family's HELP and TYPE once, its samples
// together, each labelled with its server's shard. (Printed one after the
// other they repeated HELP and TYPE, and two servers' samples of a family
// were the same series.)
TEST(PSMetrics, ServersMergeIntoOneExposition) {
  std::string server =
      "# HELP heterps_ps_rpc_seconds Time to answer a call.\n"
      "# TYPE heterps_ps_rpc_seconds histogram\n"
      "heterps_ps_rpc_seconds_bucket{method=\"Pull\",le=\"+Inf\"} N\n"
      "heterps_ps_rpc_seconds_count{method=\"Pull\"} N\n"
      "# HELP heterps_ps_pulled_keys_total Keys pulled.\n"
      "# TYPE heterps_ps_pulled_keys_total counter\n"
      "heterps_ps_pulled_keys_total N\n"
      "# HELP heterps_ps_rows Rows of a table on this server.\n"
      "# TYPE heterps_ps_rows gauge\n";
  std::string zero = server, one = server;
  auto fill = [](std::string s, const char *n) {
    for (size_t at; (at = s.find(" N\n")) != std::string::npos;)
      s.replace(at, 3, std::string(" ") + n + "\n");
    return s;
  };
  zero = fill(zero, "1") + "heterps_ps_rows{table=\"t\"} 5\n";
  // A comment that is neither HELP nor TYPE, and a family server 0 lacks.
  one = "# a comment\n" + fill(one, "2") + "heterps_ps_rows{} 6\n" +
        "# TYPE heterps_ps_extra gauge\nheterps_ps_extra 7\n";
  EXPECT_EQ(
      mergeMetrics({zero, one}),
      "# HELP heterps_ps_rpc_seconds Time to answer a call.\n"
      "# TYPE heterps_ps_rpc_seconds histogram\n"
      "heterps_ps_rpc_seconds_bucket{shard=\"0\",method=\"Pull\",le=\"+Inf\"} "
      "1\n"
      "heterps_ps_rpc_seconds_count{shard=\"0\",method=\"Pull\"} 1\n"
      "heterps_ps_rpc_seconds_bucket{shard=\"1\",method=\"Pull\",le=\"+Inf\"} "
      "2\n"
      "heterps_ps_rpc_seconds_count{shard=\"1\",method=\"Pull\"} 2\n"
      "# HELP heterps_ps_pulled_keys_total Keys pulled.\n"
      "# TYPE heterps_ps_pulled_keys_total counter\n"
      "heterps_ps_pulled_keys_total{shard=\"0\"} 1\n"
      "heterps_ps_pulled_keys_total{shard=\"1\"} 2\n"
      "# HELP heterps_ps_rows Rows of a table on this server.\n"
      "# TYPE heterps_ps_rows gauge\n"
      "heterps_ps_rows{shard=\"0\",table=\"t\"} 5\n"
      "heterps_ps_rows{shard=\"1\"} 6\n"
      "# TYPE heterps_ps_extra gauge\n"
      "heterps_ps_extra{shard=\"1\"} 7\n");
  // A sample before any HELP or TYPE is a family of its own.
  EXPECT_EQ(mergeMetrics({"up 1\n", "up 1\n"}),
            "up{shard=\"0\"} 1\nup{shard=\"1\"} 1\n");
  EXPECT_EQ(mergeMetrics({}), "");
}
