//===- Flags.cpp - The command line of HeterPS's tools --------------------===//

#include "heterps/Support/Flags.h"
#include "heterps/Version.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

using namespace heterps;

namespace {
enum class Kind { Value, Flag, OptionalValue, List, Renamed };

struct Option {
  std::string longName, shortName; // without dashes
  std::string value, help, group;
  Kind kind = Kind::Value;
  bool forwarded = false;
  // Converts one value into the tool's variable; returns the error ("takes
  // a whole number from 1 to 10, got 'x'") or "".
  std::function<std::string(const std::string &)> apply;
  // What CLI11 collected, one entry per occurrence.
  std::vector<std::string> raw;

  std::string display() const {
    std::string text = shortName.empty() ? "" : "-" + shortName + ", ";
    text += "--" + longName;
    if (kind == Kind::Value || kind == Kind::List)
      text += "=" + value;
    else if (kind == Kind::OptionalValue)
      text += "[=" + value + "]";
    return text;
  }
};

/// "an integer from A to B" (or >= A, <= B, or nothing) for messages.
template <typename T> std::string rangeText(T min, T max, bool minExclusive) {
  // Unsigned ranges always say their lower end: "-1" is the usual mistake.
  bool low =
      std::is_unsigned_v<T> ||
      (min != std::numeric_limits<T>::lowest() &&
       !(std::is_floating_point_v<T> && min == -std::numeric_limits<T>::max()));
  // A narrower type's upper end is said too: 2^32+1 for an int is out of
  // range, not a number >= 4096.
  bool high = max != std::numeric_limits<T>::max() || sizeof(T) < 8;
  auto str = [](T x) {
    std::ostringstream out;
    out << x;
    return out.str();
  };
  if (low && high && !minExclusive)
    return " from " + str(min) + " to " + str(max);
  std::string text;
  if (low)
    text += (minExclusive ? " > " : " >= ") + str(min);
  if (high)
    text += (low ? " and <= " : " <= ") + str(max);
  return text;
}

/// A whole number of type T in [min, max]; anything else (a sign where
/// none fits, a fraction, a suffix, a value that does not fit) is an error.
template <typename T>
std::function<std::string(const std::string &)>
wholeNumber(const std::string &name, T &out, T min, T max) {
  return [&out, name, min, max](const std::string &v) -> std::string {
    std::string error = "--" + name + " takes a whole number" +
                        rangeText<T>(min, max, false) + ", got '" + v + "'";
    if (v.empty() || std::isspace(static_cast<unsigned char>(v[0])))
      return error;
    char *end = nullptr;
    errno = 0;
    if constexpr (std::is_signed_v<T>) {
      long long x = std::strtoll(v.c_str(), &end, 10);
      if (errno == ERANGE)
        return error + " (more than 64 bits)";
      if (*end || x < static_cast<long long>(min) ||
          x > static_cast<long long>(max))
        return error;
      out = static_cast<T>(x);
    } else {
      unsigned long long x = std::strtoull(v.c_str(), &end, 10);
      if (errno == ERANGE)
        return error + " (more than 64 bits)";
      if (*end || v[0] == '-' || x < static_cast<unsigned long long>(min) ||
          x > static_cast<unsigned long long>(max))
        return error;
      out = static_cast<T>(x);
    }
    return "";
  };
}

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// `text` wrapped to `width` columns, every line but the first indented by
/// `indent` spaces; "\n" in `text` starts a new line.
std::string wrap(const std::string &text, size_t indent, size_t width) {
  std::string result, line;
  auto flush = [&] {
    if (!result.empty())
      result += "\n" + std::string(indent, ' ');
    result += line;
    line.clear();
  };
  std::istringstream paragraphs(text);
  std::string paragraph;
  while (std::getline(paragraphs, paragraph)) {
    std::istringstream words(paragraph);
    std::string word;
    while (words >> word) {
      if (!line.empty() && indent + line.size() + 1 + word.size() > width)
        flush();
      line += (line.empty() ? "" : " ") + word;
    }
    flush();
  }
  return result;
}
} // namespace

std::string heterps::nearestName(const std::string &word,
                                 const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestDistance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string &candidate : candidates) {
    size_t d = editDistance(word, candidate);
    if (d < bestDistance && d < word.size()) {
      bestDistance = d;
      best = candidate;
    }
  }
  return best;
}

struct Flags::Impl {
  std::string program, usage, epilog, group;
  bool forwarding = false;
  std::vector<std::unique_ptr<Option>> options;
  std::string positionalName;
  std::string *positional = nullptr;
  std::vector<std::string> *positionalList = nullptr;
  bool help = false, version = false;

  Option &add(const std::string &names, Kind kind, std::string value,
              std::string help) {
    auto option = std::make_unique<Option>();
    size_t comma = names.find(',');
    std::string longPart =
        comma == std::string::npos ? names : names.substr(comma + 1);
    if (comma != std::string::npos)
      option->shortName = names.substr(1, comma - 1);
    option->longName = longPart.substr(2);
    option->kind = kind;
    option->value = std::move(value);
    option->help = std::move(help);
    option->group = group;
    option->forwarded = forwarding;
    options.push_back(std::move(option));
    return *options.back();
  }

  const Option *find(const std::string &name) const {
    for (const auto &option : options)
      if (option->longName == name)
        return option.get();
    return nullptr;
  }

  /// Whether `arg` is one of the options (the value of an option that
  /// needs one is then missing, not "--infer").
  bool isOptionToken(const std::string &arg) const {
    if (arg.size() < 2 || arg[0] != '-')
      return false;
    if (arg == "--help" || arg == "-h" || arg == "--version")
      return true;
    if (arg[1] != '-') {
      for (const auto &option : options)
        if (!option->shortName.empty() && arg == "-" + option->shortName)
          return true;
      return false;
    }
    std::string name = arg.substr(2, arg.find('=') - 2);
    return find(name) != nullptr;
  }

  std::vector<std::string> longNames() const {
    std::vector<std::string> names{"help", "version"};
    for (const auto &option : options)
      if (option->kind != Kind::Renamed)
        names.push_back(option->longName);
    return names;
  }

  std::string convert(Option &option) {
    const std::string dashed = "--" + option.longName;
    if (option.kind == Kind::Renamed)
      return option.raw.empty() ? "" : dashed + " is now " + option.value;
    if (option.kind != Kind::List && option.raw.size() > 1) {
      std::string values;
      for (const std::string &v : option.raw)
        values += (values.empty() ? "'" : ", '") + v + "'";
      return dashed + " is given more than once (" + values + ")";
    }
    for (const std::string &v : option.raw) {
      if ((option.kind == Kind::Value || option.kind == Kind::List) &&
          isOptionToken(v))
        return dashed + " needs a value (got the option '" + v + "')";
      if (std::string error = option.apply(v); !error.empty())
        return error;
    }
    return "";
  }
};

Flags::Flags(std::string program, std::string usage)
    : impl(std::make_unique<Impl>()) {
  impl->program = std::move(program);
  impl->usage = std::move(usage);
  impl->group = "Options";
}

Flags::~Flags() = default;

Flags &Flags::group(std::string title) {
  impl->group = std::move(title);
  return *this;
}

Flags &Flags::epilog(std::string text) {
  impl->epilog = std::move(text);
  return *this;
}

Flags &Flags::beginForwarded() {
  impl->forwarding = true;
  return *this;
}

Flags &Flags::option(const std::string &names, std::string &out,
                     const std::string &value, const std::string &help) {
  impl->add(names, Kind::Value, value, help).apply =
      [&out](const std::string &v) {
        out = v;
        return std::string();
      };
  return *this;
}

Flags &Flags::option(const std::string &names, int64_t &out,
                     const std::string &value, const std::string &help,
                     int64_t min, int64_t max) {
  Option &option = impl->add(names, Kind::Value, value, help);
  option.apply = wholeNumber(option.longName, out, min, max);
  return *this;
}

Flags &Flags::option(const std::string &names, int &out,
                     const std::string &value, const std::string &help, int min,
                     int max) {
  Option &option = impl->add(names, Kind::Value, value, help);
  option.apply = wholeNumber(option.longName, out, min, max);
  return *this;
}

Flags &Flags::option(const std::string &names, uint64_t &out,
                     const std::string &value, const std::string &help,
                     uint64_t min, uint64_t max) {
  Option &option = impl->add(names, Kind::Value, value, help);
  option.apply = wholeNumber(option.longName, out, min, max);
  return *this;
}

Flags &Flags::option(const std::string &names, uint32_t &out,
                     const std::string &value, const std::string &help,
                     uint32_t min, uint32_t max) {
  Option &option = impl->add(names, Kind::Value, value, help);
  option.apply = wholeNumber(option.longName, out, min, max);
  return *this;
}

Flags &Flags::option(const std::string &names, double &out,
                     const std::string &value, const std::string &help,
                     double min, double max, bool minExclusive) {
  Option &option = impl->add(names, Kind::Value, value, help);
  option.apply = [&out, name = option.longName, min, max,
                  minExclusive](const std::string &v) -> std::string {
    char *end = nullptr;
    double x = v.empty() || std::isspace(static_cast<unsigned char>(v[0]))
                   ? NAN
                   : std::strtod(v.c_str(), &end);
    bool inRange = minExclusive ? x > min : x >= min;
    if (!std::isfinite(x) || *end || !inRange || x > max)
      return "--" + name + " takes a finite number" +
             rangeText<double>(min, max, minExclusive) + ", got '" + v + "'";
    out = x;
    return "";
  };
  return *this;
}

/// "a, b or c".
static std::string alternatives(const std::vector<std::string> &choices) {
  std::string text;
  for (size_t i = 0; i < choices.size(); ++i)
    text += (i == 0                    ? ""
             : i + 1 == choices.size() ? " or "
                                       : ", ") +
            choices[i];
  return text;
}

/// "; did you mean 'x'?" when `word` is a likely misspelling of a choice.
static std::string didYouMean(const std::string &word,
                              const std::vector<std::string> &choices) {
  std::string near = nearestName(word, choices);
  return near.empty() ? "" : "; did you mean '" + near + "'?";
}

/// `text` split at commas (an empty text: no items).
static std::vector<std::string> splitCommas(const std::string &text) {
  std::vector<std::string> items;
  size_t at = 0;
  while (!text.empty() && at <= text.size()) {
    size_t comma = std::min(text.find(',', at), text.size());
    items.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return items;
}

Flags &Flags::option(const std::string &names, std::vector<int64_t> &out,
                     const std::string &value, const std::string &help,
                     int64_t min, int64_t max) {
  Option &option = impl->add(names, Kind::Value, value, help);
  option.apply = [&out, name = option.longName, min,
                  max](const std::string &v) -> std::string {
    std::vector<int64_t> values;
    for (const std::string &item : splitCommas(v)) {
      int64_t x = 0;
      std::string error = wholeNumber(name, x, min, max)(item);
      if (!error.empty())
        return "--" + name + " takes comma-separated whole numbers" +
               rangeText<int64_t>(min, max, false) + ", got '" + v + "'";
      values.push_back(x);
    }
    if (values.empty())
      return "--" + name + " needs at least one number";
    out = std::move(values);
    return "";
  };
  return *this;
}

Flags &Flags::choices(const std::string &names, std::vector<std::string> &out,
                      std::vector<std::string> choices,
                      const std::string &help) {
  Option &option = impl->add(names, Kind::Value, "A,B,...", help);
  option.apply = [&out, name = option.longName,
                  choices](const std::string &v) -> std::string {
    std::vector<std::string> values = splitCommas(v);
    for (const std::string &item : values)
      if (std::find(choices.begin(), choices.end(), item) == choices.end())
        return "--" + name + ": unknown '" + item + "'" +
               didYouMean(item, choices) + " (known: " + alternatives(choices) +
               ")";
    if (values.empty())
      return "--" + name + " needs at least one of " + alternatives(choices);
    out = std::move(values);
    return "";
  };
  return *this;
}

Flags &Flags::choice(const std::string &names, std::string &out,
                     std::vector<std::string> choices,
                     const std::string &help) {
  std::string value;
  for (const std::string &c : choices)
    value += (value.empty() ? "" : "|") + c;
  Option &option = impl->add(names, Kind::Value, value, help);
  option.apply = [&out, name = option.longName,
                  choices](const std::string &v) -> std::string {
    if (std::find(choices.begin(), choices.end(), v) == choices.end())
      return "--" + name + " takes " + alternatives(choices) + ", got '" + v +
             "'" + didYouMean(v, choices);
    out = v;
    return "";
  };
  return *this;
}

Flags &Flags::flag(const std::string &names, bool &out,
                   const std::string &help) {
  Option &option = impl->add(names, Kind::Flag, "", help);
  option.apply = [&out, name = option.longName](const std::string &v) {
    if (v == "true" || v == "1")
      out = true;
    else if (v == "false" || v == "0")
      out = false;
    else
      return "--" + name + " takes no value (or true or false), got '" + v +
             "'";
    return std::string();
  };
  return *this;
}

Flags &Flags::optionalValue(const std::string &names, std::string &out,
                            std::string implicit,
                            std::vector<std::string> choices,
                            const std::string &help) {
  std::string value;
  for (const std::string &c : choices)
    value += (value.empty() ? "" : "|") + c;
  Option &option = impl->add(names, Kind::OptionalValue, value, help);
  // CLI11 stores "true" for the bare flag.
  option.apply = [&out, name = option.longName, implicit,
                  choices](const std::string &v) -> std::string {
    if (v == "true") {
      out = implicit;
      return "";
    }
    if (std::find(choices.begin(), choices.end(), v) == choices.end())
      return "--" + name + " takes " + alternatives(choices) + ", got '" + v +
             "'";
    out = v;
    return "";
  };
  return *this;
}

Flags &Flags::list(const std::string &names, std::vector<std::string> &out,
                   const std::string &value, const std::string &help) {
  impl->add(names, Kind::List, value, help).apply =
      [&out](const std::string &v) {
        out.push_back(v);
        return std::string();
      };
  return *this;
}

Flags &Flags::custom(const std::string &names, const std::string &value,
                     const std::string &help,
                     std::function<std::string(const std::string &)> parse,
                     bool repeatable) {
  impl->add(names, repeatable ? Kind::List : Kind::Value, value, help).apply =
      std::move(parse);
  return *this;
}

Flags &Flags::positional(const std::string &name, std::string &out) {
  impl->positionalName = name;
  impl->positional = &out;
  return *this;
}

Flags &Flags::positionals(const std::string &name,
                          std::vector<std::string> &out) {
  impl->positionalName = name;
  impl->positionalList = &out;
  return *this;
}

Flags &Flags::renamed(const std::string &oldName, const std::string &newName) {
  impl->add("--" + oldName, Kind::Renamed, "--" + newName, "");
  return *this;
}

std::string Flags::parse(const std::vector<std::string> &args) {
  for (const std::string &arg : args) {
    if (arg == "--")
      break;
    if (arg == "--help" || arg == "-h")
      impl->help = true;
    else if (arg == "--version")
      impl->version = true;
  }
  if (impl->help || impl->version)
    return "";
  // CLI11 takes "--name=" with nothing after it as "--name" and its value
  // from the next argument.
  for (const std::string &arg : args) {
    if (arg == "--")
      break;
    if (arg.size() > 3 && arg.rfind("--", 0) == 0 &&
        arg.find('=') == arg.size() - 1)
      return arg.substr(0, arg.size() - 1) + " is given an empty value";
  }

  CLI::App app;
  app.set_help_flag();
  app.allow_extras();
  for (auto &option : impl->options) {
    std::string names =
        option->shortName.empty()
            ? "--" + option->longName
            : "-" + option->shortName + ",--" + option->longName;
    option->raw.clear();
    CLI::Option *cli = option->kind == Kind::Value ||
                               option->kind == Kind::List ||
                               option->kind == Kind::Renamed
                           ? app.add_option(names, option->raw)
                           : app.add_flag(names, option->raw);
    cli->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    if (option->kind != Kind::Flag && option->kind != Kind::OptionalValue)
      cli->allow_extra_args(false);
  }
  std::vector<std::string> positionals;
  app.add_option("positional", positionals)->expected(0, -1);

  std::vector<const char *> argv{impl->program.c_str()};
  for (const std::string &arg : args)
    argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError &e) {
    std::string what = e.what();
    size_t colon = what.find(':');
    if (what.size() > 7 && what.compare(what.size() - 7, 7, "missing") == 0 &&
        colon != std::string::npos)
      return what.substr(0, colon) + " needs a value";
    return what;
  }

  for (const std::string &extra : app.remaining()) {
    if (extra == "--")
      continue;
    std::string name = extra.substr(extra.find_first_not_of('-'));
    name = name.substr(0, name.find('='));
    std::string message = "unknown option '" + extra + "'";
    if (std::string near = nearestName(name, impl->longNames()); !near.empty())
      message += "; did you mean '--" + near + "'?";
    return message;
  }
  if (impl->positionalList) {
    *impl->positionalList = positionals;
  } else if (!positionals.empty()) {
    if (!impl->positional)
      return "unexpected argument '" + positionals.front() + "'";
    if (positionals.size() > 1)
      return "more than one " + impl->positionalName + ": '" + positionals[0] +
             "' and '" + positionals[1] + "'";
    *impl->positional = positionals.front();
  }
  for (auto &option : impl->options)
    if (std::string error = impl->convert(*option); !error.empty())
      return error;
  return "";
}

void Flags::parse(int argc, char **argv, int first) {
  std::vector<std::string> args(argv + std::min(first, argc), argv + argc);
  std::string error = parse(args);
  if (!error.empty())
    fail(error);
  if (impl->help) {
    std::fputs(help().c_str(), stdout);
    std::exit(0);
  }
  if (impl->version) {
    std::printf("%s\n", versionLine().c_str());
    std::exit(0);
  }
}

bool Flags::helpRequested() const { return impl->help; }
bool Flags::versionRequested() const { return impl->version; }

bool Flags::given(const std::string &name) const {
  const Option *option = impl->find(name);
  return option && !option->raw.empty();
}

std::vector<std::string> Flags::forwardedArguments() const {
  std::vector<std::string> args;
  for (const auto &option : impl->options) {
    if (!option->forwarded)
      continue;
    for (const std::string &v : option->raw) {
      if ((option->kind == Kind::Flag || option->kind == Kind::OptionalValue) &&
          v == "true")
        args.push_back("--" + option->longName);
      else
        args.push_back("--" + option->longName + "=" + v);
    }
  }
  return args;
}

std::string Flags::help() const {
  constexpr size_t kNameColumn = 27, kWidth = 79;
  std::string text = impl->usage;
  std::string current;
  bool first = true;
  for (const auto &option : impl->options) {
    if (option->forwarded || option->kind == Kind::Renamed)
      continue;
    if (first || option->group != current) {
      text += "\n" + option->group + ":\n";
      current = option->group;
      first = false;
    }
    std::string name = "  " + option->display();
    if (name.size() + 1 > kNameColumn)
      text += name + "\n" + std::string(kNameColumn, ' ');
    else
      text += name + std::string(kNameColumn - name.size(), ' ');
    text += wrap(option->help, kNameColumn, kWidth) + "\n";
  }
  text += "\nGeneral:\n";
  text += "  --help                   this text\n";
  text += "  --version                the HeterPS version\n";
  text += "\nOptions take their value as --name=VALUE or --name VALUE.\n";
  if (!impl->epilog.empty())
    text += "\n" + impl->epilog;
  return text;
}

std::string Flags::versionLine() const {
  return impl->program + " (HeterPS) " + HETERPS_VERSION;
}

const std::string &Flags::program() const { return impl->program; }

void Flags::fail(const std::string &message) const {
  std::fprintf(stderr, "%s: %s\n(see %s --help)\n", impl->program.c_str(),
               message.c_str(), impl->program.c_str());
  std::exit(2);
}
