"""heterps.serve: a parameter-server server in this process (tests,
notebooks); production servers run as `heterps-run serve`."""

import os

from . import _heterps


class Server:
    """A running PS server; `address` is what Trainer(ps=...) takes. Stops
    on stop(), at the end of a `with` block, or with the process."""

    def __init__(self, native):
        self._native = native

    @property
    def address(self):
        return self._native.address

    @property
    def port(self):
        return self._native.port

    def stop(self, grace=5.0):
        self._native.stop(float(grace))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self):
        return f"Server({self.address or 'stopped'})"


def serve(*, host="127.0.0.1", port=0, checkpoint_dir=None, restore=None,
          keep_checkpoints=0):
    """Starts a PS server on host:port (0: a free port); `checkpoint_dir`
    holds its checkpoints, `restore` names one to load first ("latest",
    "auto": the newest or none)."""
    native = _heterps.Server(host, port,
                             os.fspath(checkpoint_dir) if checkpoint_dir
                             else "", restore or "", keep_checkpoints)
    return Server(native)
