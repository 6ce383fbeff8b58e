"""heterps.Plan: what the compiler decided, and the file heterps-run runs."""

import dataclasses
import os
import shutil
import subprocess

from . import _heterps


@dataclasses.dataclass(frozen=True)
class Stage:
    """A pipeline stage: the ops of consecutive layers on one resource type,
    run by `units` replicas. `predicted_throughput` is the cost model's
    figure for the stage with its units (samples/s; the slowest stage's is
    the plan's), or None for a plan that was not provisioned."""
    index: int
    resource: str
    kind: str
    units: int
    ops: tuple
    predicted_throughput: float = None


@dataclasses.dataclass(frozen=True)
class Prediction:
    """The cost model's figures for a scheduled plan."""
    throughput: float
    cost_per_hour: float
    job_cost: float


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """A plan input or output; a dimension of -1 is the batch."""
    name: str
    dtype: str
    shape: tuple
    label: bool = False


class Plan:
    """A compiled, verified plan. heterps.compile returns one; Plan.load
    reads a file that heterps-opt wrote."""

    def __init__(self, native, diagnostics=()):
        if not isinstance(native, _heterps.Plan):
            raise TypeError("Plan() wraps a compiled plan: Plan.load(path) "
                            "reads a plan file, heterps.compile() makes one")
        self._native = native
        self._info = native.describe()
        self.diagnostics = list(diagnostics)

    @classmethod
    def load(cls, path):
        return cls(_heterps.Plan.load(os.fspath(path)))

    @classmethod
    def from_bytes(cls, data):
        # bytes(5) would be five zero bytes, bytes("x") a TypeError of its
        # own: only a bytes-like object is a plan's bytes.
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"from_bytes takes bytes, got "
                            f"{type(data).__name__} (Plan.load reads a file)")
        return cls(_heterps.Plan.from_bytes(bytes(data)))

    def save(self, path):
        """Writes the plan file (atomically) for heterps-run."""
        self._native.save(os.fspath(path))

    def to_bytes(self):
        return self._native.to_bytes()

    def to_dot(self):
        """The plan as a Graphviz graph, as heterps-run --print-plan=dot
        prints it."""
        return self._native.to_dot()

    def _repr_svg_(self):
        dot = shutil.which("dot")
        if dot is None:
            return None
        result = subprocess.run([dot, "-Tsvg"], input=self.to_dot(),
                                capture_output=True, text=True, check=False)
        return result.stdout if result.returncode == 0 else None

    @property
    def producer(self):
        """What wrote the plan: "HeterPS <version>"."""
        return self._info["producer"]

    @property
    def function(self):
        return self._info["function"]

    @property
    def batch_size(self):
        return self._info["batch_size"]

    @property
    def micro_batches(self):
        return self._info["micro_batches"]

    @property
    def training(self):
        """The loss, its output and the optimizer, or None for an
        inference plan."""
        return self._info["training"]

    @property
    def stages(self):
        return [Stage(s["index"], s["resource"], s["kind"], s["units"],
                      tuple(s["ops"]), s["predicted_throughput"])
                for s in self._info["stages"]]

    @property
    def predicted(self):
        p = self._info["predicted"]
        return None if p is None else Prediction(**p)

    @property
    def inputs(self):
        return [TensorSpec(i["name"], i["dtype"], tuple(i["shape"]),
                           i["label"]) for i in self._info["inputs"]]

    @property
    def outputs(self):
        return [TensorSpec(o["name"], o["dtype"], tuple(o["shape"]))
                for o in self._info["outputs"]]

    @property
    def tables(self):
        """The embedding tables: id, name, vocab, dim, optimizer."""
        return [dict(t) for t in self._info["tables"]]

    def __repr__(self):
        lines = [f"Plan @{self.function}: {len(self.stages)} stage(s), "
                 f"{len(self.tables)} table(s), batch {self.batch_size}"]
        for s in self.stages:
            line = (f"  stage {s.index} on {s.resource} ({s.kind}) "
                    f"x{s.units}: {len(s.ops)} ops")
            if s.predicted_throughput is not None:
                line += f", predicted {s.predicted_throughput:.1f} samples/s"
            lines.append(line)
        p = self.predicted
        if p is not None:
            lines.append(f"  predicted: {p.throughput:.1f} samples/s, "
                         f"${p.cost_per_hour:.4f} per hour, "
                         f"${p.job_cost:.4f} in all")
        return "\n".join(lines)
