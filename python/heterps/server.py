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


def _path(value):
    return os.fspath(value) if value is not None else ""


def serve(*, host="127.0.0.1", port=0, checkpoint_dir=None, restore=None,
          keep_checkpoints=0, tls_cert=None, tls_key=None, tls_ca=None,
          auth_token_file=None, admin_token_file=None):
    """Starts a PS server on host:port (0: a free port); `checkpoint_dir`
    holds its checkpoints, `restore` names one to load first ("latest",
    "auto": the newest or none). tls_cert, tls_key, tls_ca,
    auth_token_file and admin_token_file are heterps-run serve's --tls-cert,
    --tls-key, --tls-ca (client certificates), --auth-token-file and
    --admin-token-file (paths)."""
    if not isinstance(host, str) or not host:
        raise TypeError(f"host must be a non-empty string, got {host!r}")
    for name, value, highest in (("port", port, 65535),
                                 ("keep_checkpoints", keep_checkpoints,
                                  (1 << 31) - 1)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got "
                            f"{type(value).__name__}")
        if not 0 <= value <= highest:
            raise ValueError(f"{name} must be in [0, {highest}], got {value}")
    if checkpoint_dir is None and (restore is not None or keep_checkpoints):
        raise ValueError("restore and keep_checkpoints need checkpoint_dir")
    # An IPv6 address takes brackets before its port.
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    native = _heterps.Server(host, port, _path(checkpoint_dir), restore or "",
                             keep_checkpoints, _path(tls_cert),
                             _path(tls_key), _path(tls_ca),
                             _path(auth_token_file), _path(admin_token_file))
    return Server(native)
