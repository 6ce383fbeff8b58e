// Dynamic dimensions that hold the batch merged with other dimensions are
// costed as that many rows: at a batch of 2 samples, multi-head attention's
// [T, B, E] -> [T, B*H, E/H] (two heads) works on 4 rows, and the reshape
// back to [T, B, E] on 2 again.
// RUN: heterps-opt %s --heterps-print-op-cost=batch-size=2 2>&1 >/dev/null | FileCheck %s

// CHECK: op cost for batch size 2
func.func @heads(%q: tensor<6x?x16xf32>, %other: tensor<?x8x6xf32>) -> tensor<6x?x16xf32> {
  // CHECK-NEXT: heterps.reshape @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): rows=4 fwd_flops=0
  %h = heterps.reshape %q : (tensor<6x?x16xf32>) -> tensor<6x?x8xf32>
  // 4 x 48 elements.
  // CHECK-NEXT: heterps.transpose @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): rows=4 fwd_flops=192
  %t = heterps.transpose %h {perm = array<i64: 1, 0, 2>} : (tensor<6x?x8xf32>) -> tensor<?x6x8xf32>
  // CHECK-NEXT: heterps.transpose @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): rows=4 fwd_flops=192
  %k = heterps.transpose %h {perm = array<i64: 1, 2, 0>} : (tensor<6x?x8xf32>) -> tensor<?x8x6xf32>
  // 4 rows x 36 outputs x 8-term sums, 2 FLOPs each.
  // CHECK-NEXT: heterps.matmul @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): rows=4 fwd_flops=2304
  %s = heterps.matmul %t, %k : (tensor<?x6x8xf32>, tensor<?x8x6xf32>) -> tensor<?x6x6xf32>
  // An argument's dynamic dimension is the batch, which %t's (the batch
  // times 2) does not agree with: the rows are not known, and the batch
  // stands for them.
  // CHECK-NEXT: heterps.matmul @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=1152
  %u = heterps.matmul %t, %other : (tensor<?x6x8xf32>, tensor<?x8x6xf32>) -> tensor<?x6x6xf32>
  %c = heterps.matmul %s, %t : (tensor<?x6x6xf32>, tensor<?x6x8xf32>) -> tensor<?x6x8xf32>
  %ct = heterps.transpose %c {perm = array<i64: 1, 0, 2>} : (tensor<?x6x8xf32>) -> tensor<6x?x8xf32>
  // CHECK: heterps.reshape @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=0
  %m = heterps.reshape %ct : (tensor<6x?x8xf32>) -> tensor<6x?x16xf32>
  // 2 x 96 elements.
  // CHECK-NEXT: heterps.relu @ loc({{.*}}:[[# @LINE + 1]]:{{.*}}): fwd_flops=192
  %r = heterps.relu %m : tensor<6x?x16xf32>
  return %r : tensor<6x?x16xf32>
}
