//===- GPUIndexingTest.cpp - The GPU's index arithmetic on the host -------===//
//
// The GPU kernels of pads, element gathers, scatters and walks along an
// axis find their elements through functions compiled for the device and
// the host alike (Indexing.h, LineWalks.h). Here they run on the host
// against the CPU column's kernels, on machines without a GPU; the kernels
// themselves run against the CPU's in GPUColumnTest.cpp where a GPU is.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Error.h"
#include "heterps/plan.pb.h"

#include "../../lib/Runtime/CPU/KernelUtil.h"
#include "../../lib/Runtime/CPU/LineWalks.h"
#include "../../lib/Runtime/CUDA/Indexing.h"
#include "CpuReference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace heterps;
using namespace heterps::runtime;
using heterps::runtime::testing::runOnCpu;

namespace {

void setInts(plan::Op &op, const char *key, const std::vector<int64_t> &v) {
  for (int64_t x : v)
    (*op.mutable_attrs())[key].mutable_ints()->add_values(x);
}

Tensor uniform(const Shape &shape, std::mt19937 &rng) {
  Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  return t;
}

/// Integers in [from, to), as i64.
Tensor integers(const Shape &shape, int64_t from, int64_t to,
                std::mt19937 &rng) {
  Tensor t(DType::I64, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<int64_t>()[i] = from + static_cast<int64_t>(rng() % (to - from));
  return t;
}

/// The pad of each element, and the gradient summed through the same
/// offsets, equal the CPU's pad and pad_grad in every mode.
TEST(GpuIndexing, PadOffsetsPadAsTheCpu) {
  struct Case {
    Shape x;
    const char *mode;
    std::vector<int64_t> pads;
  };
  const Case cases[] = {
      {{5, 7}, "constant", {1, 0, 2, 3}},
      {{3, 4, 6}, "reflect", {0, 3, 2, 1, 0, 5}},
      {{2, 3, 4, 5}, "edge", {0, 1, 2, 3, 1, 0, 4, 2}},
      {{1, 9}, "reflect", {0, 8, 0, 8}},
      {{}, "constant", {}},
  };
  std::mt19937 rng(3);
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.mode) + " " + shapeString(c.x));
    plan::Op pad, grad;
    pad.set_name("heterps.pad");
    grad.set_name("heterps.pad_grad");
    for (plan::Op *op : {&pad, &grad}) {
      (*op->mutable_attrs())["mode"].set_s(c.mode);
      setInts(*op, "pads", c.pads);
      (*op->mutable_attrs())["value"].set_f(2.5);
    }
    Tensor x = uniform(c.x, rng);
    Tensor y = runOnCpu(pad, {&x})[0];
    Tensor dy = uniform(y.shape(), rng);
    Tensor dx = runOnCpu(grad, {&x, &dy})[0];

    OpInfo info(pad, {{DType::F32, c.x}}, {});
    cpu::PadShape shape;
    shape.compute(c.x, c.mode, c.pads, info);
    ASSERT_EQ(shape.out, y.shape());
    cuda::PadAddressing a = cuda::makePadAddressing(c.x, shape, info);
    std::vector<float> sums(x.numElements(), 0.0f);
    for (int64_t o = 0; o < y.numElements(); ++o) {
      int64_t from = cuda::padInputOffset(o, a);
      ASSERT_EQ(from < 0 ? 2.5f : x.as<float>()[from], y.as<float>()[o])
          << "element " << o;
      if (from >= 0)
        sums[from] += dy.as<float>()[o];
    }
    for (int64_t i = 0; i < x.numElements(); ++i)
      EXPECT_NEAR(sums[i], dx.as<float>()[i], 1e-6f) << "gradient " << i;
  }
}

/// The offsets of gather_elements' indices, negative ones included, name
/// the elements the CPU gathers; an index out of range has none.
TEST(GpuIndexing, ElementOffsetsGatherAsTheCpu) {
  struct Case {
    Shape data, indices;
    int64_t axis;
  };
  const Case cases[] = {
      {{4, 7}, {4, 5}, 1},
      {{6, 3, 5}, {9, 2, 5}, 0},
      {{2, 3, 4, 5}, {2, 2, 11, 3}, -2},
  };
  std::mt19937 rng(5);
  for (const Case &c : cases) {
    SCOPED_TRACE(shapeString(c.data) + " " + shapeString(c.indices));
    plan::Op op;
    op.set_name("heterps.gather_elements");
    (*op.mutable_attrs())["axis"].set_i(c.axis);
    int64_t axis = c.axis < 0 ? c.axis + c.data.size() : c.axis;
    int64_t n = c.data[axis];
    Tensor data = uniform(c.data, rng);
    Tensor idx = integers(c.indices, -n, n, rng);
    Tensor y = runOnCpu(op, {&data, &idx})[0];

    OpInfo info(op, {{DType::F32, c.data}, {DType::I64, c.indices}}, {});
    cpu::ElementShape shape;
    shape.compute(info, c.axis, c.data, c.indices);
    cuda::ElementAddressing a =
        cuda::makeElementAddressing(c.data, shape, info);
    for (int64_t p = 0; p < idx.numElements(); ++p) {
      int64_t at = cuda::elementOffset(p, idx.as<int64_t>()[p], a);
      ASSERT_GE(at, 0) << "index " << p;
      ASSERT_EQ(data.as<float>()[at], y.as<float>()[p]) << "index " << p;
    }
    EXPECT_EQ(cuda::elementOffset(0, n, a), -1);
    EXPECT_EQ(cuda::elementOffset(0, -n - 1, a), -1);
  }
}

/// The offsets of scatter_nd's tuples name the slices whose gradient the
/// CPU reads back for the updates; a bad entry is found and named.
TEST(GpuIndexing, TupleOffsetsNameTheCpusSlices) {
  struct Case {
    Shape data, indices;
  };
  const Case cases[] = {
      {{4, 3, 5}, {7, 1}},
      {{4, 4, 3}, {3, 3, 2}},
      {{4, 4}, {20, 2}},
  };
  std::mt19937 rng(7);
  for (const Case &c : cases) {
    SCOPED_TRACE(shapeString(c.data) + " " + shapeString(c.indices));
    plan::Op op;
    op.set_name("heterps.scatter_nd_grad");
    Tensor idx = integers(c.indices, -4, 4, rng);
    Tensor dy = uniform(c.data, rng);
    std::vector<Tensor> out = runOnCpu(op, {&idx, &dy}, DType::F32);
    const Tensor &du = out[1];

    Shape updates = cpu::TupleShape::updatesShape(c.data, c.indices);
    OpInfo info(op, {{DType::I64, c.indices}, {DType::F32, c.data}}, {});
    cpu::TupleShape shape;
    shape.compute(info, c.data, c.indices, updates);
    cuda::TupleAddressing a = cuda::makeTupleAddressing(shape, info);
    int64_t tuples = idx.numElements() / a.k;
    for (int64_t p = 0; p < tuples; ++p) {
      int entry = -1;
      int64_t at = cuda::tupleOffset(idx.as<int64_t>() + p * a.k, a, entry);
      ASSERT_GE(at, 0) << "tuple " << p;
      for (int64_t j = 0; j < a.slice; ++j)
        ASSERT_EQ(dy.as<float>()[at + j], du.as<float>()[p * a.slice + j])
            << "tuple " << p << ", element " << j;
    }
    std::vector<int64_t> bad(a.k, 0);
    bad[a.k - 1] = -5;
    int entry = -1;
    EXPECT_EQ(cuda::tupleOffset(bad.data(), a, entry), -1);
    EXPECT_EQ(entry, a.k - 1);
  }
}

/// The walks of cumsum, arg_extreme and top_k_indices, line by line as
/// the GPU's threads take them, equal the CPU's results: values with ties
/// and NaNs, every axis, both directions.
TEST(GpuIndexing, LineWalksMatchTheCpu) {
  std::mt19937 rng(11);
  Shape shape{5, 13, 4};
  Tensor x(DType::F32, shape);
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.as<float>()[i] = static_cast<float>(rng() % 6);
  x.as<float>()[7] = NAN;
  x.as<float>()[30] = NAN;
  x.as<float>()[31] = NAN;
  for (int64_t axis = 0; axis < 3; ++axis) {
    cpu::AxisSplit split;
    split.init(shape, axis);
    cpu::Lines lines{split.outer, split.dim, split.inner};
    const float *xp = x.as<float>();

    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        SCOPED_TRACE("cumsum axis " + std::to_string(axis));
        plan::Op op;
        op.set_name("heterps.cumsum");
        (*op.mutable_attrs())["axis"].set_i(axis);
        (*op.mutable_attrs())["exclusive"].set_b(exclusive);
        (*op.mutable_attrs())["reverse"].set_b(reverse);
        Tensor y = runOnCpu(op, {&x})[0];
        Tensor walked(DType::F32, shape);
        for (int64_t l = 0; l < lines.count(); ++l)
          cpu::cumulativeSumOfLine(xp + lines.base(l),
                                   walked.as<float>() + lines.base(l),
                                   lines.dim, lines.inner, exclusive, reverse);
        for (int64_t i = 0; i < x.numElements(); ++i) {
          float a = walked.as<float>()[i], b = y.as<float>()[i];
          ASSERT_TRUE(a == b || (std::isnan(a) && std::isnan(b)))
              << "element " << i << ": " << a << " against " << b;
        }
      }

    for (const char *kind : {"max", "min"})
      for (bool last : {false, true}) {
        SCOPED_TRACE(std::string("arg ") + kind + " axis " +
                     std::to_string(axis));
        plan::Op op;
        op.set_name("heterps.arg_extreme");
        (*op.mutable_attrs())["kind"].set_s(kind);
        (*op.mutable_attrs())["axis"].set_i(axis);
        (*op.mutable_attrs())["select_last_index"].set_b(last);
        Tensor y = runOnCpu(op, {&x}, DType::I64)[0];
        for (int64_t l = 0; l < lines.count(); ++l)
          ASSERT_EQ(cpu::argExtremeOfLine(xp + lines.base(l), lines.dim,
                                          lines.inner,
                                          std::string(kind) == "max", last),
                    y.as<int64_t>()[l])
              << "line " << l;
      }

    for (int64_t k : {int64_t(1), int64_t(4), lines.dim})
      for (bool largest : {true, false}) {
        SCOPED_TRACE("top " + std::to_string(k) + " axis " +
                     std::to_string(axis));
        plan::Op op;
        op.set_name("heterps.top_k_indices");
        (*op.mutable_attrs())["k"].set_i(k);
        (*op.mutable_attrs())["axis"].set_i(axis);
        (*op.mutable_attrs())["largest"].set_b(largest);
        Tensor y = runOnCpu(op, {&x}, DType::I64)[0];
        Tensor placed(DType::I64, y.shape());
        std::fill(placed.as<int64_t>(),
                  placed.as<int64_t>() + placed.numElements(), -1);
        for (int64_t l = 0; l < lines.count(); ++l)
          for (int64_t d = 0; d < lines.dim; ++d) {
            int64_t rank = cpu::topKRank(xp + lines.base(l), lines.dim,
                                         lines.inner, d, k, largest);
            if (rank < k) {
              int64_t &slot = placed.as<int64_t>()[lines.place(l, rank, k)];
              ASSERT_EQ(slot, -1) << "two elements of rank " << rank;
              slot = d;
            }
          }
        for (int64_t i = 0; i < y.numElements(); ++i)
          ASSERT_EQ(placed.as<int64_t>()[i], y.as<int64_t>()[i])
              << "place " << i;
      }
  }
}

} // namespace
