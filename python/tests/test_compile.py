"""heterps.compile and heterps.Plan."""

import re
import subprocess

import onnx
import pytest

import heterps
from conftest import CLUSTER, ONNX_INPUTS, ROOT

CTR = ONNX_INPUTS / "torch-ctr.onnx"


def test_scheduled_plan_has_stages_and_prediction():
    plan = heterps.compile(CTR, loss="bce", optimizer="adagrad",
                           cluster=CLUSTER, throughput=200_000, solver="dp",
                           batch=512, micro_batches=4)
    assert plan.training["loss"] == "bce"
    assert plan.training["optimizer"] == "adagrad"
    assert plan.batch_size == 512
    assert len(plan.stages) >= 1
    assert all(s.units >= 1 and s.ops for s in plan.stages)
    assert {s.kind for s in plan.stages} <= {"cpu", "gpu"}
    assert plan.predicted is not None
    assert plan.predicted.throughput >= 200_000
    assert plan.predicted.cost_per_hour > 0
    # The slowest stage sets the plan's throughput.
    rates = [s.predicted_throughput for s in plan.stages]
    assert min(rates) == pytest.approx(plan.predicted.throughput, rel=1e-9)
    assert "samples/s" in repr(plan)
    names = [(i.name, i.dtype, i.label) for i in plan.inputs]
    assert names == [("dense", "float32", False), ("sparse", "int64", False),
                     ("label", "float32", True)]
    assert plan.inputs[0].shape == (-1, 13)
    assert [t["vocab"] for t in plan.tables] == [100] * 8
    assert "stage 0" in repr(plan)


def test_path_bytes_and_model_proto_compile_alike():
    by_path = heterps.compile(CTR, loss="bce")
    by_bytes = heterps.compile(CTR.read_bytes(), loss="bce")
    by_proto = heterps.compile(onnx.load(str(CTR)), loss="bce")
    for other in (by_bytes, by_proto):
        assert other.inputs == by_path.inputs
        assert other.outputs == by_path.outputs
        assert ([len(s.ops) for s in other.stages] ==
                [len(s.ops) for s in by_path.stages])


def test_plan_records_the_version():
    plan = heterps.compile(CTR, optimizer=None)
    assert re.fullmatch(r"\d+\.\d+\.\d+", heterps.__version__)
    assert plan.producer == f"HeterPS {heterps.__version__}"


def test_inference_plan_has_no_training():
    plan = heterps.compile(CTR, optimizer=None)
    assert plan.training is None
    assert plan.predicted is None
    assert plan.stages[0].predicted_throughput is None
    assert [i.name for i in plan.inputs] == ["dense", "sparse"]
    assert [o.name for o in plan.outputs] == ["output"]


def test_ir_input_compiles(tmp_path):
    plan = heterps.compile(ROOT / "examples" / "ctr.mlir",
                           optimizer="sgd", learning_rate=0.1)
    assert plan.training["optimizer"] == "sgd"
    assert [t["name"] for t in plan.tables] == ["slot0", "slot1", "slot2",
                                                "slot3"]


def test_save_load_and_dot_match_heterps_run(tmp_path, ctr_plan, heterps_run):
    path = tmp_path / "ctr.plan"
    ctr_plan.save(path)
    loaded = heterps.Plan.load(path)
    assert loaded.to_bytes() == ctr_plan.to_bytes()
    assert heterps.Plan.from_bytes(path.read_bytes()).to_bytes() == \
        ctr_plan.to_bytes()
    dot = subprocess.run([heterps_run, str(path), "--print-plan=dot"],
                         check=True, capture_output=True, text=True).stdout
    assert dot == ctr_plan.to_dot()
    assert dot.startswith("digraph")


def test_missing_file_is_a_compile_error(tmp_path):
    with pytest.raises(heterps.CompileError) as info:
        heterps.compile(tmp_path / "missing.onnx")
    assert "missing.onnx" in str(info.value)
    assert info.value.diagnostics


def test_bytes_that_are_not_onnx():
    with pytest.raises(heterps.CompileError, match="not an ONNX model"):
        heterps.compile(b"\x00\x01garbage")


def test_unknown_pass_option_names_the_option():
    with pytest.raises(heterps.CompileError, match="optimiser"):
        heterps.compile(CTR, loss="bce",
                        autodiff_options={"optimiser": "adam"})
    # A bad value is named with what LLVM's option parser says of it (which
    # it writes to stderr).
    with pytest.raises(heterps.CompileError,
                       match="for the --sparse-optimizer option: Cannot find "
                             "option named 'rmsprop'"):
        heterps.compile(CTR, loss="bce",
                        autodiff_options={"sparse-optimizer": "rmsprop"})


def test_schedule_error_is_raised_with_its_diagnostics(tmp_path):
    cluster = tmp_path / "cluster.json"
    cluster.write_text('{"resources": [{"name": "cpu", "kind": "tpu"}]}')
    with pytest.raises(heterps.CompileError) as info:
        heterps.compile(CTR, loss="bce", cluster=cluster, throughput=1000)
    assert "cluster.json" in str(info.value)


def test_argument_mistakes_are_refused_before_compiling():
    with pytest.raises(ValueError, match="unknown loss"):
        heterps.compile(CTR, loss="hinge")
    with pytest.raises(ValueError, match="throughput"):
        heterps.compile(CTR, loss="bce", cluster=CLUSTER)
    with pytest.raises(ValueError, match="cluster"):
        heterps.compile(CTR, loss="bce", throughput=1000)
    with pytest.raises(ValueError, match="optimizer"):
        heterps.compile(CTR, loss="bce", optimizer=None)
    with pytest.raises(ValueError, match="batch"):
        heterps.compile(CTR, batch=0)
    with pytest.raises(TypeError, match="batch must be an int"):
        heterps.compile(CTR, batch=True)
    with pytest.raises(TypeError, match="learning_rate must be a number"):
        heterps.compile(CTR, loss="bce", learning_rate="0.1")
    with pytest.raises(TypeError, match="model"):
        heterps.compile(42)
    with pytest.raises(ValueError, match="empty bytes"):
        heterps.compile(b"")
    # Scheduling arguments without a cluster would be ignored.
    with pytest.raises(ValueError, match="solver, micro_batches need a "
                       "cluster file"):
        heterps.compile(CTR, loss="bce", solver="dp", micro_batches=4)
    with pytest.raises(ValueError, match="seed needs a cluster file"):
        heterps.compile(CTR, loss="bce", seed=3)
    # A pass option that a keyword argument also sets: one would win.
    with pytest.raises(ValueError, match="schedule_options sets 'solver', "
                       "which compile's solver= argument sets"):
        heterps.compile(CTR, loss="bce", cluster=CLUSTER, throughput=1000,
                        schedule_options={"solver": "dp"})
    with pytest.raises(ValueError, match="autodiff_options sets "
                       "'learning-rate'"):
        heterps.compile(CTR, loss="bce",
                        autodiff_options={"learning-rate": 0.5})


def test_argument_values_and_types_are_named():
    # Found in Python, named, rather than in the pass pipeline's text (or as
    # pybind11's signature list).
    scheduled = dict(loss="bce", cluster=CLUSTER, throughput=1000)
    for kwargs, error, match in (
            (dict(batch=2**70), ValueError, r"batch must be in \[1, "),
            (dict(optimizer="rmsprop"), ValueError, "unknown optimizer "
             "'rmsprop'"),
            (dict(scheduled, solver="magic"), ValueError,
             "unknown solver 'magic'"),
            (dict(scheduled, seed=-1), ValueError, "seed must be an unsigned"),
            (dict(scheduled, micro_batches=True), TypeError,
             "micro_batches must be an int"),
            (dict(loss="bce", cluster=CLUSTER, throughput="1000"), TypeError,
             "throughput must be a number"),
            (dict(loss="bce", cluster=CLUSTER, throughput=float("inf")),
             ValueError, "throughput must be a positive finite number"),
            (dict(scheduled, micro_batches=1000, batch=512), ValueError,
             r"micro_batches must be in \[1, 512\]"),
            (dict(loss="bce", label=5), TypeError, "label must be a "
             "string, got int"),
            (dict(loss="bce", label=""), ValueError, "label is an empty name"),
            (dict(function=3), TypeError, "function must be a string"),
            (dict(scheduled, cluster=5), TypeError, "cluster must be a path"),
            (dict(loss="bce", autodiff_options={"": 1}), ValueError,
             "is not an option name"),
            (dict(loss="bce", autodiff_options={"weight-decay": ""}),
             ValueError, "option 'weight-decay' has no value"),
            (dict(loss="bce", autodiff_options=["weight-decay"]), TypeError,
             "autodiff_options must be a dict"),
            (dict(loss="bce", autodiff_options={"function": "main"}),
             ValueError, "compile's function= argument")):
        with pytest.raises(error, match=match):
            heterps.compile(CTR, **kwargs)
    with pytest.raises(ValueError, match="empty onnx.ModelProto"):
        heterps.compile(onnx.ModelProto())
    with pytest.raises(ValueError, match="empty path"):
        heterps.compile("")
    # NumPy numbers are numbers.
    import numpy as np
    plan = heterps.compile(CTR, loss="bce", batch=np.int64(64),
                           learning_rate=np.float32(0.05))
    assert plan.batch_size == 64


def test_plan_and_server_argument_mistakes():
    with pytest.raises(TypeError, match="Plan.load"):
        heterps.Plan("dlrm.plan")
    with pytest.raises(TypeError, match="from_bytes takes bytes"):
        heterps.Plan.from_bytes(5)
    with pytest.raises(TypeError, match="port must be an int"):
        heterps.serve(port=True)
    with pytest.raises(ValueError, match=r"port must be in \[0, 65535\]"):
        heterps.serve(port=70000)
    with pytest.raises(ValueError, match="need checkpoint_dir"):
        heterps.serve(keep_checkpoints=3)
    # Nothing trains an inference plan's tables.
    plan = heterps.compile(CTR, optimizer=None)
    assert plan.tables[0]["optimizer"] is None


def test_function_reaches_every_pass(tmp_path):
    # A module of two functions: function= names the one that is trained
    # and scheduled (the passes did not get it, and refused the module).
    text = (ROOT / "examples" / "ctr.mlir").read_text()
    body = text[text.index("  func.func @"):text.rindex("}")]
    other = re.sub(r"func\.func @\w+", "func.func @other", body, count=1)
    (tmp_path / "two.mlir").write_text(text[:text.rindex("}")] + other + "}\n")
    plan = heterps.compile(tmp_path / "two.mlir", function="other",
                           cluster=CLUSTER, throughput=1000, solver="dp")
    assert plan.function == "other"
    assert plan.training is not None


def test_corrupt_plan_file(tmp_path):
    path = tmp_path / "bad.plan"
    path.write_bytes(b"HPSPLAN\n\x01\x00\x00\x00garbage")
    with pytest.raises(heterps.Error, match="bad.plan"):
        heterps.Plan.load(path)
