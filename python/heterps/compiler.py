"""heterps.compile: a model to a plan, with the passes heterps-opt runs."""

import os

from . import _heterps
from ._arguments import _INT, _NUMBER, _check_types
from .plan import Plan

_LOSSES = ("bce", "softmax-ce", "mse")


class CompileError(_heterps.Error):
    """A model that does not compile; `diagnostics` holds every message
    (location, severity, text) in the order the compiler emitted them."""

    def __init__(self, diagnostics):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(self.diagnostics) or "compilation failed")


def _option_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    # MLIR's pass-option lexer ends a value at a space or a brace unless the
    # value is quoted.
    if any(c in text for c in " {}'\"") or text == "":
        if '"' in text:
            raise ValueError(f"a pass option value cannot hold a double "
                             f"quote: {text!r}")
        return f'"{text}"'
    return text


def _pass(name, options):
    body = " ".join(f"{key}={_option_value(value)}"
                    for key, value in options.items() if value is not None)
    return f"{name}{{{body}}}" if body else name


def _model_source(model):
    """(path, bytes, base directory) of a path, bytes or onnx.ModelProto."""
    if isinstance(model, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(model))
        return path, b"", os.path.dirname(path)
    if isinstance(model, (bytes, bytearray, memoryview)):
        if not len(model):
            raise ValueError("model is empty bytes, not an ONNX model")
        return "<bytes>", bytes(model), os.getcwd()
    if hasattr(model, "SerializeToString"):
        return "<onnx.ModelProto>", model.SerializeToString(), os.getcwd()
    raise TypeError("model must be a path, bytes or an onnx.ModelProto, got "
                    f"{type(model).__name__}")


def _check_overrides(what, options, keywords):
    """Refuses a key of `options` that a keyword argument of compile sets:
    one of the two would silently win."""
    for key in options or {}:
        if key in keywords:
            raise ValueError(f"{what} sets {key!r}, which compile's "
                             f"{keywords[key]}= argument sets; give it there")


def compile(model, *, loss=None, label=None, optimizer="sgd",
            learning_rate=0.01, cluster=None, throughput=None, solver=None,
            batch=512, samples=None, micro_batches=None, seed=None,
            profile=None, function=None, autodiff_options=None,
            schedule_options=None):
    """Compiles `model` into a Plan.

    model: a path (.onnx or HeterPS IR), ONNX bytes or an onnx.ModelProto.
    loss: "bce", "softmax-ce" or "mse" added on the prediction, or None for
        the model's own loss (the model's output when it computes one).
    label: the name of the label input the added loss reads (default
        "label").
    optimizer: "sgd", "momentum", "adam" or "adagrad"; None compiles an
        inference plan (no backward ops, no updates).
    cluster: a cluster file; with it the plan is scheduled (placement,
        provisioning, stages and channels) for `throughput` samples/s with
        `solver` ("rl", the default, "dp", "exhaustive", "greedy",
        "genetic", "heuristic", "cpu-only", "gpu-only") over `samples`
        training samples (default 1e8) in `micro_batches` micro-batches per
        step (default 1), with the solver's `seed` (default 0), and
        `profile` (heterps-run --profile output) for measured op times.
        Without it the plan is one stage on the CPU, and these arguments
        are errors.
    autodiff_options, schedule_options: further options of the
        heterps-autodiff and heterps-schedule passes by their names
        ({"weight-decay": 1e-5}, {"rl-iterations": 50}).

    Raises CompileError with the compiler's diagnostics.
    """
    _check_types(batch=(batch, *_INT),
                 learning_rate=(learning_rate, *_NUMBER))
    if batch < 1:
        raise ValueError(f"batch must be positive, got {batch}")
    _check_overrides("autodiff_options", autodiff_options,
                     {"optimizer": "optimizer",
                      "learning-rate": "learning_rate", "loss": "loss",
                      "label": "label"})
    _check_overrides("schedule_options", schedule_options,
                     {"cluster": "cluster", "solver": "solver",
                      "throughput": "throughput", "batch": "batch",
                      "samples": "samples", "micro-batches": "micro_batches",
                      "seed": "seed", "profile": "profile",
                      "training": "optimizer"})
    if loss is not None and loss not in _LOSSES:
        raise ValueError(f"unknown loss {loss!r} (expected one of "
                         f"{', '.join(_LOSSES)}, or None for the model's)")
    path, data, base_dir = _model_source(model)
    passes = []
    training = optimizer is not None
    if training:
        options = {"optimizer": optimizer, "learning-rate": learning_rate,
                   "loss": loss, "label": label}
        options.update(autodiff_options or {})
        passes.append(_pass("heterps-autodiff", options))
    elif loss is not None or label is not None or autodiff_options:
        raise ValueError("loss, label and autodiff_options need an "
                         "optimizer (optimizer=None compiles for inference)")
    if cluster is not None:
        if throughput is None:
            raise ValueError("scheduling on a cluster needs a throughput "
                             "target (samples/s)")
        options = {
            "cluster": os.path.abspath(os.fspath(cluster)),
            "solver": "rl" if solver is None else solver,
            "throughput": throughput,
            "batch": batch,
            "samples": 1e8 if samples is None else samples,
            "micro-batches": 1 if micro_batches is None else micro_batches,
            "seed": 0 if seed is None else seed,
            "training": training,
            "profile": (os.path.abspath(os.fspath(profile))
                        if profile is not None else None),
        }
        options.update(schedule_options or {})
        passes.append(_pass("heterps-schedule", options))
    else:
        given = [name for name, value in (
            ("throughput", throughput), ("profile", profile),
            ("schedule_options", schedule_options), ("solver", solver),
            ("samples", samples), ("micro_batches", micro_batches),
            ("seed", seed)) if value is not None]
        if given:
            raise ValueError(f"{', '.join(given)} "
                             f"need{'s' if len(given) == 1 else ''} a "
                             "cluster file (cluster=): without one the plan "
                             "is one stage on the CPU")
    pipeline = f"builtin.module({','.join(passes)})" if passes else ""
    native, diagnostics = _heterps.compile(path, data, base_dir, pipeline,
                                           function or "", batch)
    if native is None:
        raise CompileError(diagnostics)
    return Plan(native, diagnostics=diagnostics)
