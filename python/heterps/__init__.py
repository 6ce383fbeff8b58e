"""HeterPS from Python: compile a model into a scheduled plan, train it, predict.

    import heterps
    plan = heterps.compile("model.onnx", loss="bce", optimizer="adam",
                           learning_rate=1e-3, cluster="cluster.json",
                           throughput=100_000)
    trainer = heterps.Trainer(plan)
    trainer.fit("train.tsv", epochs=1, eval_data="test.tsv")
    scores = trainer.predict({"dense": dense, "sparse": ids})

The compiler and the runtime run in this process (the same libraries as
heterps-opt and heterps-run); see docs/Python.md.
"""

import os as _os

# GNU OpenMP's idle workers spin, starving the data reader thread and other
# processes on a busy machine (heterps-run sets the same policy); libgomp
# reads it when it loads, which is when the extension below loads it unless
# another module did first. A user's own setting wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ._heterps import Error  # noqa: E402
from ._heterps import version as __version__  # noqa: E402
from .compiler import CompileError, compile  # noqa: E402
from .plan import Plan, Prediction, Stage, TensorSpec  # noqa: E402
from .server import Server, serve  # noqa: E402
from .trainer import Trainer  # noqa: E402

__all__ = [
    "CompileError",
    "Error",
    "Plan",
    "Prediction",
    "Server",
    "Stage",
    "TensorSpec",
    "Trainer",
    "compile",
    "serve",
]
