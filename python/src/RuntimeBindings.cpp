//===- RuntimeBindings.cpp - heterps._heterps.Trainer and Server ----------===//
//
// The runtime's Session and Trainer behind Python's heterps.Trainer, and a
// PS server in this process. NumPy arrays become tensor views when their
// dtype is the input's and their memory is C-contiguous; any other
// array-like is converted once, and a conversion that would lose meaning
// (floats into integer ids) is a TypeError. Long calls release the GIL.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "heterps/PS/Server.h"
#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/InputBinder.h"
#include "heterps/Runtime/Session.h"
#include "heterps/Runtime/Trainer.h"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>

namespace py = pybind11;
using namespace heterps;
using namespace heterps::python;
using namespace heterps::runtime;

const char *python::numpyName(DType t) {
  switch (t) {
  case DType::F32:
    return "float32";
  case DType::F64:
    return "float64";
  case DType::F16:
    return "float16";
  case DType::I8:
    return "int8";
  case DType::I16:
    return "int16";
  case DType::I32:
    return "int32";
  case DType::I64:
    return "int64";
  case DType::U8:
    return "uint8";
  case DType::U16:
    return "uint16";
  case DType::U32:
    return "uint32";
  case DType::U64:
    return "uint64";
  case DType::Bool:
    return "bool";
  default:
    return nullptr;
  }
}

namespace {

/// Inputs of a step as tensors, by input position; the arrays stay
/// referenced (and so alive) as long as this does.
struct BoundInputs {
  std::vector<py::array> arrays;
  std::vector<Tensor> tensors;
  std::vector<const Tensor *> byPosition;
};

std::string inputNames(const Program &program) {
  std::string names;
  for (int i = 0; i < program.plan().inputs_size(); ++i)
    names += (i ? ", " : "") + program.inputName(i);
  return names;
}

BoundInputs bindInputs(const Program &program, const py::dict &inputs) {
  py::module_ np = py::module_::import("numpy");
  BoundInputs bound;
  bound.byPosition.assign(program.plan().inputs_size(), nullptr);
  bound.arrays.reserve(inputs.size());
  bound.tensors.reserve(inputs.size());
  for (auto [key, value] : inputs) {
    std::string name = py::str(key);
    int index = program.inputIndex(name);
    if (index < 0)
      throw py::key_error("the plan has no input named '" + name +
                          "' (its inputs: " + inputNames(program) + ")");
    DType dtype = program.inputType(index).dtype;
    const char *expected = numpyName(dtype);
    if (!expected)
      throw Error("input '" + name + "' has type " + dtypeName(dtype) +
                  ", which NumPy arrays cannot feed");
    py::array array = np.attr("asarray")(value);
    py::object target = np.attr("dtype")(expected);
    if (!array.dtype().equal(target)) {
      // Booleans as ids are a mistake NumPy would make ids 0 and 1 of.
      bool boolIds = array.dtype().kind() == 'b' && !isFloat(dtype);
      if (boolIds ||
          !np.attr("can_cast")(array.dtype(), target, "same_kind").cast<bool>())
        throw py::type_error("input '" + name + "': expected " + expected +
                             ", got " +
                             py::str(array.dtype()).cast<std::string>() +
                             " (convert it with .astype)");
      // uint64 ids beyond int64 would wrap to negative ones.
      if (array.dtype().kind() == 'u' && array.dtype().itemsize() == 8 &&
          array.size() > 0 &&
          np.attr("max")(array).cast<uint64_t>() >
              static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw py::value_error(
            "input '" + name + "': id " +
            std::to_string(np.attr("max")(array).cast<uint64_t>()) +
            " is beyond int64 (the ids are " + expected + ")");
      array = array.attr("astype")(target);
    }
    array = np.attr("ascontiguousarray")(array);
    Shape shape(array.shape(), array.shape() + array.ndim());
    bound.arrays.push_back(array);
    bound.tensors.push_back(
        Tensor::view(dtype, shape, const_cast<void *>(array.data())));
    bound.byPosition[index] = &bound.tensors.back();
  }
  program.checkBatchRows(bound.byPosition);
  return bound;
}

py::array toArray(const Tensor &t) {
  const char *name = numpyName(t.dtype());
  if (!name)
    throw Error(std::string("an output has type ") + dtypeName(t.dtype()) +
                ", which NumPy cannot hold");
  py::array array(py::dtype(name),
                  std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()));
  if (t.byteSize())
    std::memcpy(array.mutable_data(), t.data(), t.byteSize());
  return array;
}

py::dict metricsDict(const Metrics &m, bool withLoss) {
  py::dict d;
  if (withLoss)
    d["loss"] = m.meanLoss();
  if (m.hasAUC()) {
    d["auc"] = m.auc();
    d["logloss"] = m.logLoss();
    if (m.hasBothClasses()) {
      d["ne"] = m.normalizedEntropy();
      d["calibration"] = m.calibration();
    }
  }
  if (m.hasAccuracy())
    d["accuracy"] = m.accuracy();
  return d;
}

/// The data options of fit() and evaluate().
struct DataSpec {
  std::string path, format;
  int64_t syntheticExamples = 1 << 16, syntheticVocab = 1000;
  int64_t csvLabelColumn = 0;
  bool csvHeader = false;
  int64_t shuffle = 0;
  uint64_t seed = 1;

  /// As heterps-run reads them: training data shuffled as asked; evaluation
  /// on synthetic data a held-out set (the next seed).
  DataOptions options(const InputBinder &binder, bool training) const {
    DataOptions d;
    d.format = format.empty() ? dataFormatOf(path) : format;
    if (d.format.empty())
      throw Error("cannot tell the format of '" + path +
                  "' from its name; give format=");
    d.path = path;
    binder.configure(d);
    d.labelColumn = csvLabelColumn;
    d.csvHeader = csvHeader;
    d.syntheticExamples = syntheticExamples;
    d.syntheticVocab = syntheticVocab;
    d.shuffleBuffer = training ? shuffle : 0;
    d.seed = seed + (!training && d.format == "synthetic" ? 1 : 0);
    return d;
  }
};

class NativeTrainer {
public:
  NativeTrainer(const NativePlan &plan, SessionOptions options,
                int64_t batchSize)
      : planRef(plan.plan) {
    session = std::make_unique<Session>(*planRef, std::move(options));
    batch = batchSize ? batchSize
                      : std::max<int64_t>(session->plan().batch_size(), 1);
    if (batch < 1)
      throw Error("the batch size must be positive, got " +
                  std::to_string(batch));
  }

  bool training() { return session->program().isTraining(); }
  const std::vector<std::string> &connectNotes() const {
    return session->connectNotes();
  }

  float step(const py::dict &inputs) {
    Program &program = session->program();
    if (!program.isTraining())
      throw Error("the plan has no training step (compile it with an "
                  "optimizer); predict() runs it");
    BoundInputs bound = bindInputs(program, inputs);
    int lossOutput = program.plan().training().loss_output();
    py::gil_scoped_release release;
    const std::vector<const Tensor *> &res =
        session->stepper().run(bound.byPosition, true, {lossOutput});
    return res[0]->as<float>()[0];
  }

  py::dict predict(const py::dict &inputs) {
    Program &program = session->program();
    BoundInputs bound = bindInputs(program, inputs);
    std::vector<int> outs = predictionOutputs(program);
    const std::vector<const Tensor *> *res;
    {
      py::gil_scoped_release release;
      if (PipelineExecutor *pipeline = session->pipeline())
        pipeline->synchronize();
      res = &program.run(bound.byPosition, false, outs);
    }
    py::dict out;
    for (size_t k = 0; k < outs.size(); ++k)
      out[py::str(program.outputName(outs[k]))] = toArray(*(*res)[k]);
    return out;
  }

  py::dict fit(const DataSpec &train, const std::optional<DataSpec> &eval,
               int64_t epochs, int64_t steps, int64_t logEvery,
               const std::string &checkpointDir, int64_t checkpointEvery,
               const std::function<void(const std::string &)> &log,
               const std::function<py::object(py::dict)> &callback) {
    if (!session->program().isTraining())
      throw Error("the plan has no training step (compile it with an "
                  "optimizer)");
    TrainerOptions to;
    to.epochs = epochs;
    to.steps = steps;
    to.batchSize = batch;
    to.logEvery = logEvery;
    to.checkpointEvery = checkpointEvery;
    if (log)
      to.log = [&log](const std::string &line) {
        py::gil_scoped_acquire acquire;
        log(line);
      };
    if (callback)
      to.report = [&callback](const TrainingReport &r) {
        py::gil_scoped_acquire acquire;
        py::dict d =
            metricsDict(*r.metrics, r.kind == TrainingReport::Kind::Steps);
        d["kind"] = r.kind == TrainingReport::Kind::Steps ? "steps" : "eval";
        d["step"] = r.step;
        d["epoch"] = r.epoch;
        d["seconds"] = r.seconds;
        if (r.kind == TrainingReport::Kind::Steps)
          d["samples_per_second"] = r.samplesPerSecond;
        py::object stop = callback(d);
        // Keras' convention: a callback asks to stop by returning False.
        return !(py::isinstance<py::bool_>(stop) && !stop.cast<bool>());
      };
    if (!checkpointDir.empty())
      to.saveCheckpoint = [this, checkpointDir](CheckpointInfo info) {
        session->stepper().synchronize();
        session->save(checkpointDir, std::move(info));
      };
    Trainer trainer(session->program(), session->stepper(), to);
    std::unique_ptr<DataSource> source =
        openDataSource(train.options(trainer.binder(), true));
    std::unique_ptr<DataSource> evalSource;
    if (eval)
      evalSource = openDataSource(eval->options(trainer.binder(), false));
    TrainingSummary summary;
    {
      py::gil_scoped_release release;
      summary = trainer.fit(*source, evalSource.get(), resume);
    }
    resume = {};
    // save() records where this fit stopped, so that load() and fit()
    // resume there as a checkpoint of fit's own does.
    position = CheckpointInfo();
    position.entries["epoch"] = std::to_string(summary.nextEpoch);
    position.entries["epoch-batches"] =
        std::to_string(summary.nextEpochBatches);
    position.entries["batch"] = std::to_string(batch);
    py::dict d;
    d["steps"] = summary.steps;
    d["samples"] = summary.samples;
    d["seconds"] = summary.seconds;
    d["samples_per_second"] =
        summary.seconds > 0 ? summary.samples / summary.seconds : 0.0;
    d["last_loss"] = summary.lastLoss;
    d["stopped"] = summary.stopped;
    d["evaluation"] = evalSource
                          ? py::object(metricsDict(summary.evaluation, false))
                          : py::object(py::none());
    return d;
  }

  py::dict evaluate(const DataSpec &data) {
    if (predictionOutputs(session->program()).empty())
      throw Error("the plan has no prediction output to evaluate");
    TrainerOptions to;
    to.batchSize = batch;
    Trainer trainer(session->program(), session->program(), to);
    if (trainer.binder().labelIndex() < 0)
      throw Error("the plan has no label input to evaluate the predictions "
                  "against (an inference plan); predict() gives them");
    std::unique_ptr<DataSource> source =
        openDataSource(data.options(trainer.binder(), false));
    Metrics m;
    {
      py::gil_scoped_release release;
      if (PipelineExecutor *pipeline = session->pipeline())
        pipeline->synchronize();
      m = trainer.evaluate(*source);
    }
    return metricsDict(m, false);
  }

  void save(const std::string &dir) {
    py::gil_scoped_release release;
    if (PipelineExecutor *pipeline = session->pipeline())
      pipeline->synchronize();
    CheckpointInfo info;
    info.step = steps();
    info.entries = position.entries;
    session->save(dir, std::move(info));
  }

  int64_t load(const std::string &dir) {
    {
      py::gil_scoped_release release;
      resume = session->load(dir);
    }
    position = CheckpointInfo();
    for (const char *key : {"epoch", "epoch-batches", "batch"})
      if (auto it = resume.entries.find(key); it != resume.entries.end())
        position.entries[key] = it->second;
    for (const std::string &note : resume.notes)
      py::module_::import("warnings").attr("warn")(note);
    return resume.step;
  }

  int64_t steps() {
    PipelineExecutor *pipeline = session->pipeline();
    return pipeline ? pipeline->steps() : session->program().steps();
  }
  int64_t batchSize() const { return batch; }
  std::string describe() {
    if (!session->isPipelined())
      return "one worker\n";
    session->stepper();
    return session->pipeline()->describe();
  }

private:
  std::shared_ptr<const plan::Plan> planRef;
  std::unique_ptr<Session> session;
  int64_t batch = 1;
  /// Where the next fit() resumes in its data: after load(), the position
  /// the checkpoint recorded.
  CheckpointInfo resume;
  /// The data position save() records: where the last fit() stopped, or
  /// the loaded checkpoint's.
  CheckpointInfo position;
};

struct NativeServer {
  std::unique_ptr<ps::Server> server;
  std::string host;
};

} // namespace

void python::bindRuntime(py::module_ &m) {
  m.def("data_format_of", &dataFormatOf, py::arg("path"),
        "The data format heterps-run takes from a file's name ('' when the "
        "name does not tell)");
  py::class_<DataSpec>(m, "DataSpec")
      .def(py::init<>())
      .def_readwrite("path", &DataSpec::path)
      .def_readwrite("format", &DataSpec::format)
      .def_readwrite("synthetic_examples", &DataSpec::syntheticExamples)
      .def_readwrite("synthetic_vocab", &DataSpec::syntheticVocab)
      .def_readwrite("csv_label_column", &DataSpec::csvLabelColumn)
      .def_readwrite("csv_header", &DataSpec::csvHeader)
      .def_readwrite("shuffle", &DataSpec::shuffle)
      .def_readwrite("seed", &DataSpec::seed);

  py::class_<NativeTrainer>(m, "Trainer")
      .def(py::init([](const NativePlan &plan, const std::string &ps,
                       int threads, uint64_t seed, bool fallbackCPU,
                       const std::string &pipeline, const std::string &sync,
                       int maxWorkers, int64_t microBatches,
                       const std::string &schedule, int64_t maxStaleness,
                       double deadline, int64_t batch, const std::string &tlsCA,
                       const std::string &tlsCert, const std::string &tlsKey,
                       const std::string &tlsServerName,
                       const std::string &tokenFile, const std::string &wire,
                       const std::string &gpuMath) {
             if (threads < 1)
               throw Error("threads must be at least 1, got " +
                           std::to_string(threads));
             SessionOptions o;
             o.ps = ps;
             o.client.deadlineSeconds = deadline;
             // The credential files are read here, so that a missing one
             // is named by its keyword.
             if (!tlsCA.empty())
               o.client.tlsCA = ps::readCredentialFile(tlsCA, "tls_ca");
             if (!tlsCert.empty())
               o.client.tlsCert = ps::readCredentialFile(tlsCert, "tls_cert");
             if (!tlsKey.empty())
               o.client.tlsKey = ps::readCredentialFile(tlsKey, "tls_key");
             o.client.tlsServerName = tlsServerName;
             if (!tokenFile.empty())
               o.client.token =
                   ps::readCredentialFile(tokenFile, "token_file", true);
             o.client.wire = wire;
             o.program.threads = threads;
             o.program.seed = seed;
             o.program.fallbackToCPU = fallbackCPU;
             std::optional<GpuMath> math = parseGpuMath(gpuMath);
             if (!math)
               throw Error("gpu_math must be f32, tf32 or bf16, got '" +
                           gpuMath + "'");
             o.program.gpuMath = *math;
             o.pipeline = pipeline;
             o.pipelineOptions.sync = parseSyncMode(sync);
             o.pipelineOptions.schedule = parsePipelineSchedule(schedule);
             o.pipelineOptions.maxWorkers = maxWorkers;
             o.pipelineOptions.microBatches = microBatches;
             o.pipelineOptions.maxStaleness = maxStaleness;
             std::unique_ptr<NativeTrainer> trainer;
             {
               py::gil_scoped_release release;
               trainer =
                   std::make_unique<NativeTrainer>(plan, std::move(o), batch);
             }
             // What connecting changed on the PS service (Session).
             for (const std::string &note : trainer->connectNotes())
               py::module_::import("warnings").attr("warn")(note);
             return trainer;
           }),
           py::arg("plan"), py::arg("ps"), py::arg("threads"), py::arg("seed"),
           py::arg("fallback_cpu"), py::arg("pipeline"), py::arg("sync"),
           py::arg("max_workers"), py::arg("micro_batches"),
           py::arg("schedule"), py::arg("max_staleness"), py::arg("deadline"),
           py::arg("batch"), py::arg("tls_ca"), py::arg("tls_cert"),
           py::arg("tls_key"), py::arg("tls_server_name"),
           py::arg("token_file"), py::arg("wire"), py::arg("gpu_math"))
      .def_property_readonly("training", &NativeTrainer::training)
      .def("step", &NativeTrainer::step)
      .def("predict", &NativeTrainer::predict)
      .def("fit", &NativeTrainer::fit, py::arg("train"), py::arg("eval"),
           py::arg("epochs"), py::arg("steps"), py::arg("log_every"),
           py::arg("checkpoint_dir"), py::arg("checkpoint_every"),
           py::arg("log"), py::arg("callback"))
      .def("evaluate", &NativeTrainer::evaluate)
      .def("save", &NativeTrainer::save)
      .def("load", &NativeTrainer::load)
      .def_property_readonly("steps", &NativeTrainer::steps)
      .def_property_readonly("batch_size", &NativeTrainer::batchSize)
      .def("describe", &NativeTrainer::describe);

  py::class_<NativeServer>(m, "Server")
      .def(py::init([](const std::string &host, int port,
                       const std::string &checkpointDir,
                       const std::string &restore, int keepCheckpoints,
                       const std::string &tlsCert, const std::string &tlsKey,
                       const std::string &tlsCA, const std::string &tokenFile,
                       const std::string &adminTokenFile) {
             if (port < 0 || port > 65535)
               throw Error("port " + std::to_string(port) +
                           " is out of range (0-65535)");
             if (keepCheckpoints < 0)
               throw Error("keep_checkpoints must not be negative");
             ps::ServerOptions o;
             o.listen = host + ":" + std::to_string(port);
             o.shard.checkpointDir = checkpointDir;
             o.shard.keepCheckpoints = keepCheckpoints;
             o.restore = restore;
             if (!tlsCert.empty())
               o.tlsCert = ps::readCredentialFile(tlsCert, "tls_cert");
             if (!tlsKey.empty())
               o.tlsKey = ps::readCredentialFile(tlsKey, "tls_key");
             if (!tlsCA.empty())
               o.tlsClientCA = ps::readCredentialFile(tlsCA, "tls_ca");
             if (!tokenFile.empty())
               o.authToken =
                   ps::readCredentialFile(tokenFile, "auth_token_file", true);
             if (!adminTokenFile.empty())
               o.adminToken = ps::readCredentialFile(adminTokenFile,
                                                     "admin_token_file", true);
             auto server = std::make_unique<NativeServer>();
             server->server = ps::Server::start(o);
             server->host = host;
             return server;
           }),
           py::arg("host"), py::arg("port"), py::arg("checkpoint_dir"),
           py::arg("restore"), py::arg("keep_checkpoints"), py::arg("tls_cert"),
           py::arg("tls_key"), py::arg("tls_ca"), py::arg("auth_token_file"),
           py::arg("admin_token_file"))
      .def_property_readonly(
          "port",
          [](NativeServer &s) { return s.server ? s.server->port() : 0; })
      .def_property_readonly("address",
                             [](NativeServer &s) {
                               return s.server
                                          ? s.host + ":" +
                                                std::to_string(s.server->port())
                                          : std::string();
                             })
      .def("stop", [](NativeServer &s, double grace) {
        if (!s.server)
          return;
        py::gil_scoped_release release;
        s.server->shutdown(grace);
        s.server.reset();
      });
}
