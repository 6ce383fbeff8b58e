//===- RecurrentKernels.cu - RNN, GRU and LSTM layers on the GPU ----------===//
//
// RecurrentLayer.h over cuBLAS (the products, with leading dimensions, in
// the process's GpuMath) and a grid-stride kernel per element function.
// The layer's buffers live in one device arena sized in prepare(), grown
// only when the shapes grow, so a step allocates nothing. sequence_lens is
// read back to the host to be checked (one synchronisation of the stream,
// as the index checks of the gathers) and its int64 copy kept on the
// device for the kernels.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"
#include "RecurrentLayer.h"

#include "../CPU/RecurrentShape.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

template <typename F> __global__ void forEachElement(int64_t n, F f) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x)
    f(e);
}

/// RecurrentLayer's backend on this thread's stream and cuBLAS handle.
struct CudaBackend {
  const OpInfo &op;

  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
            int64_t lda, const float *b, int64_t ldb, float beta, float *c,
            int64_t ldc) {
    gemmLeading(op, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  }

  template <typename F> void forEach(int64_t n, F f) {
    if (n == 0)
      return;
    forEachElement<<<blocksFor(n), kBlock, 0, gpuDevice().stream>>>(n, f);
    checkLaunch(op);
  }
};

const float *floatsOf(const std::vector<const Tensor *> &in, int slot) {
  return slot >= 0 ? in[slot]->as<float>() : nullptr;
}

/// heterps.rnn, gru, lstm and (with `gradient`) their gradients.
class RecurrentKernel : public Kernel {
public:
  RecurrentKernel(const OpInfo &op, RecurrentCell cell, bool gradient)
      : Kernel(op), shape(op, cell),
        slots(cpu::readRecurrentOperands(op, cell, gradient)),
        gradient(gradient) {
    requireF32(op);
  }

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    cpu::checkRecurrentOperands(info, shape, in, slots);
    int64_t floats = layOutRecurrentBuffers(shape, gradient, nullptr, buffers);
    arena.reserve(floats, "allocating a recurrent layer's buffers");
    layOutRecurrentBuffers(shape, gradient, arena.get(), buffers);
    deviceLengths.reserve(shape.batch,
                          "allocating a recurrent layer's lengths");
    buffers.lengths = deviceLengths.get();
    lengthsCurrent = false;
    return cpu::recurrentResultShapes(shape, in, gradient);
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    readLengths(slots.lengths >= 0 ? in[slots.lengths] : nullptr);
    RecurrentOperands operands;
    operands.x = in[0]->as<float>();
    operands.w = in[1]->as<float>();
    operands.r = in[2]->as<float>();
    operands.bias = in[3]->as<float>();
    operands.h0 = floatsOf(in, slots.initialH);
    operands.c0 = floatsOf(in, slots.initialC);
    operands.peepholes = floatsOf(in, slots.peepholes);
    operands.dy = floatsOf(in, slots.yGrad);
    operands.dyh = floatsOf(in, slots.yHGrad);
    operands.dyc = floatsOf(in, slots.yCGrad);
    bool lstm = shape.cell == RecurrentCell::LSTM;
    RecurrentResults results;
    CudaBackend backend{info};
    RecurrentLayer<CudaBackend> layer(backend, shape, buffers);
    if (!gradient) {
      results.y = res[0]->as<float>();
      results.yh = res[1]->as<float>();
      results.yc = lstm ? res[2]->as<float>() : nullptr;
      layer.forward(operands, results);
      return;
    }
    results.dx = res[0]->as<float>();
    results.dw = res[1]->as<float>();
    results.dr = res[2]->as<float>();
    results.db = res[3]->as<float>();
    results.dh0 = res[4]->as<float>();
    results.dc0 = lstm ? res[5]->as<float>() : nullptr;
    results.dp = lstm ? res[6]->as<float>() : nullptr;
    layer.gradient(operands, results);
  }

private:
  /// Checks sequence_lens on the host and puts its int64 copy on the device
  /// (every run when the op has one; once per shape when every row runs
  /// all the steps).
  void readLengths(const Tensor *lengths) {
    if (!lengths && lengthsCurrent)
      return;
    if (lengths) {
      raw.resize(lengths->byteSize());
      check(cudaMemcpyAsync(raw.data(), lengths->data(), raw.size(),
                            cudaMemcpyDeviceToHost, gpuDevice().stream),
            "reading sequence_lens");
      check(cudaStreamSynchronize(gpuDevice().stream), "reading sequence_lens");
    }
    cpu::readSequenceLengths(info, shape,
                             lengths ? lengths->dtype() : DType::I64,
                             lengths ? raw.data() : nullptr, hostLengths);
    // From pageable memory: the call returns once the values are staged.
    check(cudaMemcpyAsync(deviceLengths.get(), hostLengths.data(),
                          hostLengths.size() * sizeof(int64_t),
                          cudaMemcpyHostToDevice, gpuDevice().stream),
          "copying sequence_lens");
    lengthsCurrent = !lengths;
  }

  RecurrentShape shape;
  cpu::RecurrentOperandSlots slots;
  bool gradient;
  RecurrentBuffers buffers;
  DeviceScratch<float> arena;
  DeviceScratch<int64_t> deviceLengths;
  // sequence_lens as read back, and checked (kept: a step allocates
  // nothing once the batch size is steady).
  std::vector<char> raw;
  std::vector<int64_t> hostLengths;
  bool lengthsCurrent = false;
};

} // namespace

void cuda::registerRecurrentKernels(KernelRegistry &r) {
  for (auto [name, cell] : {std::pair{"rnn", RecurrentCell::RNN},
                            std::pair{"gru", RecurrentCell::GRU},
                            std::pair{"lstm", RecurrentCell::LSTM}}) {
    r.add(std::string("heterps.") + name, DeviceKind::GPU,
          [cell = cell](const OpInfo &op) {
            return std::make_unique<RecurrentKernel>(op, cell, false);
          });
    r.add(std::string("heterps.") + name + "_grad", DeviceKind::GPU,
          [cell = cell](const OpInfo &op) {
            return std::make_unique<RecurrentKernel>(op, cell, true);
          });
  }
}
