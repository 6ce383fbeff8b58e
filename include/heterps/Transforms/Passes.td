//===- Passes.td - HeterPS passes --------------------------*- tablegen -*-===//

#ifndef HETERPS_TRANSFORMS_PASSES_TD
#define HETERPS_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Options that several passes share, declared once
//===----------------------------------------------------------------------===//

defvar FunctionOption =
    Option<"functionName", "function", "std::string", "\"\"",
           "The function to work on (default: the module's only function)">;

defvar MicroBatchesOption =
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Micro-batches per batch">;

// The inputs of the cost model: place-ops, provision and heterps-schedule.
defvar CostModelOptions = [
  Option<"clusterFile", "cluster", "std::string", "\"\"",
         "Cluster file (JSON, docs/Scheduling.md)">,
  FunctionOption,
  Option<"throughput", "throughput", "double", "1000.0",
         "Throughput target, samples/s">,
  Option<"batchSize", "batch", "int64_t", "256",
         "Samples per batch; dynamic dimensions are bound to it">,
  Option<"samples", "samples", "double", "1.0e8",
         "Samples the job processes (turns $/h into the job's cost)">,
  Option<"training", "training", "bool", "true",
         "Cost a forward-only model as a training step (forward, backward, parameter sync); a function with heterps.training always is">,
  Option<"profileFile", "profile", "std::string", "\"\"",
         "Measured op times (JSON) that replace the roofline estimate">,
  MicroBatchesOption
];

// The search: place-ops and heterps-schedule.
defvar SolverOptions = [
  Option<"solver", "solver", "::heterps::schedule::SolverKind",
         "::heterps::schedule::SolverKind::RL",
         "The placement solver (docs/Scheduling.md)",
         "::mlir::heterps::SolverValues()">,
  Option<"seed", "seed", "uint64_t", "1", "Random seed">,
  Option<"reportFile", "report", "std::string", "\"\"",
         "Write the placement report (JSON) here">,
  Option<"timeBudget", "time-budget", "double", "0",
         "Stop searching after this many seconds (0: no limit)">,
  Option<"maxSearchOps", "max-search-ops", "int", "256",
         "Search larger graphs on about this many groups of contiguous ops, "
         "then move each stage boundary op by op (0: never group)">,
  Option<"searchCuts", "search-cuts", "bool", "true",
         "Also cut runs of one type into several stages where that lowers "
         "the cost (cuts that memory requires are always made)">,
  Option<"rlIterations", "rl-iterations", "int", "200",
         "rl: policy-gradient iterations">,
  Option<"rlSamples", "rl-samples", "int", "32",
         "rl: plans sampled per iteration">,
  Option<"rlLearningRate", "rl-learning-rate", "double", "0.01",
         "rl: Adam learning rate">,
  Option<"rlHiddenSize", "rl-hidden", "int", "32",
         "rl: LSTM hidden size">,
  Option<"rlPolicyIn", "rl-policy-in", "std::string", "\"\"",
         "rl: start from this saved policy">,
  Option<"rlPolicyOut", "rl-policy-out", "std::string", "\"\"",
         "rl: save the trained policy here">,
  Option<"geneticPopulation", "genetic-population", "int", "64",
         "genetic: population size">,
  Option<"geneticGenerations", "genetic-generations", "int", "150",
         "genetic: generations">
];


def PrintOpCostPass : Pass<"heterps-print-op-cost"> {
  let summary = "Prints the work each op reports to the cost model";
  let description = [{
    Walks the ops that implement the cost interface and prints, for a batch
    of `batch-size` samples (dynamic dimensions are bound to it), the forward
    and backward FLOPs, the bytes moved forward and backward, the dense
    parameter bytes read and the embedding bytes pulled from the parameter
    server, then the totals. A dynamic dimension that a reshape merged with
    others (multi-head attention's B*H) is bound to that many rows, shown as
    `rows=N`. The IR is not changed.

    Input:

    ```mlir
    func.func @f(%x: tensor<?x13xf32>) -> tensor<?x64xf32> {
      %w = heterps.load_param @w : tensor<13x64xf32>
      %y = heterps.matmul %x, %w : (tensor<?x13xf32>, tensor<13x64xf32>) -> tensor<?x64xf32>
      return %y : tensor<?x64xf32>
    }
    ```

    Output of `heterps-opt --heterps-print-op-cost=batch-size=2` on stderr:

    ```
    op cost for batch size 2
    heterps.load_param @ loc(...): fwd_flops=0 bwd_flops=0 fwd_bytes=0 bwd_bytes=0 param_bytes=3328 embedding_bytes=0
    heterps.matmul @ loc(...): fwd_flops=3328 bwd_flops=6656 fwd_bytes=3944 bwd_bytes=7888 param_bytes=0 embedding_bytes=0
    total: fwd_flops=3328 bwd_flops=6656 fwd_bytes=3944 bwd_bytes=7888 param_bytes=3328 embedding_bytes=0
    ```
  }];
  let options = [
    Option<"batchSize", "batch-size", "int64_t", "256",
           "Samples per batch; dynamic dimensions are bound to it">
  ];
}

def PlaceOpsPass : Pass<"heterps-place-ops", "::mlir::ModuleOp"> {
  let summary = "Places every op on a resource type of the cluster";
  let description = [{
    Builds a placement problem from the function's ops (their cost
    interface, the tensors between them), runs a solver over it and sets the
    `heterps.device` attribute of every op; the module gets the cluster's
    resource types in `heterps.resources`. An op that already carries
    `heterps.device` is pinned there. `report=FILE` writes the JSON report
    (solver, seed, search_seconds, feasible, throughput, cost_usd,
    cost_per_hour, stages). A target that cannot be met is an error that
    names the bottleneck stage and the shortfall.

    The problem's ops are the function's ops with two groupings: a
    parameter load or constant used by one op only goes with that op (its
    bytes count there), and in a training step (`heterps.training`, written
    by `heterps-autodiff`) the backward ops of a layer (`heterps.layer`) go
    with its forward op, which is costed for forward plus backward whatever
    `training=` says. `heterps-provision` groups the same way.

    A plan may cut a run of ops on one type into several pipeline stages
    (when one stage's parameters would not fit a unit, say): the first op of
    each such stage gets the unit attribute `heterps.stage_cut`. Graphs with
    more than `max-search-ops` ops are searched on groups of contiguous ops,
    then each stage boundary is moved op by op.

    Solvers: `rl` (the paper's LSTM policy trained with REINFORCE),
    `exhaustive`, `dp`, `greedy`, `genetic`, `heuristic`, `cpu-only`,
    `gpu-only`; docs/Scheduling.md describes each.

    Before:

    ```mlir
    %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<sum>}
           : (tensor<?x26xi64>) -> tensor<?x16xf32>
    %y = heterps.gemm %e, %w : (tensor<?x16xf32>, tensor<16x256xf32>) -> tensor<?x256xf32>
    ```

    After `--heterps-place-ops="cluster=examples/clusters/aws-c6i-p4d.json
    solver=dp throughput=20000"` (CPUs are the cheapest way to 20,000
    samples/s; with `throughput=2000000` both ops go to `a100-40g`):

    ```mlir
    module attributes {heterps.resources = [#heterps.device<"c6i.4xlarge", cpu>,
                                             #heterps.device<"a100-40g", gpu>]} {
      ...
      %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<sum>,
             heterps.device = #heterps.device<"c6i.4xlarge", cpu>} ...
      %y = heterps.gemm %e, %w {heterps.device = #heterps.device<"c6i.4xlarge", cpu>} ...
    ```
  }];
  let options = !listconcat(CostModelOptions, SolverOptions);
}

def ProvisionPass : Pass<"heterps-provision", "::mlir::ModuleOp"> {
  let summary = "Gives every stage the fewest units that meet the target";
  let description = [{
    Cuts the placed function into stages (maximal runs of consecutive ops on
    one resource type, cut again before every op that carries
    `heterps.stage_cut`), gives each the smallest number of units with which
    it reaches the throughput target (docs/Scheduling.md) and records it on
    every op as `heterps.stage`; the module gets the predicted throughput and
    cost in `heterps.prediction`. It is an error when the target cannot be
    met, naming the bottleneck stage and the shortfall.

    ```mlir
    %y = heterps.gemm %e, %w {heterps.device = #heterps.device<"a100-40g", gpu>}
    // becomes
    %y = heterps.gemm %e, %w {heterps.device = #heterps.device<"a100-40g", gpu>,
                              heterps.stage = #heterps.stage_assignment<index = 1, units = 2>}
    ```
  }];
  let options = CostModelOptions;
}

def OutlineStagesPass : Pass<"heterps-outline-stages", "::mlir::ModuleOp"> {
  let summary = "Moves the ops of each stage into a heterps.stage";
  let description = [{
    Wraps the body of the placed function in a `heterps.pipeline` and the ops
    of every stage (by `heterps.stage`, or else by maximal runs of one
    `heterps.device`) in a `heterps.stage` with its index, resource type and
    units. Values that cross stages become stage results and stage inputs;
    `heterps-insert-pipeline-comm` turns them into channels. Parameter loads
    and constants move to just before their first use first, so that they
    do not split their user's stage.

    In a training step the backward ops of a layer (`heterps.layer`) join
    the stage of its forward op. They come after the later stages' ops, so
    such a stage has a second `heterps.stage` op with the same index: its
    backward part. Values the backward part takes from the forward part
    (the activations a gradient reuses) stay stage results and inputs, not
    channels, since both parts run on the same workers:

    ```mlir
    %1 = heterps.stage 0 on <"cpu", cpu> units 1 ins(%in : tensor<?x8xf32>) {
      ...  // forward
    } -> tensor<?x8xf32>
    heterps.stage 1 on <"gpu", gpu> units 1 { ... }
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%1 : tensor<?x8xf32>) {
      ...  // backward, with the forward part's activation %1
    }
    ```

    ```mlir
    func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
      %a = heterps.relu %x {heterps.device = #heterps.device<"cpu", cpu>} : tensor<?x8xf32>
      %b = heterps.tanh %a {heterps.device = #heterps.device<"gpu", gpu>} : tensor<?x8xf32>
      return %b : tensor<?x8xf32>
    }
    // becomes
    func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
      %0 = heterps.pipeline ins(%x : tensor<?x8xf32>) {
      ^bb0(%in: tensor<?x8xf32>):
        %1 = heterps.stage 0 on <"cpu", cpu> units 1 ins(%in : tensor<?x8xf32>) {
        ^bb0(%x0: tensor<?x8xf32>):
          %a = heterps.relu %x0 : tensor<?x8xf32>
          heterps.yield %a : tensor<?x8xf32>
        } -> tensor<?x8xf32>
        %2 = heterps.stage 1 on <"gpu", gpu> units 1 ins(%1 : tensor<?x8xf32>) {
        ^bb0(%a0: tensor<?x8xf32>):
          %b = heterps.tanh %a0 : tensor<?x8xf32>
          heterps.yield %b : tensor<?x8xf32>
        } -> tensor<?x8xf32>
        heterps.yield %2 : tensor<?x8xf32>
      } -> tensor<?x8xf32>
      return %0 : tensor<?x8xf32>
    }
    ```
  }];
  let options = [FunctionOption, MicroBatchesOption];
}

def InsertPipelineCommPass
    : Pass<"heterps-insert-pipeline-comm", "::mlir::ModuleOp"> {
  let summary = "Turns values between stages into send/recv channels";
  let description = [{
    Every stage result that another stage takes as input becomes a channel:
    a `heterps.send` before the producing stage's yield and a `heterps.recv`
    at the top of each consuming stage, one channel per consumer, numbered
    in order. Afterwards stages take only pipeline inputs and yield only
    pipeline results.

    ```mlir
    %1 = heterps.stage 0 on <"cpu", cpu> units 1 ins(%in : tensor<?x8xf32>) {
    ^bb0(%x0: tensor<?x8xf32>):
      %a = heterps.relu %x0 : tensor<?x8xf32>
      heterps.yield %a : tensor<?x8xf32>
    } -> tensor<?x8xf32>
    %2 = heterps.stage 1 on <"gpu", gpu> units 1 ins(%1 : tensor<?x8xf32>) {
    ^bb0(%a0: tensor<?x8xf32>):
      ...
    // becomes
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%in : tensor<?x8xf32>) {
    ^bb0(%x0: tensor<?x8xf32>):
      %a = heterps.relu %x0 : tensor<?x8xf32>
      heterps.send %a channel 0 : tensor<?x8xf32>
    }
    %2 = heterps.stage 1 on <"gpu", gpu> units 1 {
      %a0 = heterps.recv channel 0 : tensor<?x8xf32>
      ...
    ```
  }];
}

def VerifyPlacementPass : Pass<"heterps-verify-placement", "::mlir::ModuleOp"> {
  let summary = "Checks that a module is completely placed";
  let description = [{
    Fails unless every HeterPS op in a function body is placed: it carries
    `heterps.device` or sits in a `heterps.stage`; and every pipeline has
    only stages whose resource types the module's `heterps.resources` lists.
    With `function=`, only that function is checked (`heterps-schedule`
    checks the one it scheduled). The IR is not changed.
  }];
  let options = [
    Option<"functionName", "function", "std::string", "\"\"",
           "The function to check (default: every function)">
  ];
}


def SchedulePass : Pass<"heterps-schedule", "::mlir::ModuleOp"> {
  let summary = "Places, provisions, outlines stages, inserts channels, verifies";
  let description = [{
    Runs `heterps-place-ops`, `heterps-provision`, `heterps-outline-stages`,
    `heterps-insert-pipeline-comm` and `heterps-verify-placement` in turn,
    with one set of options: those of place-ops (which include provision's)
    and outline-stages' `micro-batches`. What a step reports (an unmet
    target, a missing cluster file) is the step's own error.

    ```
    heterps-opt model.mlir --heterps-autodiff \
      --heterps-schedule="cluster=examples/clusters/aws-c6i-p3-p4d.json solver=dp throughput=20000 micro-batches=4"
    ```

    turns the training step into a `heterps.pipeline` of `heterps.stage` ops
    connected by `heterps.send` / `heterps.recv` channels, as the passes it
    runs describe.
  }];
  let options = !listconcat(CostModelOptions, SolverOptions);
}

def AutodiffPass : Pass<"heterps-autodiff", "::mlir::ModuleOp"> {
  let summary = "Turns a model into a training step: loss, backward, updates";
  let description = [{
    Differentiates the model function and writes the whole training step
    into it, so that the runtime only executes ops:

    - the loss comes from the model (a returned 0-D result of a loss op,
      else its one returned 0-D float result, such as a cross-entropy
      spelled out with log, mul and reduce_mean) or from the options:
      `loss=bce|softmax-ce|mse` applies that loss to the result
      `prediction` against a new input named `label` (marked
      `heterps.label`), and the loss becomes an extra result;
    - the backward ops of every op between the inputs and the loss, in
      reverse order, gradients of values with several uses summed;
    - one `heterps.update_param` per trainable (non-frozen) dense parameter,
      with the optimizer of the options, right after its gradient is
      complete;
    - for every embedding lookup, `heterps.embedding_grad` and a
      `heterps.ps_push` of the rows' gradients: embedding gradients stay
      sparse, and the tables get the `optimizer` that the parameter server
      applies (`sparse-optimizer`, `sparse-learning-rate`; by default the
      dense ones).

    Every differentiated op gets a `heterps.layer` number, and the ops
    built for its backward (its gradients and their sums, the update of a
    parameter it loads, the push of a table it looks up) get the same
    number. The scheduling passes place a layer as one unit, costed for
    forward plus backward, so that a stage owns the forward and the backward
    of its layers. Backward ops also inherit the `heterps.device` and
    `heterps.stage` of the op they differentiate, so the pass runs before or
    after `heterps-place-ops` and `heterps-provision`, with the same result;
    it runs before `heterps-outline-stages`. The function gets
    `heterps.training = #heterps.training<loss = ..., loss_output = ...>`.

    Input:

    ```mlir
    heterps.param @w : tensor<4x1xf32> = #heterps.init<xavier_uniform>
    func.func @main(%x: tensor<?x4xf32>) -> tensor<?x1xf32> {
      %w = heterps.load_param @w : tensor<4x1xf32>
      %z = heterps.matmul %x, %w : (tensor<?x4xf32>, tensor<4x1xf32>) -> tensor<?x1xf32>
      %p = heterps.sigmoid %z : tensor<?x1xf32>
      return %p : tensor<?x1xf32>
    }
    ```

    After `heterps-opt --heterps-autodiff='loss=bce optimizer=sgd learning-rate=0.1'`:

    ```mlir
    func.func @main(%x: tensor<?x4xf32>, %label: tensor<?x1xf32> {heterps.label, heterps.name = "label"})
        -> (tensor<?x1xf32>, tensor<f32>) attributes {heterps.training = #heterps.training<loss = "bce", loss_output = 1>} {
      %w = heterps.load_param @w {heterps.layer = 0 : i64} : tensor<4x1xf32>
      %z = heterps.matmul %x, %w {heterps.layer = 1 : i64} : (tensor<?x4xf32>, tensor<4x1xf32>) -> tensor<?x1xf32>
      %p = heterps.sigmoid %z {heterps.layer = 2 : i64} : tensor<?x1xf32>
      %l = heterps.bce_loss %p, %label {heterps.layer = 3 : i64} : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<f32>
      %one = heterps.constant dense<1.0> : tensor<f32> {heterps.layer = 3 : i64}
      %dp = heterps.loss_grad bce %p, %label, %one {heterps.layer = 3 : i64} : (...) -> tensor<?x1xf32>
      %dz = heterps.unary_grad sigmoid %z, %p, %dp {heterps.layer = 2 : i64} : tensor<?x1xf32>
      %dw = heterps.gemm %x, %dz {heterps.layer = 1 : i64, trans_a = true} : ...
      heterps.update_param sgd @w, %dw {heterps.layer = 0 : i64, learning_rate = 1.000000e-01 : f64} : tensor<4x1xf32>
      return %p, %l : tensor<?x1xf32>, tensor<f32>
    }
    ```
  }];
  let options = [
    FunctionOption,
    Option<"loss", "loss", "::mlir::heterps::AddedLoss",
           "::mlir::heterps::AddedLoss::model",
           "The loss to add to the model's prediction, or the model's own",
           [{::llvm::cl::values(
               clEnumValN(::mlir::heterps::AddedLoss::model, "model",
                          "the model's own loss: its one 0-D float result"),
               clEnumValN(::mlir::heterps::AddedLoss::bce, "bce",
                          "binary cross-entropy (a label like the prediction)"),
               clEnumValN(::mlir::heterps::AddedLoss::softmax_ce, "softmax-ce",
                          "softmax cross-entropy (class index labels)"),
               clEnumValN(::mlir::heterps::AddedLoss::mse, "mse",
                          "mean squared error"))}]>,
    Option<"labelName", "label", "std::string", "\"label\"",
           "Name of the label input that the loss option adds">,
    Option<"prediction", "prediction", "unsigned", "0",
           "The result the added loss applies to">,
    Option<"fromLogits", "from-logits", "bool", "false",
           "bce: the prediction is a logit (the sigmoid is fused)">,
    Option<"optimizer", "optimizer", "::mlir::heterps::OptimizerKind",
           "::mlir::heterps::OptimizerKind::sgd", "Dense optimizer",
           "::mlir::heterps::OptimizerValues()">,
    Option<"learningRate", "learning-rate", "double", "0.01",
           "Learning rate of the dense optimizer">,
    Option<"momentum", "momentum", "double", "0.9",
           "Momentum (optimizer=momentum)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam's beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam's beta2">,
    Option<"epsilon", "epsilon", "double", "1.0e-8",
           "Adam's and Adagrad's epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "L2 weight decay added to dense gradients">,
    Option<"sparseOptimizer", "sparse-optimizer",
           "::mlir::heterps::TableOptimizer",
           "::mlir::heterps::TableOptimizer::dense",
           "Optimizer of the embedding tables",
           "::mlir::heterps::TableOptimizerValues()">,
    Option<"sparseLearningRate", "sparse-learning-rate", "double", "-1.0",
           "Learning rate of the tables (default: the dense one)">
  ];
}

def EmitPlanPass : Pass<"heterps-emit-plan", "::mlir::ModuleOp"> {
  let summary = "Writes the plan file that heterps-run executes";
  let description = [{
    Serialises the module into a plan file (proto/heterps/plan.proto, see
    docs/Runtime.md): its dense parameters and embedding tables, the values
    and ops of the function, grouped into the stages of its
    `heterps.pipeline` (or one CPU stage when the function is not staged),
    the channels between stages, the training settings written by
    `heterps-autodiff` and the prediction of `heterps-provision`. The IR is
    not changed.

    ```
    heterps-opt model.onnx --heterps-autodiff='loss=bce' \
        --heterps-emit-plan='file=model.plan'
    ```

    An op the runtime has no kernel for is still written; heterps-run
    reports it with the op's location when it loads the plan.
  }];
  let options = [
    Option<"file", "file", "std::string", "\"\"", "The plan file to write">,
    FunctionOption,
    Option<"batchSize", "batch", "int64_t", "256",
           "The default batch size recorded in the plan (default: the "
           "batch heterps-provision scheduled for, else 256)">
  ];
}

def ViewPlanPass : Pass<"heterps-view-plan", "::mlir::ModuleOp"> {
  let summary = "Writes the plan as a Graphviz graph";
  let description = [{
    Builds the plan `heterps-emit-plan` would write and writes it in
    Graphviz's DOT language: a box per stage with its resource type, kind,
    units, op count and the throughput `heterps-provision` predicts for it,
    each op filled with its resource type's colour
    (blues for CPU types, greens for GPU types), edges along the values
    inside a stage, one bold edge per channel from its `heterps.send` to its
    `heterps.recv` labelled with the bytes per sample it carries, and the
    prediction of `heterps-provision` in the title. The IR is not changed.

    ```
    heterps-opt model.onnx --heterps-autodiff='loss=bce' \
        --heterps-schedule='cluster=cluster.json throughput=100000' \
        --heterps-view-plan='file=plan.dot'
    scripts/render-plan.sh plan.dot     # plan.svg, with Graphviz
    ```

    ```dot
    subgraph cluster_stage0 {
      label="stage 0: c6i.4xlarge (cpu) x2, 5 ops\npredicted 130912 samples/s";
      s0_0 [label="embedding_lookup\nslot0", fillcolor="#c6dbef"];
      ...
    s0_4 -> s1_0 [label="64 B/sample", style=bold, color="#555555"];
    ```

    `heterps-run PLAN --print-plan=dot` writes the same graph from a plan
    file.
  }];
  let options = [
    Option<"file", "file", "std::string", "\"\"",
           "The DOT file to write ('-': standard output)">,
    FunctionOption,
    Option<"batchSize", "batch", "int64_t", "256",
           "The batch size the plan records (default: the batch "
           "heterps-provision scheduled for, else 256)">
  ];
}

#endif // HETERPS_TRANSFORMS_PASSES_TD
