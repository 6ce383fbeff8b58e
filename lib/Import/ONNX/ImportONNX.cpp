//===- ImportONNX.cpp - ONNX model importer -------------------------------===//
//
// Walks the nodes of an ONNX graph in their (checked) topological order and
// builds HeterPS ops. Values computable at import time (initializers,
// Constant nodes, and the shape subgraphs that Shape/Gather/Slice/Concat/
// Cast/Unsqueeze/... form) are tracked as `Known` tensors and folded, so
// that `Reshape(x, Concat(Shape(x)[0], -1))` becomes one `heterps.reshape`.
// A Known integer may hold `kDynamic` entries: sizes known only at run time.
// Where the importer can follow them, they carry a `BatchMultiple`: the
// batch, or a whole multiple or part of it (`B * H` in multi-head
// attention, `T * B`), read from the dynamic dimension of a value whose
// multiple is recorded as each op is built. Reshape resolves its -1 against
// them exactly.
//
//===----------------------------------------------------------------------===//

#include "heterps/Import/ONNX/ImportONNX.h"
#include "Importer.h"
#include "heterps/Support/CheckedMath.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::heterps;

using namespace mlir::heterps::onnx_import;
using ::heterps::checkedAdd;
using ::heterps::checkedMul;
using ::heterps::checkedProduct;

/// Adds `value` as element of `known` of the given type.
static void push(Known &known, double value) {
  if (known.isFloat())
    known.floats.push_back(value);
  else
    known.ints.push_back(value == kDyn ? kDyn : (int64_t)value);
}

static void pushFrom(Known &to, const Known &from, int64_t i) {
  if (to.isFloat())
    to.floats.push_back(from.at(i));
  else if (!from.isFloat() && from.ints[i] == kDyn)
    to.pushDynamic(from.batchAt(i));
  else
    to.ints.push_back(from.isFloat() ? (int64_t)from.at(i) : from.ints[i]);
}

static Ints stridesOf(ArrayRef<int64_t> shape) {
  Ints strides(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

//===----------------------------------------------------------------------===//
// Types and tensors
//===----------------------------------------------------------------------===//

FailureOr<Type> Importer::elementType(int32_t t, StringRef what) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return Type(b.getF32Type());
  case onnx::TensorProto::DOUBLE:
    return Type(b.getF64Type());
  case onnx::TensorProto::FLOAT16:
    return Type(b.getF16Type());
  case onnx::TensorProto::BFLOAT16:
    return Type(b.getBF16Type());
  case onnx::TensorProto::INT64:
    return Type(b.getI64Type());
  case onnx::TensorProto::INT32:
    return Type(b.getI32Type());
  case onnx::TensorProto::INT16:
    return Type(b.getI16Type());
  case onnx::TensorProto::INT8:
    return Type(b.getI8Type());
  // Unsigned types keep their signedness: division and comparisons differ.
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::UINT8:
    return Type(IntegerType::get(b.getContext(),
                                 t == onnx::TensorProto::UINT8    ? 8
                                 : t == onnx::TensorProto::UINT16 ? 16
                                 : t == onnx::TensorProto::UINT32 ? 32
                                                                  : 64,
                                 IntegerType::Unsigned));
  case onnx::TensorProto::BOOL:
    return Type(b.getI1Type());
  default:
    break;
  }
  std::string name = onnx::TensorProto::DataType_IsValid(t)
                         ? onnx::TensorProto::DataType_Name(
                               static_cast<onnx::TensorProto::DataType>(t))
                         : "#" + std::to_string(t);
  if (node)
    return nodeError() << what << " has element type " << name
                       << ", which HeterPS does not support";
  return fileError() << sourceName << ": " << what << " has element type "
                     << name << ", which HeterPS does not support";
}

FailureOr<std::string> Importer::readExternal(const onnx::TensorProto &t) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &e : t.external_data()) {
    if (e.key() == "location")
      location = e.value();
    else if (e.key() == "offset")
      offset = std::atoll(e.value().c_str());
    else if (e.key() == "length")
      length = std::atoll(e.value().c_str());
  }
  if (location.empty())
    return fileError() << sourceName << ": tensor '" << t.name()
                       << "' is stored externally but names no location";
  if (baseDir.empty())
    return fileError() << sourceName << ": tensor '" << t.name()
                       << "' is stored in external file '" << location
                       << "', which cannot be read for an in-memory model";
  // Like ONNX, refuse paths that leave the model's directory.
  if (llvm::sys::path::is_absolute(location) ||
      StringRef(location).contains(".."))
    return fileError() << sourceName << ": external data location '" << location
                       << "' of tensor '" << t.name()
                       << "' must be relative to the model's directory";
  SmallString<256> path(baseDir);
  // Every component under the model's directory is a plain directory or,
  // last, a regular file: a symbolic link could lead out of the directory,
  // and a device or FIFO could be read without end or block for good.
  SmallString<256> at(baseDir);
  for (auto part = llvm::sys::path::begin(location),
            end = llvm::sys::path::end(location);
       part != end; ++part) {
    llvm::sys::path::append(at, *part);
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(at, status, /*Follow=*/false))
      break; // A missing file is reported by the read below.
    bool last = std::next(part) == end;
    if (llvm::sys::fs::is_symlink_file(status) ||
        (last ? !llvm::sys::fs::is_regular_file(status)
              : !llvm::sys::fs::is_directory(status)))
      return fileError() << sourceName << ": external data '" << at
                         << "' of tensor '" << t.name()
                         << "' is not a regular file in the model's directory "
                            "(symbolic links, devices and FIFOs are refused)";
  }
  llvm::sys::path::append(path, location);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return fileError() << sourceName << ": cannot read external data '" << path
                       << "' of tensor '" << t.name()
                       << "': " << buffer.getError().message();
  StringRef data = (*buffer)->getBuffer();
  if (offset < 0 || offset > (int64_t)data.size() ||
      (length >= 0 && length > (int64_t)data.size() - offset))
    return fileError() << sourceName << ": external data of tensor '"
                       << t.name() << "' (offset " << offset << ", length "
                       << length << ") lies outside '" << path << "' of "
                       << data.size() << " bytes";
  data = data.drop_front(offset);
  if (length >= 0)
    data = data.take_front(length);
  return data.str();
}

FailureOr<Known> Importer::readTensor(const onnx::TensorProto &t,
                                      bool keepRaw) {
  Known k;
  FailureOr<Type> type =
      elementType(t.data_type(), "tensor '" + t.name() + "'");
  if (failed(type))
    return failure();
  k.elementType = *type;
  for (int64_t d : t.dims())
    k.shape.push_back(d);
  std::optional<int64_t> elements = checkedProduct(k.shape);
  if (!elements || *elements > (int64_t(1) << 40))
    return fileError() << sourceName << ": tensor '" << t.name()
                       << "' has dimensions " << formatShape(k.shape)
                       << ", which are negative or hold more than 2^40 "
                          "elements";
  int64_t n = *elements;

  std::string external;
  StringRef raw;
  bool hasRaw = t.has_raw_data();
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    FailureOr<std::string> data = readExternal(t);
    if (failed(data))
      return failure();
    external = std::move(*data);
    raw = external;
    hasRaw = true;
  } else if (hasRaw) {
    raw = t.raw_data();
  }

  int32_t dt = t.data_type();
  auto halfToDouble = [&](uint16_t bits) {
    const llvm::fltSemantics &sem = dt == onnx::TensorProto::BFLOAT16
                                        ? llvm::APFloat::BFloat()
                                        : llvm::APFloat::IEEEhalf();
    return llvm::APFloat(sem, llvm::APInt(16, bits)).convertToDouble();
  };
  if (hasRaw) {
    unsigned width = 0;
    switch (dt) {
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
      width = 8;
      break;
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      width = 4;
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      width = 2;
      break;
    default:
      width = 1;
    }
    if ((int64_t)raw.size() != n * (int64_t)width)
      return fileError() << sourceName << ": tensor '" << t.name() << "' has "
                         << raw.size() << " bytes of data, expected "
                         << n * width << " for " << n << " elements";
    // ONNX stores raw data little-endian, as is the host.
    if (keepRaw && dt == onnx::TensorProto::FLOAT && n >= kRawElements) {
      k.data = DenseElementsAttr::getFromRawBuffer(
          RankedTensorType::get(k.shape, k.elementType),
          ArrayRef<char>(raw.data(), raw.size()));
      return k;
    }
    const char *p = raw.data();
    for (int64_t i = 0; i < n; ++i, p += width) {
      double fv = 0;
      int64_t iv = 0;
      switch (dt) {
      case onnx::TensorProto::FLOAT: {
        float f;
        std::memcpy(&f, p, 4);
        fv = f;
        break;
      }
      case onnx::TensorProto::DOUBLE:
        std::memcpy(&fv, p, 8);
        break;
      case onnx::TensorProto::FLOAT16:
      case onnx::TensorProto::BFLOAT16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        fv = halfToDouble(h);
        break;
      }
      case onnx::TensorProto::INT64:
      case onnx::TensorProto::UINT64:
        std::memcpy(&iv, p, 8);
        break;
      case onnx::TensorProto::INT32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        iv = v;
        break;
      }
      case onnx::TensorProto::UINT32: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        iv = v;
        break;
      }
      case onnx::TensorProto::INT16: {
        int16_t v;
        std::memcpy(&v, p, 2);
        iv = v;
        break;
      }
      case onnx::TensorProto::UINT16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        iv = v;
        break;
      }
      case onnx::TensorProto::INT8:
        iv = (int8_t)*p;
        break;
      default:
        iv = (uint8_t)*p;
      }
      if (k.isFloat())
        k.floats.push_back(fv);
      else
        k.ints.push_back(iv);
    }
    return k;
  }

  switch (dt) {
  case onnx::TensorProto::FLOAT:
    k.floats.assign(t.float_data().begin(), t.float_data().end());
    break;
  case onnx::TensorProto::DOUBLE:
    k.floats.assign(t.double_data().begin(), t.double_data().end());
    break;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    for (int32_t bits : t.int32_data())
      k.floats.push_back(halfToDouble((uint16_t)bits));
    break;
  case onnx::TensorProto::INT64:
    k.ints.assign(t.int64_data().begin(), t.int64_data().end());
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    k.ints.assign(t.uint64_data().begin(), t.uint64_data().end());
    break;
  default:
    k.ints.assign(t.int32_data().begin(), t.int32_data().end());
  }
  int64_t got = k.isFloat() ? k.floats.size() : k.ints.size();
  if (got != n)
    return fileError() << sourceName << ": tensor '" << t.name() << "' has "
                       << got << " elements, its shape " << formatShape(k.shape)
                       << " needs " << n;
  return k;
}

DenseElementsAttr Importer::toAttr(const Known &k) {
  if (k.data)
    return k.data;
  auto type = RankedTensorType::get(k.shape, k.elementType);
  if (k.elementType.isF32()) {
    SmallVector<float> v(k.floats.begin(), k.floats.end());
    return DenseElementsAttr::get(type, ArrayRef<float>(v));
  }
  if (auto ft = dyn_cast<FloatType>(k.elementType)) {
    SmallVector<APFloat> v;
    for (double d : k.floats) {
      APFloat f(d);
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      v.push_back(f);
    }
    return DenseElementsAttr::get(type, v);
  }
  if (k.elementType.isInteger(1)) {
    SmallVector<bool> v;
    for (int64_t i : k.ints)
      v.push_back(i != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(v));
  }
  unsigned width = k.elementType.getIntOrFloatBitWidth();
  SmallVector<APInt> v;
  for (int64_t i : k.ints)
    v.push_back(APInt(width, i, /*isSigned=*/true, /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, v);
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

FailureOr<Value> Importer::materialize(StringRef name, bool frozen) {
  auto cached = materialized.find(name);
  if (cached != materialized.end())
    return cached->second;
  const Known &k = knowns.find(name)->second;
  if (!k.complete())
    return nodeError() << "value '" << name
                       << "' depends on the run-time batch size and cannot "
                          "be computed at import time";
  DenseElementsAttr value = toAttr(k);
  Value result;
  if (k.initializer && k.isFloat()) {
    // A float initializer is a trainable dense parameter, read where used.
    std::string symbol = name.str();
    if (symbols.contains(symbol))
      symbol += ".param";
    symbols.insert(symbol);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(func);
    ParamOp::create(b, NameLoc::get(b.getStringAttr(name)), symbol,
                    cast<RankedTensorType>(value.getType()), value, frozen);
    setPrologueInsertionPoint();
    result = LoadParamOp::create(b, NameLoc::get(b.getStringAttr(name)),
                                 value.getType(), symbol);
  } else {
    OpBuilder::InsertionGuard guard(b);
    setPrologueInsertionPoint();
    result = ConstantOp::create(b, NameLoc::get(b.getStringAttr(name)), value);
  }
  prologueEnd = result.getDefiningOp();
  materialized[name] = result;
  return result;
}

FailureOr<Value> Importer::input(int i, bool frozen) {
  if (!has(i))
    return nodeError() << "input " << i << " is missing";
  StringRef name = node->input(i);
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  if (knowns.count(name))
    return materialize(name, frozen);
  if (batchShapedFills.count(name))
    return nodeError() << "input '" << name
                       << "' is a ConstantOfShape whose shape depends on the "
                          "run-time batch size; only a recurrent layer's "
                          "initial state may be one";
  // The checker rejects undefined inputs; this keeps a broken graph that
  // slips through from crashing the importer.
  return nodeError() << "input '" << name << "' is not defined before use";
}

FailureOr<Ints> Importer::constInts(int i, StringRef what) {
  const Known *k = known(i);
  if (!k || k->isFloat())
    return nodeError() << what << " (input " << i << " '"
                       << (has(i) ? node->input(i) : std::string())
                       << "') must be an integer tensor known at import time";
  return k->ints;
}

const onnx::AttributeProto *Importer::attr(StringRef name) const {
  for (const onnx::AttributeProto &a : node->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

LogicalResult Importer::onlyFirstOutput() {
  for (int i = 1; i < node->output_size(); ++i)
    if (used(i))
      return nodeError() << "output " << i << " ('" << node->output(i)
                         << "') is not supported; only the first output is "
                            "imported";
  return success();
}

Location Importer::nodeLoc(const onnx::NodeProto &n, size_t index) {
  std::string name = n.name();
  if (name.empty())
    name = n.op_type() + "_" + std::to_string(index);
  nodeName = name;
  return NameLoc::get(b.getStringAttr(name));
}

//===----------------------------------------------------------------------===//
// Converters
//===----------------------------------------------------------------------===//

/// Folds an elementwise binary op over known tensors with broadcasting.
/// Folds Add, Sub, Mul, Div (and Pow of floats) of known values; nullopt
/// when it cannot, with `overflow` set when integers would overflow.
static std::optional<Known> foldBinary(StringRef op, const Known &x,
                                       const Known &y,
                                       bool *overflow = nullptr) {
  if (x.isFloat() != y.isFloat())
    return std::nullopt;
  size_t rank = std::max(x.shape.size(), y.shape.size());
  Ints xs(rank - x.shape.size(), 1), ys(rank - y.shape.size(), 1), out;
  llvm::append_range(xs, x.shape);
  llvm::append_range(ys, y.shape);
  for (size_t d = 0; d < rank; ++d) {
    if (xs[d] != ys[d] && xs[d] != 1 && ys[d] != 1)
      return std::nullopt;
    out.push_back(std::max(xs[d], ys[d]));
  }
  // Folding is for shape arithmetic; a broadcast that would build a large
  // constant stays an op.
  std::optional<int64_t> n = checkedProduct(out);
  if (!n || *n > kMaxFoldedElements)
    return std::nullopt;
  Known r;
  r.shape = out;
  r.elementType = x.elementType;
  Ints os = stridesOf(out), xst = stridesOf(xs), yst = stridesOf(ys);
  for (int64_t e = 0; e < *n; ++e) {
    int64_t xi = 0, yi = 0, rem = e;
    for (size_t d = 0; d < rank; ++d) {
      int64_t c = rem / os[d];
      rem %= os[d];
      xi += (xs[d] == 1 ? 0 : c) * xst[d];
      yi += (ys[d] == 1 ? 0 : c) * yst[d];
    }
    if (!x.isFloat()) {
      int64_t p = x.ints[xi], q = y.ints[yi];
      if (p == kDyn || q == kDyn) {
        // B * H, H * B and (B * H) / H stay multiples of the batch.
        BatchMultiple m;
        if (op == "Mul" && p == kDyn && q != kDyn)
          m = x.batchAt(xi).scaled(q, 1);
        else if (op == "Mul" && q == kDyn && p != kDyn)
          m = y.batchAt(yi).scaled(p, 1);
        else if (op == "Div" && p == kDyn && q != kDyn)
          m = x.batchAt(xi).scaled(1, q);
        r.pushDynamic(m);
        continue;
      }
      // Exact 64-bit arithmetic; an overflow is reported, not wrapped.
      std::optional<int64_t> v;
      if (op == "Add")
        v = checkedAdd(p, q);
      else if (op == "Sub")
        v = q == std::numeric_limits<int64_t>::min() ? std::nullopt
                                                     : checkedAdd(p, -q);
      else if (op == "Mul")
        v = checkedMul(p, q);
      else if (op == "Div") {
        if (q == 0)
          return std::nullopt;
        if (!(p == std::numeric_limits<int64_t>::min() && q == -1))
          v = p / q;
      } else {
        return std::nullopt;
      }
      if (!v) {
        if (overflow)
          *overflow = true;
        return std::nullopt;
      }
      r.ints.push_back(*v);
      continue;
    }
    double a = x.at(xi), c = y.at(yi);
    double v;
    if (op == "Add")
      v = a + c;
    else if (op == "Sub")
      v = a - c;
    else if (op == "Mul")
      v = a * c;
    else if (op == "Div") {
      v = a / c;
    } else
      v = std::pow(a, c);
    push(r, v);
  }
  return r;
}

/// Folds an elementwise op of known values with NumPy broadcasting:
/// `f(elements)` gives each result element, nullopt when it cannot be known
/// (an element known only at run time). Results beyond kMaxFoldedElements
/// are not folded.
static std::optional<Known>
foldBroadcast(ArrayRef<const Known *> in, Type resultType,
              llvm::function_ref<std::optional<double>(ArrayRef<int64_t>)> f) {
  size_t rank = 0;
  for (const Known *k : in)
    rank = std::max(rank, k->shape.size());
  SmallVector<Ints> shapes;
  Ints out(rank, 1);
  for (const Known *k : in) {
    Ints s(rank - k->shape.size(), 1);
    llvm::append_range(s, k->shape);
    for (size_t d = 0; d < rank; ++d) {
      if (s[d] != out[d] && s[d] != 1 && out[d] != 1)
        return std::nullopt;
      out[d] = std::max(out[d], s[d]);
    }
    shapes.push_back(s);
  }
  std::optional<int64_t> n = checkedProduct(out);
  if (!n || *n > kMaxFoldedElements)
    return std::nullopt;
  Known r;
  r.shape = out;
  r.elementType = resultType;
  Ints os = stridesOf(out);
  SmallVector<Ints> strides;
  for (const Ints &s : shapes)
    strides.push_back(stridesOf(s));
  Ints at(in.size());
  for (int64_t e = 0; e < *n; ++e) {
    std::fill(at.begin(), at.end(), 0);
    int64_t rem = e;
    for (size_t d = 0; d < rank; ++d) {
      int64_t c = rem / os[d];
      rem %= os[d];
      for (size_t i = 0; i < in.size(); ++i)
        at[i] += (shapes[i][d] == 1 ? 0 : c) * strides[i][d];
    }
    std::optional<double> v = f(at);
    if (!v)
      return std::nullopt;
    push(r, *v);
  }
  return r;
}

LogicalResult Importer::convertCompare(StringRef op) {
  const Known *x = foldable(0), *y = foldable(1);
  if (x && y) {
    std::optional<Known> r =
        foldBroadcast({x, y}, b.getI1Type(),
                      [&](ArrayRef<int64_t> at) -> std::optional<double> {
                        if ((!x->isFloat() && x->ints[at[0]] == kDyn) ||
                            (!y->isFloat() && y->ints[at[1]] == kDyn))
                          return std::nullopt;
                        if (!x->isFloat() && !y->isFloat()) {
                          int64_t a = x->ints[at[0]], c = y->ints[at[1]];
                          bool v = op == "Equal"         ? a == c
                                   : op == "Less"        ? a < c
                                   : op == "Greater"     ? a > c
                                   : op == "LessOrEqual" ? a <= c
                                                         : a >= c;
                          return v ? 1.0 : 0.0;
                        }
                        double a = x->at(at[0]), c = y->at(at[1]);
                        bool v = op == "Equal"         ? a == c
                                 : op == "Less"        ? a < c
                                 : op == "Greater"     ? a > c
                                 : op == "LessOrEqual" ? a <= c
                                                       : a >= c;
                        return v ? 1.0 : 0.0;
                      });
    if (r) {
      setKnown(*r);
      return success();
    }
  }
  FailureOr<Value> lhs = input(0), rhs = input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  CompareKind kind = llvm::StringSwitch<CompareKind>(op)
                         .Case("Equal", CompareKind::eq)
                         .Case("Less", CompareKind::lt)
                         .Case("Greater", CompareKind::gt)
                         .Case("LessOrEqual", CompareKind::le)
                         .Default(CompareKind::ge);
  return emit(
      make<CompareOp>(CompareKindAttr::get(b.getContext(), kind), *lhs, *rhs));
}

LogicalResult Importer::convertLogical(StringRef op) {
  if (op == "Not") {
    if (const Known *k = foldable(0); k && !k->isFloat()) {
      Known r = *k;
      for (int64_t &v : r.ints)
        v = v == 0;
      setKnown(r);
      return success();
    }
    FailureOr<Value> x = input(0);
    if (failed(x))
      return failure();
    setOutput(NotOp::create(b, loc, x->getType(), *x));
    return success();
  }
  // Booleans are known as integers; other types are left to the op's
  // verifier, which names them.
  const Known *x = foldable(0), *y = foldable(1);
  if (x && y && !x->isFloat() && !y->isFloat()) {
    std::optional<Known> r =
        foldBroadcast({x, y}, b.getI1Type(), [&](ArrayRef<int64_t> at) {
          bool a = x->ints[at[0]] != 0, c = y->ints[at[1]] != 0;
          bool v = op == "And" ? a && c : op == "Or" ? a || c : a != c;
          return std::optional<double>(v ? 1.0 : 0.0);
        });
    if (r) {
      setKnown(*r);
      return success();
    }
  }
  FailureOr<Value> lhs = input(0), rhs = input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  LogicKind kind = op == "And"  ? LogicKind::and_
                   : op == "Or" ? LogicKind::or_
                                : LogicKind::xor_;
  return emit(
      make<LogicalOp>(LogicKindAttr::get(b.getContext(), kind), *lhs, *rhs));
}

LogicalResult Importer::convertWhere() {
  const Known *c = foldable(0), *x = foldable(1), *y = foldable(2);
  if (c && x && y && !c->isFloat() && x->isFloat() == y->isFloat()) {
    std::optional<Known> r = foldBroadcast(
        {c, x, y}, x->elementType,
        [&](ArrayRef<int64_t> at) -> std::optional<double> {
          const Known *from = c->ints[at[0]] ? x : y;
          int64_t i = c->ints[at[0]] ? at[1] : at[2];
          if (!from->isFloat() && from->ints[i] == kDyn)
            return static_cast<double>(kDyn);
          // Integers beyond 2^53 would round through double:
          // the op computes them instead.
          if (!from->isFloat() && (from->ints[i] > (int64_t(1) << 53) ||
                                   from->ints[i] < -(int64_t(1) << 53)))
            return std::nullopt;
          return from->at(i);
        });
    if (r) {
      setKnown(*r);
      return success();
    }
  }
  FailureOr<Value> cond = input(0), lhs = input(1), rhs = input(2);
  if (failed(cond) || failed(lhs) || failed(rhs))
    return failure();
  return emit(make<WhereOp>(*cond, *lhs, *rhs));
}

LogicalResult Importer::convertConstantOfShape() {
  const Known *shape = foldable(0);
  if (!shape || shape->isFloat())
    return nodeError() << "the shape must be an integer tensor known at "
                          "import time";
  Known fill;
  fill.elementType = b.getF32Type();
  fill.shape = {1};
  fill.floats = {0.0};
  if (const onnx::AttributeProto *a = attr("value")) {
    FailureOr<Known> v = readTensor(a->t());
    if (failed(v))
      return failure();
    if (v->size() != 1)
      return nodeError() << "the value must have one element, it has "
                         << v->size();
    fill = *v;
  }
  if (!shape->complete()) {
    // PyTorch's zero initial state of a recurrent layer, [D, B, H]: no
    // tensor is built; the layer takes it as absent (input() refuses it
    // to every other consumer).
    batchShapedFills[node->output(0)] = fill.at(0);
    return success();
  }
  std::optional<int64_t> n = checkedProduct(shape->ints);
  for (int64_t d : shape->ints)
    if (d < 0)
      n.reset();
  if (!n)
    return nodeError() << "the shape " << formatShape(shape->ints)
                       << " is not a valid shape";
  if (*n > kMaxFoldedElements)
    return nodeError() << "the shape " << formatShape(shape->ints) << " has "
                       << *n << " elements; at most " << kMaxFoldedElements
                       << " are built at import time";
  Known r;
  r.elementType = fill.elementType;
  r.shape = shape->ints;
  for (int64_t i = 0; i < *n; ++i)
    pushFrom(r, fill, 0);
  setKnown(r);
  return success();
}

LogicalResult Importer::convertBinary(StringRef op) {
  // Before opset 7 these ops broadcast only with `broadcast = 1` and an
  // optional `axis`; NumPy alignment (trailing) is what `axis` absent means.
  if (attr("axis"))
    return nodeError() << "legacy broadcasting with an explicit 'axis' is not "
                          "supported";
  const Known *x = foldable(0), *y = foldable(1);
  if (x && y && !x->isFloat() && op != "Pow") {
    bool overflow = false;
    if (std::optional<Known> r = foldBinary(op, *x, *y, &overflow)) {
      setKnown(*r);
      return success();
    }
    if (overflow)
      return nodeError() << "the integer arithmetic overflows 64 bits";
  }
  FailureOr<Value> lhs = input(0), rhs = input(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  // Pow may take an exponent of another type (opset 12); the dialect's
  // binary ops take one element type.
  if (op == "Pow" &&
      typeOf(*lhs).getElementType() != typeOf(*rhs).getElementType())
    rhs = CastOp::create(
              b, loc, typeOf(*rhs).clone(typeOf(*lhs).getElementType()), *rhs)
              .getResult();
  if (op == "Add")
    return emit(make<AddOp>(*lhs, *rhs));
  if (op == "Sub")
    return emit(make<SubOp>(*lhs, *rhs));
  if (op == "Mul")
    return emit(make<MulOp>(*lhs, *rhs));
  if (op == "Div")
    return emit(make<DivOp>(*lhs, *rhs));
  return emit(make<PowOp>(*lhs, *rhs));
}

LogicalResult Importer::convertUnary(StringRef op) {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  Type t = x->getType();
  Value r;
  if (op == "Neg")
    r = NegOp::create(b, loc, t, *x);
  else if (op == "Abs")
    r = AbsOp::create(b, loc, t, *x);
  else if (op == "Exp")
    r = ExpOp::create(b, loc, t, *x);
  else if (op == "Log")
    r = LogOp::create(b, loc, t, *x);
  else if (op == "Sqrt")
    r = SqrtOp::create(b, loc, t, *x);
  else if (op == "Relu")
    r = ReluOp::create(b, loc, t, *x);
  else if (op == "Sigmoid")
    r = SigmoidOp::create(b, loc, t, *x);
  else if (op == "Tanh")
    r = TanhOp::create(b, loc, t, *x);
  else if (op == "Erf")
    r = ErfOp::create(b, loc, t, *x);
  else if (op == "LeakyRelu")
    r = LeakyReluOp::create(b, loc, t, *x, APFloat(floatAttr("alpha", 0.01f)));
  setOutput(r);
  return success();
}

LogicalResult Importer::convertSoftmax(bool log) {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  RankedTensorType type = typeOf(*x);
  int64_t rank = type.getRank();
  int64_t axis = intAttr("axis", opset >= 13 ? -1 : 1);
  std::optional<int64_t> norm = normalizeAxis(axis, rank);
  if (!norm)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  auto build = [&](Value v, int64_t a) -> Value {
    if (log)
      return LogSoftmaxOp::create(b, loc, v.getType(), v,
                                  b.getI64IntegerAttr(a));
    return SoftmaxOp::create(b, loc, v.getType(), v, b.getI64IntegerAttr(a));
  };
  // Before opset 13 the input is coerced to 2-D at `axis` and normalised over
  // the whole trailing block; that is one axis when `axis` is the last.
  if (opset >= 13 || *norm == rank - 1) {
    setOutput(build(*x, *norm));
    return success();
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t s = type.getDimSize(d);
    int64_t &p = d < *norm ? outer : inner;
    p = ShapedType::isDynamic(s) || ShapedType::isDynamic(p) ? kDyn : p * s;
  }
  if (ShapedType::isDynamic(inner))
    return nodeError() << "cannot coerce " << formatShape(type.getShape())
                       << " to 2-D at axis " << axis
                       << ": the trailing block is dynamic";
  auto flat = RankedTensorType::get({outer, inner}, type.getElementType());
  Value f = ReshapeOp::create(b, loc, flat, *x);
  Value s = build(f, 1);
  setOutput(ReshapeOp::create(b, loc, type, s));
  return success();
}

LogicalResult Importer::convertReshapeTo(Value x, Ints target) {
  setOutput(ReshapeOp::create(
      b, loc, RankedTensorType::get(target, typeOf(x).getElementType()), x));
  return success();
}

/// Reshape of a known tensor: the data is unchanged.
static Known reshaped(const Known &k, ArrayRef<int64_t> shape) {
  Known r = k;
  r.shape.assign(shape.begin(), shape.end());
  if (r.data)
    r.data = r.data.reshape(RankedTensorType::get(shape, r.elementType));
  return r;
}

LogicalResult Importer::convertReshapeLike(StringRef op) {
  const Known *k;
  Ints in;
  Value x;
  if (failed(foldableOrInput(0, k, x, in)))
    return failure();
  int64_t rank = in.size();
  Ints out;
  auto normAxes = [&](Ints axes, int64_t r) -> FailureOr<Ints> {
    for (int64_t &a : axes) {
      std::optional<int64_t> n = normalizeAxis(a, r);
      if (!n)
        return nodeError() << "axis " << a << " is out of range for rank " << r;
      a = *n;
    }
    llvm::sort(axes);
    return axes;
  };

  if (op == "Flatten") {
    int64_t axis = intAttr("axis", 1);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis > rank)
      return nodeError() << "axis " << intAttr("axis", 1)
                         << " is out of range for rank " << rank;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t &p = d < axis ? outer : inner;
      if (ShapedType::isDynamic(in[d]) || ShapedType::isDynamic(p)) {
        p = kDyn;
      } else if (std::optional<int64_t> q = checkedMul(p, in[d])) {
        p = *q;
      } else {
        return nodeError() << "flattening " << formatShape(in)
                           << " overflows a 64-bit size";
      }
    }
    out = {outer, inner};
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    std::optional<Ints> axes;
    if (opset >= 13) {
      if (has(1)) {
        FailureOr<Ints> a = constInts(1, "axes");
        if (failed(a))
          return failure();
        axes = *a;
      }
    } else {
      axes = intsAttr("axes");
    }
    if (op == "Unsqueeze") {
      if (!axes)
        return nodeError() << "needs axes";
      int64_t outRank = rank + axes->size();
      FailureOr<Ints> a = normAxes(*axes, outRank);
      if (failed(a))
        return failure();
      int64_t next = 0;
      for (int64_t d = 0; d < outRank; ++d)
        out.push_back(llvm::is_contained(*a, d) ? 1 : in[next++]);
    } else {
      Ints drop;
      if (axes) {
        FailureOr<Ints> a = normAxes(*axes, rank);
        if (failed(a))
          return failure();
        drop = *a;
      } else {
        for (int64_t d = 0; d < rank; ++d)
          if (in[d] == 1)
            drop.push_back(d);
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (!llvm::is_contained(drop, d)) {
          out.push_back(in[d]);
          continue;
        }
        if (in[d] != 1)
          return nodeError()
                 << "cannot squeeze dimension " << d << " of size "
                 << (ShapedType::isDynamic(in[d]) ? std::string("?")
                                                  : std::to_string(in[d]));
      }
    }
  } else { // Reshape
    Ints shape;
    const Known *target = nullptr;
    if (opset < 5) {
      shape = intsAttr("shape").value_or(Ints());
    } else {
      FailureOr<Ints> s = constInts(1, "the target shape");
      if (failed(s))
        return failure();
      shape = *s;
      target = known(1);
    }
    // The input's run-time dimension, if any, against the batch.
    int64_t inDynAt = -1;
    for (int64_t d = 0; d < rank; ++d)
      if (ShapedType::isDynamic(in[d]))
        inDynAt = d;
    BatchMultiple inMultiple = k ? BatchMultiple() : batchMultipleOf(x);
    bool allowZero = intAttr("allowzero", 0) != 0;
    int64_t inferAt = -1, dynAt = -1;
    BatchMultiple dynMultiple;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t s = shape[d];
      bool dynamic = false;
      if (s == 0 && !allowZero) {
        if ((int64_t)d >= rank)
          return nodeError() << "target dimension " << d
                             << " copies a dimension the input lacks";
        s = in[d];
        if ((dynamic = ShapedType::isDynamic(s)))
          dynMultiple = inMultiple;
      } else if (s == kDyn) {
        // A size computed from Shape(...) at run time: the batch, or a
        // multiple of it the importer may have followed.
        dynamic = true;
        dynMultiple = target ? target->batchAt(d) : BatchMultiple();
      } else if (s == -1) {
        if (inferAt >= 0)
          return nodeError() << "target shape has more than one -1";
        inferAt = d;
      } else if (s < 0) {
        return nodeError() << "target dimension " << d << " is " << s;
      }
      if (dynamic) {
        if (dynAt >= 0)
          return nodeError() << "target dimensions " << dynAt << " and " << d
                             << " both depend on the run-time batch size";
        if (inDynAt < 0)
          return nodeError() << "target dimension " << d
                             << " depends on the run-time batch size, but "
                                "the input "
                             << formatShape(in) << " has none";
        dynAt = d;
      }
      out.push_back(s);
    }
    std::optional<int64_t> inProd = 1, outProd = 1;
    for (int64_t s : in)
      if (!ShapedType::isDynamic(s) && inProd)
        inProd = checkedMul(*inProd, s);
    for (size_t d = 0; d < out.size(); ++d)
      if ((int64_t)d != inferAt && (int64_t)d != dynAt && outProd)
        outProd = checkedMul(*outProd, out[d]);
    if (!inProd || !outProd)
      return nodeError() << "reshaping " << formatShape(in) << " to "
                         << formatShape(shape) << " overflows a 64-bit size";
    if (inferAt >= 0) {
      if (inDynAt >= 0 && dynAt < 0) {
        out[inferAt] = kDyn; // -1 absorbs the batch.
      } else if (inDynAt >= 0) {
        // Both the input and the target hold the batch: -1 is what is left
        // of the input's elements, in multiples of the batch.
        if (!inMultiple.known() || !dynMultiple.known())
          return nodeError()
                 << "cannot infer the -1 of target dimension " << inferAt
                 << ": target dimension " << dynAt
                 << " is computed from the run-time batch size in a way the "
                    "importer does not follow";
        std::optional<int64_t> n = checkedMul(*inProd, dynMultiple.den),
                               d = checkedMul(*outProd, dynMultiple.num);
        BatchMultiple left =
            n && d ? inMultiple.scaled(*n, *d) : BatchMultiple();
        if (!left.known() || left.den != 1)
          return nodeError() << "cannot reshape " << formatShape(in) << " to "
                             << formatShape(shape);
        out[inferAt] = left.num;
      } else if (*outProd == 0 || *inProd % *outProd != 0) {
        return nodeError() << "cannot reshape " << formatShape(in) << " to "
                           << formatShape(shape);
      } else {
        out[inferAt] = *inProd / *outProd;
      }
    } else if (dynAt >= 0) {
      // Both sides' element counts, where they are known multiples of the
      // batch, must agree.
      BatchMultiple have = inMultiple.scaled(*inProd, 1),
                    want = dynMultiple.scaled(*outProd, 1);
      if (have.known() && want.known() && !(have == want))
        return nodeError() << "cannot reshape " << formatShape(in) << " to "
                           << formatShape(shape) << ": the input holds "
                           << have.str() << " elements per sample, the target "
                           << want.str();
    }
  }
  if (k) {
    std::optional<int64_t> n = checkedProduct(out);
    if (!n || *n != k->size())
      return nodeError() << "cannot reshape " << formatShape(in) << " ("
                         << k->size() << " elements) to " << formatShape(out);
    setKnown(reshaped(*k, out));
    return success();
  }
  return convertReshapeTo(x, out);
}

std::string Importer::tableSymbol(const std::string &initializer,
                                  const Known &table) {
  std::string &symbol = tableOf[initializer];
  if (!symbol.empty())
    return symbol;
  symbol = initializer;
  if (symbols.contains(symbol))
    symbol += ".table";
  symbols.insert(symbol);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(func);
  EmbeddingTableOp::create(
      b, NameLoc::get(b.getStringAttr(initializer)), symbol, table.shape[0],
      table.shape[1],
      // The initializer's rows are the table's initial value; the
      // initializer spec only applies to rows the server adds later.
      InitAttr::get(ctx, InitKind::zeros, ArrayRef<double>{}), toAttr(table),
      /*optimizer=*/OptimizerAttr());
  return symbol;
}

/// nn.EmbeddingBag's loop over bags of one size: the rows of the ids are
/// the bags, looked up with a sum or mean combiner, or gathered and reduced
/// with reduce_max.
LogicalResult Importer::convertEmbeddingBag(const EmbeddingBagMatch &bag) {
  if (!bag.unsupported.empty())
    return nodeError() << bag.unsupported;
  auto it = knowns.find(bag.table);
  if (it == knowns.end() || !it->second.initializer ||
      !it->second.elementType.isF32() || it->second.shape.size() != 2)
    return nodeError() << "the table '" << bag.table
                       << "' of the nn.EmbeddingBag must be a 2-D float "
                          "initializer";
  auto ids = values.find(bag.ids);
  if (ids == values.end())
    return nodeError() << "the ids '" << bag.ids
                       << "' of the nn.EmbeddingBag must be computed at run "
                          "time";
  RankedTensorType idsType = typeOf(ids->second);
  if (idsType.getRank() != 2 || !isa<IntegerType>(idsType.getElementType()))
    return nodeError() << "the ids '" << bag.ids
                       << "' of the nn.EmbeddingBag must be a 2-D integer "
                          "tensor, got "
                       << idsType;
  std::string symbol = tableSymbol(bag.table, it->second);
  int64_t dim = it->second.shape[1];
  Type f32 = b.getF32Type();
  if (bag.mode != "max") {
    setOutput(EmbeddingLookupOp::create(
        b, loc, RankedTensorType::get({idsType.getDimSize(0), dim}, f32),
        symbol, ids->second,
        bag.mode == "sum" ? Combiner::sum : Combiner::mean));
    return success();
  }
  Value rows = EmbeddingLookupOp::create(
      b, loc,
      RankedTensorType::get({idsType.getDimSize(0), idsType.getDimSize(1), dim},
                            f32),
      symbol, ids->second, Combiner::none);
  return emit(make<ReduceMaxOp>(rows, b.getDenseI64ArrayAttr({1}),
                                b.getBoolAttr(false)));
}

LogicalResult Importer::convertGather() {
  int64_t axis = intAttr("axis", 0);
  const Known *data = foldable(0), *idx = foldable(1);
  if (data && idx && !idx->isFloat()) {
    int64_t rank = data->shape.size();
    std::optional<int64_t> a = normalizeAxis(axis, rank);
    if (!a)
      return nodeError() << "axis " << axis << " is out of range for rank "
                         << rank;
    Known r;
    r.elementType = data->elementType;
    r.shape.assign(data->shape.begin(), data->shape.begin() + *a);
    llvm::append_range(r.shape, idx->shape);
    r.shape.append(data->shape.begin() + *a + 1, data->shape.end());
    int64_t outer = 1, inner = 1, dim = data->shape[*a];
    for (int64_t d = 0; d < *a; ++d)
      outer *= data->shape[d];
    for (int64_t d = *a + 1; d < rank; ++d)
      inner *= data->shape[d];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : idx->ints) {
        if (i < 0)
          i += dim;
        if (i < 0 || i >= dim)
          return nodeError() << "index " << i << " is out of range for " << dim
                             << " entries";
        for (int64_t e = 0; e < inner; ++e)
          pushFrom(r, *data, (o * dim + i) * inner + e);
      }
    setKnown(r);
    return success();
  }
  // Rows of a float initializer picked by computed ids: a sparse table.
  const Known *table = known(0);
  if (table && table->initializer && table->isFloat() && !known(1) &&
      table->shape.size() == 2 && axis == 0 && table->elementType.isF32()) {
    FailureOr<Value> ids = input(1);
    if (failed(ids))
      return failure();
    if (!isa<IntegerType>(typeOf(*ids).getElementType()))
      return nodeError() << "indices of table '" << node->input(0)
                         << "' are not integers";
    std::string symbol = tableSymbol(node->input(0), *table);
    SmallVector<int64_t> shape(typeOf(*ids).getShape());
    shape.push_back(table->shape[1]);
    setOutput(EmbeddingLookupOp::create(
        b, loc, RankedTensorType::get(shape, b.getF32Type()), symbol, *ids,
        Combiner::none));
    return success();
  }
  FailureOr<Value> x = input(0), ids = input(1);
  if (failed(x) || failed(ids))
    return failure();
  // Constant indices are checked against the data's extent here, naming
  // the node; the runtime checks the others as it gathers.
  ArrayRef<int64_t> dataShape = typeOf(*x).getShape();
  std::optional<int64_t> a =
      normalizeAxis(axis, static_cast<int64_t>(dataShape.size()));
  if (!a)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << dataShape.size();
  if (const Known *k = known(1);
      k && !k->isFloat() && !ShapedType::isDynamic(dataShape[*a]))
    for (int64_t i : k->ints)
      if (i != kDyn && (i < -dataShape[*a] || i >= dataShape[*a]))
        return nodeError() << "index " << i << " is out of range for "
                           << dataShape[*a] << " entries along axis " << *a;
  return emit(make<GatherOp>(*x, *ids, b.getI64IntegerAttr(axis)));
}

static Known sliceKnown(const Known &k, const Ints &fs, const Ints &fe,
                        const Ints &fst);

LogicalResult Importer::convertSlice() {
  Ints starts, ends, axes, steps;
  if (opset < 10) {
    starts = intsAttr("starts").value_or(Ints());
    ends = intsAttr("ends").value_or(Ints());
    axes = intsAttr("axes").value_or(Ints());
  } else {
    FailureOr<Ints> s = constInts(1, "starts"), e = constInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (has(3)) {
      FailureOr<Ints> a = constInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (has(4)) {
      FailureOr<Ints> st = constInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  const Known *k;
  Value x;
  Ints in;
  if (failed(foldableOrInput(0, k, x, in)))
    return failure();
  int64_t rank = in.size();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return nodeError() << "starts, ends, axes and steps differ in length";
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  Ints fs(rank, 0), fe(rank, kMax), fst(rank, 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    std::optional<int64_t> a = normalizeAxis(axes[i], rank);
    if (!a)
      return nodeError() << "axis " << axes[i] << " is out of range for rank "
                         << rank;
    int64_t size = in[*a];
    if (steps[i] == 0)
      return nodeError() << "step of axis " << axes[i] << " is zero";
    if (ShapedType::isDynamic(size)) {
      if (starts[i] != 0 || ends[i] < (int64_t)INT32_MAX || steps[i] != 1)
        return nodeError() << "slices the dynamic batch dimension " << *a;
      continue;
    }
    auto norm = [&](int64_t v) {
      if (v < 0)
        v += size;
      int64_t lo = steps[i] > 0 ? 0 : -1, hi = steps[i] > 0 ? size : size - 1;
      return std::clamp(v, lo, hi);
    };
    fs[*a] = norm(starts[i]);
    fe[*a] = norm(ends[i]);
    fst[*a] = steps[i];
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!ShapedType::isDynamic(in[d]) && fe[d] == kMax)
      fe[d] = in[d];
  if (!k)
    return emit(make<SliceOp>(x, b.getDenseI64ArrayAttr(fs),
                              b.getDenseI64ArrayAttr(fe),
                              b.getDenseI64ArrayAttr(fst)));
  setKnown(sliceKnown(*k, fs, fe, fst));
  return success();
}

/// Folds a slice of a known tensor (bounds normalised, one per dimension).
static Known sliceKnown(const Known &k, const Ints &fs, const Ints &fe,
                        const Ints &fst) {
  // Enumerate the selected index along every dimension.
  int64_t rank = k.shape.size();
  SmallVector<Ints> picks(rank);
  Known r;
  r.elementType = k.elementType;
  for (int64_t d = 0; d < rank; ++d) {
    for (int64_t i = fs[d]; fst[d] > 0 ? i < fe[d] : i > fe[d]; i += fst[d])
      picks[d].push_back(i);
    r.shape.push_back(picks[d].size());
  }
  Ints strides = stridesOf(k.shape);
  // At most the input's elements: every dimension picks at most its size.
  int64_t n = checkedProduct(r.shape).value_or(0);
  Ints outStrides = stridesOf(r.shape);
  for (int64_t e = 0; e < n; ++e) {
    int64_t src = 0, rem = e;
    for (int64_t d = 0; d < rank; ++d) {
      src += picks[d][rem / outStrides[d]] * strides[d];
      rem %= outStrides[d];
    }
    pushFrom(r, k, src);
  }
  return r;
}

LogicalResult Importer::convertSplit() {
  int64_t outputs = node->output_size();
  Ints split;
  if (opset < 13) {
    split = intsAttr("split").value_or(Ints());
  } else if (has(1)) {
    FailureOr<Ints> s = constInts(1, "split");
    if (failed(s))
      return failure();
    split = *s;
  }
  const Known *k;
  Value x;
  Ints in;
  if (failed(foldableOrInput(0, k, x, in)))
    return failure();
  int64_t rank = in.size();
  std::optional<int64_t> axis = normalizeAxis(intAttr("axis", 0), rank);
  if (!axis)
    return nodeError() << "axis " << intAttr("axis", 0)
                       << " is out of range for rank " << rank;
  int64_t size = in[*axis];
  if (ShapedType::isDynamic(size))
    return nodeError() << "splits the dynamic batch dimension " << *axis;
  if (split.empty()) {
    // Equal parts; from opset 18 the last may be smaller.
    int64_t parts = opset >= 18 ? intAttr("num_outputs", outputs) : outputs;
    if (parts != outputs)
      return nodeError() << "num_outputs is " << parts << " but the node has "
                         << outputs << " outputs";
    int64_t each = opset >= 18 ? (size + parts - 1) / parts : size / parts;
    if (opset < 18 && size % parts)
      return nodeError() << "cannot split dimension " << *axis << " of size "
                         << size << " into " << parts << " equal parts";
    for (int64_t i = 0, left = size; i < parts; ++i, left -= each)
      split.push_back(std::min(each, left));
  }
  if (static_cast<int64_t>(split.size()) != outputs)
    return nodeError() << "has " << split.size() << " split sizes for "
                       << outputs << " outputs";
  int64_t total = 0;
  for (int64_t part : split) {
    if (part < 0)
      return nodeError() << "split sizes " << formatShape(split)
                         << " include a negative one";
    total += part;
  }
  if (total != size)
    return nodeError() << "split sizes " << formatShape(split) << " add up to "
                       << total << ", dimension " << *axis << " has " << size;
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t at = 0;
  for (int64_t i = 0; i < outputs; ++i) {
    Ints fs(rank, 0), fe(rank, kMax), fst(rank, 1);
    for (int64_t d = 0; d < rank; ++d)
      if (!ShapedType::isDynamic(in[d]))
        fe[d] = in[d];
    fs[*axis] = at;
    fe[*axis] = at + split[i];
    at += split[i];
    if (node->output(i).empty())
      continue;
    if (k) {
      setKnown(sliceKnown(*k, fs, fe, fst), i);
      continue;
    }
    FailureOr<Value> part =
        make<SliceOp>(x, b.getDenseI64ArrayAttr(fs), b.getDenseI64ArrayAttr(fe),
                      b.getDenseI64ArrayAttr(fst));
    if (failed(part))
      return failure();
    setOutput(*part, i);
  }
  return success();
}

LogicalResult Importer::convertConcat() {
  int64_t axis = intAttr("axis", 0);
  bool allKnown = true;
  for (int i = 0; i < node->input_size(); ++i)
    allKnown &= foldable(i) != nullptr;
  if (allKnown && node->input_size() > 0 && !foldable(0)->isFloat()) {
    const Known *first = foldable(0);
    int64_t rank = first->shape.size();
    std::optional<int64_t> a = normalizeAxis(axis, rank);
    if (!a)
      return nodeError() << "axis " << axis << " is out of range for rank "
                         << rank;
    Known r;
    r.elementType = first->elementType;
    r.shape = first->shape;
    r.shape[*a] = 0;
    int64_t outer = 1;
    for (int64_t d = 0; d < *a; ++d)
      outer *= first->shape[d];
    for (int i = 0; i < node->input_size(); ++i) {
      const Known *k = foldable(i);
      if ((int64_t)k->shape.size() != rank)
        return nodeError() << "inputs differ in rank";
      r.shape[*a] += k->shape[*a];
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < node->input_size(); ++i) {
        const Known *k = foldable(i);
        int64_t block = k->size() / std::max<int64_t>(outer, 1);
        for (int64_t e = 0; e < block; ++e)
          pushFrom(r, *k, o * block + e);
      }
    setKnown(r);
    return success();
  }
  SmallVector<Value> inputs;
  for (int i = 0; i < node->input_size(); ++i) {
    FailureOr<Value> v = input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  return emit(make<ConcatOp>(ValueRange(inputs), b.getI64IntegerAttr(axis)));
}

LogicalResult Importer::convertCast() {
  FailureOr<Type> to =
      elementType(intAttr("to", 0), "the target type of the Cast");
  if (failed(to))
    return failure();
  if (const Known *k = foldable(0)) {
    Known r;
    r.shape = k->shape;
    r.elementType = *to;
    for (int64_t i = 0, n = k->size(); i < n; ++i) {
      if (!k->isFloat() && k->ints[i] == kDyn && !r.isFloat()) {
        r.pushDynamic(k->batchAt(i));
        continue;
      }
      // A float that no 64-bit integer holds has no integer value.
      if (k->isFloat() && !r.isFloat() &&
          !(k->at(i) >= -9.2233720368547758e18 &&
            k->at(i) < 9.2233720368547758e18))
        return nodeError() << "casts " << k->at(i)
                           << " to an integer type, which cannot hold it";
      pushFrom(r, *k, i);
    }
    setKnown(r);
    return success();
  }
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  if (typeOf(*x).getElementType() == *to) {
    setOutput(*x);
    return success();
  }
  setOutput(CastOp::create(b, loc, typeOf(*x).clone(*to), *x));
  return success();
}

LogicalResult Importer::convertExpand() {
  FailureOr<Ints> shape = constInts(1, "the target shape");
  if (failed(shape))
    return failure();
  const Known *k = foldable(0);
  if (!k || !k->complete()) {
    FailureOr<Value> x = input(0);
    if (failed(x))
      return failure();
    // A target dimension that is the run-time batch (x.expand_as(y), as
    // F.normalize writes it) is kept from the input's own batch dimension:
    // broadcasting against 1 keeps it.
    ArrayRef<int64_t> in = typeOf(*x).getShape();
    Ints target = *shape;
    int64_t offset =
        static_cast<int64_t>(target.size()) - static_cast<int64_t>(in.size());
    for (int64_t d = 0; d < static_cast<int64_t>(target.size()); ++d) {
      if (target[d] != kDyn)
        continue;
      int64_t i = d - offset;
      if (i < 0 || !ShapedType::isDynamic(in[i]))
        return nodeError() << "the target shape " << formatShape(*shape)
                           << " expands dimension " << d
                           << " to the run-time batch size";
      target[d] = 1;
    }
    return emit(make<ExpandOp>(*x, b.getDenseI64ArrayAttr(target)));
  }
  Known ones;
  ones.elementType = k->elementType;
  ones.shape = *shape;
  for (int64_t i = 0, n = ones.size(); i < n; ++i)
    push(ones, 1.0);
  std::optional<Known> r = foldBinary("Mul", *k, ones);
  if (!r)
    return nodeError() << "cannot broadcast " << formatShape(k->shape) << " to "
                       << formatShape(*shape);
  setKnown(*r);
  return success();
}

LogicalResult Importer::convertPad() {
  std::string mode = stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return nodeError() << "mode '" << mode
                       << "' is not supported; expected constant, reflect or "
                          "edge";
  Ints pads;
  double value = 0;
  if (opset < 11) {
    std::optional<Ints> p = intsAttr("pads");
    if (!p)
      return nodeError() << "needs the pads attribute";
    pads = *p;
    value = floatAttr("value", 0);
  } else {
    FailureOr<Ints> p = constInts(1, "the pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (has(2)) {
      const Known *k = known(2);
      if (!k || k->size() != 1)
        return nodeError() << "constant_value must be a scalar known at "
                              "import time";
      value = k->at(0);
    }
    if (has(3))
      return nodeError() << "the axes input is not supported; give pads for "
                            "every dimension";
  }
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return nodeError() << "has " << pads.size() << " pads for a rank-" << rank
                       << " input; expected " << 2 * rank;
  for (int64_t p : pads)
    if (p < 0)
      return nodeError() << "negative pads (cropping) are not supported, got "
                         << formatShape(pads);
  // An exporter's Pad before a pooling is often all zeros: nothing to do.
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; })) {
    setOutput(*x);
    return success();
  }
  return emit(make<PadOp>(*x, b.getStringAttr(mode),
                          b.getDenseI64ArrayAttr(pads),
                          b.getF64FloatAttr(value)));
}

LogicalResult Importer::convertTile() {
  FailureOr<Ints> repeats = constInts(1, "the repeats");
  if (failed(repeats))
    return failure();
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  RankedTensorType type = typeOf(*x);
  ArrayRef<int64_t> in = type.getShape();
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(repeats->size()) != rank)
    return nodeError() << "has " << repeats->size() << " repeats for a rank-"
                       << rank << " input";
  // Tile is a broadcast of the input with a unit dimension before each
  // repeated one: reshape [.., 1, d, ..], expand [.., r, d, ..], and reshape
  // [.., r * d, ..]. The ops and their gradients exist already.
  Ints split, expand, out;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t r = (*repeats)[d];
    if (r < 1)
      return nodeError() << "repeat " << r << " of dimension " << d
                         << " is not positive";
    if (ShapedType::isDynamic(in[d])) {
      if (r != 1)
        return nodeError() << "repeats the dynamic batch dimension " << d;
      split.push_back(in[d]);
      expand.push_back(1);
      out.push_back(in[d]);
      continue;
    }
    split.append({1, in[d]});
    expand.append({r, 1});
    std::optional<int64_t> size = checkedMul(r, in[d]);
    if (!size)
      return nodeError() << "repeat " << r << " of dimension " << d
                         << " overflows";
    out.push_back(*size);
  }
  if (llvm::all_of(*repeats, [](int64_t r) { return r == 1; })) {
    setOutput(*x);
    return success();
  }
  Value v = ReshapeOp::create(
      b, loc, RankedTensorType::get(split, type.getElementType()), *x);
  FailureOr<Value> e = make<ExpandOp>(v, b.getDenseI64ArrayAttr(expand));
  if (failed(e))
    return failure();
  return convertReshapeTo(*e, out);
}

LogicalResult Importer::convertRange() {
  // Scalars, even float initializers: a range is not trained.
  const Known *start = known(0), *limit = known(1), *delta = known(2);
  for (const Known *k : {start, limit, delta})
    if (!k || k->size() != 1 || !k->complete())
      return nodeError() << "start, limit and delta must be scalars known at "
                            "import time";
  if (start->isFloat() != limit->isFloat() ||
      start->isFloat() != delta->isFloat())
    return nodeError() << "start, limit and delta must have one type";
  double s = start->at(0), l = limit->at(0), d = delta->at(0);
  if (d == 0)
    return nodeError() << "delta is zero";
  double count = std::ceil((l - s) / d);
  if (!(count <= static_cast<double>(kMaxFoldedElements)))
    return nodeError() << "the range has " << count << " elements; at most "
                       << kMaxFoldedElements << " are built at import time";
  Known r;
  r.elementType = start->elementType;
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  r.shape = {n};
  for (int64_t i = 0; i < n; ++i) {
    if (start->isFloat()) {
      push(r, s + i * d);
      continue;
    }
    std::optional<int64_t> step = checkedMul(i, delta->ints[0]);
    std::optional<int64_t> v =
        step ? checkedAdd(start->ints[0], *step) : std::nullopt;
    if (!v)
      return nodeError() << "the range overflows 64-bit integers";
    r.ints.push_back(*v);
  }
  setKnown(r);
  return success();
}

LogicalResult Importer::convertReduce(StringRef op) {
  std::optional<Ints> axes;
  // ReduceSum takes its axes as an input from opset 13; the other
  // reductions keep the attribute until opset 18.
  bool axesInput = (op == "ReduceSum" && opset >= 13) || opset >= 18;
  if (axesInput) {
    if (has(1)) {
      FailureOr<Ints> a = constInts(1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else {
    axes = intsAttr("axes");
  }
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  if ((!axes || axes->empty()) && intAttr("noop_with_empty_axes", 0)) {
    setOutput(*x);
    return success();
  }
  Ints a = axes.value_or(Ints());
  bool keep = intAttr("keepdims", 1) != 0;
  auto arr = b.getDenseI64ArrayAttr(a);
  auto kd = b.getBoolAttr(keep);
  if (op == "ReduceSum")
    return emit(make<ReduceSumOp>(*x, arr, kd));
  if (op == "ReduceMean")
    return emit(make<ReduceMeanOp>(*x, arr, kd));
  if (op == "ReduceMin")
    return emit(make<ReduceMinOp>(*x, arr, kd));
  if (op == "ReduceProd")
    return emit(make<ReduceProdOp>(*x, arr, kd));
  if (op == "ReduceL2")
    return emit(make<ReduceL2Op>(*x, arr, kd));
  return emit(make<ReduceMaxOp>(*x, arr, kd));
}

LogicalResult Importer::convertClip() {
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  FloatAttr lo, hi;
  if (opset < 11) {
    if (attr("min"))
      lo = b.getF32FloatAttr(floatAttr("min", 0));
    if (attr("max"))
      hi = b.getF32FloatAttr(floatAttr("max", 0));
  } else {
    for (int i : {1, 2}) {
      if (!has(i))
        continue;
      const Known *k = known(i);
      if (!k || k->size() != 1)
        return nodeError() << (i == 1 ? "min" : "max")
                           << " must be a scalar known at import time";
      (i == 1 ? lo : hi) = b.getF32FloatAttr(k->at(0));
    }
  }
  setOutput(ClipOp::create(b, loc, x->getType(), *x, lo, hi));
  return success();
}

LogicalResult Importer::convertLoss(bool softmax) {
  std::string red = stringAttr("reduction", "mean");
  std::optional<LossReduction> r = symbolizeLossReduction(red);
  if (!r)
    return nodeError() << "reduction '" << red << "' is not supported";
  bool logProbOut = used(1);
  if (!softmax && failed(onlyFirstOutput()))
    return failure();
  FailureOr<Value> x = input(0), y = input(1);
  if (failed(x) || failed(y))
    return failure();
  Value weight;
  if (has(2)) {
    FailureOr<Value> w = input(2);
    if (failed(w))
      return failure();
    weight = *w;
  }
  IntegerAttr ignore;
  if (attr("ignore_index"))
    ignore = b.getI64IntegerAttr(intAttr("ignore_index", 0));
  auto ra = LossReductionAttr::get(ctx, *r);
  bool plain = !weight && !ignore;
  // SoftmaxCrossEntropyLoss is log_softmax over the classes and then NLL;
  // the log-probabilities are its optional second output.
  Value logProbs = *x;
  if (softmax && (!plain || logProbOut))
    logProbs =
        LogSoftmaxOp::create(b, loc, x->getType(), *x, b.getI64IntegerAttr(1));
  if (logProbOut)
    setOutput(logProbs, 1);
  if (plain && softmax && !logProbOut)
    return emit(make<SoftmaxCELossOp>(*x, *y, ra));
  if (plain)
    return emit(make<NLLLossOp>(logProbs, *y, ra));
  return emit(make<WeightedNLLLossOp>(logProbs, *y, weight, ignore, ra));
}

/// A scalar float constant of `elementType`.
static Value scalarConstant(OpBuilder &b, Location loc, Type elementType,
                            double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          type, ArrayRef<Attribute>{b.getFloatAttr(elementType, value)}));
}

LogicalResult Importer::convertInstanceNorm() {
  FailureOr<Value> x = input(0), scale = input(1), bias = input(2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  RankedTensorType type = typeOf(*x);
  int64_t rank = type.getRank();
  if (rank < 3)
    return nodeError() << "input must be N x C x spatial..., got "
                       << formatShape(type.getShape());
  int64_t channels = type.getDimSize(1);
  for (Value v : {*scale, *bias})
    if (typeOf(v).getShape() != ArrayRef<int64_t>{channels})
      return nodeError() << "scale and bias must have shape [" << channels
                         << "] (the channels), got "
                         << formatShape(typeOf(v).getShape());
  // Spelled out with ops that have gradients: each (n, c) is normalised
  // over the spatial axes, then scaled and shifted per channel.
  Type elem = type.getElementType();
  double epsilon = floatAttr("epsilon", 1e-5f);
  Ints axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  DenseI64ArrayAttr arr = b.getDenseI64ArrayAttr(axes);
  BoolAttr keep = b.getBoolAttr(true);
  FailureOr<Value> mean = make<ReduceMeanOp>(*x, arr, keep);
  if (failed(mean))
    return failure();
  FailureOr<Value> d = make<SubOp>(*x, *mean);
  if (failed(d))
    return failure();
  FailureOr<Value> sq = make<MulOp>(*d, *d);
  if (failed(sq))
    return failure();
  FailureOr<Value> var = make<ReduceMeanOp>(*sq, arr, keep);
  if (failed(var))
    return failure();
  FailureOr<Value> shifted =
      make<AddOp>(*var, scalarConstant(b, loc, elem, epsilon));
  if (failed(shifted))
    return failure();
  Value stddev = SqrtOp::create(b, loc, shifted->getType(), *shifted);
  FailureOr<Value> normed = make<DivOp>(*d, stddev);
  if (failed(normed))
    return failure();
  // [C] as [C, 1, ...] broadcasts over the spatial axes.
  Ints perChannel(rank - 1, 1);
  perChannel[0] = channels;
  auto column = [&](Value v) {
    return ReshapeOp::create(b, loc, RankedTensorType::get(perChannel, elem), v)
        .getResult();
  };
  FailureOr<Value> scaled = make<MulOp>(*normed, column(*scale));
  if (failed(scaled))
    return failure();
  return emit(make<AddOp>(*scaled, column(*bias)));
}

LogicalResult Importer::convertBatchNorm() {
  if (attr("spatial") && intAttr("spatial", 1) == 0)
    return nodeError() << "spatial = 0 is not supported";
  // Opset 14 adds training_mode; before opset 9 there are (consumed)
  // statistics outputs and `is_test`.
  bool training = intAttr("training_mode", 0) != 0;
  bool stats = false;
  for (int i = 1; i < node->output_size(); ++i)
    stats |= used(i);
  if (stats && (!training || opset < 14))
    return nodeError() << "statistics outputs are only supported with "
                          "training_mode = 1 (opset 14 and later)";
  float epsilon = floatAttr("epsilon", 1e-5f);
  float momentum = floatAttr("momentum", 0.9f);
  FailureOr<Value> x = input(0), s = input(1), bias = input(2),
                   m = input(3, /*frozen=*/true), v = input(4, /*frozen=*/true);
  if (failed(x) || failed(s) || failed(bias) || failed(m) || failed(v))
    return failure();
  if (!stats) {
    // training_mode = 1 normalises Y with the batch's statistics, whether
    // the plan trains or infers; training updates the running statistics
    // (a PyTorch export for training has them as unused outputs).
    setOutput(BatchNormOp::create(b, loc, x->getType(), *x, *s, *bias, *m, *v,
                                  APFloat(epsilon), APFloat(momentum),
                                  training));
    return success();
  }
  // The statistics outputs are read: spelled out with ops that have
  // gradients.
  // The batch variance is the population variance over every dimension but
  // the channels.
  RankedTensorType type = typeOf(*x);
  if (type.getRank() < 2)
    return nodeError() << "input must be N x C x ..., got "
                       << formatShape(type.getShape());
  Ints axes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != 1)
      axes.push_back(d);
  auto arr = b.getDenseI64ArrayAttr(axes);
  Type elem = type.getElementType();
  FailureOr<Value> meanKept = make<ReduceMeanOp>(*x, arr, b.getBoolAttr(true));
  if (failed(meanKept))
    return failure();
  FailureOr<Value> diff = make<SubOp>(*x, *meanKept);
  if (failed(diff))
    return failure();
  FailureOr<Value> sq = make<MulOp>(*diff, *diff);
  if (failed(sq))
    return failure();
  FailureOr<Value> varKept = make<ReduceMeanOp>(*sq, arr, b.getBoolAttr(true));
  if (failed(varKept))
    return failure();
  FailureOr<Value> shifted =
      make<AddOp>(*varKept, scalarConstant(b, loc, elem, epsilon));
  if (failed(shifted))
    return failure();
  Value stddev = SqrtOp::create(b, loc, shifted->getType(), *shifted);
  FailureOr<Value> normed = make<DivOp>(*diff, stddev);
  if (failed(normed))
    return failure();
  // [C] as [C, 1, ...] broadcasts over the axes after the channels.
  Ints perChannel(type.getRank() - 1, 1);
  perChannel[0] = type.getDimSize(1);
  auto column = [&](Value c) {
    return ReshapeOp::create(b, loc, RankedTensorType::get(perChannel, elem), c)
        .getResult();
  };
  FailureOr<Value> scaled = make<MulOp>(*normed, column(*s));
  if (failed(scaled))
    return failure();
  FailureOr<Value> y = make<AddOp>(*scaled, column(*bias));
  if (failed(y))
    return failure();
  setOutput(*y);
  if (!stats)
    return success();
  // The updated running statistics: statistic * momentum + batch statistic
  // * (1 - momentum).
  FailureOr<Value> mean = make<ReduceMeanOp>(*x, arr, b.getBoolAttr(false));
  FailureOr<Value> var = make<ReduceMeanOp>(*sq, arr, b.getBoolAttr(false));
  if (failed(mean) || failed(var))
    return failure();
  auto blend = [&](Value running, Value batch) -> FailureOr<Value> {
    FailureOr<Value> kept =
        make<MulOp>(running, scalarConstant(b, loc, elem, momentum));
    FailureOr<Value> added =
        make<MulOp>(batch, scalarConstant(b, loc, elem, 1.0 - momentum));
    if (failed(kept) || failed(added))
      return failure();
    return make<AddOp>(*kept, *added);
  };
  for (int i : {1, 2}) {
    if (node->output_size() <= i || node->output(i).empty())
      continue;
    FailureOr<Value> r = i == 1 ? blend(*m, *mean) : blend(*v, *var);
    if (failed(r))
      return failure();
    setOutput(*r, i);
  }
  return success();
}

namespace {
/// An Einsum operand while it is lowered: a value and one label per
/// dimension.
struct Labeled {
  Value value;
  std::string labels;
};
} // namespace

/// Einsum, lowered to ops that have gradients: a repeated label within an
/// operand takes the diagonal (a multiply by an identity mask, then a
/// reduce_sum), labels needed nowhere else are summed out, and each pair of
/// operands is contracted by one batched matmul between transposes and
/// reshapes ("bij,bjk->bik", "bhqd,bhkd->bhqk", "ij->ji", "...ii->...i",
/// "i,i"). The labels an operand keeps to itself stay dimensions of their
/// own (leading matmul dimensions), so the dynamic batch is never merged
/// with another dimension.
LogicalResult Importer::convertEinsum() {
  std::string equation;
  for (char c : stringAttr("equation", ""))
    if (c != ' ')
      equation += c;
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::optional<std::string> rhs;
  if (arrow != std::string::npos)
    rhs = equation.substr(arrow + 2);
  SmallVector<std::string> terms;
  for (size_t at = 0;;) {
    size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  if (static_cast<int>(terms.size()) != node->input_size())
    return nodeError() << "the equation '" << equation << "' has "
                       << terms.size() << " operands, the node "
                       << node->input_size() << " inputs";
  auto validTerm = [](const std::string &term) {
    size_t dots = term.find("...");
    if (dots != std::string::npos &&
        term.find("...", dots + 1) != std::string::npos)
      return false;
    for (size_t i = 0; i < term.size(); ++i) {
      if (dots != std::string::npos && i >= dots && i < dots + 3)
        continue;
      if (!std::isalpha(static_cast<unsigned char>(term[i])))
        return false;
    }
    return true;
  };
  for (const std::string &t : terms)
    if (!validTerm(t))
      return nodeError() << "the equation '" << equation
                         << "' is not an einsum equation (letters, at most "
                            "one '...' per operand)";
  if (rhs && !validTerm(*rhs))
    return nodeError() << "the equation '" << equation
                       << "' is not an einsum equation";

  // The operands, their ellipses expanded to labels of their own (the
  // characters no operand uses).
  SmallVector<Labeled> operands;
  std::string unused;
  for (char c = '0'; c <= '9'; ++c)
    if (equation.find(c) == std::string::npos)
      unused += c;
  int64_t ellipsisRank = -1;
  Type elem;
  for (auto [i, term] : llvm::enumerate(terms)) {
    FailureOr<Value> v = input(i);
    if (failed(v))
      return failure();
    RankedTensorType type = typeOf(*v);
    if (!isa<FloatType>(type.getElementType()))
      return nodeError() << "operand " << i << " must be a float tensor, got "
                         << type;
    if (!elem)
      elem = type.getElementType();
    else if (elem != type.getElementType())
      return nodeError() << "the operands have different element types: "
                         << elem << " and " << type.getElementType();
    size_t dots = term.find("...");
    int64_t explicitLabels = term.size() - (dots == std::string::npos ? 0 : 3);
    int64_t extra = type.getRank() - explicitLabels;
    if (extra < 0 || (dots == std::string::npos && extra != 0))
      return nodeError() << "operand " << i << " has rank " << type.getRank()
                         << ", its term '" << term << "' names "
                         << explicitLabels << " dimensions";
    std::string labels = term;
    if (dots != std::string::npos) {
      if (extra > static_cast<int64_t>(unused.size()))
        return nodeError() << "the '...' of operand " << i << " stands for "
                           << extra << " dimensions; at most " << unused.size()
                           << " are supported";
      if (ellipsisRank >= 0 && ellipsisRank != extra)
        return nodeError() << "the '...' of the operands stand for different "
                              "numbers of dimensions ("
                           << ellipsisRank << " and " << extra
                           << "); broadcasting them is not supported";
      ellipsisRank = extra;
      labels = term.substr(0, dots) + unused.substr(0, extra) +
               term.substr(dots + 3);
    }
    operands.push_back({*v, labels});
  }
  std::string ellipsisLabels =
      unused.substr(0, std::max<int64_t>(ellipsisRank, 0));

  // The output labels: given, or every label used once, in alphabetical
  // order after the ellipsis.
  std::string output;
  if (rhs) {
    size_t dots = rhs->find("...");
    output = dots == std::string::npos ? *rhs
                                       : rhs->substr(0, dots) + ellipsisLabels +
                                             rhs->substr(dots + 3);
  } else {
    std::map<char, int> count;
    for (const Labeled &o : operands)
      for (char c : o.labels)
        ++count[c];
    output = ellipsisLabels;
    for (auto [c, n] : count)
      if (n == 1 && std::isalpha(static_cast<unsigned char>(c)))
        output += c;
  }

  // One size per label.
  std::map<char, int64_t> sizes;
  for (const Labeled &o : operands)
    for (auto [d, c] : llvm::enumerate(o.labels)) {
      int64_t size = typeOf(o.value).getDimSize(d);
      auto [it, inserted] = sizes.try_emplace(c, size);
      if (!inserted && it->second != size)
        return nodeError() << "label '" << c << "' stands for dimensions of "
                           << "sizes " << formatShape({it->second}) << " and "
                           << formatShape({size});
    }
  for (char c : output) {
    if (!sizes.count(c))
      return nodeError() << "output label '" << c << "' is in no operand of '"
                         << equation << "'";
    if (llvm::count(output, c) > 1)
      return nodeError() << "output label '" << c << "' is repeated in '"
                         << equation << "'";
  }

  auto shapeOf = [&](StringRef labels) {
    Ints shape;
    for (char c : labels)
      shape.push_back(sizes[c]);
    return shape;
  };
  auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> Value {
    if (typeOf(v).getShape() == shape)
      return v;
    return ReshapeOp::create(b, loc, RankedTensorType::get(shape, elem), v);
  };
  auto transpose = [&](Labeled &o, StringRef order) -> LogicalResult {
    if (o.labels == order)
      return success();
    Ints perm;
    for (char c : order)
      perm.push_back(o.labels.find(c));
    FailureOr<Value> t =
        make<TransposeOp>(o.value, b.getDenseI64ArrayAttr(perm));
    if (failed(t))
      return failure();
    o = {*t, order.str()};
    return success();
  };
  // Sums out the labels of `o` that are not in `keep`.
  auto sumOut = [&](Labeled &o, StringRef keep) -> LogicalResult {
    Ints axes;
    std::string left;
    for (auto [d, c] : llvm::enumerate(o.labels)) {
      if (keep.contains(c))
        left += c;
      else
        axes.push_back(d);
    }
    if (axes.empty())
      return success();
    FailureOr<Value> r = make<ReduceSumOp>(
        o.value, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false));
    if (failed(r))
      return failure();
    o = {*r, left};
    return success();
  };
  // The diagonal of every label repeated within `o`.
  auto diagonals = [&](Labeled &o) -> LogicalResult {
    // A label that repeats several times takes several diagonals, at the
    // same position p.
    for (size_t p = 0; p < o.labels.size();) {
      size_t q = o.labels.find(o.labels[p], p + 1);
      if (q == std::string::npos) {
        ++p;
        continue;
      }
      int64_t n = sizes[o.labels[p]];
      if (ShapedType::isDynamic(n) || n > (1 << 12))
        return nodeError() << "the diagonal over label '" << o.labels[p]
                           << "' needs a known size up to 4096, got "
                           << formatShape({n});
      Ints maskShape(o.labels.size(), 1);
      maskShape[p] = maskShape[q] = n;
      SmallVector<Attribute> ones;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          ones.push_back(b.getFloatAttr(elem, i == j ? 1.0 : 0.0));
      Value mask = ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(RankedTensorType::get(maskShape, elem), ones));
      FailureOr<Value> masked = make<MulOp>(o.value, mask);
      if (failed(masked))
        return failure();
      FailureOr<Value> r = make<ReduceSumOp>(
          *masked, b.getDenseI64ArrayAttr({int64_t(q)}), b.getBoolAttr(false));
      if (failed(r))
        return failure();
      o.value = *r;
      o.labels.erase(q, 1);
    }
    return success();
  };
  // A x B as one batched matmul: A as [batch, A's own but its last, 1 for
  // each of B's own but its last, M, K], B as [batch, 1..., B's own but its
  // last, K, N].
  auto contract = [&](Labeled &a, Labeled &o,
                      StringRef later) -> FailureOr<Labeled> {
    std::string batch, contracted, aOwn, bOwn;
    for (char c : a.labels) {
      if (o.labels.find(c) == std::string::npos)
        aOwn += c;
      else if (later.contains(c))
        batch += c;
      else
        contracted += c;
    }
    for (char c : o.labels)
      if (a.labels.find(c) == std::string::npos)
        bOwn += c;
    int64_t k = 1;
    for (char c : contracted) {
      if (ShapedType::isDynamic(sizes[c]) && contracted.size() > 1)
        return nodeError() << "contracting the dynamic (batch) label '" << c
                           << "' with others is not supported";
      k = ShapedType::isDynamic(sizes[c]) ? sizes[c] : k * sizes[c];
    }
    std::string aLead = aOwn.empty() ? "" : aOwn.substr(0, aOwn.size() - 1);
    std::string bLead = bOwn.empty() ? "" : bOwn.substr(0, bOwn.size() - 1);
    std::string aLast = aOwn.empty() ? "" : aOwn.substr(aOwn.size() - 1);
    std::string bLast = bOwn.empty() ? "" : bOwn.substr(bOwn.size() - 1);
    if (failed(transpose(a, batch + aLead + aLast + contracted)) ||
        failed(transpose(o, batch + bLead + contracted + bLast)))
      return failure();
    Ints aShape = shapeOf(batch + aLead), bShape = shapeOf(batch);
    aShape.append(bLead.size(), 1);
    aShape.push_back(aLast.empty() ? 1 : sizes[aLast[0]]);
    aShape.push_back(k);
    bShape.append(aLead.size(), 1);
    llvm::append_range(bShape, shapeOf(bLead));
    bShape.push_back(k);
    bShape.push_back(bLast.empty() ? 1 : sizes[bLast[0]]);
    FailureOr<Value> product =
        make<MatMulOp>(reshape(a.value, aShape), reshape(o.value, bShape));
    if (failed(product))
      return failure();
    std::string labels = batch + aLead + bLead + aLast + bLast;
    return Labeled{reshape(*product, shapeOf(labels)), labels};
  };

  for (Labeled &o : operands)
    if (failed(diagonals(o)))
      return failure();
  Labeled result = operands.front();
  for (size_t i = 1; i < operands.size(); ++i) {
    // The labels the operands after this pair, or the output, still need.
    std::string later = output;
    for (size_t j = i + 1; j < operands.size(); ++j)
      later += operands[j].labels;
    Labeled &next = operands[i];
    if (failed(sumOut(result, later + next.labels)) ||
        failed(sumOut(next, later + result.labels)))
      return failure();
    FailureOr<Labeled> r = contract(result, next, later);
    if (failed(r))
      return failure();
    result = *r;
  }
  if (failed(sumOut(result, output)) || failed(transpose(result, output)))
    return failure();
  setOutput(result.value);
  return success();
}

/// TopK as the indices (heterps.top_k_indices) and a gather_elements of
/// them for the values, whose gradient is a scatter-add.
LogicalResult Importer::convertTopK() {
  int64_t k;
  if (opset < 10) {
    k = intAttr("k", -1);
  } else {
    const Known *known1 = known(1);
    if (!known1 || known1->isFloat() || known1->size() != 1 ||
        !known1->complete())
      return nodeError() << "K must be a one-element integer tensor known at "
                            "import time";
    k = known1->ints[0];
  }
  FailureOr<Value> x = input(0);
  if (failed(x))
    return failure();
  int64_t axis = intAttr("axis", -1);
  FailureOr<Value> indices =
      make<TopKIndicesOp>(*x, b.getI64IntegerAttr(k), b.getI64IntegerAttr(axis),
                          b.getBoolAttr(intAttr("largest", 1) != 0));
  if (failed(indices))
    return failure();
  FailureOr<Value> values =
      make<GatherElementsOp>(*x, *indices, b.getI64IntegerAttr(axis));
  if (failed(values))
    return failure();
  setOutput(*values, 0);
  if (node->output_size() > 1)
    setOutput(*indices, 1);
  return success();
}

LogicalResult Importer::convertLayerNorm() {
  FailureOr<Value> x = input(0), s = input(1);
  if (failed(x) || failed(s))
    return failure();
  Value bias;
  if (has(2)) {
    FailureOr<Value> bv = input(2);
    if (failed(bv))
      return failure();
    bias = *bv;
  }
  int64_t axis = intAttr("axis", -1);
  float epsilon = floatAttr("epsilon", 1e-5f);
  setOutput(LayerNormOp::create(b, loc, x->getType(), *x, *s, bias, axis,
                                APFloat(epsilon)));
  bool mean = used(1), invStd = used(2);
  if (!mean && !invStd)
    return success();
  // The optional statistics outputs, spelled out: Mean and 1/sqrt(Var + eps)
  // over dimensions axis.. with the reduced dimensions kept.
  RankedTensorType type = typeOf(*x);
  std::optional<int64_t> a = normalizeAxis(axis, type.getRank());
  if (!a)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << type.getRank();
  Ints axes;
  for (int64_t d = *a; d < type.getRank(); ++d)
    axes.push_back(d);
  auto arr = b.getDenseI64ArrayAttr(axes);
  auto keep = b.getBoolAttr(true);
  FailureOr<Value> m = make<ReduceMeanOp>(*x, arr, keep);
  if (failed(m))
    return failure();
  if (mean)
    setOutput(*m, 1);
  if (!invStd)
    return success();
  Type elem = type.getElementType();
  FailureOr<Value> d = make<SubOp>(*x, *m);
  if (failed(d))
    return failure();
  FailureOr<Value> sq = make<MulOp>(*d, *d);
  if (failed(sq))
    return failure();
  FailureOr<Value> var = make<ReduceMeanOp>(*sq, arr, keep);
  if (failed(var))
    return failure();
  FailureOr<Value> shifted =
      make<AddOp>(*var, scalarConstant(b, loc, elem, epsilon));
  if (failed(shifted))
    return failure();
  Value sd = SqrtOp::create(b, loc, shifted->getType(), *shifted);
  FailureOr<Value> inv = make<DivOp>(scalarConstant(b, loc, elem, 1.0), sd);
  if (failed(inv))
    return failure();
  setOutput(*inv, 2);
  return success();
}

LogicalResult Importer::convertConstant() {
  Known k;
  if (const onnx::AttributeProto *a = attr("value")) {
    FailureOr<Known> t = readTensor(a->t());
    if (failed(t))
      return failure();
    k = std::move(*t);
  } else if (const onnx::AttributeProto *a = attr("value_float")) {
    k.elementType = b.getF32Type();
    k.floats.push_back(a->f());
  } else if (const onnx::AttributeProto *a = attr("value_floats")) {
    k.elementType = b.getF32Type();
    k.floats.assign(a->floats().begin(), a->floats().end());
    k.shape.push_back(a->floats_size());
  } else if (const onnx::AttributeProto *a = attr("value_int")) {
    k.elementType = b.getI64Type();
    k.ints.push_back(a->i());
  } else if (const onnx::AttributeProto *a = attr("value_ints")) {
    k.elementType = b.getI64Type();
    k.ints.assign(a->ints().begin(), a->ints().end());
    k.shape.push_back(a->ints_size());
  } else {
    return nodeError() << "only tensor, float and int constants are supported";
  }
  setKnown(std::move(k));
  return success();
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

LogicalResult Importer::importNode(const onnx::NodeProto &n) {
  node = &n;
  StringRef op = n.op_type();
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    return nodeError() << "op domain '" << n.domain()
                       << "' is not supported; see docs/SupportedOps.md";
  const OpRegistration *registration = findRegistration(op);
  if (!registration)
    return nodeError() << "op type '" << op
                       << "' is not supported; see docs/SupportedOps.md for "
                          "the supported ops and opsets";
  if (opset < registration->info.minOpset)
    return nodeError() << "op type '" << op << "' is supported from opset "
                       << registration->info.minOpset
                       << " on; its earlier signature is not";
  return registration->convert(*this, op);
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

LogicalResult Importer::importInputs(const onnx::GraphProto &graph,
                                     SmallVectorImpl<Type> &types,
                                     SmallVectorImpl<std::string> &names) {
  llvm::StringSet<> initNames;
  for (const onnx::TensorProto &t : graph.initializer())
    initNames.insert(t.name());
  for (const onnx::ValueInfoProto &in : graph.input()) {
    // Before IR version 4 initializers are also listed as inputs.
    if (initNames.contains(in.name()))
      continue;
    if (!in.type().has_tensor_type())
      return fileError() << sourceName << ": input '" << in.name()
                         << "' is not a tensor";
    const onnx::TypeProto::Tensor &tt = in.type().tensor_type();
    FailureOr<Type> elem =
        elementType(tt.elem_type(), "input '" + in.name() + "'");
    if (failed(elem))
      return failure();
    if (!tt.has_shape())
      return fileError() << sourceName << ": input '" << in.name()
                         << "' has no shape; HeterPS needs ranked inputs";
    Ints shape;
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const onnx::TensorShapeProto::Dimension &dim = tt.shape().dim(d);
      if (dim.has_dim_value()) {
        shape.push_back(dim.dim_value());
        continue;
      }
      // Only the leading dimension may be symbolic: it is the batch.
      if (d == 0 && dim.has_dim_param()) {
        shape.push_back(kDyn);
        continue;
      }
      return fileError() << sourceName << ": input '" << in.name()
                         << "' dimension " << d
                         << (dim.has_dim_param()
                                 ? " ('" + dim.dim_param() + "')"
                                 : std::string())
                         << " is unknown; only the first (batch) dimension "
                            "may be symbolic";
    }
    types.push_back(RankedTensorType::get(shape, *elem));
    names.push_back(in.name());
  }
  return success();
}

LogicalResult Importer::verifyNewOps(Operation *before, Block *block) {
  Operation *first = before ? before->getNextNode()
                            : (block->empty() ? nullptr : &block->front());
  for (Operation *op = first; op; op = op->getNextNode()) {
    // A dialect constraint the ONNX node breaks (an integer Add, say) is
    // reported with the node, not only at its location.
    std::string message;
    {
      ScopedDiagnosticHandler capture(ctx, [&](Diagnostic &diag) {
        if (message.empty() && diag.getSeverity() == DiagnosticSeverity::Error)
          message = diag.str();
        return success();
      });
      if (succeeded(mlir::verify(op, /*verifyRecursively=*/false))) {
        recordBatchMultiples(op);
        continue;
      }
    }
    return nodeError() << "imports as an invalid " << op->getName() << ": "
                       << message;
  }
  return success();
}

void Importer::recordBatchMultiples(Operation *op) {
  for (Value result : op->getResults()) {
    BatchMultiple m = inferBatchMultiple(
        op, result, [&](Value v) { return batchMultipleOf(v); });
    if (m.known())
      batchMultiples[result] = m;
  }
}

/// onnx::checker::check_model on the parsed model, with external data
/// resolved against the model file's directory. The checker's own
/// overload for a file parses it a second time (nearly half of resnet18's
/// import); this is the checks that overload runs on it. Throws the
/// checker's ValidationError.
static void checkModel(const onnx::ModelProto &model, StringRef modelPath) {
  if (modelPath.empty())
    return onnx::checker::check_model(model);
  if (!model.ir_version())
    fail_check("The model does not have an ir_version set properly.");
  if (model.ir_version() > onnx::IR_VERSION)
    fail_check("Your model ir_version ", model.ir_version(),
               " is higher than the checker's (", onnx::IR_VERSION, ").");
  std::set<std::string> keys;
  for (const onnx::StringStringEntryProto &entry : model.metadata_props())
    if (!keys.insert(entry.key()).second)
      fail_check("Your model has duplicate keys in metadata_props.");
  std::unordered_map<std::string, int> opsets;
  for (const onnx::OperatorSetIdProto &o : model.opset_import())
    opsets[o.domain()] = static_cast<int>(o.version());
  if (model.ir_version() >= 3 && opsets.empty())
    fail_check("model with IR version >= 3 must specify opset_import for "
               "ONNX");
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(model.ir_version()));
  ctx.set_opset_imports(opsets);
  SmallString<256> dir(modelPath);
  llvm::sys::path::remove_filename(dir);
  ctx.set_model_dir(dir.empty() ? std::string(".") : std::string(dir));
  onnx::checker::LexicalScopeContext scope;
  onnx::checker::check_graph(model.graph(), ctx, scope);
  if (ctx.get_ir_version() >= 8)
    onnx::checker::check_model_local_functions(model, ctx, scope);
}

FailureOr<OwningOpRef<ModuleOp>> Importer::run(StringRef bytes) {
  ctx->loadDialect<HeterPSDialect, func::FuncDialect>();
  if (bytes.empty())
    return fileError() << sourceName
                       << ": the file is empty, not an ONNX model";
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), (int)bytes.size()))
    return fileError() << sourceName
                       << ": not an ONNX model (the protobuf does not parse)";
  try {
    checkModel(model, modelPath);
  } catch (const std::exception &e) {
    // The checker's messages span lines; one line reads better in a
    // diagnostic.
    std::string what;
    for (char c : std::string(e.what())) {
      if (c == '\n')
        c = ' ';
      if (c == ' ' && !what.empty() && what.back() == ' ')
        continue;
      what += c;
    }
    return fileError() << sourceName << ": the ONNX checker rejects the model: "
                       << StringRef(what).trim();
  }
  bool defaultDomain = false;
  for (const onnx::OperatorSetIdProto &o : model.opset_import()) {
    if (!o.domain().empty() && o.domain() != "ai.onnx")
      continue;
    if (defaultDomain)
      return fileError() << sourceName
                         << ": the model imports the default ONNX domain "
                            "twice (opsets "
                         << opset << " and " << o.version() << ")";
    defaultDomain = true;
    opset = o.version();
  }
  // The importer knows the ops' rules up to opset 18 (ReduceMean's axes
  // became an input there); a newer opset may have changed them.
  if (!defaultDomain || opset < 1 || opset > getMaxONNXOpset())
    return fileError() << sourceName << ": the model uses opset " << opset
                       << " of the default ONNX domain; HeterPS imports "
                          "opsets 1 to "
                       << getMaxONNXOpset();
  const onnx::GraphProto &graph = model.graph();
  if (graph.output_size() == 0)
    return fileError() << sourceName
                       << ": the graph has no outputs; there is nothing to "
                          "compute";

  OwningOpRef<ModuleOp> owned = ModuleOp::create(fileLoc());
  module = *owned;
  // The module carries the graph's name; the function is always @main.
  if (!graph.name().empty())
    module.setSymName(graph.name());

  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  if (failed(importInputs(graph, argTypes, argNames)))
    return failure();
  b.setInsertionPointToEnd(module.getBody());
  func = func::FuncOp::create(b, fileLoc(), "main",
                              b.getFunctionType(argTypes, {}));
  // Parameters and tables are named after their initializers; none may
  // take the function's name.
  symbols.insert("main");
  Block *entry = func.addEntryBlock();
  for (auto [arg, name] : llvm::zip_equal(entry->getArguments(), argNames)) {
    arg.setLoc(NameLoc::get(b.getStringAttr(name)));
    // The runtime binds inputs and outputs by their ONNX names.
    func.setArgAttr(arg.getArgNumber(), HeterPSDialect::getNameAttrName(),
                    b.getStringAttr(name));
    values[name] = arg;
    if (cast<RankedTensorType>(arg.getType()).getNumDynamicDims() > 0)
      batchMultiples[arg] = BatchMultiple::batch();
  }

  for (const onnx::TensorProto &t : graph.initializer()) {
    FailureOr<Known> k = readTensor(t, /*keepRaw=*/true);
    if (failed(k))
      return failure();
    k->initializer = true;
    knowns[t.name()] = std::move(*k);
  }

  b.setInsertionPointToEnd(entry);
  for (const onnx::NodeProto &n : graph.node())
    for (const std::string &name : n.input())
      consumed.insert(name);
  for (const onnx::ValueInfoProto &out : graph.output())
    consumed.insert(out.name());
  // nn.EmbeddingBag loops import as lookups; the nodes that only compute
  // their offsets are skipped.
  std::set<int> skipped;
  std::map<int, EmbeddingBagMatch> bags;
  for (EmbeddingBagMatch &bag : findEmbeddingBags(graph, skipped))
    bags[bag.loop] = std::move(bag);
  for (int i = 0; i < graph.node_size(); ++i) {
    if (skipped.count(i))
      continue;
    loc = nodeLoc(graph.node(i), i);
    Operation *before = entry->empty() ? nullptr : &entry->back();
    auto bag = bags.find(i);
    if (bag != bags.end()) {
      node = &graph.node(i);
      if (failed(convertEmbeddingBag(bag->second)))
        return failure();
    } else if (failed(importNode(graph.node(i)))) {
      return failure();
    }
    if (failed(verifyNewOps(before, entry)))
      return failure();
  }

  node = nullptr;
  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it != values.end()) {
      results.push_back(it->second);
      continue;
    }
    if (!knowns.count(out.name()))
      return fileError() << sourceName << ": graph output '" << out.name()
                         << "' is not computed by any node";
    loc = NameLoc::get(b.getStringAttr(out.name()));
    nodeName = out.name();
    auto k = knowns.find(out.name());
    if (!k->second.complete())
      return fileError() << sourceName << ": graph output '" << out.name()
                         << "' depends on the run-time batch size";
    FailureOr<Value> v = materialize(out.name(), false);
    if (failed(v))
      return failure();
    results.push_back(*v);
  }
  // A declared output type is a promise about the computation: one that
  // differs from what the nodes compute is a broken model.
  for (auto [i, out] : llvm::enumerate(graph.output())) {
    if (!out.type().has_tensor_type())
      continue;
    const onnx::TypeProto::Tensor &declared = out.type().tensor_type();
    auto computed = dyn_cast<RankedTensorType>(results[i].getType());
    if (!computed)
      continue;
    if (declared.elem_type() != 0) {
      FailureOr<Type> type = elementType(declared.elem_type(),
                                         "graph output '" + out.name() + "'");
      if (failed(type))
        return failure();
      if (*type != computed.getElementType())
        return fileError() << sourceName << ": graph output '" << out.name()
                           << "' is declared " << *type
                           << ", the graph computes " << computed;
    }
    if (!declared.has_shape())
      continue;
    const onnx::TensorShapeProto &shape = declared.shape();
    if (shape.dim_size() != computed.getRank())
      return fileError() << sourceName << ": graph output '" << out.name()
                         << "' is declared of rank " << shape.dim_size()
                         << ", the graph computes " << computed;
    for (int d = 0; d < shape.dim_size(); ++d) {
      int64_t size = computed.getDimSize(d);
      if (shape.dim(d).has_dim_value() && shape.dim(d).dim_value() > 0 &&
          !ShapedType::isDynamic(size) && size != shape.dim(d).dim_value())
        return fileError() << sourceName << ": graph output '" << out.name()
                           << "' is declared with dimension " << d << " of "
                           << shape.dim(d).dim_value()
                           << ", the graph computes " << computed;
    }
  }
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b, fileLoc(), results);
  func.setFunctionType(
      b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, HeterPSDialect::getNameAttrName(),
                       b.getStringAttr(out.name()));

  if (failed(mlir::verify(module)))
    return fileError() << sourceName << ": the imported module does not verify";
  return owned;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

static FailureOr<OwningOpRef<ModuleOp>>
importModel(StringRef bytes, StringRef sourceName, StringRef baseDir,
            StringRef modelPath, MLIRContext *context) {
  Importer importer(context, sourceName, baseDir, modelPath);
  try {
    return importer.run(bytes);
  } catch (const std::exception &e) {
    // Protobuf and ONNX throw on malformed input; nothing else does.
    return emitError(FileLineColLoc::get(context, sourceName, 0, 0))
           << sourceName << ": cannot import the ONNX model: " << e.what();
  }
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::heterps::importONNXFile(StringRef path, MLIRContext *context) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return emitError(FileLineColLoc::get(context, path, 0, 0))
           << "cannot open ONNX model '" << path
           << "': " << buffer.getError().message();
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return importModel((*buffer)->getBuffer(), path, dir, path, context);
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::heterps::importONNXModel(StringRef bytes, StringRef sourceName,
                               StringRef baseDir, MLIRContext *context) {
  return importModel(bytes, sourceName, baseDir, /*modelPath=*/"", context);
}
