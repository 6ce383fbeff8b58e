//===- Flags.h - The command line of HeterPS's tools ------------*- C++ -*-===//
//
// One flags module for heterps-run (and its serve and launch commands),
// heterps-ps and the benchmarks, so that every tool follows the same rules:
//
//   - `--name=value` and `--name value` both work; a flag takes no value
//     (or `=true` / `=false`);
//   - an unknown option is an error that names it and the nearest known one;
//     an option given twice (other than a list) is an error;
//   - numbers are range-checked as they are read: a count that would wrap,
//     a fraction where a whole number is needed, NaN or infinity are errors
//     naming the option, the range and the value;
//   - `--help` and `--version` everywhere; usage errors exit 2, after
//     `PROGRAM: MESSAGE` and `(see PROGRAM --help)` on standard error.
//
// The tokenizer is CLI11's; the values, the messages and the --help text
// are this module's, so no tool depends on CLI11's headers.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SUPPORT_FLAGS_H
#define HETERPS_SUPPORT_FLAGS_H

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace heterps {

class Flags {
public:
  /// `program` names the tool in messages and --version ("heterps-run
  /// serve"); `usage` is the synopsis and description printed at the top of
  /// --help, verbatim.
  Flags(std::string program, std::string usage);
  ~Flags();
  Flags(const Flags &) = delete;
  Flags &operator=(const Flags &) = delete;

  /// The options added next are listed under `title` in --help.
  Flags &group(std::string title);
  /// Text printed after the options in --help, verbatim.
  Flags &epilog(std::string text);
  /// The options added from here on are accepted but not listed, and
  /// forwardedArguments() returns them (heterps-run launch takes the
  /// workers' options this way).
  Flags &beginForwarded();

  // `names` is "--long" or "-s,--long"; `value` names the value in --help
  // ("--data=FILES"); `help` is one paragraph, wrapped for --help.

  Flags &option(const std::string &names, std::string &out,
                const std::string &value, const std::string &help);
  /// A whole number in [min, max].
  Flags &option(const std::string &names, int64_t &out,
                const std::string &value, const std::string &help,
                int64_t min = std::numeric_limits<int64_t>::min(),
                int64_t max = std::numeric_limits<int64_t>::max());
  Flags &option(const std::string &names, int &out, const std::string &value,
                const std::string &help,
                int min = std::numeric_limits<int>::min(),
                int max = std::numeric_limits<int>::max());
  Flags &option(const std::string &names, uint64_t &out,
                const std::string &value, const std::string &help,
                uint64_t min = 0,
                uint64_t max = std::numeric_limits<uint64_t>::max());
  Flags &option(const std::string &names, uint32_t &out,
                const std::string &value, const std::string &help,
                uint32_t min = 0,
                uint32_t max = std::numeric_limits<uint32_t>::max());
  /// A finite number in [min, max]; with `minExclusive`, (min, max].
  Flags &option(const std::string &names, double &out, const std::string &value,
                const std::string &help,
                double min = -std::numeric_limits<double>::max(),
                double max = std::numeric_limits<double>::max(),
                bool minExclusive = false);
  /// Comma-separated whole numbers, each in [min, max] ("--dims=16,64");
  /// the value replaces the default list.
  Flags &option(const std::string &names, std::vector<int64_t> &out,
                const std::string &value, const std::string &help,
                int64_t min = std::numeric_limits<int64_t>::min(),
                int64_t max = std::numeric_limits<int64_t>::max());
  /// Comma-separated names, each one of `choices` ("--solvers=rl,dp").
  Flags &choices(const std::string &names, std::vector<std::string> &out,
                 std::vector<std::string> choices, const std::string &help);
  /// One of `choices`.
  Flags &choice(const std::string &names, std::string &out,
                std::vector<std::string> choices, const std::string &help);
  /// A flag: `--name` (or `--name=true`) sets `out`, `--name=false` clears
  /// it.
  Flags &flag(const std::string &names, bool &out, const std::string &help);
  /// `--name` alone stores `implicit`; `--name=V` stores one of `choices`
  /// (`--print-plan[=text|dot]`). The next argument is never its value.
  Flags &optionalValue(const std::string &names, std::string &out,
                       std::string implicit, std::vector<std::string> choices,
                       const std::string &help);
  /// A repeatable option; every occurrence appends its value.
  Flags &list(const std::string &names, std::vector<std::string> &out,
              const std::string &value, const std::string &help);
  /// Any other option with a value, converted by `parse`, which returns an
  /// error message ("takes HOST:PORT, got 'x'") or "" when the value is
  /// good; with `repeatable`, it runs for every occurrence in order.
  Flags &custom(const std::string &names, const std::string &value,
                const std::string &help,
                std::function<std::string(const std::string &)> parse,
                bool repeatable = false);
  /// The positional argument (at most one): `name` in messages ("plan
  /// file").
  Flags &positional(const std::string &name, std::string &out);
  /// Any number of positional arguments ("model.onnx").
  Flags &positionals(const std::string &name, std::vector<std::string> &out);
  /// An old spelling: using it is an error that names the new one.
  Flags &renamed(const std::string &oldName, const std::string &newName);

  /// Parses argv[first..argc). Prints --help or --version and exits 0 when
  /// asked; prints the error and exits 2 on a usage error.
  void parse(int argc, char **argv, int first = 1);
  /// Parses `args`; returns the usage error, or "" on success. --help and
  /// --version set helpRequested() / versionRequested().
  std::string parse(const std::vector<std::string> &args);

  bool helpRequested() const;
  bool versionRequested() const;
  /// Whether the option named `name` (its long name, without dashes) was
  /// given.
  bool given(const std::string &name) const;
  /// The options added after beginForwarded() that were given, as
  /// `--name=value` (or `--name`) in command-line order.
  std::vector<std::string> forwardedArguments() const;

  /// The --help text.
  std::string help() const;
  /// "PROGRAM (HeterPS) VERSION".
  std::string versionLine() const;
  const std::string &program() const;
  /// A usage error found after parse (options that contradict each other):
  /// printed like a parse error, exit 2.
  [[noreturn]] void fail(const std::string &message) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The closest of `candidates` to `word` by edit distance, when it is close
/// enough to be a likely misspelling; "" otherwise.
std::string nearestName(const std::string &word,
                        const std::vector<std::string> &candidates);

} // namespace heterps

#endif // HETERPS_SUPPORT_FLAGS_H
