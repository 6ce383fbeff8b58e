//===- ClusterTest.cpp - Cluster files and profile tables -----------------===//

#include "heterps/Schedule/Cluster.h"
#include "heterps/Schedule/Problem.h"

#include <gtest/gtest.h>

using namespace heterps::schedule;

namespace {

std::string errorOf(llvm::Expected<Cluster> cluster) {
  if (cluster)
    return "";
  return llvm::toString(cluster.takeError());
}

constexpr const char *kTwoTypes = R"json({
  "name": "test",
  "resources": [
    {"name": "cpu", "kind": "cpu", "peak_gflops": 100, "memory_gbps": 10,
     "memory_gb": 16, "price_per_hour": 1, "units": 8},
    {"name": "gpu", "kind": "gpu", "peak_gflops": 1000, "memory_gbps": 100,
     "memory_gb": 40, "price_per_hour": 10, "units": 4, "op_overhead_us": 0}
  ],
  "links": [
    {"from": "cpu", "to": "cpu", "gbps": 1, "latency_us": 10},
    {"from": "cpu", "to": "gpu", "gbps": 2, "latency_us": 20},
    {"from": "gpu", "to": "cpu", "gbps": 3, "latency_us": 30},
    {"from": "gpu", "to": "gpu", "gbps": 10, "latency_us": 1}
  ],
  "parameter_server": {"links": [
    {"from": "cpu", "gbps": 1, "latency_us": 100},
    {"from": "gpu", "gbps": 5, "latency_us": 100}]}
})json";

TEST(ClusterTest, ParsesTypesLinksAndDefaults) {
  llvm::Expected<Cluster> cluster = parseCluster(kTwoTypes, "two.json");
  ASSERT_TRUE(static_cast<bool>(cluster))
      << llvm::toString(cluster.takeError());
  ASSERT_EQ(cluster->resources.size(), 2u);
  EXPECT_EQ(cluster->name, "test");
  EXPECT_EQ(cluster->find("gpu"), 1);
  EXPECT_EQ(cluster->find("tpu"), -1);
  EXPECT_EQ(cluster->resources[1].kind, ResourceKind::GPU);
  EXPECT_EQ(cluster->resources[0].units, 8);
  // The CPU's overhead is the default, the GPU's is given.
  EXPECT_DOUBLE_EQ(cluster->resources[0].opOverheadUs, 2.0);
  EXPECT_DOUBLE_EQ(cluster->resources[1].opOverheadUs, 0.0);
  EXPECT_DOUBLE_EQ(cluster->links[0][1].gbps, 2);
  EXPECT_DOUBLE_EQ(cluster->links[1][0].gbps, 3);
  EXPECT_DOUBLE_EQ(cluster->psLinks[1].gbps, 5);
  EXPECT_DOUBLE_EQ(cluster->links[0][1].transferSeconds(2e9), 1.0 + 20e-6);
  EXPECT_EQ(cluster->ofKind(ResourceKind::GPU), std::vector<int>{1});
}

TEST(ClusterTest, OneDirectionServesBoth) {
  std::string text = kTwoTypes;
  size_t at = text.find(R"({"from": "gpu", "to": "cpu")");
  text.erase(at, text.find('}', at) - at + 2);
  llvm::Expected<Cluster> cluster = parseCluster(text, "two.json");
  ASSERT_TRUE(static_cast<bool>(cluster))
      << llvm::toString(cluster.takeError());
  EXPECT_DOUBLE_EQ(cluster->links[1][0].gbps, 2);
}

/// kTwoTypes with the first `from` replaced by `to`.
std::string replaced(const std::string &from, const std::string &to) {
  std::string text = kTwoTypes;
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(ClusterTest, ErrorsNameTheFileAndThePath) {
  EXPECT_EQ(
      errorOf(parseCluster(replaced("\"units\": 4", "\"units\": 0"), "c.json")),
      "c.json: $.resources[1].units: expected a positive number, got "
      "0.000000");
  // A count too big for 64 bits was converted to an integer before.
  EXPECT_EQ(
      errorOf(
          parseCluster(replaced("\"units\": 4", "\"units\": 1e300"), "c.json")),
      "c.json: $.resources[1].units: expected at most 1099511627776, got " +
          std::to_string(1e300));
  EXPECT_EQ(
      errorOf(
          parseCluster(replaced("\"units\": 4", "\"units\": 2.5"), "c.json")),
      "c.json: $.resources[1].units: expected a whole number, got 2.500000");
  EXPECT_EQ(errorOf(parseCluster(replaced("\"kind\": \"gpu\"", "\"kind\": "
                                                               "\"tpu\""),
                                 "c.json")),
            "c.json: $.resources[1].kind: expected \"cpu\" or \"gpu\"");
  EXPECT_EQ(
      errorOf(parseCluster(replaced("\"price_per_hour\": 10,", ""), "c.json")),
      "c.json: $.resources[1].price_per_hour: missing");
  EXPECT_EQ(errorOf(parseCluster(replaced("\"to\": \"gpu\", \"gbps\": 10",
                                          "\"to\": \"tpu\", \"gbps\": 10"),
                                 "c.json")),
            "c.json: $.links[3].to: expected the name of a resource type, got "
            "'tpu'");
  EXPECT_EQ(errorOf(parseCluster(
                replaced("\"name\": \"gpu\"", "\"name\": \"cpu\""), "c.json")),
            "c.json: $.resources[1].name: resource type 'cpu' is listed twice");
  EXPECT_EQ(
      errorOf(parseCluster(
          replaced(
              R"({"from": "gpu", "to": "gpu", "gbps": 10, "latency_us": 1})",
              R"({"from": "gpu", "to": "cpu", "gbps": 10, "latency_us": 1})"),
          "c.json")),
      "c.json: $.links[3]: a second link from 'gpu' to 'cpu'");
  EXPECT_EQ(errorOf(parseCluster(replaced(R"(,
    {"from": "gpu", "gbps": 5, "latency_us": 100})",
                                          ""),
                                 "c.json")),
            "c.json: $.parameter_server.links: no link from 'gpu' to the "
            "parameter server");
  // The last of two links won.
  EXPECT_EQ(errorOf(parseCluster(
                replaced(R"({"from": "gpu", "gbps": 5, "latency_us": 100})",
                         R"({"from": "cpu", "gbps": 5, "latency_us": 100})"),
                "c.json")),
            "c.json: $.parameter_server.links[1].from: a second link from "
            "'cpu' to the parameter server");
  std::string syntax = errorOf(parseCluster("{\"resources\": [}", "c.json"));
  EXPECT_NE(syntax.find("c.json: not valid JSON: [1:16"), std::string::npos)
      << syntax;
}

TEST(ClusterTest, UnknownKeysAreNamedWithTheNearestKnownOne) {
  // A misspelled optional key would otherwise leave its default in place.
  EXPECT_EQ(errorOf(parseCluster(
                replaced("\"op_overhead_us\": 0", "\"op_overhead_usec\": 0"),
                "c.json")),
            "c.json: $.resources[1].op_overhead_usec: unknown key; did you "
            "mean 'op_overhead_us'? (known: name, kind, peak_gflops, "
            "memory_gbps, memory_gb, price_per_hour, units, op_overhead_us)");
  EXPECT_EQ(
      errorOf(parseCluster(replaced("\"name\": \"test\"", "\"nmae\": \"test\""),
                           "c.json")),
      "c.json: $.nmae: unknown key; did you mean 'name'? (known: name, "
      "description, resources, links, parameter_server)");
  EXPECT_EQ(errorOf(parseCluster(
                replaced("\"latency_us\": 1}", "\"latency_us\": 1, \"x\": 1}"),
                "c.json")),
            "c.json: $.links[3].x: unknown key (known: from, to, gbps, "
            "latency_us)");
  EXPECT_EQ(errorOf(parseCluster(replaced("\"from\": \"gpu\", \"gbps\": 5",
                                          "\"from\": \"gpu\", \"gpbs\": 5"),
                                 "c.json")),
            "c.json: $.parameter_server.links[1].gpbs: unknown key; did you "
            "mean 'gbps'? (known: from, gbps, latency_us)");
}

TEST(ClusterTest, RepeatedKeysAreErrors) {
  // llvm::json keeps one of the two values: which one the user meant is
  // unknowable.
  EXPECT_EQ(
      errorOf(parseCluster(
          replaced("\"units\": 4", "\"units\": 4, \"units\": 64"), "c.json")),
      "c.json: $.resources[1]: the key 'units' appears twice (line 7)");
  EXPECT_EQ(
      errorOf(parseCluster(replaced("\"name\": \"test\"",
                                    "\"name\": \"a\", \"n\\u0061me\": \"b\""),
                           "c.json")),
      "c.json: $: the key 'name' appears twice (line 2)");
  EXPECT_EQ(errorOf(parseCluster(
                replaced("\"gbps\": 5, \"latency_us\": 100",
                         "\"gbps\": 5, \"latency_us\": 100, \"gbps\": 6"),
                "c.json")),
            "c.json: $.parameter_server.links[1]: the key 'gbps' appears "
            "twice (line 17)");
  // The same key in two objects, or inside a string, is no repeat.
  EXPECT_EQ(errorOf(parseCluster(replaced("\"name\": \"test\"",
                                          "\"name\": \"{\\\"name\\\": 1}\""),
                                 "c.json")),
            "");
}

TEST(ClusterTest, MissingLinkIsNamed) {
  std::string text = kTwoTypes;
  std::string link =
      R"({"from": "gpu", "to": "gpu", "gbps": 10, "latency_us": 1})";
  size_t at = text.find(link);
  text.erase(at, link.size());
  text.erase(text.rfind(',', at), 1);
  EXPECT_EQ(errorOf(parseCluster(text, "c.json")),
            "c.json: $.links: no link between 'gpu' and 'gpu' (links are "
            "symmetric unless both directions are given; a type also needs a "
            "link to itself)");
}

TEST(ClusterTest, MissingFileIsAnError) {
  std::string error = errorOf(loadCluster("/nonexistent/cluster.json"));
  EXPECT_NE(error.find("cannot read cluster file '/nonexistent/cluster.json'"),
            std::string::npos)
      << error;
}

TEST(ClusterTest, ExampleClustersLoad) {
  for (const char *name :
       {"aws-c6i-p4d.json", "aws-c6i-p3-p4d.json", "gcp-n2-a2.json"}) {
    std::string path =
        std::string(HETERPS_SOURCE_DIR) + "/examples/clusters/" + name;
    llvm::Expected<Cluster> cluster = loadCluster(path);
    EXPECT_TRUE(static_cast<bool>(cluster))
        << name << ": " << llvm::toString(cluster.takeError());
  }
}

TEST(ProfileTableTest, ParsesAndValidates) {
  llvm::Expected<ProfileTable> table = parseProfileTable(
      R"({"batch_size": 256, "ops": [
           {"op": "gemm_1", "resource": "gpu", "seconds": 0.002},
           {"op": "gemm_1", "resource": "cpu", "seconds": 0.02}]})",
      "p.json");
  ASSERT_TRUE(static_cast<bool>(table)) << llvm::toString(table.takeError());
  EXPECT_EQ(table->batchSize, 256);
  EXPECT_DOUBLE_EQ(table->seconds["gemm_1"]["cpu"], 0.02);
  llvm::Expected<ProfileTable> bad = parseProfileTable(
      R"({"batch_size": 256, "ops": [{"op": "x", "resource": "gpu", "seconds": -1}]})",
      "p.json");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "p.json: $.ops[0].seconds: expected a non-negative number, got "
            "-1.000000");
  llvm::Expected<ProfileTable> misspelled = parseProfileTable(
      R"({"batch_size": 256, "ops": [{"op": "x", "resource": "gpu", "second": 1}]})",
      "p.json");
  ASSERT_FALSE(static_cast<bool>(misspelled));
  // The last of two times won.
  llvm::Expected<ProfileTable> twice = parseProfileTable(
      R"({"batch_size": 256, "ops": [
           {"op": "x", "resource": "gpu", "seconds": 1},
           {"op": "x", "resource": "gpu", "seconds": 2}]})",
      "p.json");
  ASSERT_FALSE(static_cast<bool>(twice));
  EXPECT_EQ(llvm::toString(twice.takeError()),
            "p.json: $.ops[1]: a second time of op 'x' on 'gpu'");
  EXPECT_EQ(llvm::toString(misspelled.takeError()),
            "p.json: $.ops[0].second: unknown key; did you mean 'seconds'? "
            "(known: op, resource, seconds)");
}

} // namespace
