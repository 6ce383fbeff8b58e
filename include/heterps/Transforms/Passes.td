//===- Passes.td - HeterPS passes --------------------------*- tablegen -*-===//

#ifndef HETERPS_TRANSFORMS_PASSES_TD
#define HETERPS_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintOpCostPass : Pass<"heterps-print-op-cost"> {
  let summary = "Prints the work each op reports to the cost model";
  let description = [{
    Walks the ops that implement the cost interface and prints, for a batch
    of `batch-size` samples (dynamic dimensions are bound to it), the forward
    and backward FLOPs, the bytes moved forward and backward, the dense
    parameter bytes read and the embedding bytes pulled from the parameter
    server, then the totals. The IR is not changed.

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

#endif // HETERPS_TRANSFORMS_PASSES_TD
