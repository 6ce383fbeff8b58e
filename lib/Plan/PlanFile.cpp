//===- PlanFile.cpp - Reading and writing plan files ----------------------===//

#include "heterps/Plan/PlanFile.h"
#include "heterps/Plan/OpSignatures.h"
#include "heterps/Support/AtomicFile.h"
#include "heterps/Support/CheckedMath.h"
#include "heterps/Support/Hash.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

using namespace heterps::plan;

static constexpr size_t kHeaderSize = sizeof(kMagic) + sizeof(uint32_t);
static constexpr size_t kChecksumSize = sizeof(uint64_t);

namespace {
/// The checksum's bytes in the file.
std::string littleEndian64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}
} // namespace

bool heterps::plan::parsePlan(const std::string &bytes,
                              const std::string &source, Plan &plan,
                              std::string &error) {
  if (bytes.size() < kHeaderSize ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    error = source + ": not a HeterPS plan file (no HPSPLAN header); write "
                     "one with heterps-opt --heterps-emit-plan=file=...";
    return false;
  }
  const auto *v =
      reinterpret_cast<const unsigned char *>(bytes.data() + sizeof(kMagic));
  uint32_t version =
      v[0] | (v[1] << 8) | (v[2] << 16) | (static_cast<uint32_t>(v[3]) << 24);
  if (version != kFormatVersion && version != 1) {
    error = source + ": plan format version " + std::to_string(version) +
            ", this build reads versions 1 and " +
            std::to_string(kFormatVersion) +
            "; recompile the model with this heterps-opt";
    return false;
  }
  size_t payload = bytes.size() - kHeaderSize;
  if (version >= 2) {
    if (payload < kChecksumSize) {
      error = source + ": the plan is corrupt (" +
              std::to_string(bytes.size()) +
              " bytes: cut short before its checksum)";
      return false;
    }
    payload -= kChecksumSize;
    if (littleEndian64(
            fnv1a(bytes.data() + kHeaderSize, payload, kFnv1aStandardOffset)) !=
        std::string_view(bytes.data() + kHeaderSize + payload, kChecksumSize)) {
      error = source + ": the plan is corrupt (its checksum does not match: "
                       "a byte changed, or the file was cut short or grew)";
      return false;
    }
  }
  if (!plan.ParseFromArray(bytes.data() + kHeaderSize,
                           static_cast<int>(payload))) {
    error = source +
            ": the plan is corrupt (protobuf parse failed after the "
            "header, " +
            std::to_string(bytes.size()) + " bytes)";
    return false;
  }
  std::string problem = verifyPlan(plan);
  if (!problem.empty()) {
    error = source + ": invalid plan: " + problem;
    return false;
  }
  return true;
}

bool heterps::plan::readPlanFile(const std::string &path, Plan &plan,
                                 std::string &error) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    error = "cannot read plan file '" + path + "': it is a directory";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open plan file '" + path + "': " + std::strerror(errno);
    return false;
  }
  // Read into one buffer of the file's size (a string stream's str()
  // would copy the bytes once more); a pipe has no size and is streamed.
  std::string bytes;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  // A protobuf message holds at most 2 GiB.
  if (size > INT32_MAX) {
    error = "plan file '" + path + "' has " + std::to_string(size) +
            " bytes, more than a plan can hold (2 GiB)";
    return false;
  }
  if (size >= 0) {
    in.seekg(0, std::ios::beg);
    bytes.resize(static_cast<size_t>(size));
    in.read(bytes.data(), size);
  } else {
    in.clear();
    std::ostringstream buffer;
    buffer << in.rdbuf();
    bytes = std::move(buffer).str();
  }
  if (in.bad() || (size >= 0 && !in)) {
    error = "cannot read plan file '" + path + "': " + std::strerror(errno);
    return false;
  }
  return parsePlan(bytes, path, plan, error);
}

/// The magic and the format version, then the plan's bytes.
static std::string planHeader() {
  std::string out(kMagic, sizeof(kMagic));
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((kFormatVersion >> (8 * i)) & 0xff));
  return out;
}

/// Deterministic: map fields (op attributes) in key order, so that one plan
/// always gives the same bytes (a saved plan compares equal to the plan it
/// was loaded from).
static bool serializeTo(const Plan &plan,
                        google::protobuf::io::ZeroCopyOutputStream &stream) {
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  return plan.SerializeToCodedStream(&coded) && !coded.HadError();
}

std::string heterps::plan::serializePlan(const Plan &plan) {
  std::string out = planHeader();
  {
    google::protobuf::io::StringOutputStream stream(&out);
    serializeTo(plan, stream);
  }
  return out +
         littleEndian64(fnv1a(out.data() + kHeaderSize,
                              out.size() - kHeaderSize, kFnv1aStandardOffset));
}

bool heterps::plan::writePlanFile(const Plan &plan, const std::string &path,
                                  std::string &error) {
  error = writeFileAtomically(path, [&](int fd) {
    std::string header = planHeader();
    if (!writeAll(fd, header.data(), header.size()))
      return false;
    // Streamed: a plan with a 640 MB table is not built in memory twice.
    google::protobuf::io::FileOutputStream stream(fd);
    bool written = serializeTo(plan, stream);
    if (!stream.Flush() || !written) {
      errno = stream.GetErrno();
      return false;
    }
    // The checksum of what was written, read back in pieces.
    uint64_t sum = kFnv1aStandardOffset;
    std::string chunk(1 << 20, '\0');
    for (off_t at = kHeaderSize;;) {
      ssize_t n = ::pread(fd, chunk.data(), chunk.size(), at);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return false;
      if (n == 0)
        break;
      sum = fnv1a(chunk.data(), static_cast<size_t>(n), sum);
      at += n;
    }
    std::string trailer = littleEndian64(sum);
    return writeAll(fd, trailer.data(), trailer.size());
  });
  if (!error.empty())
    error = "cannot write plan file: " + error;
  return error.empty();
}

std::string heterps::plan::verifyPlan(const Plan &plan) {
  std::ostringstream err;
  int numValues = plan.values_size();
  for (int i = 0; i < numValues; ++i) {
    const Value &value = plan.values(i);
    if (value.id() != i) {
      err << "value " << i << " has id " << value.id();
      return err.str();
    }
    // Every type the executor allocates: a known element type, dimensions
    // of -1 (the batch) or sizes, and a bounded rank.
    const TensorType &type = value.type();
    if (type.dtype() <= DT_INVALID || !DataType_IsValid(type.dtype())) {
      err << "value " << i << " ('" << value.name() << "') has element type "
          << static_cast<int>(type.dtype());
      return err.str();
    }
    if (type.dims_size() > 8) {
      err << "value " << i << " ('" << value.name() << "') has rank "
          << type.dims_size() << "; at most 8";
      return err.str();
    }
    int64_t elements = 1;
    for (int64_t d : type.dims()) {
      if (d < -1 || d > (int64_t(1) << 40)) {
        err << "value " << i << " ('" << value.name() << "') has dimension "
            << d;
        return err.str();
      }
      // Per sample where the dimension is the batch.
      std::optional<int64_t> next = checkedMul(elements, d < 0 ? 1 : d);
      if (!next || *next > (int64_t(1) << 40)) {
        err << "value " << i << " ('" << value.name()
            << "') has more than 2^40 elements";
        return err.str();
      }
      elements = *next;
    }
  }
  if (plan.outputs_size() == 0)
    return "the plan has no outputs";
  if (plan.micro_batches() < 0 || plan.micro_batches() > 65536) {
    err << "the plan asks for " << plan.micro_batches()
        << " micro-batches; expected 0 to 65536";
    return err.str();
  }
  if (plan.batch_size() < 0) {
    err << "the plan's batch size is " << plan.batch_size();
    return err.str();
  }
  if (plan.has_training()) {
    const Training &training = plan.training();
    if (training.loss_output() < 0 ||
        training.loss_output() >= plan.outputs_size()) {
      err << "the loss is output " << training.loss_output()
          << " of a plan with " << plan.outputs_size() << " outputs";
      return err.str();
    }
    for (int id : training.label_inputs())
      if (std::find(plan.inputs().begin(), plan.inputs().end(), id) ==
          plan.inputs().end()) {
        err << "label value " << id << " is not an input of the plan";
        return err.str();
      }
    // What heterps-autodiff writes: a loss it added, the model's loss op,
    // or a loss spelled out in the graph.
    static const char *const kLosses[] = {"bce",
                                          "mse",
                                          "softmax-ce",
                                          "graph",
                                          "bce_loss",
                                          "mse_loss",
                                          "nll_loss",
                                          "softmax_ce_loss",
                                          "weighted_nll_loss"};
    if (std::find(std::begin(kLosses), std::end(kLosses), training.loss()) ==
        std::end(kLosses)) {
      err << "the training step's loss is '" << training.loss()
          << "'; expected bce, mse, softmax-ce, graph or a loss op's name";
      return err.str();
    }
    int lossId = plan.outputs(training.loss_output());
    if (lossId < 0 || lossId >= numValues) {
      err << "the loss is output " << training.loss_output() << ", value "
          << lossId << " of a plan with " << numValues << " values";
      return err.str();
    }
    const Value &loss = plan.values(lossId);
    if (loss.type().dims_size() != 0 || loss.type().dtype() != F32) {
      err << "the loss is output " << training.loss_output() << " ('"
          << loss.name() << "'), which is not a 0-D f32";
      return err.str();
    }
    static const char *const kOptimizers[] = {"sgd", "momentum", "adam",
                                              "adagrad"};
    if (training.has_optimizer() &&
        std::find(std::begin(kOptimizers), std::end(kOptimizers),
                  training.optimizer().kind()) == std::end(kOptimizers)) {
      err << "the training step's optimizer is '" << training.optimizer().kind()
          << "'; expected sgd, momentum, adam or adagrad";
      return err.str();
    }
  }
  std::set<std::string> inputNames;
  for (int id : plan.inputs())
    // An id out of range is reported with the inputs' other checks below.
    if (id >= 0 && id < numValues && !plan.values(id).name().empty() &&
        !inputNames.insert(plan.values(id).name()).second) {
      err << "two inputs are named '" << plan.values(id).name() << "'";
      return err.str();
    }
  for (int s = 0; s < plan.stages_size(); ++s) {
    const Stage &stage = plan.stages(s);
    if (stage.kind() != "cpu" && stage.kind() != "gpu") {
      err << "stage " << s << " has kind '" << stage.kind()
          << "'; expected cpu or gpu";
      return err.str();
    }
    if (stage.units() < 0 || stage.units() > (int64_t(1) << 20)) {
      err << "stage " << s << " has " << stage.units() << " units";
      return err.str();
    }
    if (!std::isfinite(stage.predicted_throughput()) ||
        stage.predicted_throughput() < 0) {
      err << "stage " << s << " has a predicted throughput of "
          << stage.predicted_throughput() << " samples/s";
      return err.str();
    }
  }
  for (const Channel &c : plan.channels())
    if (c.from_stage() < 0 || c.from_stage() >= plan.stages_size() ||
        c.to_stage() < 0 || c.to_stage() >= plan.stages_size()) {
      err << "channel " << c.id() << " goes from stage " << c.from_stage()
          << " to stage " << c.to_stage() << " of a plan with "
          << plan.stages_size() << " stages";
      return err.str();
    }
  std::vector<bool> defined(numValues, false);
  auto checkId = [&](int id, const char *what) {
    if (id < 0 || id >= numValues) {
      err << what << " names value " << id << " but the plan has " << numValues
          << " values";
      return false;
    }
    return true;
  };
  for (int id : plan.inputs()) {
    if (!checkId(id, "an input"))
      return err.str();
    defined[id] = true;
  }
  // A bag input: rows of ids whose bags start at the offsets of another
  // input, a 1-D integer one that is not bags itself.
  for (int id : plan.inputs()) {
    const Value &value = plan.values(id);
    if (!value.has_bag_offsets())
      continue;
    int offsets = value.bag_offsets();
    auto isInput = [&](int v) {
      return std::find(plan.inputs().begin(), plan.inputs().end(), v) !=
             plan.inputs().end();
    };
    if (offsets == id || !isInput(offsets)) {
      err << "input '" << value.name() << "' has its bag offsets in value "
          << offsets << ", which is not another input of the plan";
      return err.str();
    }
    const Value &starts = plan.values(offsets);
    DataType t = starts.type().dtype();
    if (starts.type().dims_size() != 1 || (t != I64 && t != I32) ||
        starts.has_bag_offsets() || value.type().dims_size() < 1 ||
        value.type().dims(0) >= 0) {
      err << "input '" << value.name() << "' has its bag offsets in input '"
          << starts.name()
          << "': the offsets must be a 1-D i64 or i32 input that is not "
             "bags itself, the bags an input of a dynamic dimension 0";
      return err.str();
    }
  }
  std::set<std::string> tables;
  std::map<std::string, const TensorType *> params;
  for (const DenseParam &p : plan.params()) {
    std::optional<int64_t> elements = checkedProduct(p.type().dims());
    if (p.type().dims_size() > 8 || !elements ||
        *elements > (int64_t(1) << 40)) {
      err << "parameter '" << p.name()
          << "' has a rank above 8, a negative dimension or more than 2^40 "
             "elements";
      return err.str();
    }
    params[p.name()] = &p.type();
  }
  for (int i = 0; i < plan.tables_size(); ++i) {
    const SparseTable &t = plan.tables(i);
    if (t.id() != i) {
      err << "table '" << t.name() << "' has id " << t.id() << ", expected "
          << i;
      return err.str();
    }
    if (t.dim() <= 0 || t.vocab() <= 0) {
      err << "table '" << t.name() << "' has vocab " << t.vocab() << " and dim "
          << t.dim() << "; both must be positive";
      return err.str();
    }
    tables.insert(t.name());
  }
  std::map<int64_t, int> sends, recvs;
  // The stage of each channel's send and receive: the executors wire the
  // channel between the stages it names, so they must agree.
  std::map<int64_t, int> sendStage, recvStage;
  // The executors size a channel's buffers by its type: what is sent and
  // received on it has that type.
  std::map<int64_t, const TensorType *> channelTypes;
  for (const Channel &c : plan.channels())
    channelTypes.emplace(c.id(), &c.type());
  auto typeText = [](const TensorType &t) {
    std::string text = DataType_Name(t.dtype()) + "[";
    for (int i = 0; i < t.dims_size(); ++i)
      text += (i ? "," : "") +
              (t.dims(i) < 0 ? std::string("?") : std::to_string(t.dims(i)));
    return text + "]";
  };
  for (int s = 0; s < plan.stages_size(); ++s) {
    const Stage &stage = plan.stages(s);
    for (const Op &op : stage.ops()) {
      const OpSignature *signature = findOpSignature(op.name());
      if (!signature) {
        err << "op '" << op.name() << "' at " << op.location() << " in stage "
            << stage.index() << " is not an op of the plan format";
        return err.str();
      }
      int operands = op.inputs_size();
      if (operands < signature->minOperands ||
          (signature->maxOperands >= 0 && operands > signature->maxOperands)) {
        err << op.name() << " at " << op.location() << " in stage "
            << stage.index() << " has " << operands << " operand"
            << (operands == 1 ? "" : "s") << ", expected ";
        if (signature->maxOperands == signature->minOperands)
          err << signature->minOperands;
        else if (signature->maxOperands < 0)
          err << "at least " << signature->minOperands;
        else
          err << signature->minOperands << " to " << signature->maxOperands;
        return err.str();
      }
      if (op.outputs_size() != signature->results) {
        err << op.name() << " at " << op.location() << " in stage "
            << stage.index() << " has " << op.outputs_size() << " result"
            << (op.outputs_size() == 1 ? "" : "s") << ", expected "
            << signature->results;
        return err.str();
      }
      // Kernels read attributes by name with defaults: one the op does not
      // have (misspelt, or from another version) would be ignored.
      std::vector<std::string> unknown;
      for (const auto &attribute : op.attrs())
        if (!allowsAttribute(*signature, attribute.first))
          unknown.push_back(attribute.first);
      if (!unknown.empty()) {
        std::sort(unknown.begin(), unknown.end()); // map order is unspecified
        std::string known;
        for (const char *c = signature->attributes; *c; ++c)
          known += *c == ' ' ? std::string(", ") : std::string(1, *c);
        err << op.name() << " at " << op.location() << " in stage "
            << stage.index() << " has attribute '" << unknown.front()
            << "', which " << op.name() << " does not take (its attributes: "
            << (known.empty() ? "none" : known) << ")";
        return err.str();
      }
      // The kernels read these operands as one float type.
      DataType floatType = DT_INVALID;
      for (int i = 0; i < operands; ++i) {
        int id = op.inputs(i);
        if (!checkId(id, ("an operand of " + op.name()).c_str()))
          return err.str();
        if (i < 32 && (signature->floatOperands >> i & 1)) {
          DataType type = plan.values(id).type().dtype();
          if (type != F32 && type != F64 && type != F16 && type != BF16) {
            err << op.name() << " at " << op.location() << " in stage "
                << stage.index() << ": operand " << i << " has element type "
                << DataType_Name(type) << ", expected a float type";
            return err.str();
          }
          if (floatType == DT_INVALID)
            floatType = type;
          if (type != floatType) {
            err << op.name() << " at " << op.location() << " in stage "
                << stage.index() << ": operand " << i << " has element type "
                << DataType_Name(type) << ", the op's other float operands "
                << DataType_Name(floatType);
            return err.str();
          }
        }
        if (!defined[id]) {
          err << op.name() << " at " << op.location() << " in stage "
              << stage.index() << " uses value " << id
              << " before it is defined";
          return err.str();
        }
        std::string_view rules = signature->operandTypes;
        char rule =
            rules.empty() ? '-' : rules[std::min<size_t>(i, rules.size() - 1)];
        DataType have = plan.values(id).type().dtype();
        bool ok = true;
        std::string want;
        if (rule >= '0' && rule <= '9' && rule - '0' < operands) {
          DataType other = plan.values(op.inputs(rule - '0')).type().dtype();
          ok = have == other;
          want =
              DataType_Name(other) + std::string(" (operand ") + rule + "'s)";
        } else if (rule == 'b') {
          ok = have == BOOL;
          want = "BOOL";
        } else if (rule == 'i') {
          ok = have == I8 || have == I16 || have == I32 || have == I64 ||
               have == U8 || have == U16 || have == U32 || have == U64;
          want = "an integer type";
        }
        if (!ok) {
          err << op.name() << " at " << op.location() << " in stage "
              << stage.index() << ": operand " << i << " has element type "
              << DataType_Name(have) << ", expected " << want;
          return err.str();
        }
      }
      for (int r = 0; r < op.outputs_size(); ++r) {
        int id = op.outputs(r);
        if (!checkId(id, ("a result of " + op.name()).c_str()))
          return err.str();
        // The kernels write results of these types.
        char rule = signature->resultTypes[r];
        DataType want = DT_INVALID;
        std::string why;
        if (rule >= '0' && rule <= '9' && rule - '0' < operands) {
          want = plan.values(op.inputs(rule - '0')).type().dtype();
          why = std::string("operand ") + rule + "'s";
        } else if (rule == 'b') {
          want = BOOL;
          why = "a boolean result";
        } else if (rule == 'f') {
          want = F32;
          why = "an embedding table's";
        } else if (rule == 'l') {
          want = I64;
          why = "an index";
        }
        DataType have = plan.values(id).type().dtype();
        if (want != DT_INVALID && have != want) {
          err << op.name() << " at " << op.location() << " in stage "
              << stage.index() << ": result " << r << " has element type "
              << DataType_Name(have) << ", expected " << DataType_Name(want)
              << " (" << why << ")";
          return err.str();
        }
        defined[id] = true;
      }
      auto attr = [&](const char *key) -> const Attribute * {
        auto it = op.attrs().find(key);
        return it == op.attrs().end() ? nullptr : &it->second;
      };
      const Attribute *name = attr("name");
      if ((op.name() == "heterps.load_param" ||
           op.name() == "heterps.update_param") &&
          (!name || !params.count(name->s()))) {
        err << op.name() << " at " << op.location()
            << " names a parameter that is not in the plan";
        return err.str();
      }
      // A load is a view of the parameter: its type is the parameter's.
      if (op.name() == "heterps.load_param") {
        const TensorType &declared = *params[name->s()];
        const TensorType &loaded = plan.values(op.outputs(0)).type();
        if (declared.dtype() != loaded.dtype() ||
            !std::equal(declared.dims().begin(), declared.dims().end(),
                        loaded.dims().begin(), loaded.dims().end())) {
          err << op.name() << " at " << op.location() << " loads parameter '"
              << name->s() << "' as another type than the parameter's";
          return err.str();
        }
      }
      const Attribute *table = attr("table");
      if ((op.name() == "heterps.embedding_lookup" ||
           op.name() == "heterps.ps_pull" || op.name() == "heterps.ps_push") &&
          (!table || !tables.count(table->s()))) {
        err << op.name() << " at " << op.location()
            << " names a table that is not in the plan";
        return err.str();
      }
      if (op.name() == "heterps.send" || op.name() == "heterps.recv") {
        const Attribute *channel = attr("channel");
        if (!channel) {
          err << op.name() << " at " << op.location() << " has no channel";
          return err.str();
        }
        bool send = op.name() == "heterps.send";
        ++(send ? sends : recvs)[channel->i()];
        (send ? sendStage : recvStage)[channel->i()] = s;
        auto carried = channelTypes.find(channel->i());
        const TensorType &type =
            plan.values(send ? op.inputs(0) : op.outputs(0)).type();
        if (carried != channelTypes.end() &&
            (type.dtype() != carried->second->dtype() ||
             !std::equal(type.dims().begin(), type.dims().end(),
                         carried->second->dims().begin(),
                         carried->second->dims().end()))) {
          err << op.name() << " at " << op.location() << " in stage "
              << stage.index() << (send ? " sends " : " receives ")
              << typeText(type) << " on channel " << channel->i()
              << ", which carries " << typeText(*carried->second);
          return err.str();
        }
      }
    }
  }
  for (const Channel &c : plan.channels())
    if (sends[c.id()] != 1 || recvs[c.id()] != 1) {
      err << "channel " << c.id() << " has " << sends[c.id()] << " senders and "
          << recvs[c.id()] << " receivers; expected one of each";
      return err.str();
    } else if (sendStage[c.id()] != c.from_stage() ||
               recvStage[c.id()] != c.to_stage()) {
      err << "channel " << c.id() << " goes from stage " << c.from_stage()
          << " to stage " << c.to_stage() << ", but its send is in stage "
          << sendStage[c.id()] << " and its receive in stage "
          << recvStage[c.id()];
      return err.str();
    }
  for (int id : plan.outputs()) {
    if (!checkId(id, "an output"))
      return err.str();
    if (!defined[id]) {
      err << "output value " << id << " is never defined";
      return err.str();
    }
  }
  return "";
}
