"""names.quoted_lines: the lines a digest quotes, the same as a search of each name in each line, with bounded work."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactctl import names
from compactctl.names import LineIndex, names_in, quotable, quoted_lines


def _reference(text: str, found: list[str], keep: int, top: int) -> list[str]:
    """quoted_lines as it was first written: each name searched in the text, each line searched for each name."""
    first = found[:top]
    weight = [(1 + k) ** -0.5 for k in range(len(first))]
    cands: dict[str, list[int]] = {}
    for n in first:
        at = text.find(n)
        if at < 0:
            continue
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        line = quotable(text[start : end if end >= 0 else len(text)])
        if line is not None and line not in cands:
            cands[line] = [k for k, m in enumerate(first) if m in line]
    lines = sorted(cands)
    covered: set[int] = set()

    def gain(i: int) -> float:
        return sum(weight[k] for k in cands[lines[i]] if k not in covered) / (len(lines[i]) + 16)

    chosen: list[str] = []
    for i in names.greedy(gain, len(lines)):
        chosen.append(lines[i])
        covered.update(cands[lines[i]])
        if len(chosen) == keep:
            break
    return chosen


PIECES = st.sampled_from(
    ["a", "ab", "abc", "name_1", "name_12", "x = ", "Foo.bar", " ", "\n", "\r\n", "12→", "3:", "+", "-", "+++ ", "é", "\t", "()"]
)
NAMES = st.sampled_from(["a", "ab", "abc", "name_1", "name_12", "e_1", "Foo", "o.b", "zzz", "", "b a", "\n", "ab\nab", "é"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(PIECES, max_size=120).map("".join),
    st.lists(NAMES, max_size=20),
    st.integers(0, 5),
    st.lists(st.integers(0, 24), min_size=1, max_size=4),
)
def test_quoted_lines_are_those_a_search_of_each_name_in_each_line_finds(text, found, keep, tops):
    """Repeated names, names that are pieces of others, of no line, across lines; one LineIndex across calls (a digest
    made at several sizes: more names, fewer): the same lines as the search it replaced."""
    index = LineIndex(text)
    for top in tops:
        assert quoted_lines(text, found, keep, top, index) == _reference(text, found, keep, top)
        assert quoted_lines(text, found, keep, top) == _reference(text, found, keep, top)


class _Scanned(str):
    """A text that counts the characters its searches scan (find: from its start to the end of what it finds, rfind:
    from its end back to what it finds; the whole range when they find nothing), and stops past `most`."""

    most = 0
    scanned = 0

    @staticmethod
    def _count(n: int) -> None:
        _Scanned.scanned += max(0, n)
        assert _Scanned.scanned <= _Scanned.most, "quoted_lines scans past its bound"

    def _range(self, start: int | None, end: int | None) -> tuple[int, int]:
        return (0 if start is None else start), (len(self) if end is None else min(end, len(self)))

    def find(self, sub, start=None, end=None):  # type: ignore[override]
        lo, hi = self._range(start, end)
        at = str.find(self, sub, lo, hi)
        self._count((at + len(sub) if at >= 0 else hi) - lo)
        return at

    def rfind(self, sub, start=None, end=None):  # type: ignore[override]
        lo, hi = self._range(start, end)
        at = str.rfind(self, sub, lo, hi)
        self._count(hi - (at if at >= 0 else lo))
        return at


def test_quoted_lines_of_a_long_output_with_many_names_scans_its_bound_and_quotes_the_most_used(monkeypatch):
    """20,000 lines, 40,000 names, all asked for (a digest that keeps every name): the names' searches scan
    QUOTE_WORK characters at most (a search of each name from the text's start, and of each line for each name, took
    minutes), and the lines are those of the most used names that bound reaches, as an unbounded search quotes them."""
    monkeypatch.setattr(names, "QUOTE_WORK", 1 << 22, raising=False)
    plain = "\n".join(f"value_{k} = compute_{k}(INVOICE_GRACE_DAYS)" for k in range(20_000))
    found = names_in(plain)
    assert len(found) > 40_000
    text = _Scanned(plain)
    _Scanned.scanned, _Scanned.most = 0, (1 << 22) + len(plain)
    t0 = time.perf_counter()
    got = quoted_lines(text, found, 3, len(found))
    assert time.perf_counter() - t0 < 10  # a generous guard (~0.1 s; was minutes)
    reached, work = 0, 1 << 22
    while (cost := plain.find(found[reached]) + len(found[reached])) <= work:
        work -= cost
        reached += 1
    assert 100 < reached < len(found)
    assert got == _reference(plain, found[:reached], 3, reached)
    assert got and set(got) <= set(plain.split("\n"))


def test_a_line_index_reads_each_line_once_across_calls(monkeypatch):
    """A digest made again at another size with the same LineIndex: no name is searched again, no line quotable() again."""
    plain = "\n".join(f"row_{k} = load_row({k}, ROW_LIMIT)" for k in range(300))
    found = names_in(plain)
    index = LineIndex(plain)
    first = quoted_lines(plain, found, 6, len(found), index)
    calls = []
    real = names.quotable
    monkeypatch.setattr(names, "quotable", lambda raw: calls.append(raw) or real(raw))
    for top in (len(found) // 2, len(found) // 4, len(found)):
        assert quoted_lines(plain, found, 6, top, index) == _reference(plain, found, 6, top)
    assert not calls
    assert first == _reference(plain, found, 6, len(found))
