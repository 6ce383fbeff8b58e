"""heterps.compile: a model to a plan, with the passes heterps-opt runs."""

import math
import numbers
import os

from . import _heterps
from ._arguments import _INT64, _UINT64, _check_ranges
from .plan import Plan

_LOSSES = ("bce", "softmax-ce", "mse")
_OPTIMIZERS = ("sgd", "momentum", "adam", "adagrad")
_SOLVERS = ("rl", "exhaustive", "dp", "greedy", "genetic", "heuristic",
            "cpu-only", "gpu-only")


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
        if not os.fspath(model):
            raise ValueError("model is an empty path")
        path = os.path.abspath(os.fspath(model))
        return path, b"", os.path.dirname(path)
    if isinstance(model, (bytes, bytearray, memoryview)):
        if not len(model):
            raise ValueError("model is empty bytes, not an ONNX model")
        return "<bytes>", bytes(model), os.getcwd()
    if type(model).__name__ == "ModelProto" and \
            hasattr(model, "SerializeToString"):
        data = model.SerializeToString()
        if not data:
            raise ValueError("model is an empty onnx.ModelProto")
        return "<onnx.ModelProto>", data, os.getcwd()
    raise TypeError("model must be a path, bytes or an onnx.ModelProto, got "
                    f"{type(model).__name__}")


def _path(name, value):
    """A path argument (str or os.PathLike), made absolute."""
    if not isinstance(value, (str, os.PathLike)) or \
            not isinstance(os.fspath(value), str):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got "
                        f"{type(value).__name__}")
    if not os.fspath(value):
        raise ValueError(f"{name} is an empty path")
    return os.path.abspath(os.fspath(value))


def _integer(name, value, lowest=1, highest=_INT64[1]):
    """An int argument (numpy's too) in [lowest, highest]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    _check_ranges(**{name: (value, lowest, highest)})
    return value


def _number(name, value, positive=True):
    """A finite real argument (numpy's too), positive or >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got "
                        f"{type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        sign = "positive" if positive else "non-negative"
        raise ValueError(f"{name} must be a {sign} finite number, got "
                         f"{value}")
    return value


def _choice(name, value, choices):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r} (expected one of "
                         f"{', '.join(choices)})")
    return value


def _pass_options(name, options):
    """A dict of further pass options: non-empty names and values."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"{name} must be a dict of pass options, got "
                        f"{type(options).__name__}")
    for key, value in options.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"{name}: {key!r} is not an option name")
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError(f"{name}: option {key!r} has no value")
    return options


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
    # Argument mistakes are found here, named, rather than in the pass
    # pipeline's text.
    batch = _integer("batch", batch)
    learning_rate = _number("learning_rate", learning_rate, positive=False)
    autodiff_options = _pass_options("autodiff_options", autodiff_options)
    schedule_options = _pass_options("schedule_options", schedule_options)
    _check_overrides("autodiff_options", autodiff_options,
                     {"optimizer": "optimizer",
                      "learning-rate": "learning_rate", "loss": "loss",
                      "label": "label", "function": "function"})
    _check_overrides("schedule_options", schedule_options,
                     {"cluster": "cluster", "solver": "solver",
                      "throughput": "throughput", "batch": "batch",
                      "samples": "samples", "micro-batches": "micro_batches",
                      "seed": "seed", "profile": "profile",
                      "training": "optimizer", "function": "function"})
    if loss is not None and loss not in _LOSSES:
        raise ValueError(f"unknown loss {loss!r} (expected one of "
                         f"{', '.join(_LOSSES)}, or None for the model's)")
    if optimizer is not None:
        _choice("optimizer", optimizer, _OPTIMIZERS)
    for name, value in (("label", label), ("function", function)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got "
                            f"{type(value).__name__}")
        if value == "":
            raise ValueError(f"{name} is an empty name")
    if solver is not None:
        _choice("solver", solver, _SOLVERS)
    if throughput is not None:
        throughput = _number("throughput", throughput)
    if samples is not None:
        samples = _number("samples", samples)
    if micro_batches is not None:
        micro_batches = _integer("micro_batches", micro_batches,
                                 highest=batch)
    if seed is not None:
        seed = _integer("seed", seed, lowest=0, highest=_UINT64[1])
    path, data, base_dir = _model_source(model)
    passes = []
    training = optimizer is not None
    if training:
        options = {"function": function, "optimizer": optimizer,
                   "learning-rate": learning_rate, "loss": loss,
                   "label": label}
        options.update(autodiff_options)
        passes.append(_pass("heterps-autodiff", options))
    elif loss is not None or label is not None or autodiff_options:
        raise ValueError("loss, label and autodiff_options need an "
                         "optimizer (optimizer=None compiles for inference)")
    if cluster is not None:
        if throughput is None:
            raise ValueError("scheduling on a cluster needs a throughput "
                             "target (samples/s)")
        options = {
            "function": function,
            "cluster": _path("cluster", cluster),
            "solver": "rl" if solver is None else solver,
            "throughput": throughput,
            "batch": batch,
            "samples": 1e8 if samples is None else samples,
            "micro-batches": 1 if micro_batches is None else micro_batches,
            "seed": 0 if seed is None else seed,
            "training": training,
            "profile": (_path("profile", profile)
                        if profile is not None else None),
        }
        options.update(schedule_options)
        passes.append(_pass("heterps-schedule", options))
    else:
        given = [name for name, value in (
            ("throughput", throughput), ("profile", profile),
            ("schedule_options", schedule_options or None), ("solver", solver),
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
