// RUN: heterps-opt %s -split-input-file -verify-diagnostics --heterps-autodiff
// RUN: not heterps-opt %s -split-input-file --heterps-autodiff=loss=hinge 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not heterps-opt %s -split-input-file --heterps-autodiff=optimizer=lion 2>&1 | FileCheck %s --check-prefix=OPT

// Optimizer options out of range are named once (the table optimizer
// shares the dense one's hyper-parameters), the table's as the table's.
// RUN: not heterps-opt %S/emit-plan.mlir --heterps-autodiff='loss=bce optimizer=adam beta1=2' 2>&1 | FileCheck %s --check-prefix=BETA --implicit-check-not=error:
// RUN: not heterps-opt %S/emit-plan.mlir --heterps-autodiff='loss=bce sparse-learning-rate=nan' 2>&1 | FileCheck %s --check-prefix=SPARSE-LR --implicit-check-not=error:
// RUN: not heterps-opt %S/emit-plan.mlir --heterps-autodiff='loss=bce sparse-learning-rate=-2' 2>&1 | FileCheck %s --check-prefix=SPARSE-NEG --implicit-check-not=error:

// LOSS: for the --loss option: Cannot find option named 'hinge'!
// OPT: for the --optimizer option: Cannot find option named 'lion'!
// BETA: error: heterps-autodiff: bad optimizer options: optimizer beta1 and beta2 must be in [0, 1), got 2.000000e+00 and 9.990000e-01
// SPARSE-LR: error: heterps-autodiff: bad table optimizer options: optimizer learning_rate must be finite and non-negative, got nan
// SPARSE-NEG: error: heterps-autodiff: negative sparse-learning-rate -2.000000e+00 (leave it out for the dense learning rate)

// Options set to what nothing reads were ignored.
// RUN: not heterps-opt %S/emit-plan.mlir --heterps-autodiff='loss=bce optimizer=sgd momentum=0.5' 2>&1 | FileCheck %s --check-prefix=UNREAD-MOMENTUM --implicit-check-not=error:
// RUN: not heterps-opt %S/emit-plan.mlir --heterps-autodiff='loss=bce optimizer=momentum sparse-optimizer=adagrad beta1=0.5' 2>&1 | FileCheck %s --check-prefix=UNREAD-BETA --implicit-check-not=error:
// RUN: heterps-opt %S/emit-plan.mlir --heterps-autodiff='loss=bce optimizer=sgd sparse-optimizer=adagrad epsilon=1e-10' -o /dev/null
// RUN: not heterps-opt %S/emit-plan.mlir --heterps-autodiff='loss=mse from-logits=true' 2>&1 | FileCheck %s --check-prefix=LOGITS --implicit-check-not=error:
// RUN: not heterps-opt %S/emit-plan.mlir --heterps-autodiff='label=y' 2>&1 | FileCheck %s --check-prefix=NO-LOSS-LABEL --implicit-check-not=error:
// RUN: not heterps-opt %S/emit-plan.mlir --heterps-autodiff='loss=bce label=' 2>&1 | FileCheck %s --check-prefix=EMPTY-LABEL --implicit-check-not=error:
// RUN: not heterps-opt %S/emit-plan.mlir --heterps-autodiff='loss=bce prediction=5' 2>&1 | FileCheck %s --check-prefix=PREDICTION --implicit-check-not=error:

// UNREAD-MOMENTUM: error: heterps-autodiff: momentum= is read by momentum only, and this trains with sgd
// UNREAD-BETA: error: heterps-autodiff: beta1= is read by adam only, and this trains with momentum and tables with adagrad
// LOGITS: error: heterps-autodiff: from-logits is bce's (softmax-ce always reads logits)
// NO-LOSS-LABEL: error: heterps-autodiff: label= is an option of the added loss; give loss=bce, softmax-ce or mse (without loss=, the model's own loss is trained)
// EMPTY-LABEL: error: heterps-autodiff: label= needs a name for the label input
// PREDICTION: error: heterps-autodiff: prediction=5 but the function has
// A label named as an output: the plan names both in one space.
// RUN: not heterps-opt %S/../Import/ONNX/Inputs/torch-ctr.onnx --heterps-autodiff='loss=bce label=output' 2>&1 | FileCheck %s --check-prefix=LABEL-OUTPUT --implicit-check-not=error:
// LABEL-OUTPUT: error: heterps-autodiff: the function has an output named 'output'; choose another label name with label=NAME

// expected-error @+1 {{the function returns no loss (a 0-D float result); add one with loss=bce|softmax-ce|mse label=NAME}}
func.func @no_loss(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = heterps.relu %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Without a loss op, the loss is the one 0-D float result: two are
// ambiguous.
// expected-error @+1 {{heterps-autodiff: the function returns 2 0-D float results (results #0 #1); the loss must be the only one}}
func.func @two_scalars(%x: tensor<?x4xf32>) -> (tensor<f32>, tensor<f32>) {
  %m = heterps.reduce_mean %x {keepdims = false} : (tensor<?x4xf32>) -> tensor<f32>
  %s = heterps.reduce_sum %x {keepdims = false} : (tensor<?x4xf32>) -> tensor<f32>
  return %m, %s : tensor<f32>, tensor<f32>
}

// -----

heterps.param @w : tensor<4xf32> = #heterps.init<zeros>
func.func @vector_matmul(%x: tensor<3x4xf32>, %t: tensor<3xf32>) -> tensor<f32> {
  %w = heterps.load_param @w : tensor<4xf32>
  // expected-error @+1 {{gradient is implemented for operands of rank >= 2}}
  %y = heterps.matmul %x, %w : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  %l = heterps.mse_loss %y, %t : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{@step is already a training step}}
func.func @step(%x: tensor<?x1xf32>, %t: tensor<?x1xf32>) -> tensor<f32>
    attributes {heterps.training = #heterps.training<loss = "mse", loss_output = 0>} {
  %l = heterps.mse_loss %x, %t : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @staged(%x: tensor<?x1xf32>) -> tensor<?x1xf32> {
  // expected-error @+1 {{heterps-autodiff runs before heterps-outline-stages}}
  %r = heterps.pipeline ins(%x : tensor<?x1xf32>) {
  ^bb0(%a: tensor<?x1xf32>):
    %y = heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<?x1xf32>) {
    ^bb0(%i: tensor<?x1xf32>):
      heterps.yield %i : tensor<?x1xf32>
    } -> tensor<?x1xf32>
    heterps.yield %y : tensor<?x1xf32>
  } -> tensor<?x1xf32>
  return %r : tensor<?x1xf32>
}

// -----

heterps.param @d : tensor<3x4xf32> = #heterps.init<zeros>

// A product scattered into trained data has no gradient rule.
func.func @scatter_nd_mul(%u: tensor<?x4xf32>, %i: tensor<?x1xi64>) -> tensor<f32> {
  %d = heterps.load_param @d : tensor<3x4xf32>
  // expected-error @+1 {{'heterps.scatter_nd' op has no gradient with reduction 'mul' (only none and add)}}
  %s = heterps.scatter_nd %d, %i, %u {reduction = "mul"} : (tensor<3x4xf32>, tensor<?x1xi64>, tensor<?x4xf32>) -> tensor<3x4xf32>
  %l = heterps.reduce_sum %s {keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Training computes in f32: an f64 prediction is named as such (the plan
// failed to verify with "the loss is output 1, which is not a 0-D f32").
// expected-error @+1 {{heterps-autodiff: the loss is 'tensor<f64>'; training computes in f32}}
func.func @f64_loss(%x: tensor<?x4xf64>) -> tensor<f64> {
  %m = heterps.reduce_mean %x {keepdims = false} : (tensor<?x4xf64>) -> tensor<f64>
  return %m : tensor<f64>
}
