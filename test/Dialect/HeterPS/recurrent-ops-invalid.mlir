// Every verifier message of the recurrent layers and their gradients.
// RUN: heterps-opt %s -split-input-file -verify-diagnostics

func.func @direction(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+1 {{'heterps.rnn' op direction 'backward' is not forward, reverse or bidirectional}}
  %y, %yh = heterps.rnn %x, %w, %r, %b {hidden_size = 8 : i64, direction = "backward"}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @activation(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+1 {{'heterps.rnn' op activation 'sigmoid' is not tanh or relu}}
  %y, %yh = heterps.rnn %x, %w, %r, %b {hidden_size = 8 : i64, activation = "sigmoid"}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @hidden(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+1 {{'heterps.rnn' op hidden_size must be positive, got 0}}
  %y, %yh = heterps.rnn %x, %w, %r, %b {hidden_size = 0 : i64}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @input_rank(%x: tensor<?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+1 {{'heterps.rnn' op input must be T x B x I, got 'tensor<?x4xf32>'}}
  %y, %yh = heterps.rnn %x, %w, %r, %b {hidden_size = 8 : i64}
      : (tensor<?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @gates(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>) {
  // A GRU stacks three gates: 24 rows of weights for 8 units.
  // expected-error @+1 {{'heterps.gru' op weights has type 'tensor<1x8x4xf32>', expected 'tensor<1x24x4xf32>'}}
  %y, %yh = heterps.gru %x, %w, %r, %b {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @directions(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+1 {{'heterps.rnn' op weights has type 'tensor<1x8x4xf32>', expected 'tensor<2x8x4xf32>'}}
  %y, %yh = heterps.rnn %x, %w, %r, %b {hidden_size = 8 : i64, direction = "bidirectional"}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>)
      -> (tensor<5x2x?x8xf32>, tensor<2x?x8xf32>)
  return
}

// -----

func.func @bias(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{'heterps.rnn' op bias has type 'tensor<1x8xf32>', expected 'tensor<1x16xf32>'}}
  %y, %yh = heterps.rnn %x, %w, %r, %b {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x8xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @lengths(%x: tensor<5x3x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>, %l: tensor<4xi32>) {
  // expected-error @+1 {{'heterps.rnn' op the batch is 4 here but 3 elsewhere}}
  %y, %yh = heterps.rnn %x, %w, %r, %b lengths(%l) {hidden_size = 8 : i64}
      : (tensor<5x3x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>, tensor<4xi32>)
      -> (tensor<5x1x3x8xf32>, tensor<1x3x8xf32>)
  return
}

// -----

func.func @initial_state(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>, %h0: tensor<1x?x4xf32>) {
  // expected-error @+1 {{'heterps.rnn' op initial state has type 'tensor<1x?x4xf32>', expected 'tensor<1x?x8xf32>'}}
  %y, %yh = heterps.rnn %x, %w, %r, %b initial_h(%h0) {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>, tensor<1x?x4xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @result(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+1 {{'heterps.rnn' op result y has type 'tensor<5x?x8xf32>', expected 'tensor<5x1x?x8xf32>'}}
  %y, %yh = heterps.rnn %x, %w, %r, %b {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>)
      -> (tensor<5x?x8xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @peepholes(%x: tensor<5x?x4xf32>, %w: tensor<1x32x4xf32>, %r: tensor<1x32x8xf32>, %b: tensor<1x64xf32>, %p: tensor<1x32xf32>) {
  // expected-error @+1 {{'heterps.lstm' op peepholes has type 'tensor<1x32xf32>', expected 'tensor<1x24xf32>'}}
  %y, %yh, %yc = heterps.lstm %x, %w, %r, %b peepholes(%p) {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x32x4xf32>, tensor<1x32x8xf32>, tensor<1x64xf32>, tensor<1x32xf32>)
      -> (tensor<5x1x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @grad_result(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>, %dyh: tensor<1x?x8xf32>) {
  // expected-error @+1 {{'heterps.rnn_grad' op weights_grad has type 'tensor<1x8x8xf32>', expected 'tensor<1x8x4xf32>'}}
  %g:5 = heterps.rnn_grad %x, %w, %r, %b y_h_grad(%dyh) {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>, tensor<1x?x8xf32>)
      -> (tensor<5x?x4xf32>, tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @grad_seq(%x: tensor<5x?x4xf32>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x8xf32>, %b: tensor<1x16xf32>, %dy: tensor<4x1x?x8xf32>) {
  // expected-error @+1 {{'heterps.rnn_grad' op y_grad has type 'tensor<4x1x?x8xf32>', expected 'tensor<5x1x?x8xf32>'}}
  %g:5 = heterps.rnn_grad %x, %w, %r, %b y_grad(%dy) {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>, tensor<4x1x?x8xf32>)
      -> (tensor<5x?x4xf32>, tensor<1x8x4xf32>, tensor<1x8x8xf32>, tensor<1x16xf32>, tensor<1x?x8xf32>)
  return
}

// -----

func.func @lstm_grad_peepholes(%x: tensor<5x?x4xf32>, %w: tensor<1x32x4xf32>, %r: tensor<1x32x8xf32>, %b: tensor<1x64xf32>, %dyh: tensor<1x?x8xf32>) {
  // expected-error @+1 {{'heterps.lstm_grad' op peepholes_grad has type 'tensor<1x8xf32>', expected 'tensor<1x24xf32>'}}
  %g:7 = heterps.lstm_grad %x, %w, %r, %b y_h_grad(%dyh) {hidden_size = 8 : i64}
      : (tensor<5x?x4xf32>, tensor<1x32x4xf32>, tensor<1x32x8xf32>, tensor<1x64xf32>, tensor<1x?x8xf32>)
      -> (tensor<5x?x4xf32>, tensor<1x32x4xf32>, tensor<1x32x8xf32>, tensor<1x64xf32>, tensor<1x?x8xf32>,
          tensor<1x?x8xf32>, tensor<1x8xf32>)
  return
}
