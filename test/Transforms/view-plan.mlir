// The plan as a Graphviz graph: a box per stage, ops filled with their
// resource type's colour, channels labelled with bytes per sample; the same
// graph from heterps-run --print-plan=dot.
// RUN: heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-autodiff --heterps-schedule="cluster=%heterps_src_root/examples/clusters/aws-c6i-p3-p4d.json throughput=100000 batch=512" --heterps-view-plan=file=%t.dot --heterps-emit-plan=file=%t.plan -o /dev/null
// RUN: FileCheck %s < %t.dot
// RUN: heterps-run %t.plan --print-plan=dot | diff - %t.dot
// RUN: not heterps-run %t.plan --print-plan=svg 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not heterps-opt %S/Inputs/ctr-mlp.mlir --heterps-view-plan 2>&1 | FileCheck %s --check-prefix=NOFILE

// CHECK-LABEL: digraph plan {
// CHECK: label="@{{[a-z_]+}}: {{[0-9]+}} stages{{.*}}\npredicted {{[0-9]+}} samples/s, ${{[0-9.]+}} per hour
// CHECK: subgraph cluster_stage0 {
// CHECK-NEXT: label="stage 0: [[CPU:[a-z0-9.]+]] (cpu) x{{[0-9]+}}, {{[0-9]+}} ops\npredicted {{[0-9]+}} samples/s";
// CHECK: [label="embedding_lookup{{.*}}", fillcolor="#c6dbef"];
// CHECK: label="stage {{[0-9]+}}: {{.*}} (gpu) x{{[0-9]+}}
// CHECK: [label="gemm{{.*}}", fillcolor="#c7e9c0"];
// CHECK: s0_{{[0-9]+}} -> s{{[1-9]}}_{{[0-9]+}} [label="{{[0-9]+}} B/sample", style=bold
// CHECK: }

// BAD: heterps-run: --print-plan takes text or dot, got 'svg'
// NOFILE: heterps-view-plan: give the DOT file to write, file=PATH
