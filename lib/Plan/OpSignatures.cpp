//===- OpSignatures.cpp - The ops a plan may hold -------------------------===//

#include "heterps/Plan/OpSignatures.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string_view>

using namespace heterps::plan;

namespace {

// Sorted by name. Optional operands (a bias, a class weight) make a range.
// The fifth column has bit i set when operand i is a float tensor of the one
// float type the kernel reads its float operands as; the next two give each
// result's element type and rules for the operands' (OpSignature); the last
// lists the op's attributes, as the HeterPS dialect's ODS declares them
// (unittests/Dialect/PlanSignaturesTest.cpp compares the two).
constexpr OpSignature kSignatures[] = {
    {"heterps.abs", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.add", 2, 2, 1, 0b0, "0", "-0", ""},
    {"heterps.arg_extreme", 1, 1, 1, 0b0, "l", "",
     "axis keepdims kind select_last_index"},
    {"heterps.avg_pool", 1, 1, 1, 0b1, "0", "",
     "ceil_mode count_include_pad dilations kernel_shape pads strides"},
    {"heterps.batch_norm", 5, 5, 1, 0b11111, "0", "",
     "batch_statistics epsilon momentum"},
    {"heterps.batch_norm_grad", 3, 3, 3, 0b111, "000", "", "epsilon"},
    {"heterps.bce_loss", 2, 2, 1, 0b1, "0", "-0", "from_logits reduction"},
    {"heterps.cast", 1, 1, 1, 0b0, "-", "", ""},
    {"heterps.clip", 1, 1, 1, 0b0, "0", "", "max min"},
    {"heterps.compare", 2, 2, 1, 0b0, "b", "-0", "kind"},
    {"heterps.concat", 1, -1, 1, 0b0, "0", "-0", "axis"},
    {"heterps.constant", 0, 0, 1, 0b0, "-", "", "value"},
    {"heterps.conv", 2, 3, 1, 0b111, "0", "", "dilations group pads strides"},
    {"heterps.conv_grad", 3, 3, 3, 0b111, "000", "",
     "dilations group pads strides"},
    {"heterps.conv_transpose", 2, 3, 1, 0b111, "0", "",
     "dilations group output_padding pads strides"},
    {"heterps.conv_transpose_grad", 3, 3, 3, 0b111, "000", "",
     "dilations group output_padding pads strides"},
    {"heterps.cumsum", 1, 1, 1, 0b0, "0", "", "axis exclusive reverse"},
    {"heterps.div", 2, 2, 1, 0b0, "0", "-0", ""},
    {"heterps.dropout", 1, 1, 1, 0b1, "0", "", "dropout_id ratio"},
    {"heterps.embedding_grad", 2, 2, 2, 0b10, "01", "i-", "combiner"},
    {"heterps.embedding_lookup", 1, 1, 1, 0b0, "f", "i", "combiner table"},
    {"heterps.erf", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.exp", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.expand", 1, 1, 1, 0b0, "0", "", "shape"},
    {"heterps.gather", 2, 2, 1, 0b0, "0", "-i", "axis"},
    {"heterps.gather_elements", 2, 2, 1, 0b0, "0", "-i", "axis"},
    {"heterps.gather_elements_grad", 3, 3, 1, 0b101, "0", "-i0", "axis"},
    {"heterps.gather_grad", 3, 3, 1, 0b101, "0", "-i0", "axis"},
    {"heterps.gemm", 2, 3, 1, 0b111, "0", "", "alpha beta trans_a trans_b"},
    {"heterps.global_avg_pool", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.gru", 4, 6, 2, 0b1111, "00", "0000--",
     "direction hidden_size linear_before_reset operandSegmentSizes"},
    {"heterps.gru_grad", 4, 8, 5, 0b1111, "00000", "0000----",
     "direction hidden_size linear_before_reset operandSegmentSizes"},
    {"heterps.layer_norm", 2, 3, 1, 0b111, "0", "", "axis epsilon"},
    {"heterps.layer_norm_grad", 3, 3, 3, 0b111, "000", "", "axis epsilon"},
    {"heterps.leaky_relu", 1, 1, 1, 0b1, "0", "", "alpha"},
    {"heterps.load_param", 0, 0, 1, 0b0, "-", "", "name"},
    {"heterps.log", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.log_softmax", 1, 1, 1, 0b1, "0", "", "axis"},
    {"heterps.logical", 2, 2, 1, 0b0, "b", "bb", "kind"},
    {"heterps.loss_grad", 3, 4, 1, 0b1101, "0", "",
     "from_logits ignore_index kind reduction"},
    {"heterps.lstm", 4, 8, 3, 0b1111, "000", "0000----",
     "direction hidden_size operandSegmentSizes"},
    {"heterps.lstm_grad", 4, 11, 7, 0b1111, "0000000", "0000-------",
     "direction hidden_size operandSegmentSizes"},
    {"heterps.matmul", 2, 2, 1, 0b11, "0", "", ""},
    {"heterps.max_pool", 1, 1, 1, 0b1, "0", "",
     "ceil_mode dilations kernel_shape pads strides"},
    {"heterps.mse_loss", 2, 2, 1, 0b1, "0", "-0", "reduction"},
    {"heterps.mul", 2, 2, 1, 0b0, "0", "-0", ""},
    {"heterps.neg", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.nll_loss", 2, 2, 1, 0b1, "0", "-i", "reduction"},
    {"heterps.not", 1, 1, 1, 0b0, "b", "b", ""},
    {"heterps.pad", 1, 1, 1, 0b0, "0", "", "mode pads value"},
    {"heterps.pad_grad", 2, 2, 1, 0b11, "0", "-0", "mode pads"},
    {"heterps.pool_grad", 3, 3, 1, 0b111, "0", "",
     "ceil_mode count_include_pad dilations kernel_shape kind pads strides"},
    {"heterps.pow", 2, 2, 1, 0b0, "0", "-0", ""},
    {"heterps.ps_pull", 1, 1, 1, 0b0, "f", "i", "table"},
    {"heterps.ps_push", 2, 2, 0, 0b10, "", "i-", "table"},
    {"heterps.recv", 0, 0, 1, 0b0, "-", "", "channel"},
    {"heterps.reduce_grad", 3, 3, 1, 0b111, "0", "", "axes keepdims kind"},
    {"heterps.reduce_l2", 1, 1, 1, 0b1, "0", "", "axes keepdims"},
    {"heterps.reduce_max", 1, 1, 1, 0b1, "0", "", "axes keepdims"},
    {"heterps.reduce_mean", 1, 1, 1, 0b1, "0", "", "axes keepdims"},
    {"heterps.reduce_min", 1, 1, 1, 0b1, "0", "", "axes keepdims"},
    {"heterps.reduce_prod", 1, 1, 1, 0b1, "0", "", "axes keepdims"},
    {"heterps.reduce_sum", 1, 1, 1, 0b1, "0", "", "axes keepdims"},
    {"heterps.relu", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.reshape", 1, 1, 1, 0b0, "0", "", ""},
    {"heterps.resize", 1, 1, 1, 0b1, "0", "",
     "coordinate_transformation_mode cubic_coeff_a exclude_outside "
     "extrapolation_value mode nearest_mode roi scales"},
    {"heterps.resize_grad", 2, 2, 1, 0b11, "0", "",
     "coordinate_transformation_mode cubic_coeff_a exclude_outside "
     "extrapolation_value mode nearest_mode roi scales"},
    {"heterps.rnn", 4, 6, 2, 0b1111, "00", "0000--",
     "activation direction hidden_size operandSegmentSizes"},
    {"heterps.rnn_grad", 4, 8, 5, 0b1111, "00000", "0000----",
     "activation direction hidden_size operandSegmentSizes"},
    {"heterps.scatter_elements", 3, 3, 1, 0b0, "0", "-i0", "axis reduction"},
    {"heterps.scatter_elements_grad", 2, 2, 2, 0b10, "11", "i-",
     "axis reduction"},
    {"heterps.scatter_nd", 3, 3, 1, 0b0, "0", "-i0", "reduction"},
    {"heterps.scatter_nd_grad", 2, 2, 2, 0b10, "11", "i-", "reduction"},
    {"heterps.segment_reduce", 2, 2, 1, 0b1, "0", "-i", "kind"},
    {"heterps.segment_reduce_grad", 3, 3, 1, 0b101, "0", "-i0", "kind"},
    {"heterps.send", 1, 1, 0, 0b0, "", "", "channel"},
    {"heterps.sigmoid", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.slice", 1, 1, 1, 0b0, "0", "", "ends starts steps"},
    {"heterps.slice_grad", 2, 2, 1, 0b11, "0", "-0", "ends starts steps"},
    {"heterps.softmax", 1, 1, 1, 0b1, "0", "", "axis"},
    {"heterps.softmax_ce_loss", 2, 2, 1, 0b1, "0", "-i", "reduction"},
    {"heterps.softmax_grad", 2, 2, 1, 0b11, "0", "", "axis log"},
    {"heterps.sqrt", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.sub", 2, 2, 1, 0b0, "0", "-0", ""},
    {"heterps.sum_to_shape", 2, 2, 1, 0b0, "0", "-0", ""},
    {"heterps.tanh", 1, 1, 1, 0b1, "0", "", ""},
    {"heterps.top_k_indices", 1, 1, 1, 0b0, "l", "", "axis k largest"},
    {"heterps.transpose", 1, 1, 1, 0b0, "0", "", "perm"},
    {"heterps.unary_grad", 3, 3, 1, 0b111, "0", "",
     "alpha dropout_id kind max min ratio"},
    {"heterps.update_param", 1, 1, 0, 0b1, "", "",
     "beta1 beta2 epsilon kind learning_rate momentum name weight_decay"},
    {"heterps.weighted_nll_loss", 2, 3, 1, 0b101, "0", "-i-",
     "ignore_index reduction"},
    {"heterps.where", 3, 3, 1, 0b0, "1", "b-1", ""},
};

/// findOpSignature searches the table by bisection: it must stay sorted.
constexpr bool sortedByName() {
  for (size_t i = 1; i < std::size(kSignatures); ++i)
    if (std::string_view(kSignatures[i - 1].name) >=
        std::string_view(kSignatures[i].name))
      return false;
  return true;
}
static_assert(sortedByName(), "kSignatures must be sorted by name");

/// Every result has its element type rule.
constexpr bool resultTypesComplete() {
  for (const OpSignature &s : kSignatures)
    if (std::string_view(s.resultTypes).size() !=
        static_cast<size_t>(s.results))
      return false;
  return true;
}
static_assert(resultTypesComplete(),
              "kSignatures: one result type character per result");

constexpr bool attributesListed() {
  for (const OpSignature &s : kSignatures)
    if (!s.attributes)
      return false;
  return true;
}
static_assert(attributesListed(), "kSignatures: an attribute list per op");

} // namespace

const OpSignature *heterps::plan::findOpSignature(const std::string &name) {
  auto less = [](const OpSignature &s, const std::string &n) {
    return std::strcmp(s.name, n.c_str()) < 0;
  };
  const OpSignature *it = std::lower_bound(std::begin(kSignatures),
                                           std::end(kSignatures), name, less);
  if (it == std::end(kSignatures) || name != it->name)
    return nullptr;
  return it;
}

std::vector<std::string> heterps::plan::planOpNames() {
  std::vector<std::string> names;
  for (const OpSignature &s : kSignatures)
    names.push_back(s.name);
  return names;
}

bool heterps::plan::allowsAttribute(const OpSignature &signature,
                                    std::string_view name) {
  if (name == "heterps.layer")
    return true;
  std::string_view list = signature.attributes;
  while (!list.empty()) {
    size_t end = std::min(list.find(' '), list.size());
    if (list.substr(0, end) == name)
      return true;
    list.remove_prefix(std::min(end + 1, list.size()));
  }
  return false;
}
