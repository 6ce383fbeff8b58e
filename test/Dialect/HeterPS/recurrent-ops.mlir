// Round trip of the recurrent layers and their gradients, with and without
// their optional operands: parse, print, parse again, in the custom and in
// the generic form.
// RUN: heterps-opt %s | heterps-opt | FileCheck %s
// RUN: heterps-opt %s --mlir-print-op-generic | heterps-opt | FileCheck %s

// CHECK-LABEL: func.func @rnn
// CHECK-SAME: (%[[X:.*]]: tensor<5x?x4xf32>, %[[W:.*]]: tensor<1x8x4xf32>, %[[R:.*]]: tensor<1x8x8xf32>, %[[B:.*]]: tensor<1x16xf32>)
func.func @rnn(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>)
    -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>) {
  // CHECK: %[[Y:.*]], %[[YH:.*]] = heterps.rnn %[[X]], %[[W]], %[[R]], %[[B]] {activation = "relu", hidden_size = 8 : i64} : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>) -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  %y, %yh = heterps.rnn %x, %w, %r, %b {hidden_size = 8 : i64, activation = "relu"}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  // CHECK: return %[[Y]], %[[YH]]
  return %y, %yh : tensor<5x1x?x8xf32>, tensor<1x?x8xf32>
}

// CHECK-LABEL: func.func @gru
// CHECK-SAME: (%[[X:.*]]: tensor<20x?x8xf32>, %[[W:.*]]: tensor<2x48x8xf32>, %[[R:.*]]: tensor<2x48x16xf32>, %[[B:.*]]: tensor<2x96xf32>, %[[L:.*]]: tensor<?xi32>, %[[H0:.*]]: tensor<2x?x16xf32>)
func.func @gru(%x: tensor<20x?x8xf32>, %w: tensor<2x48x8xf32>, %r: tensor<2x48x16xf32>,
               %b: tensor<2x96xf32>, %len: tensor<?xi32>, %h0: tensor<2x?x16xf32>)
    -> tensor<2x?x16xf32> {
  // CHECK: %[[Y:.*]], %[[YH:.*]] = heterps.gru %[[X]], %[[W]], %[[R]], %[[B]] lengths(%[[L]]) initial_h(%[[H0]]) {direction = "bidirectional", hidden_size = 16 : i64, linear_before_reset = true}
  %y, %yh = heterps.gru %x, %w, %r, %b lengths(%len) initial_h(%h0)
        {hidden_size = 16 : i64, direction = "bidirectional", linear_before_reset = true}
      : (tensor<20x?x8xf32>, tensor<2x48x8xf32>, tensor<2x48x16xf32>, tensor<2x96xf32>,
         tensor<?xi32>, tensor<2x?x16xf32>)
      -> (tensor<20x2x?x16xf32>, tensor<2x?x16xf32>)
  // CHECK: %{{.*}} = heterps.gru_grad %[[X]], %[[W]], %[[R]], %[[B]] lengths(%[[L]]) initial_h(%[[H0]]) y_h_grad(%[[YH]])
  %dx, %dw, %dr, %db, %dh0 = heterps.gru_grad %x, %w, %r, %b lengths(%len) initial_h(%h0) y_h_grad(%yh)
        {hidden_size = 16 : i64, direction = "bidirectional", linear_before_reset = true}
      : (tensor<20x?x8xf32>, tensor<2x48x8xf32>, tensor<2x48x16xf32>, tensor<2x96xf32>,
         tensor<?xi32>, tensor<2x?x16xf32>, tensor<2x?x16xf32>)
      -> (tensor<20x?x8xf32>, tensor<2x48x8xf32>, tensor<2x48x16xf32>, tensor<2x96xf32>,
          tensor<2x?x16xf32>)
  return %dh0 : tensor<2x?x16xf32>
}

// CHECK-LABEL: func.func @lstm
// CHECK-SAME: (%[[X:.*]]: tensor<3x?x2xf32>, %[[W:.*]]: tensor<1x12x2xf32>, %[[R:.*]]: tensor<1x12x3xf32>, %[[B:.*]]: tensor<1x24xf32>, %[[H0:.*]]: tensor<1x?x3xf32>, %[[C0:.*]]: tensor<1x?x3xf32>, %[[P:.*]]: tensor<1x9xf32>)
func.func @lstm(%x: tensor<3x?x2xf32>, %w: tensor<1x12x2xf32>, %r: tensor<1x12x3xf32>,
                %b: tensor<1x24xf32>, %h0: tensor<1x?x3xf32>, %c0: tensor<1x?x3xf32>,
                %p: tensor<1x9xf32>) -> tensor<1x9xf32> {
  // CHECK: %[[Y:.*]], %{{.*}}, %[[YC:.*]] = heterps.lstm %[[X]], %[[W]], %[[R]], %[[B]] initial_h(%[[H0]]) initial_c(%[[C0]]) peepholes(%[[P]]) {direction = "reverse", hidden_size = 3 : i64}
  %y, %yh, %yc = heterps.lstm %x, %w, %r, %b initial_h(%h0) initial_c(%c0) peepholes(%p)
        {hidden_size = 3 : i64, direction = "reverse"}
      : (tensor<3x?x2xf32>, tensor<1x12x2xf32>, tensor<1x12x3xf32>, tensor<1x24xf32>,
         tensor<1x?x3xf32>, tensor<1x?x3xf32>, tensor<1x9xf32>)
      -> (tensor<3x1x?x3xf32>, tensor<1x?x3xf32>, tensor<1x?x3xf32>)
  // CHECK: %{{.*}}, %[[DP:.*]] = heterps.lstm_grad %[[X]], %[[W]], %[[R]], %[[B]] initial_h(%[[H0]]) initial_c(%[[C0]]) peepholes(%[[P]]) y_grad(%[[Y]]) y_c_grad(%[[YC]])
  %g:7 = heterps.lstm_grad %x, %w, %r, %b initial_h(%h0) initial_c(%c0) peepholes(%p) y_grad(%y) y_c_grad(%yc)
        {hidden_size = 3 : i64, direction = "reverse"}
      : (tensor<3x?x2xf32>, tensor<1x12x2xf32>, tensor<1x12x3xf32>, tensor<1x24xf32>,
         tensor<1x?x3xf32>, tensor<1x?x3xf32>, tensor<1x9xf32>, tensor<3x1x?x3xf32>,
         tensor<1x?x3xf32>)
      -> (tensor<3x?x2xf32>, tensor<1x12x2xf32>, tensor<1x12x3xf32>, tensor<1x24xf32>,
          tensor<1x?x3xf32>, tensor<1x?x3xf32>, tensor<1x9xf32>)
  // CHECK: return %[[DP]]
  return %g#6 : tensor<1x9xf32>
}
