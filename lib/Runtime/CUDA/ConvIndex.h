//===- ConvIndex.h - Where a convolution's patches come from ----*- C++ -*-===//
//
// The index arithmetic of the GPU convolution (im2col and its transpose) as
// host/device functions (HostDevice.h), and the strided batches of products
// a chunk of images takes, so that the unit tests build a convolution and
// its gradient from them on machines without a GPU and hold it against the
// CPU column.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_CONVINDEX_H
#define HETERPS_LIB_RUNTIME_CUDA_CONVINDEX_H

#include "WindowIndex.h"

#include <vector>

namespace heterps::runtime::cuda {

/// One image's convolution geometry, passed to the kernels by value.
struct ConvGeometry : WindowGeometry {
  /// Input channels, output channels, groups.
  int64_t channels = 0, features = 0, group = 1;
};

inline ConvGeometry convGeometryOf(const cpu::ConvShape &shape,
                                   const Shape &x) {
  ConvGeometry g;
  setWindow(g, x, shape.output, shape.window);
  g.channels = x[1];
  g.features = shape.output[1];
  g.group = shape.group;
  return g;
}

/// Element e of one image's patch matrix, col[(c * taps + t) * outputs +
/// o]: the input element of channel c that output position o reads through
/// tap t, or 0 in the padding.
HETERPS_HD inline float patchElement(const float *x, int64_t e,
                                     const ConvGeometry &g) {
  int64_t o = e % g.outputs, t = (e / g.outputs) % g.taps,
          c = e / (g.outputs * g.taps);
  int64_t source = windowSource(o, t, g);
  return source < 0 ? 0.0f : x[c * g.inputs + source];
}

/// Element e = c * inputs + i of one image's input gradient: the sum of
/// the patch gradient `dcol` over the taps and output positions that read
/// input position i of channel c (patchElement's transpose, as a gather).
HETERPS_HD inline float foldedElement(const float *dcol, int64_t e,
                                      const ConvGeometry &g) {
  int64_t i = e % g.inputs, c = e / g.inputs;
  float sum = 0;
  for (int64_t t = 0; t < g.taps; ++t) {
    int64_t o = windowReader(i, t, g);
    if (o >= 0)
      sum += dcol[(c * g.taps + t) * g.outputs + o];
  }
  return sum;
}

/// One strided batch of row-major products c_i = op(a_i) op(b_i) (+ beta
/// c_i), as gemmBatched takes it, with its matrices as offsets from the
/// bases of its three operands.
struct BatchedProduct {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t a = 0, lda = 0, strideA = 0;
  int64_t b = 0, ldb = 0, strideB = 0;
  int64_t c = 0, ldc = 0, strideC = 0;
  int64_t batch = 1;
};

/// Which products a chunk of `count` images takes: batches over the
/// images, one per group, or over the groups, one per image, when the
/// groups outnumber the images. `perImage` and `perGroup` give each
/// operand's offsets between images and between groups.
struct ProductLayout {
  int64_t aImage, aGroup, bImage, bGroup, cImage, cGroup;
};

inline std::vector<BatchedProduct> batchedProducts(BatchedProduct shape,
                                                   const ProductLayout &l,
                                                   int64_t count,
                                                   int64_t groups) {
  std::vector<BatchedProduct> products;
  bool overImages = count >= groups;
  for (int64_t i = 0; i < (overImages ? groups : count); ++i) {
    BatchedProduct p = shape;
    p.a = i * (overImages ? l.aGroup : l.aImage);
    p.b = i * (overImages ? l.bGroup : l.bImage);
    p.c = i * (overImages ? l.cGroup : l.cImage);
    p.strideA = overImages ? l.aImage : l.aGroup;
    p.strideB = overImages ? l.bImage : l.bGroup;
    p.strideC = overImages ? l.cImage : l.cGroup;
    p.batch = overImages ? count : groups;
    products.push_back(p);
  }
  return products;
}

/// The sizes the products of a convolution's chunk are made of: the
/// group's features F (M/g) and reduced rows R (C/g * taps), the output
/// positions O, the features M, and the patch matrix's floats P per image.
struct ConvProductSizes {
  int64_t F, R, O, M, P;
  explicit ConvProductSizes(const ConvGeometry &g)
      : F(g.features / g.group), R(g.channels / g.group * g.taps), O(g.outputs),
        M(g.features), P(g.channels * g.taps * g.outputs) {}
};

/// The forward's products for `count` images: y (M x O per image) = w_g
/// (F x R) col_g (R x O). Operands: w, the patches, y.
inline std::vector<BatchedProduct> patchProducts(const ConvGeometry &g,
                                                 int64_t count) {
  ConvProductSizes z(g);
  BatchedProduct shape;
  shape.m = z.F;
  shape.n = z.O;
  shape.k = z.R;
  shape.lda = z.R;
  shape.ldb = z.O;
  shape.ldc = z.O;
  return batchedProducts(shape,
                         {0, z.F * z.R, z.P, z.R * z.O, z.M * z.O, z.F * z.O},
                         count, g.group);
}

/// The input gradient's products: dcol_g (R x O) = w_g^T dy_g (F x O).
/// Operands: w, dy, the patches' gradient.
inline std::vector<BatchedProduct> foldProducts(const ConvGeometry &g,
                                                int64_t count) {
  ConvProductSizes z(g);
  BatchedProduct shape;
  shape.ta = true;
  shape.m = z.R;
  shape.n = z.O;
  shape.k = z.F;
  shape.lda = z.R;
  shape.ldb = z.O;
  shape.ldc = z.O;
  return batchedProducts(shape,
                         {0, z.F * z.R, z.M * z.O, z.F * z.O, z.P, z.R * z.O},
                         count, g.group);
}

/// The filter gradient's products, one partial filter per image: dw_g
/// (F x R) = dy_g (F x O) col_g^T. Operands: dy, the patches, the partial
/// filters (M * R per image).
inline std::vector<BatchedProduct> filterProducts(const ConvGeometry &g,
                                                  int64_t count) {
  ConvProductSizes z(g);
  BatchedProduct shape;
  shape.tb = true;
  shape.m = z.F;
  shape.n = z.R;
  shape.k = z.O;
  shape.lda = z.O;
  shape.ldb = z.O;
  shape.ldc = z.R;
  return batchedProducts(
      shape, {z.M * z.O, z.F * z.O, z.P, z.R * z.O, z.M * z.R, z.F * z.R},
      count, g.group);
}

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_CONVINDEX_H
