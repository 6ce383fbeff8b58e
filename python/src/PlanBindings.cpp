//===- PlanBindings.cpp - heterps._heterps.Plan ---------------------------===//
//
// A plan as Python sees it: loaded, saved, and described as plain dicts
// and lists that heterps/plan.py turns into its classes.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "heterps/Plan/PlanFile.h"
#include "heterps/Plan/PlanGraph.h"
#include "heterps/Runtime/PlanTypes.h"

#include <pybind11/stl.h>

#include <algorithm>

namespace py = pybind11;
using namespace heterps;
using namespace heterps::python;

static std::string dtypeName(plan::DataType type) {
  if (const char *name = numpyName(runtime::fromPlanType(type)))
    return name;
  return plan::DataType_Name(type);
}

static py::dict describeValue(const plan::Plan &p, int id) {
  const plan::Value &v = p.values(id);
  py::dict d;
  d["name"] = v.name();
  d["dtype"] = dtypeName(v.type().dtype());
  d["shape"] =
      std::vector<int64_t>(v.type().dims().begin(), v.type().dims().end());
  return d;
}

static py::dict describe(const plan::Plan &p) {
  py::dict d;
  d["producer"] = p.producer();
  d["function"] = p.function();
  d["batch_size"] = p.batch_size();
  d["micro_batches"] = p.micro_batches();
  py::list stages;
  for (const plan::Stage &s : p.stages()) {
    py::dict stage;
    stage["index"] = s.index();
    stage["resource"] = s.resource();
    stage["kind"] = s.kind();
    stage["units"] = s.units();
    std::vector<std::string> ops;
    for (const plan::Op &op : s.ops())
      ops.push_back(op.name());
    stage["ops"] = ops;
    stage["predicted_throughput"] =
        s.predicted_throughput() > 0
            ? py::object(py::float_(s.predicted_throughput()))
            : py::object(py::none());
    stages.append(stage);
  }
  d["stages"] = stages;
  std::vector<int> labels;
  if (p.has_training())
    labels.assign(p.training().label_inputs().begin(),
                  p.training().label_inputs().end());
  py::list inputs, outputs;
  for (int i = 0; i < p.inputs_size(); ++i) {
    py::dict in = describeValue(p, p.inputs(i));
    in["label"] =
        std::find(labels.begin(), labels.end(), p.inputs(i)) != labels.end();
    inputs.append(in);
  }
  for (int id : p.outputs())
    outputs.append(describeValue(p, id));
  d["inputs"] = inputs;
  d["outputs"] = outputs;
  py::list tables;
  for (const plan::SparseTable &t : p.tables()) {
    py::dict table;
    table["id"] = t.id();
    table["name"] = t.name();
    table["vocab"] = t.vocab();
    table["dim"] = t.dim();
    // None where nothing trains the table (an inference plan), as
    // heterps-run --print-plan's "optimizer none".
    table["optimizer"] = t.optimizer().kind().empty()
                             ? py::object(py::none())
                             : py::object(py::str(t.optimizer().kind()));
    tables.append(table);
  }
  d["tables"] = tables;
  int64_t denseElements = 0;
  for (const plan::DenseParam &param : p.params()) {
    int64_t n = 1;
    for (int64_t dim : param.type().dims())
      n *= dim;
    denseElements += n;
  }
  d["dense_parameters"] = p.params_size();
  d["dense_elements"] = denseElements;
  if (p.has_training()) {
    py::dict training;
    training["loss"] = p.training().loss();
    training["loss_output"] = p.training().loss_output();
    training["optimizer"] = p.training().optimizer().kind();
    d["training"] = training;
  } else {
    d["training"] = py::none();
  }
  if (p.has_prediction()) {
    py::dict predicted;
    predicted["throughput"] = p.prediction().throughput();
    predicted["cost_per_hour"] = p.prediction().cost_per_hour();
    predicted["job_cost"] = p.prediction().cost_usd();
    d["predicted"] = predicted;
  } else {
    d["predicted"] = py::none();
  }
  return d;
}

void python::bindPlan(py::module_ &m) {
  py::class_<NativePlan>(m, "Plan")
      .def_static(
          "from_bytes",
          [](const py::bytes &bytes, const std::string &source) {
            auto p = std::make_shared<plan::Plan>();
            std::string error;
            if (!plan::parsePlan(bytes, source, *p, error))
              throw Error(error);
            return NativePlan{std::move(p)};
          },
          py::arg("data"), py::arg("source") = "<bytes>")
      .def_static("load",
                  [](const std::string &path) {
                    auto p = std::make_shared<plan::Plan>();
                    std::string error;
                    if (!plan::readPlanFile(path, *p, error))
                      throw Error(error);
                    return NativePlan{std::move(p)};
                  })
      .def("save",
           [](const NativePlan &self, const std::string &path) {
             std::string error;
             if (!plan::writePlanFile(*self.plan, path, error))
               throw Error(error);
           })
      .def("to_bytes",
           [](const NativePlan &self) {
             return py::bytes(plan::serializePlan(*self.plan));
           })
      .def(
          "to_dot",
          [](const NativePlan &self) { return plan::printPlanDot(*self.plan); })
      .def("describe",
           [](const NativePlan &self) { return describe(*self.plan); });
}
