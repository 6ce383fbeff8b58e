//===- InputBinder.cpp - Data batches as a plan's inputs ------------------===//

#include "heterps/Runtime/InputBinder.h"

#include "heterps/Runtime/BagOffsets.h"
#include "heterps/Runtime/Error.h"

using namespace heterps;
using namespace heterps::runtime;

InputBinder::InputBinder(const Program &program) : program(program) {
  std::vector<int> bagOffsets = bagOffsetsInputs(program.plan());
  for (int i = 0; i < program.plan().inputs_size(); ++i) {
    if (bagOffsets[i] >= 0 && bagInput < 0)
      bagInput = i;
    TensorType t = program.inputType(i);
    if (program.isLabelInput(i)) {
      labelInput = i;
      classLabels = !isFloat(t.dtype);
      // An added loss is "bce", a model's own loss op "bce_loss".
      unitLabels = !classLabels && program.plan().has_training() &&
                   (program.plan().training().loss() == "bce" ||
                    program.plan().training().loss() == "bce_loss");
    } else if (isFloat(t.dtype)) {
      // Tensors given with --input feed any number of float inputs; data
      // files feed one (refused when they are used).
      if (denseInput >= 0) {
        if (secondFloatInput < 0)
          secondFloatInput = i;
        continue;
      }
      denseInput = i;
      denseWidth = numElements(Shape(t.dims.begin() + 1, t.dims.end()));
    } else {
      int64_t w = t.dims.size() <= 1
                      ? 1
                      : numElements(Shape(t.dims.begin() + 1, t.dims.end()));
      sparseInputs.push_back({i, w});
      sparseWidth += w;
    }
  }
  tensors.resize(program.plan().inputs_size());
  views.resize(program.plan().inputs_size());
}

void InputBinder::requireDataFileInputs() const {
  if (bagInput >= 0)
    fail("input '", program.inputName(bagInput),
         "' holds bags of ids of different sizes (nn.EmbeddingBag with "
         "offsets); data files and synthetic data give each example "
         "fixed-width features: give the bags and their offsets as "
         "tensors (--input, or from Python)");
  if (secondFloatInput >= 0)
    fail("the plan has two float inputs ('", program.inputName(denseInput),
         "', '", program.inputName(secondFloatInput),
         "'); data files feed one; give tensors with --input");
}

void InputBinder::configure(DataOptions &data) const {
  requireDataFileInputs();
  data.denseFeatures = denseInput >= 0 ? denseWidth : 0;
  data.sparseFeatures = sparseWidth;
  data.classLabels = classLabels;
  data.unitLabels = unitLabels;
  if (classLabels && labelInput >= 0 && program.plan().outputs_size() > 0) {
    TensorType out = program.outputType(0);
    if (out.dims.size() >= 2 && out.dims[1] > 0)
      data.numClasses = out.dims[1];
  }
}

std::vector<const Tensor *> InputBinder::bind(Batch &batch) {
  requireDataFileInputs();
  int64_t n = batch.size;
  std::vector<const Tensor *> inputs(tensors.size(), nullptr);
  if (denseInput >= 0) {
    TensorType t = program.inputType(denseInput);
    Shape s = t.dims;
    s[0] = n;
    if (batch.dense.numElements() != numElements(s))
      fail("input '", program.inputName(denseInput), "' needs ", denseWidth,
           " dense features per example, the data has ",
           (n ? batch.dense.numElements() / n : 0));
    views[denseInput].reset(DType::F32, s, batch.dense.data());
    inputs[denseInput] = &views[denseInput];
  }
  int64_t column = 0;
  for (auto [i, w] : sparseInputs) {
    TensorType t = program.inputType(i);
    Shape s = t.dims;
    s[0] = n;
    Tensor &dst = tensors[i];
    dst.resize(t.dtype, s);
    const int64_t *src = batch.sparse.as<int64_t>();
    int64_t total = batch.sparse.empty() ? 0 : batch.sparse.dim(1);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < w; ++c) {
        int64_t v = src[r * total + column + c];
        if (t.dtype == DType::I64)
          dst.as<int64_t>()[r * w + c] = v;
        else
          dst.as<int32_t>()[r * w + c] = static_cast<int32_t>(v);
      }
    column += w;
    inputs[i] = &dst;
  }
  if (labelInput >= 0) {
    TensorType t = program.inputType(labelInput);
    Shape s = t.dims;
    s[0] = n;
    if (batch.label.dtype() == t.dtype &&
        batch.label.numElements() == numElements(s)) {
      views[labelInput].reset(t.dtype, s, batch.label.data());
      inputs[labelInput] = &views[labelInput];
    } else {
      Tensor &dst = tensors[labelInput];
      dst.resize(t.dtype, s);
      if (dst.numElements() != batch.label.numElements())
        fail("label input '", program.inputName(labelInput), "' is ",
             dst.typeString(), ", the data has ", batch.label.typeString());
      for (int64_t r = 0; r < dst.numElements(); ++r) {
        double v = batch.label.dtype() == DType::F32
                       ? batch.label.as<float>()[r]
                       : static_cast<double>(batch.label.as<int64_t>()[r]);
        if (t.dtype == DType::F32)
          dst.as<float>()[r] = static_cast<float>(v);
        else
          dst.as<int64_t>()[r] = static_cast<int64_t>(v);
      }
      inputs[labelInput] = &dst;
    }
  }
  return inputs;
}

std::vector<int> runtime::predictionOutputs(const Program &program) {
  std::vector<int> outs;
  for (int i = 0; i < program.plan().outputs_size(); ++i)
    if (!program.isTraining() || i != program.plan().training().loss_output())
      outs.push_back(i);
  return outs;
}
