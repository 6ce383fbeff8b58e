//===- FlagsTest.cpp - The tools' flags module ----------------------------===//

#include "heterps/Support/Flags.h"

#include <gtest/gtest.h>

using namespace heterps;

namespace {
struct Values {
  std::string plan, data, printPlan, wire = "f32";
  int64_t epochs = 1;
  int threads = 1;
  uint32_t shard = 0;
  uint64_t seed = 1;
  double deadline = 10;
  bool infer = false, quiet = false;
  std::vector<std::string> inputs;
};

/// The flags of a small heterps-run-like tool over `v`.
void declare(Flags &flags, Values &v) {
  flags.positional("plan file", v.plan)
      .option("--data", v.data, "FILES", "training data")
      .option("--epochs", v.epochs, "N", "passes", 1)
      .option("--threads", v.threads, "N", "threads", 1, 1024)
      .option("--shard-index", v.shard, "I", "shard", 0, 65535)
      .option("--seed", v.seed, "N", "seed")
      .option("--deadline", v.deadline, "SECONDS", "per call", 0, 3600, true)
      .choice("--wire", v.wire, {"f32", "f16", "bf16"}, "row format")
      .flag("--infer", v.infer, "forward only")
      .flag("-q,--quiet", v.quiet, "quiet")
      .optionalValue("--print-plan", v.printPlan, "text", {"text", "dot"},
                     "print the plan")
      .list("--input", v.inputs, "NAME=FILE", "an input")
      .renamed("lr", "learning-rate");
}

std::string parse(const std::vector<std::string> &args, Values &v) {
  Flags flags("tool", "usage: tool PLAN\n");
  declare(flags, v);
  return flags.parse(args);
}
} // namespace

TEST(FlagsTest, BothValueSpellingsAndFlags) {
  Values v;
  ASSERT_EQ(parse({"p.pb", "--data", "a.tsv", "--epochs=3", "--threads", "4",
                   "--infer", "-q", "--wire", "bf16", "--input", "x=1.pb",
                   "--input=y=2.pb", "--seed=18446744073709551615",
                   "--deadline", "0.5", "--print-plan"},
                  v),
            "");
  EXPECT_EQ(v.plan, "p.pb");
  EXPECT_EQ(v.data, "a.tsv");
  EXPECT_EQ(v.epochs, 3);
  EXPECT_EQ(v.threads, 4);
  EXPECT_TRUE(v.infer);
  EXPECT_TRUE(v.quiet);
  EXPECT_EQ(v.wire, "bf16");
  EXPECT_EQ(v.inputs, (std::vector<std::string>{"x=1.pb", "y=2.pb"}));
  EXPECT_EQ(v.seed, UINT64_MAX);
  EXPECT_EQ(v.deadline, 0.5);
  EXPECT_EQ(v.printPlan, "text");
}

TEST(FlagsTest, OptionalValueNeverTakesTheNextArgument) {
  Values v;
  ASSERT_EQ(parse({"--print-plan", "p.pb"}, v), "");
  EXPECT_EQ(v.plan, "p.pb");
  EXPECT_EQ(v.printPlan, "text");
  Values w;
  ASSERT_EQ(parse({"--print-plan=dot", "p.pb", "--infer=false"}, w), "");
  EXPECT_EQ(w.printPlan, "dot");
  EXPECT_FALSE(w.infer);
}

TEST(FlagsTest, UnknownOptionsNameTheNearest) {
  Values v;
  EXPECT_EQ(parse({"p.pb", "--epoch=2"}, v),
            "unknown option '--epoch=2'; did you mean '--epochs'?");
  EXPECT_EQ(parse({"p.pb", "--zzzzzz"}, v), "unknown option '--zzzzzz'");
  EXPECT_EQ(parse({"p.pb", "-x"}, v), "unknown option '-x'");
  EXPECT_EQ(parse({"p.pb", "--lr=0.1"}, v), "--lr is now --learning-rate");
}

TEST(FlagsTest, NumbersAreRangeChecked) {
  Values v;
  EXPECT_EQ(parse({"--epochs=0"}, v),
            "--epochs takes a whole number >= 1, got '0'");
  EXPECT_EQ(parse({"--threads=2.5"}, v),
            "--threads takes a whole number from 1 to 1024, got '2.5'");
  EXPECT_EQ(parse({"--shard-index=4294967296"}, v),
            "--shard-index takes a whole number from 0 to 65535, got "
            "'4294967296'");
  EXPECT_EQ(parse({"--seed=-1"}, v),
            "--seed takes a whole number >= 0, got '-1'");
  EXPECT_EQ(parse({"--epochs=99999999999999999999"}, v),
            "--epochs takes a whole number >= 1, got '99999999999999999999' "
            "(more than 64 bits)");
  EXPECT_EQ(parse({"--deadline=0"}, v),
            "--deadline takes a finite number > 0 and <= 3600, got '0'");
  EXPECT_EQ(parse({"--deadline=nan"}, v),
            "--deadline takes a finite number > 0 and <= 3600, got 'nan'");
  EXPECT_EQ(parse({"--epochs= 3"}, v),
            "--epochs takes a whole number >= 1, got ' 3'");
}

TEST(FlagsTest, MistakesAreErrors) {
  Values v;
  EXPECT_EQ(parse({"--wire=f8"}, v), "--wire takes f32, f16 or bf16, got 'f8'");
  EXPECT_EQ(parse({"--infer=maybe"}, v),
            "--infer takes no value (or true or false), got 'maybe'");
  EXPECT_EQ(parse({"--epochs=2", "--epochs=3"}, v),
            "--epochs is given more than once ('2', '3')");
  EXPECT_EQ(parse({"a.pb", "b.pb"}, v),
            "more than one plan file: 'a.pb' and 'b.pb'");
  EXPECT_EQ(parse({"--data", "--infer"}, v),
            "--data needs a value (got the option '--infer')");
  EXPECT_EQ(parse({"p.pb", "--data"}, v), "--data needs a value");
  // "--data=" is not "--data": the next argument is not its value.
  EXPECT_EQ(parse({"--data=", "--epochs=1"}, v),
            "--data is given an empty value");
  // A value that ends in '=' is a value.
  EXPECT_EQ(parse({"p.pb", "--input=x="}, v), "");
  EXPECT_EQ(v.inputs, std::vector<std::string>{"x="});
  EXPECT_EQ(parse({"--print-plan=svg"}, v),
            "--print-plan takes text or dot, got 'svg'");
}

TEST(FlagsTest, HelpListsGroupsAndVersionNamesTheTool) {
  Values v;
  Flags flags("tool", "usage: tool PLAN\n");
  flags.group("Data");
  declare(flags, v);
  EXPECT_EQ(flags.parse({"--bogus", "--help"}), "");
  EXPECT_TRUE(flags.helpRequested());
  std::string help = flags.help();
  EXPECT_EQ(help.rfind("usage: tool PLAN\n\nData:\n", 0), 0u) << help;
  EXPECT_NE(help.find("  --data=FILES             training data\n"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("  -q, --quiet"), std::string::npos);
  EXPECT_NE(help.find("  --print-plan[=text|dot]  print the plan\n"),
            std::string::npos)
      << help;
  EXPECT_EQ(help.find("--lr"), std::string::npos);
  EXPECT_EQ(flags.versionLine().rfind("tool (HeterPS) ", 0), 0u);
}

TEST(FlagsTest, ForwardedOptionsAreHiddenAndReturned) {
  Values v;
  int np = 0;
  Flags flags("launch", "usage: launch PLAN --np=N\n");
  flags.option("--np", np, "N", "workers", 1);
  flags.beginForwarded();
  declare(flags, v);
  ASSERT_EQ(flags.parse({"p.pb", "--np", "2", "--epochs", "3", "-q", "--input",
                         "a=b", "--input", "c=d"}),
            "");
  EXPECT_EQ(np, 2);
  EXPECT_EQ(flags.forwardedArguments(),
            (std::vector<std::string>{"--epochs=3", "--quiet", "--input=a=b",
                                      "--input=c=d"}));
  EXPECT_EQ(flags.help().find("--epochs"), std::string::npos);
  EXPECT_TRUE(flags.given("epochs"));
  EXPECT_FALSE(flags.given("data"));
}

TEST(FlagsTest, NearestName) {
  EXPECT_EQ(nearestName("learning-rat", {"learning-rate", "seed"}),
            "learning-rate");
  EXPECT_EQ(nearestName("ab", {"xy"}), "");
}
