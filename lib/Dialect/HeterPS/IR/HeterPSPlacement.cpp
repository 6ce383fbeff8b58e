//===- HeterPSPlacement.cpp - Placement of ops on resource types ----------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::heterps;

DeviceAttr mlir::heterps::getDevice(Operation *op) {
  return op->getAttrOfType<DeviceAttr>(HeterPSDialect::getDeviceAttrName());
}

void mlir::heterps::setDevice(Operation *op, DeviceAttr device) {
  op->setAttr(HeterPSDialect::getDeviceAttrName(), device);
}

ArrayAttr mlir::heterps::getClusterResources(Operation *op) {
  for (Operation *parent = op; parent; parent = parent->getParentOp())
    if (auto module = dyn_cast<ModuleOp>(parent))
      if (auto resources = module->getAttrOfType<ArrayAttr>(
              HeterPSDialect::getResourcesAttrName()))
        return resources;
  return {};
}

LogicalResult mlir::heterps::verifyDeviceInCluster(Operation *op,
                                                   DeviceAttr device) {
  ArrayAttr resources = getClusterResources(op);
  if (!resources)
    return success();
  for (Attribute element : resources) {
    auto known = dyn_cast<DeviceAttr>(element);
    if (!known || known.getResource() != device.getResource())
      continue;
    if (known.getKind() != device.getKind())
      return op->emitOpError()
             << "is placed on \"" << device.getResource() << "\" as a "
             << stringifyResourceKind(device.getKind())
             << " but the cluster declares it a "
             << stringifyResourceKind(known.getKind());
    return success();
  }
  InFlightDiagnostic diag = op->emitOpError()
                            << "is placed on \"" << device.getResource()
                            << "\", which is not a resource type of the "
                               "cluster (known: ";
  llvm::interleaveComma(resources, diag, [&](Attribute element) {
    if (auto known = dyn_cast<DeviceAttr>(element))
      diag << known.getResource();
  });
  diag << ")";
  return diag;
}
