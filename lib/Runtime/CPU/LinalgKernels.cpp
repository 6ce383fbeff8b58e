//===- LinalgKernels.cpp - GEMM and MatMul through oneDNN -----------------===//
//
// Both ops become a oneDNN matmul primitive. Transposed operands are plain
// memory descriptors with swapped strides, so no copy is made; alpha is the
// primitive's output scale and a C that broadcasts along rows or columns is
// its bias. Primitives and memory objects are created once per (M, K, N)
// and reused with new data handles.
//
//===----------------------------------------------------------------------===//

#include "CPUDevice.h"
#include "KernelUtil.h"

#include <Eigen/Core>

#include <map>
#include <tuple>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using dt = dnnl::memory::data_type;

namespace {

struct MatmulPrimitive {
  dnnl::matmul prim;
  dnnl::memory a, b, bias, c;
  /// The execute() arguments: built once, the handles re-pointed per run.
  std::unordered_map<int, dnnl::memory> args;
  bool hasBias = false;
  bool serial = false;
};

/// C = alpha * A' B' (+ bias), A' = A or A^T, B' = B or B^T, batched over
/// `batch` when it is above 1 (A and B both batched, or B shared).
class MatmulCache {
public:
  MatmulPrimitive &get(int64_t batch, int64_t m, int64_t k, int64_t n, bool ta,
                       bool tb, bool bBatched, float alpha,
                       const Shape *biasShape) {
    auto key = std::make_tuple(batch, m, k, n, bBatched,
                               biasShape ? *biasShape : Shape{-1});
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
    const dnnl::engine &eng = cpuDevice().engine;
    dnnl::memory::desc aDesc, bDesc, cDesc, biasDesc;
    if (batch > 1) {
      aDesc = dnnl::memory::desc({batch, m, k}, dt::f32,
                                 ta ? dnnl::memory::dims{m * k, 1, m}
                                    : dnnl::memory::dims{m * k, k, 1});
      dnnl::memory::dims bStride = tb ? dnnl::memory::dims{k * n, 1, k}
                                      : dnnl::memory::dims{k * n, n, 1};
      if (!bBatched)
        bStride[0] = 0;
      bDesc =
          dnnl::memory::desc({bBatched ? batch : 1, k, n}, dt::f32, bStride);
      cDesc = dnnl::memory::desc({batch, m, n}, dt::f32,
                                 dnnl::memory::dims{m * n, n, 1});
    } else {
      aDesc = dnnl::memory::desc({m, k}, dt::f32,
                                 ta ? dnnl::memory::dims{1, m}
                                    : dnnl::memory::dims{k, 1});
      bDesc = dnnl::memory::desc({k, n}, dt::f32,
                                 tb ? dnnl::memory::dims{1, k}
                                    : dnnl::memory::dims{n, 1});
      cDesc = dnnl::memory::desc({m, n}, dt::f32, dnnl::memory::dims{n, 1});
    }
    MatmulPrimitive p;
    p.serial = double(batch) * m * k * n < kSerialWork;
    SerialScope serial(p.serial);
    dnnl::primitive_attr attr;
    if (alpha != 1.0f)
      attr.set_output_scales(0, {alpha});
    if (biasShape) {
      // The bias broadcasts as a 2-D [1|M, 1|N] tensor.
      int64_t bm = biasShape->size() == 2 ? (*biasShape)[0] : 1;
      int64_t bn = biasShape->empty() ? 1 : biasShape->back();
      biasDesc =
          dnnl::memory::desc({bm, bn}, dt::f32, dnnl::memory::dims{bn, 1});
      p.hasBias = true;
    }
    auto desc = p.hasBias ? dnnl::matmul::desc(aDesc, bDesc, biasDesc, cDesc)
                          : dnnl::matmul::desc(aDesc, bDesc, cDesc);
    dnnl::matmul::primitive_desc pd(desc, attr, eng);
    p.prim = dnnl::matmul(pd);
    p.a = dnnl::memory(aDesc, eng, DNNL_MEMORY_NONE);
    p.b = dnnl::memory(bDesc, eng, DNNL_MEMORY_NONE);
    p.c = dnnl::memory(cDesc, eng, DNNL_MEMORY_NONE);
    p.args = {
        {DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}};
    if (p.hasBias) {
      p.bias = dnnl::memory(biasDesc, eng, DNNL_MEMORY_NONE);
      p.args[DNNL_ARG_BIAS] = p.bias;
    }
    return cache.emplace(key, std::move(p)).first->second;
  }

  static void run(MatmulPrimitive &p, const void *a, const void *b,
                  const void *bias, void *c) {
    p.a.set_data_handle(const_cast<void *>(a));
    p.b.set_data_handle(const_cast<void *>(b));
    p.c.set_data_handle(c);
    if (p.hasBias)
      p.bias.set_data_handle(const_cast<void *>(bias));
    dnnl::stream &s = cpuDevice().stream;
    ForeignCallScope foreign;
    SerialScope serial(p.serial);
    p.prim.execute(s, p.args);
    s.wait();
  }

private:
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, bool, Shape>,
           MatmulPrimitive>
      cache;
};

/// heterps.gemm: alpha * op(A) op(B) + beta * C.
class GemmKernel : public Kernel {
public:
  explicit GemmKernel(const OpInfo &op)
      : Kernel(op), ta(op.getBool("trans_a", false)),
        tb(op.getBool("trans_b", false)),
        alpha(static_cast<float>(op.getFloat("alpha", 1.0))),
        beta(static_cast<float>(op.getFloat("beta", 1.0))) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    GemmShape product(in[0], in[1], ta, tb, info);
    m = product.m;
    k = product.k;
    n = product.n;
    hasC = in.size() > 2;
    biasFused = false;
    if (hasC) {
      const Shape &c = in[2];
      Shape out{m, n};
      broadcastShapes(c, out, info);
      if (broadcastShapes(c, out, info) != out)
        fail(info.describe(), ": C of shape ", shapeString(c),
             " does not broadcast to ", m, "x", n);
      cShape = c;
      // A row vector, a column or a full matrix is oneDNN's bias. The
      // output scale applies to the bias too (alpha * (A B + bias)), so the
      // bias is fused only when that is beta * C.
      biasFused = beta == alpha && c.size() <= 2;
      cStrides = broadcastStrides(c, out);
    }
    MatmulPrimitive &p = cache.get(1, m, k, n, ta, tb, true, alpha,
                                   biasFused ? &cShape : nullptr);
    prim = &p;
    return {{m, n}};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (in[0]->dtype() != DType::F32)
      fail(info.describe(), ": the CPU GEMM takes f32, got ",
           dtypeName(in[0]->dtype()));
    MatmulCache::run(*prim, in[0]->data(), in[1]->data(),
                     biasFused ? in[2]->data() : nullptr, res[0]->data());
    if (hasC && !biasFused) {
      float *y = res[0]->as<float>();
      const float *c = in[2]->as<float>();
      Shape out{m, n};
      std::vector<int64_t> own = stridesOf(out);
      forEachBroadcast(out, own, cStrides, [&](int64_t o, int64_t, int64_t ic) {
        y[o] += beta * c[ic];
      });
    }
  }

private:
  bool ta, tb;
  float alpha, beta;
  int64_t m = 0, k = 0, n = 0;
  bool hasC = false, biasFused = false;
  Shape cShape;
  std::vector<int64_t> cStrides;
  MatmulCache cache;
  MatmulPrimitive *prim = nullptr;
};

/// heterps.matmul with NumPy semantics: 1-D operands are promoted, leading
/// dimensions of the left operand are folded into M when the right one is a
/// matrix, and equal batch dimensions run as a batched matmul.
class MatMulKernel : public Kernel {
public:
  using Kernel::Kernel;

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    MatMulShape product(in[0], in[1], info);
    batch = product.batch;
    m = product.m;
    k = product.k;
    n = product.n;
    bBatched = product.bBatched;
    prim = &cache.get(batch, m, k, n, false, false, bBatched, 1.0f, nullptr);
    return {product.out};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    if (in[0]->dtype() == DType::F64) {
      runF64(in[0]->as<double>(), in[1]->as<double>(), res[0]->as<double>());
      return;
    }
    if (in[0]->dtype() != DType::F32)
      fail(info.describe(), ": the CPU MatMul takes f32 or f64, got ",
           dtypeName(in[0]->dtype()));
    MatmulCache::run(*prim, in[0]->data(), in[1]->data(), nullptr,
                     res[0]->data());
  }

  /// oneDNN's CPU matmul has no f64: Eigen's GEMM, one matrix at a time.
  void runF64(const double *a, const double *b, double *y) const {
    using Matrix =
        Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    for (int64_t i = 0; i < batch; ++i) {
      Eigen::Map<const Matrix> lhs(a + i * m * k, m, k);
      Eigen::Map<const Matrix> rhs(b + (bBatched ? i * k * n : 0), k, n);
      Eigen::Map<Matrix> out(y + i * m * n, m, n);
      out.noalias() = lhs * rhs;
    }
  }

private:
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool bBatched = false;
  MatmulCache cache;
  MatmulPrimitive *prim = nullptr;
};

} // namespace

void cpu::registerLinalgKernels(KernelRegistry &r) {
  addKernel<GemmKernel>(r, "heterps.gemm");
  addKernel<MatMulKernel>(r, "heterps.matmul");
}
