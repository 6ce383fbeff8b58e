"""Argument checks shared by compile() and Trainer."""


def _check_types(**arguments):
    """TypeError naming the argument, rather than pybind11's list of
    signatures: each value is (value, type or types, what it must be)."""
    for name, (value, types, what) in arguments.items():
        if (isinstance(value, bool) and bool not in types) or \
                not isinstance(value, types):
            raise TypeError(f"{name} must be {what}, got "
                            f"{type(value).__name__}")


_INT = ((int,), "an int")
_NUMBER = ((int, float), "a number")
_STR = ((str,), "a string")
