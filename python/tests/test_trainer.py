"""heterps.Trainer: steps, predictions, fit, checkpoints, PS servers."""

import re
import subprocess
import sys
import warnings

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import heterps
from conftest import ONNX_INPUTS, ROOT, ctr_batch


def write_inputs(directory, batch):
    args = []
    for name, array in batch.items():
        path = directory / f"{name}.pb"
        path.write_bytes(
            numpy_helper.from_array(array, name).SerializeToString())
        args += ["--input", f"{name}={path}"]
    return args


def test_step_and_predict_equal_heterps_run(tmp_path, ctr_plan, heterps_run):
    batch = ctr_batch(16, seed=3)
    trainer = heterps.Trainer(ctr_plan, seed=1)
    losses = [trainer.step(batch) for _ in range(3)]
    assert trainer.steps == 3
    predicted = trainer.predict({"dense": batch["dense"],
                                 "sparse": batch["sparse"]})
    assert list(predicted) == ["output"]
    assert predicted["output"].shape == (16, 1)
    assert predicted["output"].dtype == np.float32

    plan = tmp_path / "ctr.plan"
    ctr_plan.save(plan)
    inputs = write_inputs(tmp_path, batch)
    train = subprocess.run(
        [heterps_run, str(plan), *inputs, "--steps=3", "--seed=1",
         f"--save={tmp_path / 'ckpt'}"],
        check=True, capture_output=True, text=True).stdout
    last = float(re.search(r"last loss (\S+)", train).group(1))
    assert last == pytest.approx(losses[-1], abs=1e-6)
    subprocess.run(
        [heterps_run, str(plan), "--infer", f"--load={tmp_path / 'ckpt'}",
         *inputs[:4], f"--output-dir={tmp_path / 'out'}"],
        check=True, capture_output=True, text=True)
    expected = numpy_helper.to_array(
        onnx.load_tensor(str(tmp_path / "out" / "output.pb")))
    np.testing.assert_array_equal(predicted["output"], expected)


def test_loss_falls_on_a_fixed_batch(ctr_plan):
    trainer = heterps.Trainer(ctr_plan)
    batch = ctr_batch(64, seed=4)
    first = trainer.step(batch)
    for _ in range(30):
        last = trainer.step(batch)
    assert last < 0.5 * first


def test_fit_with_callbacks_and_evaluation(ctr_plan):
    trainer = heterps.Trainer(ctr_plan, batch=64)
    reports = []
    summary = trainer.fit("synthetic", epochs=2, eval_data="synthetic",
                          log_every=8, callbacks=[reports.append],
                          verbose=False, synthetic_examples=64 * 16,
                          synthetic_vocab=100)
    assert summary["steps"] == 32
    assert summary["samples"] == 32 * 64
    assert not summary["stopped"]
    steps = [r for r in reports if r["kind"] == "steps"]
    evals = [r for r in reports if r["kind"] == "eval"]
    assert [r["step"] for r in steps] == [8, 16, 24, 32]
    assert [r["epoch"] for r in evals] == [1, 2]
    assert all(0 <= r["auc"] <= 1 and r["loss"] > 0 for r in steps)
    assert all(r["logloss"] > 0 and r["ne"] > 0 and r["calibration"] > 0
               and r["seconds"] >= 0 for r in steps)
    assert 0 <= summary["evaluation"]["auc"] <= 1
    assert trainer.metrics == summary["evaluation"]
    assert trainer.evaluate("synthetic", synthetic_examples=256,
                            synthetic_vocab=100)["auc"] >= 0


def test_a_callback_stops_training(ctr_plan):
    trainer = heterps.Trainer(ctr_plan, batch=32)
    summary = trainer.fit("synthetic", epochs=3, log_every=4, verbose=False,
                          callbacks=[lambda report: report["step"] < 8],
                          synthetic_examples=32 * 10, synthetic_vocab=100)
    assert summary["stopped"]
    assert summary["steps"] == 8 and trainer.steps == 8


def test_a_callback_error_propagates(ctr_plan):
    def broken(report):
        raise ZeroDivisionError("from the callback")

    trainer = heterps.Trainer(ctr_plan, batch=32)
    with pytest.raises(ZeroDivisionError, match="from the callback"):
        trainer.fit("synthetic", log_every=2, callbacks=[broken],
                    verbose=False, synthetic_examples=256,
                    synthetic_vocab=100)


def test_save_and_load(tmp_path, ctr_plan):
    batch = ctr_batch(16, seed=5)
    trainer = heterps.Trainer(ctr_plan)
    for _ in range(4):
        trainer.step(batch)
    trainer.save(tmp_path / "ckpt")
    before = trainer.predict(batch)["output"]

    restored = heterps.Trainer(ctr_plan, seed=99)
    assert not np.array_equal(restored.predict(batch)["output"], before)
    assert restored.load(tmp_path / "ckpt") == 4
    assert restored.steps == 4
    np.testing.assert_array_equal(restored.predict(batch)["output"], before)
    # Both go on to the same step.
    assert restored.step(batch) == trainer.step(batch)


def test_load_with_another_optimizer(tmp_path, ctr_plan):
    # The checkpoint holds Adam's state. A plan that trains the dense
    # parameters with momentum (the tables still with Adam) starts their
    # state fresh, and says so.
    batch = ctr_batch(16, seed=5)
    trainer = heterps.Trainer(ctr_plan)
    trainer.step(batch)
    trainer.save(tmp_path / "ckpt")
    momentum = heterps.compile(ONNX_INPUTS / "torch-ctr.onnx", loss="bce",
                               optimizer="momentum", learning_rate=0.01,
                               batch=16,
                               autodiff_options={"sparse-optimizer": "adam"})
    switched = heterps.Trainer(momentum)
    with pytest.warns(UserWarning, match="holds the adam optimizer's state "
                      ".* trains them with momentum, whose state starts "
                      "fresh"):
        assert switched.load(tmp_path / "ckpt") == 1
    np.testing.assert_array_equal(switched.predict(batch)["output"],
                                  trainer.predict(batch)["output"])
    # A table keeps its optimizer: one trained otherwise is refused.
    # The refusal comes before anything changes: the Trainer is as it was.
    everything = heterps.Trainer(heterps.compile(
        ONNX_INPUTS / "torch-ctr.onnx", loss="bce", optimizer="momentum",
        learning_rate=0.01, batch=16))
    fresh = everything.predict(batch)["output"]
    with pytest.raises(heterps.Error, match=r"does not hold this plan's "
                       r"tables: tables 0 'emb.0.weight', .*: trained with "
                       r"adam there, expected momentum; nothing was loaded"):
        everything.load(tmp_path / "ckpt")
    np.testing.assert_array_equal(everything.predict(batch)["output"], fresh)
    assert everything.steps == 0
    # So is a table of another vocabulary.
    other_vocab = heterps.compile(
        ROOT / "examples" / "ctr.mlir", optimizer="adam", batch=16)
    small = heterps.Trainer(other_vocab)
    small.save(tmp_path / "ctr")
    with open(ROOT / "examples" / "ctr.mlir") as f:
        text = f.read()
    assert "vocab = 1000000" in text
    (tmp_path / "small.mlir").write_text(
        text.replace("vocab = 1000000", "vocab = 500"))
    changed = heterps.Trainer(heterps.compile(
        tmp_path / "small.mlir", optimizer="adam", batch=16))
    with pytest.raises(heterps.Error, match="dim 16 and vocab 1000000 there, "
                       "expected dim 16 and vocab 500"):
        changed.load(tmp_path / "ctr")


def test_load_with_a_lower_table_learning_rate(tmp_path, ctr_plan):
    # Fine-tuning: the tables on a PS server take the plan's lower
    # learning rate and keep their Adam state, with a warning, both when a
    # worker connects to the server that trained them and when it loads a
    # checkpoint; a checkpoint written since holds the new rate.
    batch = ctr_batch(16, seed=8)
    lower = heterps.compile(ONNX_INPUTS / "torch-ctr.onnx", loss="bce",
                            optimizer="adam", learning_rate=0.01, batch=16,
                            autodiff_options={"sparse-optimizer": "adam",
                                              "sparse-learning-rate": 0.001})
    changed = (r"tables 0 'emb.0.weight', 1 'emb.1.weight', .* trained with "
               r"adam \(learning rate 0.01, .*; this plan trains them with "
               r"adam \(learning rate 0.001, .*: they take the plan's "
               "hyper-parameters and keep their optimizer state")
    with heterps.serve(checkpoint_dir=tmp_path / "ps") as server:
        trainer = heterps.Trainer(ctr_plan, ps=server)
        trainer.step(batch)
        trainer.save(tmp_path / "ckpt")
        with pytest.warns(UserWarning, match="the PS service's " + changed):
            tuned = heterps.Trainer(lower, ps=server)
        with pytest.warns(UserWarning, match="holds " + changed):
            assert tuned.load(tmp_path / "ckpt") == 1
        tuned.step(batch)
        tuned.save(tmp_path / "tuned")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert heterps.Trainer(lower, ps=server).load(
                tmp_path / "tuned") == 2
        # Another kind of optimizer is refused.
        with pytest.raises(heterps.Error, match="ALREADY_EXISTS: table 0 "
                           "exists as 'emb.0.weight' with another "
                           "configuration: .* kind: \"adam\" .* asked for "
                           ".* kind: \"sgd\""):
            heterps.Trainer(heterps.compile(
                ONNX_INPUTS / "torch-ctr.onnx", loss="bce", optimizer="adam",
                learning_rate=0.01, batch=16,
                autodiff_options={"sparse-optimizer": "sgd"}), ps=server)


def test_fit_writes_checkpoints_that_resume(tmp_path, ctr_plan):
    trainer = heterps.Trainer(ctr_plan, batch=32)
    trainer.fit("synthetic", steps=6, checkpoint_dir=tmp_path / "ck",
                checkpoint_every=3, verbose=False, synthetic_examples=32 * 8,
                synthetic_vocab=100)
    resumed = heterps.Trainer(ctr_plan, batch=32)
    assert resumed.load(tmp_path / "ck") == 6
    # save() after fit records where fit stopped in the data, as fit's own
    # checkpoints do: both resume for the epoch's last 2 of 8 batches.
    trainer.save(tmp_path / "saved")
    again = heterps.Trainer(ctr_plan, batch=32)
    assert again.load(tmp_path / "saved") == 6
    for t in (resumed, again):
        summary = t.fit("synthetic", verbose=False, synthetic_examples=32 * 8,
                        synthetic_vocab=100)
        assert summary["steps"] == 2
    assert again.steps == resumed.steps == 8
    # A save after load keeps the loaded position.
    third = heterps.Trainer(ctr_plan, batch=32)
    third.load(tmp_path / "saved")
    third.save(tmp_path / "resaved")
    fourth = heterps.Trainer(ctr_plan, batch=32)
    fourth.load(tmp_path / "resaved")
    assert fourth.fit("synthetic", verbose=False, synthetic_examples=32 * 8,
                      synthetic_vocab=100)["steps"] == 2


def test_tables_in_a_ps_server_train_like_embedded(ctr_plan):
    batch = ctr_batch(16, seed=6)
    embedded = heterps.Trainer(ctr_plan, seed=2)
    with heterps.serve() as server:
        assert server.port > 0
        remote = heterps.Trainer(ctr_plan, seed=2, ps=server)
        for _ in range(3):
            assert remote.step(batch) == embedded.step(batch)
        np.testing.assert_array_equal(remote.predict(batch)["output"],
                                      embedded.predict(batch)["output"])


def test_input_mistakes_name_the_input(ctr_plan):
    trainer = heterps.Trainer(ctr_plan)
    batch = ctr_batch(8, seed=7)
    with pytest.raises(KeyError, match="'sparse_ids'.*dense, sparse, label"):
        trainer.step({**batch, "sparse_ids": batch["sparse"]})
    with pytest.raises(TypeError, match="'sparse': expected int64"):
        trainer.step({**batch, "sparse": batch["sparse"].astype(np.float32)})
    with pytest.raises(heterps.Error):
        trainer.step({**batch, "dense": batch["dense"][:, :12]})
    # Inputs of different batches are named (a kernel reported its operands).
    with pytest.raises(heterps.Error, match="input 'sparse' has 7 rows, "
                       "input 'dense' 8: the inputs of a batch have one row "
                       "per example"):
        trainer.step({**batch, "sparse": batch["sparse"][:7]})
    # Booleans are no ids, and uint64 ids beyond int64 would wrap.
    with pytest.raises(TypeError, match="'sparse': expected int64, got bool"):
        trainer.step({**batch, "sparse": batch["sparse"] > 0})
    with pytest.raises(ValueError, match="'sparse': id 9223372036854775808 "
                       "is beyond int64"):
        trainer.step({**batch, "sparse": np.full_like(
            batch["sparse"], 1 << 63, dtype=np.uint64)})
    # Safe conversions are made: int32 ids, a list of lists, float64.
    converted = {**batch, "sparse": batch["sparse"].astype(np.int32),
                 "dense": batch["dense"].astype(np.float64).tolist()}
    assert np.isfinite(trainer.step(converted))


def test_trainer_option_mistakes():
    plan = heterps.compile(ROOT / "examples" / "ctr.mlir", optimizer="sgd")
    # Values are ValueErrors, as the other options' (not the runtime's
    # heterps.Error).
    with pytest.raises(ValueError, match="pipeline must be one of auto, on, "
                       "off, got 'sometimes'"):
        heterps.Trainer(plan, pipeline="sometimes")
    with pytest.raises(ValueError, match="schedule must be one of 1f1b, "
                       "gpipe, got 'zigzag'"):
        heterps.Trainer(plan, schedule="zigzag")
    with pytest.raises(ValueError, match="sync must be one of sync, async"):
        heterps.Trainer(plan, sync="eventually")
    with pytest.raises(ValueError, match="fallback"):
        heterps.Trainer(plan, fallback="gpu")
    # Numbers beyond the native types, and options the run would not use.
    with pytest.raises(ValueError, match="seed must be an unsigned 64-bit "
                       "integer, got -1"):
        heterps.Trainer(plan, seed=-1)
    with pytest.raises(ValueError, match="sync='async' trains a pipeline"):
        heterps.Trainer(plan, sync="async", pipeline="off")
    with pytest.raises(ValueError, match="max_staleness bounds"):
        heterps.Trainer(plan, max_staleness=3)
    with pytest.raises(ValueError, match="pipeline='off' runs whole steps"):
        heterps.Trainer(plan, pipeline="off", micro_batches=2)
    for threads in (0, 4097, 2**40):
        with pytest.raises(ValueError, match=r"threads must be in \[1, "
                           rf"4096\] \(heterps-run's --threads\), got "
                           rf"{threads}"):
            heterps.Trainer(plan, threads=threads)
    with pytest.raises(ValueError, match="max_workers must be at most 4096"):
        heterps.Trainer(plan, max_workers=4097)
    trainer = heterps.Trainer(plan)
    with pytest.raises(heterps.Error, match="no-such-file.tsv"):
        trainer.fit("no-such-file.tsv", verbose=False)
    with pytest.raises(heterps.Error, match="format of 'data.bin'"):
        trainer.fit("data.bin", verbose=False)
    # What would otherwise train on synthetic data, or on nothing.
    with pytest.raises(TypeError, match="data must be a file"):
        trainer.fit(None, verbose=False)
    with pytest.raises(ValueError, match="not a file of a list"):
        trainer.fit(["synthetic"], verbose=False)
    with pytest.raises(ValueError, match="empty list"):
        trainer.fit([], verbose=False)
    with pytest.raises(ValueError, match="format='parquet' is for files"):
        trainer.fit("synthetic", format="parquet", verbose=False)
    with pytest.raises(ValueError, match="steps must be a signed 64-bit "
                       "integer"):
        trainer.fit("synthetic", steps=2**70, verbose=False)
    with pytest.raises(ValueError, match="csv_header and csv_label_column are "
                       "for CSV data; this reads criteo data"):
        trainer.fit("day.tsv", csv_label_column=3, verbose=False)
    with pytest.raises(ValueError, match="synthetic_vocab must be positive"):
        trainer.evaluate("synthetic", synthetic_vocab=0)
    # Types are named, not answered with pybind11's signatures.
    with pytest.raises(TypeError, match="threads must be an int, got str"):
        heterps.Trainer(plan, threads="2")
    with pytest.raises(TypeError, match="deadline must be a number"):
        heterps.Trainer(plan, deadline="5")
    # The embedded server takes no deadline (heterps-run refuses
    # --ps-deadline without --ps).
    with pytest.raises(ValueError, match="deadline is for PS servers"):
        heterps.Trainer(plan, deadline=5)
    with pytest.raises(TypeError, match="pipeline must be a string"):
        heterps.Trainer(plan, pipeline=3)
    with pytest.raises(TypeError, match="epochs must be an int, got float"):
        trainer.fit("synthetic", epochs=1.5, verbose=False)
    for name in ("max_workers", "micro_batches", "max_staleness"):
        with pytest.raises(ValueError, match=f"{name} must be a whole "
                           "number >= 0"):
            heterps.Trainer(plan, **{name: -1})


def test_inference_plan_predicts_but_does_not_train():
    plan = heterps.compile(ONNX_INPUTS / "torch-ctr.onnx", optimizer=None)
    trainer = heterps.Trainer(plan)
    batch = ctr_batch(4, seed=8)
    del batch["label"]
    assert trainer.predict(batch)["output"].shape == (4, 1)
    with pytest.raises(heterps.Error, match="no training step"):
        trainer.step(batch)
    # Without labels there is nothing to evaluate against (it returned {}).
    with pytest.raises(heterps.Error, match="the plan has no label input"):
        trainer.evaluate("synthetic", synthetic_vocab=100)


def test_pipelined_stages_train_like_one_worker():
    from conftest import CLUSTER
    plan = heterps.compile(ONNX_INPUTS / "torch-ctr.onnx", loss="bce",
                           optimizer="sgd", learning_rate=0.1,
                           cluster=CLUSTER, throughput=100_000,
                           solver="dp", batch=32, micro_batches=2)
    assert len(plan.stages) >= 2, plan
    pipelined = heterps.Trainer(plan)
    single = heterps.Trainer(plan, pipeline="off")
    assert "stage" in pipelined._native.describe()
    assert single._native.describe() == "one worker\n"
    batch = ctr_batch(32, seed=9)
    for _ in range(5):
        assert pipelined.step(batch) == pytest.approx(single.step(batch),
                                                      abs=1e-5)
    np.testing.assert_allclose(pipelined.predict(batch)["output"],
                               single.predict(batch)["output"], atol=1e-5)
    assert pipelined.steps == 5


def test_a_step_missing_an_input_leaves_the_pipeline_running(ctr_plan):
    # A worker that fails stops the pipeline for good: a missing input is
    # refused before the step starts.
    trainer = heterps.Trainer(ctr_plan, pipeline="on")
    batch = ctr_batch(16, seed=5)
    missing = {k: v for k, v in batch.items() if k != "label"}
    with pytest.raises(heterps.Error,
                       match="input 'label' is needed but not given"):
        trainer.step(missing)
    assert np.isfinite(trainer.step(batch))
    assert trainer.steps == 1


def make_certificates(directory):
    """A CA and a server certificate for 127.0.0.1 it signed."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True,
                       capture_output=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=test-ca", "-keyout", "ca.key", "-out", "ca.pem")
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
            "-keyout", "server.key", "-out", "server.csr")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey",
            "ca.key", "-CAcreateserial", "-days", "2", "-extfile", "san.ext",
            "-out", "server.pem")
    return directory / "ca.pem", directory / "server.pem", directory / \
        "server.key"


def test_a_server_with_tls_and_a_token(tmp_path, ctr_plan):
    ca, cert, key = make_certificates(tmp_path)
    token = tmp_path / "token"
    token.write_text("worker-secret\n")
    wrong = tmp_path / "wrong"
    wrong.write_text("guess\n")
    batch = ctr_batch(16, seed=6)
    embedded = heterps.Trainer(ctr_plan, seed=2)
    with heterps.serve(tls_cert=cert, tls_key=key,
                       auth_token_file=token) as server:
        remote = heterps.Trainer(ctr_plan, seed=2, ps=server, tls_ca=ca,
                                 token_file=token, wire="f32")
        for _ in range(2):
            assert remote.step(batch) == embedded.step(batch)
        with pytest.raises(heterps.Error, match="UNAUTHENTICATED"):
            heterps.Trainer(ctr_plan, ps=server, tls_ca=ca, token_file=wrong,
                            deadline=5)
        with pytest.raises(heterps.Error, match="UNAVAILABLE"):
            heterps.Trainer(ctr_plan, ps=server, token_file=token, deadline=2)
    with pytest.raises(heterps.Error, match="tls_ca.*no-such.pem"):
        heterps.Trainer(ctr_plan, ps="127.0.0.1:1", tls_ca="no-such.pem")
    with pytest.raises(ValueError, match="tls_ca is for PS servers"):
        heterps.Trainer(ctr_plan, tls_ca=ca)
    with pytest.raises(ValueError,
                       match="tls_ca, wire are for PS servers given with ps="):
        heterps.Trainer(ctr_plan, tls_ca=ca, wire="bf16")
    with pytest.raises(ValueError, match="tls_cert and tls_key go together"):
        heterps.Trainer(ctr_plan, ps="127.0.0.1:1", tls_ca=ca, tls_cert=cert)
    with pytest.raises(ValueError, match="wire must be"):
        heterps.Trainer(ctr_plan, ps="127.0.0.1:1", wire="f8")
    with pytest.raises(ValueError, match="gpu_math must be one of"):
        heterps.Trainer(ctr_plan, gpu_math="fp16")


def test_bags_given_by_offsets(tmp_path):
    """nn.EmbeddingBag(ids, offsets): the ids of all bags and their starts,
    a different number of ids each step; fit() on data files is refused."""
    plan = heterps.compile(ONNX_INPUTS / "torch-embedding-bag-offsets.onnx",
                           loss="bce", optimizer="sgd", learning_rate=0.1,
                           batch=8)
    trainer = heterps.Trainer(plan, seed=1)
    rng = np.random.default_rng(5)
    losses = []
    for _ in range(20):
        lengths = rng.integers(0, 7, size=8)
        batch = {"dense": rng.standard_normal((8, 13), dtype=np.float32),
                 "ids": rng.integers(0, 100, size=int(lengths.sum())),
                 "offsets": np.cumsum(lengths) - lengths,
                 "label": np.ones((8, 1), np.float32)}
        losses.append(trainer.step(batch))
    assert losses[-1] < losses[0]
    predicted = trainer.predict({k: batch[k]
                                 for k in ("dense", "ids", "offsets")})
    assert predicted["output"].shape == (8, 1)
    bad = {**batch, "offsets": batch["offsets"][::-1].copy()}
    with pytest.raises(heterps.Error, match="bag offsets"):
        trainer.step(bad)
    with pytest.raises(heterps.Error, match="input 'ids' holds bags"):
        trainer.fit("synthetic", steps=1, verbose=False)


def test_import_and_cpu_training_do_not_load_cublas():
    """`import heterps`, compiling and CPU training load no cuBLAS: a CUDA
    build loads it when a thread first runs GPU kernels (loading costs
    about a second)."""
    script = (
        "import sys\n"
        "sys.path.insert(0, %r)\n"
        "from conftest import ONNX_INPUTS, ctr_batch\n"
        "import heterps\n"
        "plan = heterps.compile(ONNX_INPUTS / 'torch-ctr.onnx', loss='bce',"
        " optimizer='sgd', batch=16)\n"
        "trainer = heterps.Trainer(plan)\n"
        "trainer.step(ctr_batch(16, seed=1))\n"
        "maps = open('/proc/self/maps').read()\n"
        "print('libstdc++' in maps, 'libcublas' in maps)\n"
        % str(ROOT / "python" / "tests"))
    out = subprocess.run([sys.executable, "-c", script], check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "True False"


def test_negative_ids_count_from_the_end_of_the_vocabulary(ctr_plan):
    """As ONNX's Gather: id -1 of a 100-row table is row 99, -100 row 0;
    ids past the end wrap (row 5 for 105)."""
    trainer = heterps.Trainer(ctr_plan, seed=1)
    dense = np.zeros((1, 13), np.float32)

    def predicted(ids):
        sparse = np.full((1, 8), ids, np.int64)
        return trainer.predict({"dense": dense, "sparse": sparse})["output"]

    assert np.array_equal(predicted(-1), predicted(99))
    assert np.array_equal(predicted(-100), predicted(0))
    assert np.array_equal(predicted(105), predicted(5))
    assert not np.array_equal(predicted(-1), predicted(15))


def test_an_empty_or_stopped_ps_is_an_error_not_the_embedded_server(ctr_plan):
    server = heterps.serve()
    server.stop()
    for ps, error in (("", ValueError), ([], ValueError), ([""], ValueError),
                      (server, ValueError), ([server], ValueError),
                      ([7], TypeError)):
        with pytest.raises(error, match="ps: "):
            heterps.Trainer(ctr_plan, ps=ps)


def test_a_step_with_a_nan_loss_changes_nothing(ctr_plan):
    """NaN labels make the loss NaN: the step fails before any update, the
    model and the step count stay, and the next good step trains."""
    trainer = heterps.Trainer(ctr_plan, seed=1)
    batch = ctr_batch(16, seed=4)
    trainer.step(batch)
    features = {"dense": batch["dense"], "sparse": batch["sparse"]}
    before = trainer.predict(features)["output"]
    bad = dict(batch, label=np.full((16, 1), np.nan, np.float32))
    with pytest.raises(heterps.Error, match="the loss is NaN; nothing was "
                                            "updated"):
        trainer.step(bad)
    assert trainer.steps == 1
    assert np.array_equal(trainer.predict(features)["output"], before)
    assert np.isfinite(trainer.step(batch))
    assert trainer.steps == 2


def test_csv_options_are_the_training_datas(tmp_path):
    # fit's csv options read the training CSV; evaluation data of another
    # format reads without them (it was refused).
    plan = heterps.compile(ONNX_INPUTS / "torch-mlp.onnx", loss="softmax-ce",
                           optimizer="sgd", batch=4)
    header = "y," + ",".join(f"x{i}" for i in range(32)) + "\n"
    rows = "".join(f"{r % 2}," + ",".join(["0.5"] * 32) + "\n"
                   for r in range(8))
    (tmp_path / "train.csv").write_text(header + rows)
    summary = heterps.Trainer(plan).fit(
        tmp_path / "train.csv", csv_header=True, eval_data="synthetic",
        verbose=False, synthetic_vocab=10)
    assert summary["steps"] == 2
    assert "accuracy" in summary["evaluation"]
