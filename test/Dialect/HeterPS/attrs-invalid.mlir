// Every verifier message of the HeterPS attributes and of the discardable
// attributes `heterps.device` and `heterps.resources`.
// RUN: heterps-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect

// expected-error @+1 {{#heterps.device needs a resource type name}}
"test.placed"() {heterps.device = #heterps.device<"", cpu>} : () -> ()

// -----

// expected-error @+1 {{unknown initializer 'glorot'}}
heterps.param @w : tensor<2x2xf32> = #heterps.init<glorot>

// -----

// expected-error @+1 {{initializer uniform takes 2 argument(s), got 1}}
heterps.param @w : tensor<2x2xf32> = #heterps.init<uniform(0.5)>

// -----

// expected-error @+1 {{uniform initializer needs low < high, got (1.000000e+00, 1.000000e+00)}}
heterps.param @w : tensor<2x2xf32> = #heterps.init<uniform(1.0, 1.0)>

// -----

// expected-error @+1 {{normal initializer needs a positive standard deviation, got 0.000000e+00}}
heterps.param @w : tensor<2x2xf32> = #heterps.init<normal(0.0, 0.0)>

// -----

// An infinity written as its bits.
// expected-error @+1 {{initializer constant needs finite arguments, got INF}}
heterps.param @w : tensor<2x2xf32> = #heterps.init<constant(0x7FF0000000000000)>

// -----

func.func @resources_on_func() attributes {heterps.resources = [#heterps.device<"cpu", cpu>]} {
  // expected-error @-1 {{'heterps.resources' is a module attribute}}
  return
}

// -----

// expected-error @+1 {{'heterps.resources' must be an array of #heterps.device}}
module attributes {heterps.resources = "cpu"} {}

// -----

// expected-error @+1 {{'heterps.resources' must be an array of #heterps.device, found "cpu"}}
module attributes {heterps.resources = ["cpu"]} {}

// -----

// expected-error @+1 {{'heterps.resources' lists "cpu" twice}}
module attributes {heterps.resources = [#heterps.device<"cpu", cpu>, #heterps.device<"cpu", cpu>]} {}

// -----

// expected-error @+1 {{'heterps.device' must be a #heterps.device, found "gpu"}}
"test.placed"() {heterps.device = "gpu"} : () -> ()

// -----

// expected-error @+1 {{unknown HeterPS attribute 'heterps.placement'}}
"test.placed"() {heterps.placement = 1 : i64} : () -> ()

// -----

module attributes {heterps.resources = [#heterps.device<"c6i", cpu>, #heterps.device<"a100", gpu>]} {
  // expected-error @+1 {{is placed on "a100" as a cpu but the cluster declares it a gpu}}
  "test.placed"() {heterps.device = #heterps.device<"a100", cpu>} : () -> ()
}

// -----

module attributes {heterps.resources = [#heterps.device<"c6i", cpu>, #heterps.device<"a100", gpu>]} {
  // expected-error @+1 {{is placed on "h100", which is not a resource type of the cluster (known: c6i, a100)}}
  "test.placed"() {heterps.device = #heterps.device<"h100", gpu>} : () -> ()
}

// -----

// expected-error @+1 {{stage index must be non-negative, got -1}}
"test.placed"() {heterps.stage = #heterps.stage_assignment<index = -1, units = 1>} : () -> ()

// -----

// expected-error @+1 {{a stage needs at least one unit, got 0}}
"test.placed"() {heterps.stage = #heterps.stage_assignment<index = 0, units = 0>} : () -> ()

// -----

// expected-error @+1 {{'heterps.stage' must be a #heterps.stage_assignment, found 1 : i64}}
"test.placed"() {heterps.stage = 1 : i64} : () -> ()

// -----

// expected-error @+1 {{'heterps.prediction' is a module attribute holding a #heterps.prediction, found 1.000000e+00 : f64}}
module attributes {heterps.prediction = 1.0 : f64} {}

// -----

// expected-error @+1 {{struct is missing required parameter: cost_usd}}
module attributes {heterps.prediction = #heterps.prediction<throughput = 1.0, cost_per_hour = 2.0>} {}

// -----

// expected-error @+1 {{#heterps.prediction stage_throughputs[1] must be finite and non-negative, got -1.000000e+00}}
module attributes {heterps.prediction = #heterps.prediction<throughput = 1.0, cost_usd = 0.0, cost_per_hour = 2.0, stage_throughputs = [1.0e3, -1.0]>} {}

// -----

// expected-error @+1 {{#heterps.prediction throughput must be finite and non-negative, got -1.000000e+00}}
module attributes {heterps.prediction = #heterps.prediction<throughput = -1.0, cost_usd = 0.0, cost_per_hour = 2.0>} {}

// -----

// expected-error @+1 {{'heterps.prediction' is a module attribute holding a #heterps.prediction}}
func.func @f() attributes {heterps.prediction = #heterps.prediction<throughput = 1.0, cost_usd = 0.0, cost_per_hour = 2.0>} {
  return
}

// -----

// expected-error @+1 {{'heterps.training' is a function attribute holding a #heterps.training, found {loss = "bce", loss_output = 0 : i64}}}
func.func @f() attributes {heterps.training = {loss = "bce", loss_output = 0 : i64}} {
  return
}

// -----

// expected-error @+1 {{#heterps.training loss_output must be a result index, got -1}}
func.func @f() attributes {heterps.training = #heterps.training<loss = "bce", loss_output = -1>} {
  return
}

// -----

// expected-error @+1 {{#heterps.training needs the loss's name}}
func.func @f() attributes {heterps.training = #heterps.training<loss = "", loss_output = 0>} {
  return
}

// -----

// expected-error @+1 {{optimizer learning_rate must be finite and non-negative, got -5.000000e-01}}
"test.table"() {optimizer = #heterps.optimizer<kind = sgd, learning_rate = -0.5>} : () -> ()

// -----

// expected-error @+1 {{optimizer momentum must be in [0, 1), got 1.500000e+00}}
"test.table"() {optimizer = #heterps.optimizer<kind = momentum, learning_rate = 0.1, momentum = 1.5>} : () -> ()

// -----

// expected-error @+1 {{optimizer epsilon must be positive, got 0.000000e+00}}
"test.table"() {optimizer = #heterps.optimizer<kind = adam, learning_rate = 0.1, epsilon = 0.0>} : () -> ()

// -----

// expected-error @+2 {{'rmsprop' is not an optimizer's update rule; expected one of: sgd, momentum, adam, adagrad}}
// expected-error @+1 {{failed to parse HeterPS_OptimizerAttr parameter 'kind'}}
"test.table"() {optimizer = #heterps.optimizer<kind = rmsprop, learning_rate = 0.1>} : () -> ()

// -----

// expected-error @+1 {{'func.func' op 'heterps.bag_offsets' of argument 0 must name another argument by number, found 0 : i64}}
func.func @bags_of_themselves(%ids: tensor<?xi64> {heterps.bag_offsets = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 1, the bag offsets of argument 0, must be a 1-D integer tensor, found 'tensor<?xf32>'}}
func.func @float_offsets(%ids: tensor<?xi64> {heterps.bag_offsets = 1 : i64}, %offsets: tensor<?xf32>) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument 0 holds bags of ids: it needs a dynamic dimension 0, found 'tensor<5xi64>'}}
func.func @static_bags(%ids: tensor<5xi64> {heterps.bag_offsets = 1 : i64}, %offsets: tensor<?xi64>) {
  return
}

// -----

// expected-error @+1 {{'func.func' op unknown HeterPS argument attribute 'heterps.bags'}}
func.func @unknown_argument_attribute(%ids: tensor<?xi64> {heterps.bags}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'heterps.name' of argument 0 must be a string, found 3 : i64}}
func.func @name_not_a_string(%x: tensor<?xf32> {heterps.name = 3}) {
  return
}

