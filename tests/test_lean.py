"""compactctl.lean.dataclass behaves as dataclasses.dataclass: each kind of class built both ways, compared."""

from __future__ import annotations

import dataclasses
import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compactctl import lean


def shapes(deco):
    """The kinds of dataclass compactctl declares, built with `deco` (the standard one or the lean one)."""

    @deco
    class Plain:
        a: int
        b: str = "x"
        c: list = dataclasses.field(default_factory=list)

    @deco(frozen=True)
    class Frozen:
        a: int
        b: tuple = ()

    @deco(slots=True)
    class Slots:
        a: int
        b: float = 0.0

    @deco(frozen=True, slots=True)
    class FrozenSlots:
        a: str
        b: int = 0

    @deco
    class Hidden:
        a: int
        secret: str = dataclasses.field(default="s", repr=False)
        note: str = dataclasses.field(default="n", compare=False)

    @deco(frozen=True)
    class HashPick:
        a: int
        b: list = dataclasses.field(default_factory=list, hash=False)
        c: int = dataclasses.field(default=0, compare=False, hash=True)

    @deco(repr=False, eq=False)
    class Bare:
        a: int

    @deco(frozen=True)
    class OwnMethods:
        a: int

        def __repr__(self) -> str:
            return f"<{self.a}>"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnMethods) and other.a % 10 == self.a % 10

        def __hash__(self) -> int:
            return self.a % 10

    @deco
    class Empty:
        pass

    @deco
    class Child(Plain):
        d: int = 1

    return {
        "Plain": Plain,
        "Frozen": Frozen,
        "Slots": Slots,
        "FrozenSlots": FrozenSlots,
        "Hidden": Hidden,
        "HashPick": HashPick,
        "Bare": Bare,
        "OwnMethods": OwnMethods,
        "Empty": Empty,
        "Child": Child,
    }


STD = shapes(dataclasses.dataclass)
LEAN = shapes(lean.dataclass)

VALUES = st.one_of(st.integers(-3, 3), st.text(max_size=3), st.just(math.nan), st.floats(allow_nan=False, width=16))


def args(name: str, v1, v2):
    return {
        "Plain": (v1, str(v2), [v1]),
        "Frozen": (v1, (v2,)),
        "Slots": (v1, 1.5),
        "FrozenSlots": (str(v1), 3),
        "Hidden": (v1, str(v2), str(v1)),
        "HashPick": (1, [v2], 2),
        "Bare": (v1,),
        "OwnMethods": (7,),
        "Empty": (),
        "Child": (v1, "b", [], 2),
    }[name]


def _hash(x):
    try:
        return ("hash", hash(x))
    except TypeError as e:
        return ("unhashable", str(e).replace("__main__", ""))


@pytest.mark.parametrize("name", sorted(STD))
@given(v1=VALUES, v2=VALUES, w1=VALUES, w2=VALUES)
def test_repr_eq_hash_as_the_standard_library_gives_them(name, v1, v2, w1, w2):
    s, lo = STD[name], LEAN[name]
    sa, sb, sc = s(*args(name, v1, v2)), s(*args(name, w1, w2)), s(*args(name, v1, v2))
    la, lb, lc = lo(*args(name, v1, v2)), lo(*args(name, w1, w2)), lo(*args(name, v1, v2))
    if name == "Bare":  # repr=False, eq=False: object's repr, identity equality and hash
        assert repr(la).startswith("<") and repr(sa).startswith("<")
        assert (la == lc, la == la, sa == sc, sa == sa) == (False, True, False, True)
        assert hash(la) == object.__hash__(la)
    else:
        assert repr(la) == repr(sa) and repr(lb) == repr(sb)
        assert (la == lb) == (sa == sb) and (la == lc) == (sa == sc) and (la == la) == (sa == sa)
        assert (la != lb) == (sa != sb)
        assert _hash(la)[0] == _hash(sa)[0]
        if _hash(sa)[0] == "hash":
            assert hash(la) == hash(sa)
    assert la.__eq__(object()) is sa.__eq__(object())  # NotImplemented for another class
    assert [f.name for f in dataclasses.fields(lo)] == [f.name for f in dataclasses.fields(s)]
    assert (lo.__hash__ is None) == (s.__hash__ is None)


def test_frozen_stays_frozen_and_slots_stay_slots():
    x = LEAN["FrozenSlots"]("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.a = "b"  # type: ignore[misc]
    assert not hasattr(x, "__dict__") and LEAN["FrozenSlots"].__slots__ == ("a", "b")
    assert dataclasses.replace(x, b=2) == LEAN["FrozenSlots"]("a", 2)
    assert dataclasses.asdict(LEAN["Plain"](1)) == {"a": 1, "b": "x", "c": []}


def test_a_recursive_repr_stops_as_the_standard_one_does():
    s, lo = STD["Plain"](1), LEAN["Plain"](1)
    s.c.append(s)
    lo.c.append(lo)
    assert repr(lo) == repr(s) == "shapes.<locals>.Plain(a=1, b='x', c=[...])"


def test_methods_are_named_after_their_class():
    assert LEAN["Frozen"].__repr__.__qualname__ == STD["Frozen"].__repr__.__qualname__
    assert LEAN["Frozen"].__eq__.__qualname__ == STD["Frozen"].__eq__.__qualname__


def test_compactctl_declares_its_classes_on_the_start_up_path_with_it():
    """The start-up cost this module saves (issue 11) comes back if a module on the `compact` path goes
    back to dataclasses.dataclass: the standard library may compile only what lean leaves to it (each
    class's __init__, a frozen class's two guards), nothing more."""
    import subprocess

    if not hasattr(dataclasses, "_create_fn"):  # Python 3.13 builds the methods of a class in one go
        pytest.skip("no per-method compile to count on this Python")
    code = (
        "import dataclasses, sys\n"
        "made = []\n"
        "make = dataclasses._create_fn\n"
        "def counted(name, *a, **k):\n"
        "    made.append(name)\n"
        "    return make(name, *a, **k)\n"
        "dataclasses._create_fn = counted\n"
        "import compactctl.cli, compactctl.api, compactctl.runner\n"
        "import compactctl.phases.prune, compactctl.phases.plan, compactctl.phases.summarize, compactctl.phases.repair\n"
        "classes = [c for m in list(sys.modules.values()) if m and m.__name__.startswith('compactctl')\n"
        "           for c in vars(m).values() if isinstance(c, type) and c.__module__ == m.__name__\n"
        "           and '__dataclass_params__' in vars(c)]\n"
        "left = sum(c.__dataclass_params__.init + 2 * c.__dataclass_params__.frozen for c in classes)\n"
        "print(len(classes), left, len(made), sorted(set(made)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    classes, left, made, names = out.split(" ", 3)
    assert int(classes) >= 40, out  # the path still holds compactctl's classes (the count is not vacuous)
    assert int(made) <= int(left), out  # more: a class declared with dataclasses.dataclass
    assert "__repr__" not in names and "__eq__" not in names, out
