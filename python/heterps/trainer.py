"""heterps.Trainer: a plan's training steps and predictions in this process."""

import math
import os

from . import _heterps
from ._arguments import (_INT, _INT64, _NUMBER, _STR, _UINT64, _check_ranges,
                         _check_types)
from .plan import Plan
from .server import Server

_FALLBACKS = ("cpu", None)
_WIRES = ("f32", "f16", "bf16")
_GPU_MATHS = ("f32", "tf32", "bf16")
_PIPELINES = ("auto", "on", "off")
_SYNCS = ("sync", "async")
_SCHEDULES = ("1f1b", "gpipe")
_METRICS = ("loss", "auc", "logloss", "ne", "calibration", "accuracy")


def _servers(ps):
    """The --ps list of `ps`; "" (the embedded server) only for None. An
    empty list or string, or a stopped Server, is a mistake that would
    otherwise train against a server that goes with the process."""
    if ps is None:
        return ""

    def address(server):
        if isinstance(server, Server):
            if not server.address:
                raise ValueError(f"ps: {server!r} is stopped")
            return server.address
        if not isinstance(server, str):
            raise TypeError(f"ps: expected 'host:port' strings or "
                            f"heterps.Server objects, got {server!r}")
        if not server.strip():
            raise ValueError("ps: an empty server address")
        return server

    if isinstance(ps, (str, Server)):
        return address(ps)
    servers = [address(s) for s in ps]
    if not servers:
        raise ValueError("ps: an empty list of servers (None keeps the "
                         "tables in a server embedded in this process)")
    return ",".join(servers)


def _data_spec(data, *, format, shuffle, seed, synthetic_examples,
               synthetic_vocab, csv_label_column, csv_header,
               for_evaluation=False):
    _check_types(shuffle=(shuffle, *_INT), seed=(seed, *_INT),
                 synthetic_examples=(synthetic_examples, *_INT),
                 synthetic_vocab=(synthetic_vocab, *_INT),
                 csv_label_column=(csv_label_column, *_INT),
                 csv_header=(csv_header, (bool,), "a bool"))
    _check_ranges(shuffle=(shuffle, *_INT64), seed=(seed, *_UINT64),
                  synthetic_examples=(synthetic_examples, *_INT64),
                  synthetic_vocab=(synthetic_vocab, *_INT64),
                  csv_label_column=(csv_label_column, *_INT64))
    spec = _heterps.DataSpec()
    if isinstance(data, str) and data == "synthetic":
        if format not in (None, "synthetic"):
            raise ValueError(f"format={format!r} is for files; "
                             "data='synthetic' is the synthetic generator")
        format = "synthetic"
    elif isinstance(data, (list, tuple)):
        if not data:
            raise ValueError("data is an empty list of files")
        if any(isinstance(d, str) and d == "synthetic" for d in data):
            raise ValueError("'synthetic' is a data set of its own, not a "
                             "file of a list")
        spec.path = ",".join(os.fspath(d) for d in data)
    elif isinstance(data, (str, os.PathLike)):
        spec.path = os.fspath(data)
    else:
        raise TypeError("data must be a file, a list of files or "
                        f"'synthetic', got {type(data).__name__}")
    if synthetic_examples < 1 or synthetic_vocab < 1:
        raise ValueError(f"synthetic_examples and synthetic_vocab must be "
                         f"positive, got {synthetic_examples} and "
                         f"{synthetic_vocab}")
    # The format of a file without format= is its name's.
    resolved = format or _heterps.data_format_of(spec.path)
    if (csv_header or csv_label_column) and resolved not in ("", "csv"):
        # fit's CSV options are the training data's; evaluation data of
        # another format reads without them (as heterps-run's --eval-data).
        if for_evaluation:
            csv_header, csv_label_column = False, 0
        else:
            raise ValueError(f"csv_header and csv_label_column are for CSV "
                             f"data; this reads {resolved} data")
    spec.format = format or ""
    spec.shuffle = shuffle
    spec.seed = seed
    spec.synthetic_examples = synthetic_examples
    spec.synthetic_vocab = synthetic_vocab
    spec.csv_label_column = csv_label_column
    spec.csv_header = csv_header
    return spec


class Trainer:
    """Trains and runs a plan as heterps-run does, in this process.

    plan: a heterps.Plan (or a path to a plan file).
    ps: the PS servers ("host:port,...", a list, or heterps.Server objects);
        None keeps the tables in a server embedded in this process.
    threads: kernel threads per worker; seed: initial parameters and tables.
    batch: the batch size of fit() and evaluate() (default: the plan's).
    fallback: "cpu" runs GPU stages with the CPU kernels on a machine
        without a GPU; None refuses to.
    gpu_math: how GPU stages compute GEMMs and MatMuls, as heterps-run's
        --gpu-math: "f32" (within 1e-5 of the CPU), "tf32" or "bf16".
    pipeline: "auto" runs a plan of several stages or replicas on the
        pipelined executor, "on" always, "off" one worker; sync, schedule,
        max_workers, micro_batches and max_staleness as heterps-run's flags.
    deadline: seconds a PS call may take (None: 10); only with `ps`.
    tls_ca, tls_cert, tls_key, tls_server_name, token_file, wire: how the
        servers are reached, as heterps-run's --ps-tls-ca, --ps-tls-cert,
        --ps-tls-key, --ps-tls-server-name, --ps-token-file and --ps-wire
        (paths of PEM files and of a token file; "f32", "f16" or "bf16").
    """

    def __init__(self, plan, *, ps=None, threads=1, seed=1, batch=None,
                 fallback="cpu", pipeline="auto", sync="sync",
                 schedule="1f1b", max_workers=0, micro_batches=0,
                 max_staleness=0, deadline=None, tls_ca=None, tls_cert=None,
                 tls_key=None, tls_server_name=None, token_file=None,
                 wire="f32", gpu_math="f32"):
        if not isinstance(plan, Plan):
            plan = Plan.load(plan)
        _check_types(threads=(threads, *_INT), seed=(seed, *_INT),
                     batch=(0 if batch is None else batch, *_INT),
                     pipeline=(pipeline, *_STR), sync=(sync, *_STR),
                     schedule=(schedule, *_STR),
                     deadline=(10.0 if deadline is None else deadline,
                               *_NUMBER))
        _check_ranges(seed=(seed, *_UINT64),
                      batch=(0 if batch is None else batch, *_INT64))
        if fallback not in _FALLBACKS:
            raise ValueError(f"fallback must be 'cpu' or None, got "
                             f"{fallback!r}")
        for name, value, choices in (("pipeline", pipeline, _PIPELINES),
                                     ("sync", sync, _SYNCS),
                                     ("schedule", schedule, _SCHEDULES)):
            if value not in choices:
                raise ValueError(f"{name} must be one of "
                                 f"{', '.join(choices)}, got {value!r}")
        if not 1 <= threads <= 4096:
            raise ValueError(f"threads must be in [1, 4096] (heterps-run's "
                             f"--threads), got {threads}")
        if batch is not None and batch < 1:
            raise ValueError(f"batch must be positive, got {batch}")
        for name, value in (("max_workers", max_workers),
                            ("micro_batches", micro_batches),
                            ("max_staleness", max_staleness)):
            if isinstance(value, bool) or not isinstance(value, int) or \
                    value < 0:
                raise ValueError(f"{name} must be a whole number >= 0 (0: "
                                 f"the plan's or the default), got {value!r}")
        _check_ranges(micro_batches=(micro_batches, *_INT64),
                      max_staleness=(max_staleness, *_INT64))
        if max_workers > 4096:
            raise ValueError(f"max_workers must be at most 4096 (heterps-run's "
                             f"--max-workers), got {max_workers}")
        # Combinations heterps-run refuses: an option the run would not use.
        if sync == "async" and pipeline == "off":
            raise ValueError("sync='async' trains a pipeline's replicas; "
                             "pipeline='off' runs one worker")
        if max_staleness and sync != "async":
            raise ValueError("max_staleness bounds sync='async' replicas' "
                             "staleness")
        if pipeline == "off" and (micro_batches or schedule != "1f1b"):
            raise ValueError("micro_batches and schedule order a pipeline's "
                             "micro-batches; pipeline='off' runs whole steps "
                             "on one worker")
        if deadline is not None and not 0 < deadline < math.inf:
            raise ValueError(f"deadline must be a positive number of "
                             f"seconds, got {deadline}")
        if gpu_math not in _GPU_MATHS:
            raise ValueError(f"gpu_math must be one of "
                             f"{', '.join(_GPU_MATHS)}, got {gpu_math!r}")
        if wire not in _WIRES:
            raise ValueError(f"wire must be one of {', '.join(_WIRES)}, got "
                             f"{wire!r}")
        client = {"tls_ca": tls_ca, "tls_cert": tls_cert, "tls_key": tls_key,
                  "tls_server_name": tls_server_name,
                  "token_file": token_file}
        # Left out, 10 s, as heterps-run's --ps-deadline.
        given = [k for k, v in client.items() if v is not None] + \
            (["deadline"] if deadline is not None else [])
        if deadline is None:
            deadline = 10.0
        if ps is None and (given or wire != "f32"):
            names = given + (["wire"] if wire != "f32" else [])
            raise ValueError(f"{', '.join(names)} "
                             f"{'is' if len(names) == 1 else 'are'} for PS "
                             f"servers given with ps=")
        if (tls_cert is None) != (tls_key is None):
            raise ValueError("tls_cert and tls_key go together")
        if tls_ca is None and (tls_cert or tls_server_name):
            raise ValueError("tls_cert, tls_key and tls_server_name need "
                             "tls_ca")
        paths = {k: os.fspath(v) if v is not None else ""
                 for k, v in client.items()}
        self.plan = plan
        self.metrics = {}
        self._native = _heterps.Trainer(
            plan._native, _servers(ps), threads, seed, fallback == "cpu",
            pipeline, sync, max_workers, micro_batches, schedule,
            max_staleness, float(deadline), batch or 0, paths["tls_ca"],
            paths["tls_cert"], paths["tls_key"], paths["tls_server_name"],
            paths["token_file"], wire, gpu_math)

    @property
    def steps(self):
        """Training steps taken so far (loaded checkpoints included)."""
        return self._native.steps

    @property
    def batch_size(self):
        return self._native.batch_size

    def step(self, inputs):
        """One training step on a dict of arrays by input name (the labels
        included); returns the loss."""
        return self._native.step(dict(inputs))

    def predict(self, inputs):
        """The prediction outputs (all but the loss) of a dict of arrays by
        input name; labels are not needed. Returns a dict of NumPy arrays."""
        return self._native.predict(dict(inputs))

    def fit(self, data, *, epochs=1, steps=0, eval_data=None, format=None,
            eval_format=None, shuffle=0, seed=1, log_every=100,
            callbacks=(), verbose=True, checkpoint_dir=None,
            checkpoint_every=0, synthetic_examples=1 << 16,
            synthetic_vocab=1000, csv_label_column=0, csv_header=False):
        """Trains over `data` (a file, a list of files, glob patterns, or
        "synthetic") with the runtime's readers: criteo, libsvm, csv, idx,
        told by the name or `format`.

        callbacks: callables given a dict after every `log_every` steps
            ({"kind": "steps", "step", "epoch", "seconds",
            "samples_per_second", "loss", and "auc", "logloss", "ne",
            "calibration" for binary labels or "accuracy" for classes) and
            after each evaluation ({"kind": "eval", ...}); one that returns
            False stops training.
        checkpoint_dir: a checkpoint at the end (and every
            `checkpoint_every` steps) that load() resumes from.
        Returns the summary: steps, samples, seconds, samples_per_second,
        last_loss, stopped, evaluation.
        """
        # The data's arguments are _data_spec's to check.
        _check_types(epochs=(epochs, *_INT), steps=(steps, *_INT),
                     log_every=(log_every, *_INT),
                     checkpoint_every=(checkpoint_every, *_INT))
        _check_ranges(epochs=(epochs, *_INT64), steps=(steps, *_INT64),
                      log_every=(log_every, *_INT64),
                      checkpoint_every=(checkpoint_every, *_INT64))
        if epochs < 1 or steps < 0 or log_every < 0 or checkpoint_every < 0:
            raise ValueError("epochs must be positive; steps, log_every and "
                             "checkpoint_every non-negative")
        if checkpoint_every and checkpoint_dir is None:
            raise ValueError("checkpoint_every needs checkpoint_dir")
        common = dict(shuffle=shuffle, seed=seed,
                      synthetic_examples=synthetic_examples,
                      synthetic_vocab=synthetic_vocab,
                      csv_label_column=csv_label_column,
                      csv_header=csv_header)
        train = _data_spec(data, format=format, **common)
        common["shuffle"] = 0
        evaluation = (None if eval_data is None else
                      _data_spec(eval_data, format=eval_format or format,
                                 for_evaluation=True, **common))
        callbacks = list(callbacks)
        for callback in callbacks:
            if not callable(callback):
                raise TypeError(f"callbacks must be callable, got "
                                f"{type(callback).__name__}")

        def report(entry):
            self.metrics = {k: v for k, v in entry.items()
                            if k in _METRICS}
            keep_going = True
            for callback in callbacks:
                if callback(dict(entry)) is False:
                    keep_going = False
            return keep_going

        summary = self._native.fit(
            train, evaluation, epochs, steps, log_every,
            os.fspath(checkpoint_dir) if checkpoint_dir is not None else "",
            checkpoint_every, print if verbose else None, report)
        if summary["evaluation"] is not None:
            self.metrics = dict(summary["evaluation"])
        return summary

    def evaluate(self, data, *, format=None, synthetic_examples=1 << 16,
                 synthetic_vocab=1000, csv_label_column=0, csv_header=False,
                 seed=1):
        """The metrics of the predictions over `data`: auc, logloss, ne,
        calibration for binary labels, accuracy for classes."""
        spec = _data_spec(data, format=format, shuffle=0, seed=seed,
                          synthetic_examples=synthetic_examples,
                          synthetic_vocab=synthetic_vocab,
                          csv_label_column=csv_label_column,
                          csv_header=csv_header)
        self.metrics = self._native.evaluate(spec)
        return dict(self.metrics)

    def save(self, directory):
        """Writes a checkpoint (parameters, tables, step) that heterps-run
        --load and Trainer.load read."""
        self._native.save(os.fspath(directory))

    def load(self, directory):
        """Loads a checkpoint of this plan (written by save(), fit() or
        heterps-run --save); the next fit() resumes at its position in the
        data. Returns its step. Warns (UserWarning) where the plan's
        optimizer differs from the checkpoint's: the dense state starts
        fresh, or the tables take the plan's hyper-parameters."""
        return self._native.load(os.fspath(directory))

    def __repr__(self):
        return (f"Trainer(plan @{self.plan.function}, step {self.steps}, "
                f"batch {self.batch_size})")
