//===- CNNSupport.h - Shared by the conv, pool and norm kernels -*- C++ -*-===//
//
// A CNN kernel turns one input signature into a short program of oneDNN
// steps (reorders and primitives) over memories that are created once and
// re-pointed at the executor's buffers on every run. The programs of the
// signatures seen so far live in a small cache inside the kernel, so a
// steady-state step creates no primitive and allocates no buffer. A kernel
// object is not reentrant: its programs own scratch buffers.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_CNNSUPPORT_H
#define HETERPS_LIB_RUNTIME_CPU_CNNSUPPORT_H

#include "CPUDevice.h"
#include "KernelUtil.h"

#include "heterps/Runtime/Error.h"

#include <dnnl.hpp>

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace heterps::runtime::cpu::cnn {

inline dnnl::memory::dims toDims(const Shape &shape) {
  return dnnl::memory::dims(shape.begin(), shape.end());
}

/// A descriptor that lets the primitive pick its (possibly blocked) layout.
inline dnnl::memory::desc anyDesc(const Shape &shape) {
  return dnnl::memory::desc(toDims(shape), dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::any);
}

/// With oneDNN's default (library) scratchpad a primitive may allocate while
/// it executes; a user scratchpad is allocated once per program instead.
inline dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// The oneDNN steps of one input signature and the memories they use.
class Program {
public:
  /// A memory over input `index` of the kernel, re-pointed on each run.
  dnnl::memory input(size_t index, const dnnl::memory::desc &desc) {
    return bind(false, index, desc);
  }
  dnnl::memory output(size_t index, const dnnl::memory::desc &desc) {
    return bind(true, index, desc);
  }

  /// A buffer owned by the program (statistics, workspaces, scratch data).
  dnnl::memory buffer(const dnnl::memory::desc &desc) {
    return dnnl::memory(desc, cpuDevice().engine);
  }

  /// Input `index` in the layout `want` that a primitive chose: the tensor
  /// itself when that is its plain layout, else a buffer that a reorder step,
  /// added now, fills from it. Repeated requests share one reorder.
  dnnl::memory inputAs(size_t index, const dnnl::memory::desc &plain,
                       const dnnl::memory::desc &want) {
    if (want == plain)
      return input(index, plain);
    for (const Converted &c : converted)
      if (c.index == index && c.memory.get_desc() == want)
        return c.memory;
    dnnl::memory inner = buffer(want);
    dnnl::memory outer = input(index, plain);
    addReorder(outer, inner, steps);
    converted.push_back({index, inner});
    return inner;
  }

  /// Output `index` written in the layout `want`: the tensor itself when that
  /// is its plain layout, else a buffer that a reorder, appended after the
  /// next add(), copies into the tensor.
  dnnl::memory outputAs(size_t index, const dnnl::memory::desc &plain,
                        const dnnl::memory::desc &want) {
    if (want == plain)
      return output(index, plain);
    dnnl::memory inner = buffer(want);
    addReorder(inner, output(index, plain), pendingOutputs);
    return inner;
  }

  void add(const dnnl::primitive &primitive,
           const dnnl::primitive_desc_base &pd,
           std::unordered_map<int, dnnl::memory> args) {
    steps.push_back({primitive, std::move(args), pd.scratchpad_desc()});
    for (Step &s : pendingOutputs)
      steps.push_back(std::move(s));
    pendingOutputs.clear();
  }

  /// Allocates the scratchpad, one for all steps since they run in turn.
  void finish() {
    size_t size = 0;
    for (const Step &s : steps)
      size = std::max(size, s.scratchpad.get_size());
    if (size == 0)
      return;
    scratchpad = buffer(dnnl::memory::desc({static_cast<int64_t>(size)},
                                           dnnl::memory::data_type::u8,
                                           dnnl::memory::format_tag::a));
    for (Step &s : steps)
      if (s.scratchpad.get_size() != 0)
        s.args[DNNL_ARG_SCRATCHPAD] = scratchpad;
  }

  void execute(const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs) {
    for (const Binding &b : bindings)
      b.memory.set_data_handle(b.isOutput ? outputs[b.index]->data()
                                          : inputs[b.index]->data());
    dnnl::stream &stream = cpuDevice().stream;
    ForeignCallScope foreign;
    for (Step &s : steps)
      s.primitive.execute(stream, s.args);
    stream.wait();
  }

private:
  struct Binding {
    dnnl::memory memory;
    bool isOutput;
    size_t index;
  };
  struct Step {
    dnnl::primitive primitive;
    std::unordered_map<int, dnnl::memory> args;
    dnnl::memory::desc scratchpad;
  };
  struct Converted {
    size_t index;
    dnnl::memory memory;
  };

  dnnl::memory bind(bool isOutput, size_t index,
                    const dnnl::memory::desc &desc) {
    dnnl::memory m(desc, cpuDevice().engine, DNNL_MEMORY_NONE);
    bindings.push_back({m, isOutput, index});
    return m;
  }

  static void addReorder(const dnnl::memory &from, const dnnl::memory &to,
                         std::vector<Step> &list) {
    CPUDevice &device = cpuDevice();
    dnnl::reorder::primitive_desc pd(device.engine, from.get_desc(),
                                     device.engine, to.get_desc(),
                                     userScratchpad());
    list.push_back({dnnl::reorder(pd),
                    {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}},
                    pd.scratchpad_desc()});
  }

  std::vector<Binding> bindings;
  std::vector<Step> steps, pendingOutputs;
  std::vector<Converted> converted;
  dnnl::memory scratchpad;
};

/// What a kernel keeps per input signature; kernels derive their own.
struct Entry {
  std::vector<Shape> outputShapes;
};

/// A kernel that builds an entry of type E per input signature in prepare()
/// and finds it again, without allocating, from the shapes of run()'s inputs.
template <typename E> class CachedKernel : public Kernel {
public:
  using Kernel::Kernel;

  std::vector<Shape> prepare(const std::vector<Shape> &inputShapes) final {
    if (E *e = find([&](size_t i) -> const Shape & { return inputShapes[i]; },
                    inputShapes.size()))
      return e->outputShapes;
    auto e = std::make_unique<E>();
    try {
      build(inputShapes, *e);
    } catch (const dnnl::error &err) {
      fail(info.describe(), ": oneDNN rejects the input shapes ",
           shapesString(inputShapes), ": ", err.what());
    }
    entries.emplace_back(inputShapes, std::move(e));
    last = entries.size() - 1;
    return entries.back().second->outputShapes;
  }

  void run(const std::vector<const Tensor *> &inputs,
           const std::vector<Tensor *> &outputs, ExecContext &context) final {
    auto shapeAt = [&](size_t i) -> const Shape & {
      return inputs[i]->shape();
    };
    E *e = find(shapeAt, inputs.size());
    if (!e) {
      // The executor prepares every signature; this keeps direct callers
      // (and a missed prepare) correct at the cost of building here.
      std::vector<Shape> shapes;
      for (const Tensor *t : inputs)
        shapes.push_back(t->shape());
      prepare(shapes);
      e = find(shapeAt, inputs.size());
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i]->dtype() != DType::F32)
        fail(info.describe(), ": input ", i, " is ", inputs[i]->typeString(),
             ", expected f32");
    if (outputs.size() != e->outputShapes.size())
      fail(info.describe(), ": got ", outputs.size(), " outputs, expected ",
           e->outputShapes.size());
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i]->shape() != e->outputShapes[i] ||
          outputs[i]->dtype() != DType::F32)
        fail(info.describe(), ": output ", i, " is ", outputs[i]->typeString(),
             ", expected f32 of shape ", shapeString(e->outputShapes[i]));
    try {
      execute(*e, inputs, outputs, context);
    } catch (const dnnl::error &err) {
      fail(info.describe(), ": oneDNN failed: ", err.what());
    }
  }

protected:
  /// Checks the input shapes, fills in the output shapes and the programs.
  virtual void build(const std::vector<Shape> &inputShapes, E &entry) = 0;
  virtual void execute(E &entry, const std::vector<const Tensor *> &inputs,
                       const std::vector<Tensor *> &outputs,
                       ExecContext &context) = 0;

  void expectInputs(const std::vector<Shape> &shapes, size_t least,
                    size_t most) const {
    if (shapes.size() < least || shapes.size() > most) {
      if (least == most)
        fail(info.describe(), ": got ", shapes.size(), " inputs, expected ",
             least);
      fail(info.describe(), ": got ", shapes.size(), " inputs, expected ",
           least, " to ", most);
    }
  }

  static std::string shapesString(const std::vector<Shape> &shapes) {
    std::string s = "(";
    for (size_t i = 0; i < shapes.size(); ++i)
      s += (i ? ", " : "") + shapeString(shapes[i]);
    return s + ")";
  }

private:
  template <typename ShapeAt> E *find(ShapeAt shapeAt, size_t count) {
    auto matches = [&](const std::vector<Shape> &key) {
      if (key.size() != count)
        return false;
      for (size_t i = 0; i < count; ++i)
        if (key[i] != shapeAt(i))
          return false;
      return true;
    };
    if (last < entries.size() && matches(entries[last].first))
      return entries[last].second.get();
    for (size_t i = 0; i < entries.size(); ++i)
      if (matches(entries[i].first)) {
        last = i;
        return entries[i].second.get();
      }
    return nullptr;
  }

  std::vector<std::pair<std::vector<Shape>, std::unique_ptr<E>>> entries;
  size_t last = 0;
};

template <typename K> KernelFactory factory() {
  return [](const OpInfo &info) { return std::make_unique<K>(info); };
}

/// The pooling (PoolKernels.cpp) and normalisation (NormKernels.cpp) parts
/// of registerCNNKernels.
void registerPoolKernels(KernelRegistry &registry);
void registerNormKernels(KernelRegistry &registry);

} // namespace heterps::runtime::cpu::cnn

#endif // HETERPS_LIB_RUNTIME_CPU_CNNSUPPORT_H
