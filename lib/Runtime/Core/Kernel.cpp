//===- Kernel.cpp - Kernels and their registry ----------------------------===//

#include "heterps/Runtime/Kernel.h"

#include "heterps/Runtime/Error.h"

using namespace heterps::runtime;

const char *heterps::runtime::deviceKindName(DeviceKind kind) {
  return kind == DeviceKind::CPU ? "cpu" : "gpu";
}

Kernel::~Kernel() = default;

std::vector<Shape> Kernel::prepare(const std::vector<Shape> &inputShapes) {
  int64_t batch =
      inputShapes.empty() || inputShapes[0].empty() ? 1 : inputShapes[0][0];
  std::vector<Shape> shapes;
  for (const TensorType &t : info.outputTypes()) {
    Shape s = t.dims;
    for (int64_t &d : s)
      if (d < 0)
        d = batch;
    shapes.push_back(std::move(s));
  }
  return shapes;
}

std::vector<Shape>
Kernel::prepareChecked(const std::vector<Shape> &inputShapes) {
  std::vector<Shape> shapes = prepare(inputShapes);
  const std::vector<TensorType> &declared = info.outputTypes();
  if (shapes.size() != declared.size())
    fail(info.describe(), ": the kernel gives ", shapes.size(),
         " results, the plan ", declared.size());
  for (size_t r = 0; r < shapes.size(); ++r) {
    const Shape &want = declared[r].dims;
    bool same = shapes[r].size() == want.size();
    for (size_t d = 0; same && d < want.size(); ++d)
      same = shapes[r][d] >= 0 && (want[d] < 0 || want[d] == shapes[r][d]);
    if (!same)
      fail(info.describe(), ": result ", r, " has shape ",
           shapeString(shapes[r]), ", the plan's type is ", shapeString(want));
  }
  return shapes;
}

void KernelRegistry::add(const std::string &opName, DeviceKind kind,
                         KernelFactory factory) {
  factories[{opName, kind}] = std::move(factory);
}

bool KernelRegistry::has(const std::string &opName, DeviceKind kind) const {
  return factories.count({opName, kind}) != 0;
}

std::unique_ptr<Kernel> KernelRegistry::create(const OpInfo &op,
                                               DeviceKind kind) const {
  auto it = factories.find({op.name(), kind});
  if (it == factories.end())
    fail(op.describe(), ": no ", deviceKindName(kind), " kernel for op '",
         op.name(), "'");
  return it->second(op);
}

std::vector<std::string> KernelRegistry::opNames(DeviceKind kind) const {
  std::vector<std::string> names;
  for (const auto &[key, factory] : factories)
    if (key.second == kind)
      names.push_back(key.first);
  return names;
}
