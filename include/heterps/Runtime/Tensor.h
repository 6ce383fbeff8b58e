//===- Tensor.h - Runtime tensors -------------------------------*- C++ -*-===//
//
// A Tensor is a typed, shaped view of a buffer that it may or may not own.
// The executor plans the buffers of a step once per input signature, so the
// tensors of a step are views into memory that outlives the step.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TENSOR_H
#define HETERPS_RUNTIME_TENSOR_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace heterps::runtime {

enum class DType : uint8_t {
  Invalid,
  F32,
  F64,
  F16,
  BF16,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64,
  Bool
};

size_t dtypeSize(DType t);
const char *dtypeName(DType t);
bool isFloat(DType t);

/// IEEE half (or, with `bf16`, bfloat16) bits to float and back; the
/// conversion to 16 bits rounds to nearest even, as NumPy's astype does.
float halfToFloat(uint16_t bits, bool bf16);
uint16_t floatToHalf(float value, bool bf16);

using Shape = std::vector<int64_t>;

/// Where a tensor's memory lives: the host, or the GPU of the thread's stage
/// (device memory, from the GPU column's pool; DeviceRuntime.h).
enum class MemorySpace : uint8_t { Host, Device };

int64_t numElements(const Shape &shape);
std::string shapeString(const Shape &shape);

class Tensor {
public:
  Tensor() = default;
  /// A tensor that owns a zero-filled buffer.
  Tensor(DType dtype, Shape shape);
  /// A view of memory owned elsewhere.
  static Tensor view(DType dtype, Shape shape, void *data,
                     MemorySpace space = MemorySpace::Host);
  /// A tensor over `buffer` (`capacity` bytes), which it shares: how the
  /// GPU column hands out device memory.
  static Tensor adopt(DType dtype, Shape shape, std::shared_ptr<void> buffer,
                      size_t capacity, MemorySpace space);

  DType dtype() const { return type; }
  const Shape &shape() const { return dims; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t dim(int64_t i) const { return dims[i < 0 ? i + rank() : i]; }
  int64_t numElements() const { return runtime::numElements(dims); }
  size_t byteSize() const { return numElements() * dtypeSize(type); }
  void *data() const { return ptr; }
  template <typename T> T *as() const { return static_cast<T *>(ptr); }
  bool empty() const { return ptr == nullptr; }
  MemorySpace space() const { return memorySpace; }
  /// Bytes of the buffer this tensor owns (0 for a view).
  size_t capacityBytes() const { return owned ? capacity : 0; }

  /// Re-points the view (used by the memory plan); keeps ownership. Takes
  /// the shape by reference so that a steady-state step, whose shapes do not
  /// change, allocates nothing.
  void reset(DType dtype, const Shape &shape, void *data);
  /// Resizes an owning tensor, reusing its buffer when it is large enough.
  /// A device tensor cannot grow: its buffer came from a pool this class
  /// does not know.
  void resize(DType dtype, const Shape &shape);
  /// A deep copy that owns its buffer (a host tensor).
  Tensor clone() const;
  std::string typeString() const;

private:
  DType type = DType::Invalid;
  Shape dims;
  void *ptr = nullptr;
  std::shared_ptr<void> owned; // 64-byte aligned, for oneDNN
  size_t capacity = 0;
  MemorySpace memorySpace = MemorySpace::Host;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_TENSOR_H
