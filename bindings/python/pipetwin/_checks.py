"""Argument checks for the public functions, from their annotations: a wrong type is a TypeError that
names the function, the argument and what it takes, instead of pybind11's list of the C++ core's
signatures ("incompatible function arguments ... pipetwin._core...")."""
import collections.abc
import difflib
import functools
import inspect
import numbers
import os
import re
import typing
from typing import Any, Callable, Dict, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def describe(hint: Any) -> str:
    """'an int', 'a str or None', 'a sequence of int', ... for a message."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is type(None):
        return "None"
    if origin is typing.Union:
        return " or ".join(describe(a) for a in args)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (list, tuple, collections.abc.Sequence, collections.abc.Iterable):
        return "a sequence of " + (_bare(args[0]) if args else "items")
    if origin in (dict, collections.abc.Mapping):
        return "a dict"
    if hint is os.PathLike or origin is os.PathLike:
        return "a path (os.PathLike)"
    name = _bare(hint)
    return ("an " if name[:1] in "aeiou" else "a ") + name


def _bare(hint: Any) -> str:
    if typing.get_origin(hint) is typing.Union:
        return " or ".join(_bare(a) for a in typing.get_args(hint))
    return getattr(hint, "__name__", str(hint))


def matches(value: Any, hint: Any) -> bool:
    """Whether value fits the annotation (the shallow checks a user's mistake needs; the elements of
    sequences are checked too, a dict's values are not)."""
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return any(matches(value, a) for a in args)
    if origin is typing.Literal:
        return isinstance(value, str) and value in args
    if origin in (list, tuple, collections.abc.Sequence, collections.abc.Iterable):
        if isinstance(value, (str, bytes)) or not isinstance(value, collections.abc.Iterable):
            return False
        if isinstance(value, collections.abc.Iterator):
            return True  # elements are not consumed here
        return not args or all(matches(item, args[0]) for item in value)
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, collections.abc.Mapping)
    if hint is os.PathLike or origin is os.PathLike:
        return isinstance(value, os.PathLike)
    if hint is bool:
        return isinstance(value, bool) or type(value).__name__ == "bool_"  # numpy.bool_
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # an annotation these checks do not know: let the core decide


def public_name(func: Callable[..., Any]) -> str:
    """pipetwin.simulate for pipetwin._api.simulate; pipetwin.plotting.memory as it is."""
    module = func.__module__
    return ("pipetwin" if module.startswith("pipetwin._") else module) + "." + func.__name__


def check(function: str, name: str, value: Any, hint: Any) -> None:
    """Raises TypeError naming `function` (as users call it) and the argument unless value fits hint."""
    if matches(value, hint):
        return
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    hint_text = ""
    if name == "graph" and isinstance(value, str):
        hint_text = f"; to build one from a configuration, use keywords: model={shown}"
    raise TypeError(f"{function}(): {name} must be {describe(hint)}, got {type(value).__name__} {shown}{hint_text}")


def _keyword_hint(error: TypeError, signature: inspect.Signature) -> str:
    """'; did you mean model? It takes: ...' for a misspelt keyword."""
    found = re.search(r"unexpected keyword argument '(\w+)'", str(error))
    if not found:
        return ""
    names = [n for n, p in signature.parameters.items() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    close = difflib.get_close_matches(found.group(1), names, n=1)
    return (f"; did you mean {close[0]}?" if close else "") + " It takes: " + ", ".join(names)


def checked(func: F) -> F:
    """Checks every argument against func's annotations before func runs."""
    signature = inspect.signature(func)
    function = public_name(func)
    # The parameters' annotations are objects (no string forward references), used as they are;
    # return annotations may name pandas, which need not be installed, and are not evaluated.
    hints: Dict[str, Any] = {name: p.annotation for name, p in signature.parameters.items()
                             if p.annotation is not inspect.Parameter.empty and not isinstance(p.annotation, str)}

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{function}(): {error}{_keyword_hint(error, signature)}") from None
        for name, value in bound.arguments.items():
            if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD or name not in hints:
                continue
            check(function, name, value, hints[name])
        return func(*args, **kwargs)

    return typing.cast(F, wrapper)
