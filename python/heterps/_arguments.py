"""Argument checks shared by compile() and Trainer."""


def _check_types(**arguments):
    """TypeError naming the argument, rather than pybind11's list of
    signatures: each value is (value, type or types, what it must be)."""
    for name, (value, types, what) in arguments.items():
        if (isinstance(value, bool) and bool not in types) or \
                not isinstance(value, types):
            raise TypeError(f"{name} must be {what}, got "
                            f"{type(value).__name__}")


_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT64 = (0, (1 << 64) - 1)


def _check_ranges(**arguments):
    """ValueError naming the argument whose int does not fit the native
    type (pybind11 answers with its list of signatures): each value is
    (value, lowest, highest)."""
    for name, (value, lowest, highest) in arguments.items():
        if not lowest <= value <= highest:
            bounds = {_INT64: "a signed 64-bit integer",
                      _UINT64: "an unsigned 64-bit integer"}.get(
                          (lowest, highest), f"in [{lowest}, {highest}]")
            raise ValueError(f"{name} must be {bounds}, got {value}")


_INT = ((int,), "an int")
_NUMBER = ((int, float), "a number")
_STR = ((str,), "a string")
