//===- HeterPSPlacement.h - Placement of ops on resource types --*- C++ -*-===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSPLACEMENT_H
#define HETERPS_DIALECT_HETERPS_IR_HETERPSPLACEMENT_H

#include "heterps/Dialect/HeterPS/IR/HeterPSAttrs.h"

#include "mlir/IR/Operation.h"

namespace mlir {
namespace heterps {

/// The resource type `op` is placed on, or null when it is not placed.
DeviceAttr getDevice(Operation *op);

/// Places `op` on `device`.
void setDevice(Operation *op, DeviceAttr device);

/// The resource types of the cluster that the module around `op` declares in
/// `heterps.resources`, or null when it declares none.
ArrayAttr getClusterResources(Operation *op);

/// Checks that `device` is one of the cluster's resource types, with the same
/// kind, when the enclosing module lists them.
LogicalResult verifyDeviceInCluster(Operation *op, DeviceAttr device);

} // namespace heterps
} // namespace mlir

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSPLACEMENT_H
