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
// float type the kernel reads its float operands as; the last two give each
// result's element type and rules for the operands' (OpSignature).
constexpr OpSignature kSignatures[] = {
    {"heterps.abs", 1, 1, 1, 0b1, "0", ""},
    {"heterps.add", 2, 2, 1, 0b0, "0", "-0"},
    {"heterps.arg_extreme", 1, 1, 1, 0b0, "l", ""},
    {"heterps.avg_pool", 1, 1, 1, 0b1, "0", ""},
    {"heterps.batch_norm", 5, 5, 1, 0b11111, "0", ""},
    {"heterps.batch_norm_grad", 3, 3, 3, 0b111, "000", ""},
    {"heterps.bce_loss", 2, 2, 1, 0b1, "0", "-0"},
    {"heterps.cast", 1, 1, 1, 0b0, "-", ""},
    {"heterps.clip", 1, 1, 1, 0b0, "0", ""},
    {"heterps.compare", 2, 2, 1, 0b0, "b", "-0"},
    {"heterps.concat", 1, -1, 1, 0b0, "0", "-0"},
    {"heterps.constant", 0, 0, 1, 0b0, "-", ""},
    {"heterps.conv", 2, 3, 1, 0b111, "0", ""},
    {"heterps.conv_grad", 3, 3, 3, 0b111, "000", ""},
    {"heterps.conv_transpose", 2, 3, 1, 0b111, "0", ""},
    {"heterps.conv_transpose_grad", 3, 3, 3, 0b111, "000", ""},
    {"heterps.cumsum", 1, 1, 1, 0b0, "0", ""},
    {"heterps.div", 2, 2, 1, 0b0, "0", "-0"},
    {"heterps.dropout", 1, 1, 1, 0b1, "0", ""},
    {"heterps.embedding_grad", 2, 2, 2, 0b10, "01", "i-"},
    {"heterps.embedding_lookup", 1, 1, 1, 0b0, "f", "i"},
    {"heterps.erf", 1, 1, 1, 0b1, "0", ""},
    {"heterps.exp", 1, 1, 1, 0b1, "0", ""},
    {"heterps.expand", 1, 1, 1, 0b0, "0", ""},
    {"heterps.gather", 2, 2, 1, 0b0, "0", "-i"},
    {"heterps.gather_elements", 2, 2, 1, 0b0, "0", "-i"},
    {"heterps.gather_elements_grad", 3, 3, 1, 0b101, "0", "-i0"},
    {"heterps.gather_grad", 3, 3, 1, 0b101, "0", "-i0"},
    {"heterps.gemm", 2, 3, 1, 0b111, "0", ""},
    {"heterps.global_avg_pool", 1, 1, 1, 0b1, "0", ""},
    {"heterps.gru", 4, 6, 2, 0b1111, "00", "0000--"},
    {"heterps.gru_grad", 4, 8, 5, 0b1111, "00000", "0000----"},
    {"heterps.layer_norm", 2, 3, 1, 0b111, "0", ""},
    {"heterps.layer_norm_grad", 3, 3, 3, 0b111, "000", ""},
    {"heterps.leaky_relu", 1, 1, 1, 0b1, "0", ""},
    {"heterps.load_param", 0, 0, 1, 0b0, "-", ""},
    {"heterps.log", 1, 1, 1, 0b1, "0", ""},
    {"heterps.log_softmax", 1, 1, 1, 0b1, "0", ""},
    {"heterps.logical", 2, 2, 1, 0b0, "b", "bb"},
    {"heterps.loss_grad", 3, 4, 1, 0b1101, "0", ""},
    {"heterps.lstm", 4, 8, 3, 0b1111, "000", "0000----"},
    {"heterps.lstm_grad", 4, 11, 7, 0b1111, "0000000", "0000-------"},
    {"heterps.matmul", 2, 2, 1, 0b11, "0", ""},
    {"heterps.max_pool", 1, 1, 1, 0b1, "0", ""},
    {"heterps.mse_loss", 2, 2, 1, 0b1, "0", "-0"},
    {"heterps.mul", 2, 2, 1, 0b0, "0", "-0"},
    {"heterps.neg", 1, 1, 1, 0b1, "0", ""},
    {"heterps.nll_loss", 2, 2, 1, 0b1, "0", "-i"},
    {"heterps.not", 1, 1, 1, 0b0, "b", "b"},
    {"heterps.pad", 1, 1, 1, 0b0, "0", ""},
    {"heterps.pad_grad", 2, 2, 1, 0b11, "0", "-0"},
    {"heterps.pool_grad", 3, 3, 1, 0b111, "0", ""},
    {"heterps.pow", 2, 2, 1, 0b0, "0", "-0"},
    {"heterps.ps_pull", 1, 1, 1, 0b0, "f", "i"},
    {"heterps.ps_push", 2, 2, 0, 0b10, "", "i-"},
    {"heterps.recv", 0, 0, 1, 0b0, "-", ""},
    {"heterps.reduce_grad", 3, 3, 1, 0b111, "0", ""},
    {"heterps.reduce_l2", 1, 1, 1, 0b1, "0", ""},
    {"heterps.reduce_max", 1, 1, 1, 0b1, "0", ""},
    {"heterps.reduce_mean", 1, 1, 1, 0b1, "0", ""},
    {"heterps.reduce_min", 1, 1, 1, 0b1, "0", ""},
    {"heterps.reduce_prod", 1, 1, 1, 0b1, "0", ""},
    {"heterps.reduce_sum", 1, 1, 1, 0b1, "0", ""},
    {"heterps.relu", 1, 1, 1, 0b1, "0", ""},
    {"heterps.reshape", 1, 1, 1, 0b0, "0", ""},
    {"heterps.resize", 1, 1, 1, 0b1, "0", ""},
    {"heterps.resize_grad", 2, 2, 1, 0b11, "0", ""},
    {"heterps.rnn", 4, 6, 2, 0b1111, "00", "0000--"},
    {"heterps.rnn_grad", 4, 8, 5, 0b1111, "00000", "0000----"},
    {"heterps.scatter_elements", 3, 3, 1, 0b0, "0", "-i0"},
    {"heterps.scatter_elements_grad", 2, 2, 2, 0b10, "11", "i-"},
    {"heterps.scatter_nd", 3, 3, 1, 0b0, "0", "-i0"},
    {"heterps.scatter_nd_grad", 2, 2, 2, 0b10, "11", "i-"},
    {"heterps.segment_reduce", 2, 2, 1, 0b1, "0", "-i"},
    {"heterps.segment_reduce_grad", 3, 3, 1, 0b101, "0", "-i0"},
    {"heterps.send", 1, 1, 0, 0b0, "", ""},
    {"heterps.sigmoid", 1, 1, 1, 0b1, "0", ""},
    {"heterps.slice", 1, 1, 1, 0b0, "0", ""},
    {"heterps.slice_grad", 2, 2, 1, 0b11, "0", "-0"},
    {"heterps.softmax", 1, 1, 1, 0b1, "0", ""},
    {"heterps.softmax_ce_loss", 2, 2, 1, 0b1, "0", "-i"},
    {"heterps.softmax_grad", 2, 2, 1, 0b11, "0", ""},
    {"heterps.sqrt", 1, 1, 1, 0b1, "0", ""},
    {"heterps.sub", 2, 2, 1, 0b0, "0", "-0"},
    {"heterps.sum_to_shape", 2, 2, 1, 0b0, "0", "-0"},
    {"heterps.tanh", 1, 1, 1, 0b1, "0", ""},
    {"heterps.top_k_indices", 1, 1, 1, 0b0, "l", ""},
    {"heterps.transpose", 1, 1, 1, 0b0, "0", ""},
    {"heterps.unary_grad", 3, 3, 1, 0b111, "0", ""},
    {"heterps.update_param", 1, 1, 0, 0b1, "", ""},
    {"heterps.weighted_nll_loss", 2, 3, 1, 0b101, "0", "-i-"},
    {"heterps.where", 3, 3, 1, 0b0, "1", "b-1"},
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
