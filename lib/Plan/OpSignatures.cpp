//===- OpSignatures.cpp - The ops a plan may hold -------------------------===//

#include "heterps/Plan/OpSignatures.h"

#include <algorithm>
#include <cstring>
#include <iterator>

using namespace heterps::plan;

namespace {

// Sorted by name. Optional operands (a bias, a class weight) make a range.
constexpr OpSignature kSignatures[] = {
    {"heterps.abs", 1, 1, 1},
    {"heterps.add", 2, 2, 1},
    {"heterps.avg_pool", 1, 1, 1},
    {"heterps.batch_norm", 5, 5, 1},
    {"heterps.batch_norm_grad", 3, 3, 3},
    {"heterps.bce_loss", 2, 2, 1},
    {"heterps.cast", 1, 1, 1},
    {"heterps.clip", 1, 1, 1},
    {"heterps.concat", 1, -1, 1},
    {"heterps.constant", 0, 0, 1},
    {"heterps.conv", 2, 3, 1},
    {"heterps.conv_grad", 3, 3, 3},
    {"heterps.div", 2, 2, 1},
    {"heterps.dropout", 1, 1, 1},
    {"heterps.embedding_grad", 2, 2, 2},
    {"heterps.embedding_lookup", 1, 1, 1},
    {"heterps.exp", 1, 1, 1},
    {"heterps.expand", 1, 1, 1},
    {"heterps.gather", 2, 2, 1},
    {"heterps.gemm", 2, 3, 1},
    {"heterps.global_avg_pool", 1, 1, 1},
    {"heterps.layer_norm", 2, 3, 1},
    {"heterps.layer_norm_grad", 3, 3, 3},
    {"heterps.leaky_relu", 1, 1, 1},
    {"heterps.load_param", 0, 0, 1},
    {"heterps.log", 1, 1, 1},
    {"heterps.log_softmax", 1, 1, 1},
    {"heterps.loss_grad", 3, 4, 1},
    {"heterps.matmul", 2, 2, 1},
    {"heterps.max_pool", 1, 1, 1},
    {"heterps.mse_loss", 2, 2, 1},
    {"heterps.mul", 2, 2, 1},
    {"heterps.neg", 1, 1, 1},
    {"heterps.nll_loss", 2, 2, 1},
    {"heterps.pool_grad", 3, 3, 1},
    {"heterps.pow", 2, 2, 1},
    {"heterps.ps_pull", 1, 1, 1},
    {"heterps.ps_push", 2, 2, 0},
    {"heterps.recv", 0, 0, 1},
    {"heterps.reduce_grad", 3, 3, 1},
    {"heterps.reduce_max", 1, 1, 1},
    {"heterps.reduce_mean", 1, 1, 1},
    {"heterps.reduce_sum", 1, 1, 1},
    {"heterps.relu", 1, 1, 1},
    {"heterps.reshape", 1, 1, 1},
    {"heterps.send", 1, 1, 0},
    {"heterps.sigmoid", 1, 1, 1},
    {"heterps.slice", 1, 1, 1},
    {"heterps.softmax", 1, 1, 1},
    {"heterps.softmax_ce_loss", 2, 2, 1},
    {"heterps.softmax_grad", 2, 2, 1},
    {"heterps.sqrt", 1, 1, 1},
    {"heterps.sub", 2, 2, 1},
    {"heterps.sum_to_shape", 2, 2, 1},
    {"heterps.tanh", 1, 1, 1},
    {"heterps.transpose", 1, 1, 1},
    {"heterps.unary_grad", 3, 3, 1},
    {"heterps.update_param", 1, 1, 0},
    {"heterps.weighted_nll_loss", 2, 3, 1},
};

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
