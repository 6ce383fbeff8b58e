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
// This file holds the graph walk, tensors and values; each node goes
// through the op table (OpTable.cpp) to its converter, in a file per family
// of ops (ImportElementwise, ImportShape, ImportTensor, ImportNN,
// ImportRecurrent, ImportLoss, ImportControlFlow).
//
//===----------------------------------------------------------------------===//

#include "heterps/Import/ONNX/ImportONNX.h"
#include "Importer.h"
#include "heterps/Support/CheckedMath.h"
#include "heterps/Support/ONNXTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <fstream>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::heterps;
using namespace mlir::heterps::onnx_import;
namespace onnx_tensor = ::heterps::onnx_tensor;
using ::heterps::checkedProduct;

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

FailureOr<std::unique_ptr<llvm::MemoryBuffer>>
Importer::readExternal(const onnx::TensorProto &t) {
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
  uint64_t size = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(path, size))
    return fileError() << sourceName << ": cannot read external data '" << path
                       << "' of tensor '" << t.name() << "': " << ec.message();
  if (offset < 0 || offset > (int64_t)size ||
      (length >= 0 && length > (int64_t)size - offset))
    return fileError() << sourceName << ": external data of tensor '"
                       << t.name() << "' (offset " << offset << ", length "
                       << length << ") lies outside '" << path << "' of "
                       << size << " bytes";
  if (length < 0)
    length = (int64_t)size - offset;
  // Only the tensor's bytes, mapped where the system maps files.
  auto buffer = llvm::MemoryBuffer::getFileSlice(path, length, offset,
                                                 /*IsVolatile=*/false);
  if (!buffer)
    return fileError() << sourceName << ": cannot read external data '" << path
                       << "' of tensor '" << t.name()
                       << "': " << buffer.getError().message();
  return std::move(*buffer);
}

const float *mlir::heterps::onnx_import::rawFloats(ElementsAttr data) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(data))
    return reinterpret_cast<const float *>(
        resource.getRawHandle().getBlob()->getData().data());
  return reinterpret_cast<const float *>(
      cast<DenseElementsAttr>(data).getRawData().data());
}

FailureOr<Known> Importer::readTensor(const onnx::TensorProto &t,
                                      bool keepRaw) {
  Known k;
  FailureOr<Type> type =
      elementType(t.data_type(), "tensor '" + t.name() + "'");
  if (failed(type))
    return failure();
  k.elementType = *type;
  std::unique_ptr<llvm::MemoryBuffer> external;
  std::string_view externalBytes;
  bool isExternal = t.data_location() == onnx::TensorProto::EXTERNAL;
  if (isExternal) {
    FailureOr<std::unique_ptr<llvm::MemoryBuffer>> data = readExternal(t);
    if (failed(data))
      return failure();
    external = std::move(*data);
    externalBytes =
        std::string_view(external->getBufferStart(), external->getBufferSize());
  }
  onnx_tensor::DecodedTensor decoded;
  std::string error;
  if (!onnx_tensor::decodeTensor(t, isExternal ? &externalBytes : nullptr,
                                 decoded, error))
    return fileError() << sourceName << ": " << error;
  k.shape.assign(decoded.dims.begin(), decoded.dims.end());
  std::string_view raw = decoded.bytes();
  int64_t n = decoded.elements;
  int32_t dt = t.data_type();
  // Little-endian, as is the host.
  if (keepRaw && dt == onnx::TensorProto::FLOAT && n >= kRawElements &&
      external &&
      reinterpret_cast<uintptr_t>(raw.data()) % alignof(float) == 0) {
    // The attribute owns the file's bytes: a 640 MB table is in memory
    // once (a DenseElementsAttr would copy it).
    AsmResourceBlob blob(
        ArrayRef<char>(raw.data(), raw.size()), alignof(float),
        [owner = std::move(external)](void *, size_t, size_t) mutable {
          owner.reset();
        },
        /*dataIsMutable=*/false);
    k.data = DenseResourceElementsAttr::get(
        RankedTensorType::get(k.shape, k.elementType), t.name(),
        std::move(blob));
    return k;
  }
  if (keepRaw && dt == onnx::TensorProto::FLOAT && n >= kRawElements) {
    k.data = DenseElementsAttr::getFromRawBuffer(
        RankedTensorType::get(k.shape, k.elementType),
        ArrayRef<char>(raw.data(), raw.size()));
    return k;
  }
  auto halfToDouble = [&](uint16_t bits) {
    const llvm::fltSemantics &sem = dt == onnx::TensorProto::BFLOAT16
                                        ? llvm::APFloat::BFloat()
                                        : llvm::APFloat::IEEEhalf();
    return llvm::APFloat(sem, llvm::APInt(16, bits)).convertToDouble();
  };
  const char *p = raw.data();
  unsigned width = decoded.width;
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
      iv = static_cast<int8_t>(*p);
      break;
    default:
      iv = static_cast<uint8_t>(*p);
    }
    if (k.isFloat())
      k.floats.push_back(fv);
    else
      k.ints.push_back(iv);
  }
  return k;
}

ElementsAttr Importer::toAttr(const Known &k) {
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
  ElementsAttr value = toAttr(k);
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
        if (dim.dim_value() < 0 || dim.dim_value() > (int64_t(1) << 40))
          return fileError() << sourceName << ": input '" << in.name()
                             << "' dimension " << d << " is " << dim.dim_value()
                             << "; expected a size from 0 to 2^40";
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

bool mlir::heterps::isONNXModelFile(StringRef path) {
  if (path.ends_with_insensitive(".onnx"))
    return true;
  if (path == "-")
    return false;
  std::ifstream in(path.str(), std::ios::binary);
  char first;
  if (!in.get(first))
    return false;
  auto byte = static_cast<unsigned char>(first);
  return byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r';
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
