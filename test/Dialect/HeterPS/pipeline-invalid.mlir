// Every verifier message of pipelines, stages, yields and channels.
// RUN: heterps-opt %s -split-input-file -verify-diagnostics

func.func @arguments(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{body has 0 arguments but the op has 1 inputs}}
  heterps.pipeline ins(%x : tensor<?x4xf32>) {
    heterps.stage 0 on <"cpu", cpu> units 1 {
    }
  }
  return
}

// -----

func.func @argument_type(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{body argument 0 has type 'tensor<?x5xf32>' but input 0 is 'tensor<?x4xf32>'}}
  heterps.pipeline ins(%x : tensor<?x4xf32>) {
  ^bb0(%a: tensor<?x5xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 {
    }
  }
  return
}

// -----

func.func @micro_batches() {
  // expected-error @+1 {{needs at least one micro-batch, got 0}}
  heterps.pipeline attributes {micro_batches = 0 : i64} {
    heterps.stage 0 on <"cpu", cpu> units 1 {
    }
  }
  return
}

// -----

func.func @not_a_stage(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{cannot appear in a heterps.pipeline, which holds only heterps.stage ops}}
    %y = heterps.relu %a : tensor<4xf32>
  }
  return
}

// -----

func.func @stage_order() {
  heterps.pipeline {
    heterps.stage 0 on <"cpu", cpu> units 1 {
    }
    // expected-error @+1 {{has index 2 after stages 0..0; stages are numbered 0, 1, ... in order of their first part}}
    heterps.stage 2 on <"cpu", cpu> units 1 {
    }
  }
  return
}

// -----

func.func @part_elsewhere() {
  heterps.pipeline {
    heterps.stage 0 on <"cpu", cpu> units 2 {
    }
    heterps.stage 1 on <"gpu", gpu> units 1 {
    }
    // expected-error @+1 {{is a part of stage 0, which runs on #heterps.device<"cpu", cpu> with 2 units; this part has #heterps.device<"gpu", gpu> and 2}}
    heterps.stage 0 on <"gpu", gpu> units 2 {
    }
  }
  return
}

// -----

func.func @channel_within_stage(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      heterps.send %b channel 0 : tensor<4xf32>
    }
    heterps.stage 1 on <"cpu", cpu> units 1 {
    }
    heterps.stage 0 on <"cpu", cpu> units 1 {
      // expected-error @+1 {{receives from channel 0 in stage 0, the stage that sends on it}}
      %c = heterps.recv channel 0 : tensor<4xf32>
    }
  }
  return
}

// -----

func.func @no_stage() {
  // expected-error @+1 {{needs at least one heterps.stage}}
  heterps.pipeline {
  }
  return
}

// -----

func.func @two_senders(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      heterps.send %b channel 0 : tensor<4xf32>
      // expected-error @+1 {{reuses channel 0, which already has a sender in stage 0}}
      heterps.send %b channel 0 : tensor<4xf32>
    }
    heterps.stage 1 on <"gpu", gpu> units 1 {
      %c = heterps.recv channel 0 : tensor<4xf32>
    }
  }
  return
}

// -----

func.func @two_receivers(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      heterps.send %b channel 0 : tensor<4xf32>
    }
    heterps.stage 1 on <"gpu", gpu> units 1 {
      %c = heterps.recv channel 0 : tensor<4xf32>
    }
    heterps.stage 2 on <"gpu", gpu> units 1 {
      // expected-error @+1 {{reuses channel 0, which already has a receiver in stage 1}}
      %c = heterps.recv channel 0 : tensor<4xf32>
    }
  }
  return
}

// -----

func.func @no_receiver(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      // expected-error @+1 {{sends on channel 3, which no stage receives from}}
      heterps.send %b channel 3 : tensor<4xf32>
    }
  }
  return
}

// -----

func.func @no_sender() {
  heterps.pipeline {
    heterps.stage 0 on <"cpu", cpu> units 1 {
      // expected-error @+1 {{receives from channel 1, which no stage sends on}}
      %c = heterps.recv channel 1 : tensor<4xf32>
    }
  }
  return
}

// -----

func.func @same_stage(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      heterps.send %b channel 0 : tensor<4xf32>
      // expected-error @+1 {{receives from channel 0 in stage 0, the stage that sends on it}}
      %c = heterps.recv channel 0 : tensor<4xf32>
    }
  }
  return
}

// -----

func.func @channel_types(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      heterps.send %b channel 0 : tensor<4xf32>
    }
    heterps.stage 1 on <"gpu", gpu> units 1 {
      // expected-error @+1 {{receives 'tensor<8xf32>' from channel 0, which sends 'tensor<4xf32>'}}
      %c = heterps.recv channel 0 : tensor<8xf32>
    }
  }
  return
}

// -----

func.func @units() {
  heterps.pipeline {
    // expected-error @+1 {{needs at least one unit, got 0}}
    heterps.stage 0 on <"cpu", cpu> units 0 {
    }
  }
  return
}

// -----

module attributes {heterps.resources = [#heterps.device<"c6i", cpu>]} {
  func.func @stage_device() {
    heterps.pipeline {
      // expected-error @+1 {{is placed on "a100", which is not a resource type of the cluster (known: c6i)}}
      heterps.stage 0 on <"a100", gpu> units 1 {
      }
    }
    return
  }
}

// -----

func.func @stage_arguments(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{body has 0 arguments but the op has 1 inputs}}
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    }
  }
  return
}

// -----

func.func @nested_device(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      // expected-error @+1 {{is placed on "gpu" inside stage 0 on "cpu"}}
      %c = heterps.relu %b {heterps.device = #heterps.device<"gpu", gpu>} : tensor<4xf32>
    }
  }
  return
}

// -----

func.func @yield_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 {
    }
    // expected-error @+1 {{yields 2 values but the enclosing heterps.pipeline has 1 results}}
    heterps.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @yield_type(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %s = heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      // expected-error @+1 {{yields 'tensor<4xf32>' as value 0 but result 0 of the enclosing heterps.stage is 'tensor<8xf32>'}}
      heterps.yield %b : tensor<4xf32>
    } -> tensor<8xf32>
  }
  return
}

// -----

func.func @send_channel(%x: tensor<4xf32>) {
  heterps.pipeline ins(%x : tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    heterps.stage 0 on <"cpu", cpu> units 1 ins(%a : tensor<4xf32>) {
    ^bb0(%b: tensor<4xf32>):
      // expected-error @+1 {{channel must be non-negative, got -1}}
      heterps.send %b channel -1 : tensor<4xf32>
    }
  }
  return
}

// -----

func.func @recv_channel() {
  heterps.pipeline {
    heterps.stage 0 on <"cpu", cpu> units 1 {
      // expected-error @+1 {{channel must be non-negative, got -2}}
      %c = heterps.recv channel -2 : tensor<4xf32>
    }
  }
  return
}

// -----

func.func @stage_outside_pipeline() {
  // expected-error @+1 {{expects parent op 'heterps.pipeline'}}
  heterps.stage 0 on <"cpu", cpu> units 1 {
  }
  return
}

// -----

func.func @send_outside_stage(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects parent op 'heterps.stage'}}
  heterps.send %x channel 0 : tensor<4xf32>
  return
}
