//===- PrimitiveCache.h - One oneDNN primitive per op and shape -*- C++ -*-===//
//
// The elementwise, softmax, reduction and concat kernels each run a single
// oneDNN primitive. A kernel builds it in prepare() the first time it sees an
// input signature and keeps it, as the matmul kernels do: the memories are
// created over no data and re-pointed at the executor's tensors on every run,
// the execute arguments are built once, and a scratchpad (when the primitive
// wants one) is allocated with it, so that run() allocates nothing. oneDNN's
// execute allocates a few small objects of its own, which is why it runs
// inside a ForeignCallScope.
//
// A signature without a primitive (an element type other than f32, an empty
// tensor, a broadcast that oneDNN does not do, one that oneDNN would run
// with a reference implementation) makes the kernel run its loop, which is
// correct for every case.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_PRIMITIVECACHE_H
#define HETERPS_LIB_RUNTIME_CPU_PRIMITIVECACHE_H

#include "CPUDevice.h"

#include "heterps/Runtime/Error.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace heterps::runtime::cpu {

/// Operand elements below which a primitive runs on one thread
/// (SerialScope). These ops are memory-bound: 64K floats take about 10 us
/// on one core, no more than waking the OpenMP workers costs on a busy
/// machine (a relu of 512x32 takes 2.5 us on one thread, 12 on two).
constexpr int64_t kSerialElements = 1 << 16;

/// A primitive with its arguments bound to a kernel's operands.
class BoundPrimitive {
public:
  /// `serial`: create and run the primitive on one thread.
  explicit BoundPrimitive(bool serial) : serial(serial) {}

  /// Argument `arg` is input `index` of the kernel, read through `desc`.
  void input(int arg, size_t index, const dnnl::memory::desc &desc) {
    bind(arg, false, index, desc);
  }
  /// Argument `arg` is output `index` of the kernel, written through `desc`.
  void output(int arg, size_t index, const dnnl::memory::desc &desc) {
    bind(arg, true, index, desc);
  }
  /// Argument `arg` is a constant f32 buffer that the primitive owns.
  void constant(int arg, const dnnl::memory::desc &desc, float value) {
    dnnl::memory m(desc, cpuDevice().engine);
    float *data = static_cast<float *>(m.get_data_handle());
    std::fill(data, data + desc.get_size() / sizeof(float), value);
    args[arg] = m;
  }

  /// Sets the primitive once its arguments are bound; `pd` was created with
  /// scratchpadAttr(), so its scratchpad, if any, is allocated here.
  void set(const dnnl::primitive &p, const dnnl::primitive_desc_base &pd) {
    primitive = p;
    reference = std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
    dnnl::memory::desc scratch = pd.scratchpad_desc();
    if (scratch.get_size() != 0)
      args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratch, cpuDevice().engine);
  }

  /// True when oneDNN chose a reference implementation ("ref:any").
  bool isReference() const { return reference; }

  void execute(const OpInfo &op, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs) {
    for (const Binding &b : bindings)
      b.memory.set_data_handle(b.isOutput ? outputs[b.index]->data()
                                          : inputs[b.index]->data());
    dnnl::stream &stream = cpuDevice().stream;
    try {
      ForeignCallScope foreign;
      SerialScope oneThread(serial);
      primitive.execute(stream, args);
      stream.wait();
    } catch (const dnnl::error &err) {
      fail(op.describe(), ": oneDNN failed: ", err.what());
    }
  }

private:
  struct Binding {
    dnnl::memory memory;
    bool isOutput;
    size_t index;
  };

  void bind(int arg, bool isOutput, size_t index,
            const dnnl::memory::desc &desc) {
    dnnl::memory m(desc, cpuDevice().engine, DNNL_MEMORY_NONE);
    bindings.push_back({m, isOutput, index});
    args[arg] = m;
  }

  dnnl::primitive primitive;
  bool serial;
  bool reference = false;
  std::vector<Binding> bindings;
  std::unordered_map<int, dnnl::memory> args;
};

/// With oneDNN's default (library) scratchpad a primitive may allocate while
/// it executes; the user mode lets BoundPrimitive allocate it once.
inline dnnl::primitive_attr scratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// `shape` with leading unit dimensions up to `rank`: oneDNN's binary and
/// reduction primitives want operands of equal rank, NumPy aligns trailing
/// dimensions.
inline Shape padRank(const Shape &shape, size_t rank) {
  Shape padded(rank - shape.size(), 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  return padded;
}

/// A sum over one block of adjacent dimensions as a matmul with a vector of
/// ones: [1, R] x [R, inner] when the block leads, [outer, R] x [R, 1] when
/// it trails, batched over `outer` (the ones broadcast) when it lies in the
/// middle. A mean scales the output by 1/R. False when the reduced
/// dimensions are not adjacent.
inline bool buildSumAsMatmul(const Shape &in, const Shape &kept, bool mean,
                             BoundPrimitive &p) {
  // in = outer x R x inner, with the reduced dimensions (kept[d] = 1 <
  // in[d]) all in R; unit dimensions go anywhere.
  int64_t outer = 1, r = 1, inner = 1;
  int stage = 0; // 0: before the block, 1: in it, 2: after it.
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = kept[d] != in[d];
    if (reduced && stage == 2)
      return false;
    if (reduced)
      stage = 1;
    else if (stage == 1 && in[d] != 1)
      stage = 2;
    (stage == 0 ? outer : stage == 1 ? r : inner) *= in[d];
  }
  dnnl::memory::desc ones, x, y;
  int onesArg = DNNL_ARG_SRC, xArg = DNNL_ARG_WEIGHTS;
  if (outer == 1) {
    ones = plainDesc({1, r});
    x = plainDesc({r, inner});
    y = plainDesc({1, inner});
  } else if (inner == 1) {
    x = plainDesc({outer, r});
    ones = plainDesc({r, 1});
    y = plainDesc({outer, 1});
    std::swap(onesArg, xArg);
  } else {
    ones = plainDesc({1, 1, r});
    x = plainDesc({outer, r, inner});
    y = plainDesc({outer, 1, inner});
  }
  dnnl::primitive_attr attr = scratchpadAttr();
  if (mean)
    attr.set_output_scales(0, {1.0f / static_cast<float>(r)});
  dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(onesArg == DNNL_ARG_SRC ? ones : x,
                         onesArg == DNNL_ARG_SRC ? x : ones, y),
      attr, cpuDevice().engine);
  p.constant(onesArg, ones, 1.0f);
  p.input(xArg, 0, x);
  p.output(DNNL_ARG_DST, 0, y);
  p.set(dnnl::matmul(pd), pd);
  return true;
}

/// A reduction (sum, mean or max) from input 0 of shape `in` to output 0
/// read as `kept`, the input's rank with the reduced dimensions 1: the same
/// memory as the result with or without kept dimensions. False when nothing
/// is reduced, which oneDNN rejects (the kernel's loop then copies).
///
/// oneDNN 2.6 has a jit reduction over trailing dimensions only; over
/// leading ones (a bias gradient, [N, C] to [C]) it has only its reference
/// implementation, which PrimitiveCache leaves to the loop. A sum or mean
/// over adjacent dimensions is therefore a matmul with ones, faster than
/// both (1 us for [512,32] to [32]); other reductions are reduction
/// primitives.
inline bool buildReduction(dnnl::algorithm alg, const Shape &in,
                           const Shape &kept, BoundPrimitive &p) {
  if (kept == in)
    return false;
  if (alg != dnnl::algorithm::reduction_max &&
      buildSumAsMatmul(in, kept, alg == dnnl::algorithm::reduction_mean, p))
    return true;
  dnnl::memory::desc src = plainDesc(in), dst = plainDesc(kept);
  dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(alg, src, dst, 0, 0),
                                     scratchpadAttr(), cpuDevice().engine);
  p.input(DNNL_ARG_SRC, 0, src);
  p.output(DNNL_ARG_DST, 0, dst);
  p.set(dnnl::reduction(pd), pd);
  return true;
}

/// True when the plan gives every operand and result of `op` the f32 type
/// (or does not say): only then is a primitive worth building. run() still
/// checks the tensors it gets.
inline bool planIsF32(const OpInfo &op) {
  for (const auto *types : {&op.inputTypes(), &op.outputTypes()})
    for (const TensorType &t : *types)
      if (t.dtype != DType::F32 && t.dtype != DType::Invalid)
        return false;
  return true;
}

inline bool allF32(const std::vector<const Tensor *> &inputs,
                   const std::vector<Tensor *> &outputs) {
  for (const Tensor *t : inputs)
    if (t->dtype() != DType::F32)
      return false;
  for (const Tensor *t : outputs)
    if (t->dtype() != DType::F32)
      return false;
  return true;
}

/// The primitives of the input signatures a kernel has prepared, and the
/// signatures it runs as loops.
class PrimitiveCache {
public:
  /// The primitive for these input shapes, built the first time by
  /// `build(BoundPrimitive &)`; null when `build` returns false, when an
  /// input is empty or of a rank beyond oneDNN's, when oneDNN rejects the
  /// descriptors (what it implements depends on its version and the ISA;
  /// the loop covers the rest), or when it has only a reference
  /// implementation: that is scalar code computing every offset from the
  /// memory descriptors, tens of times slower than the loops (a sum over
  /// the leading dimension of [512,32]: 220 us, the loop 6; a binary
  /// broadcasting [64,1,1,1] over [64,32,16,16]: 44 ns an element, the jit
  /// kernels of other broadcasts 0.1).
  template <typename Build>
  BoundPrimitive *get(const std::vector<Shape> &shapes, Build &&build) {
    auto it = entries.find(shapes);
    if (it != entries.end())
      return it->second.get();
    bool supported = true;
    int64_t elements = 0;
    for (const Shape &s : shapes) {
      supported &= numElements(s) != 0 && s.size() <= DNNL_MAX_NDIMS;
      elements += numElements(s);
    }
    auto p = std::make_unique<BoundPrimitive>(elements < kSerialElements);
    // oneDNN sizes a primitive's work split when it creates it.
    SerialScope oneThread(elements < kSerialElements);
    try {
      supported = supported && build(*p) && !p->isReference();
    } catch (const dnnl::error &) {
      supported = false;
    }
    if (!supported)
      p.reset();
    return entries.emplace(shapes, std::move(p)).first->second.get();
  }

private:
  std::map<std::vector<Shape>, std::unique_ptr<BoundPrimitive>> entries;
};

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_CPU_PRIMITIVECACHE_H
