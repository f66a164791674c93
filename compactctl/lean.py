"""`dataclass` as the standard library's, for a third of its start-up cost.

Before Python 3.13, `dataclasses.dataclass` compiles each method it generates with an `exec` of its
own: `__init__`, `__repr__` and `__eq__`, and `__setattr__`, `__delattr__` and `__hash__` when frozen,
~0.1 ms each. compactctl's ~50 classes on the path of a `compact` cost ~21 ms of its ~80 ms import that
way, paid by every process (a hook or a CI step runs one per file: issue 11). This decorator lets the
standard library generate `__init__` (and a frozen class's guards) and gives `__repr__`, `__eq__` and
`__hash__` as shared functions over the class's fields, with the results the generated ones give
(tests/test_lean.py builds each kind of class both ways and compares them). Everything else is the
standard library's: `fields()`, `replace()`, `asdict()`, slots, defaults and factories.

It does not take `order` or `unsafe_hash` (compactctl uses neither): pass them to
`dataclasses.dataclass` itself.
"""

from __future__ import annotations

import dataclasses
import reprlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any


def lean_dataclass(cls: Any = None, /, *, repr: bool = True, eq: bool = True, frozen: bool = False, **kw: Any) -> Any:
    """`@dataclass`, `@dataclass(frozen=True, slots=True)`, ... as `dataclasses.dataclass` takes them."""

    def wrap(c: Any) -> Any:
        # Read before the class is processed: what the class body defines itself is kept, as dataclass does.
        own = c.__dict__
        explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
        keep = {name for name in ("__repr__", "__eq__") if name in own}
        c = dataclasses.dataclass(c, repr=False, eq=False, frozen=frozen, **kw)
        fields = dataclasses.fields(c)
        if repr and "__repr__" not in keep:
            _attach(c, "__repr__", _repr_of(tuple(f.name for f in fields if f.repr)))
        if eq and "__eq__" not in keep:
            _attach(c, "__eq__", _eq_of(tuple(f.name for f in fields if f.compare)))
        if eq and not explicit_hash:
            # dataclass's rule: eq without frozen makes instances unhashable; eq and frozen hash the fields.
            names = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
            c.__hash__ = _hash_of(names) if frozen else None
        return c

    return wrap if cls is None else wrap(cls)


if TYPE_CHECKING:  # a type checker sees the standard decorator, whose behaviour this one keeps
    from dataclasses import dataclass as dataclass
else:
    dataclass = lean_dataclass


def _attach(cls: type, name: str, fn: Callable[..., Any]) -> None:
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, fn)


def _repr_of(names: tuple[str, ...]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        return self.__class__.__qualname__ + "(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

    return __repr__


def _eq_of(names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    """The standard library's `__eq__` of the running Python. Before 3.13 it compares the fields as tuples (whose
    comparison takes an identical item as equal: the same NaN); from 3.13 an instance equals itself, and two
    compare field by field with `==`, `and`-ed (NaN then differs from itself; the first false result is returned)."""
    if sys.version_info >= (3, 13):

        def __eq__(self: Any, other: Any) -> Any:
            if self is other:
                return True
            if other.__class__ is not self.__class__:
                return NotImplemented
            result: Any = True
            for n in names:
                result = getattr(self, n) == getattr(other, n)
                if not result:
                    return result
            return result

        return __eq__

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    return __eq__


def _hash_of(names: tuple[str, ...]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in names))

    return __hash__
