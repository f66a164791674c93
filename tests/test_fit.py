"""The offline summary's fitting (compactctl/summarizers/fit.py): which sections get room, what is omitted and how
that is said, the identifier index and the quoted lines, and that the summary stays within its token budget."""

from __future__ import annotations

from compactctl.summarizers.fit import INDEX_LINE, Item, Tier, fit, index_fit, index_line_names
from compactctl.summarizers.prompt import parse_sections
from compactctl.tokens import make_counter

COUNTER = make_counter("gpt-4o")
HEAD = [("Active Task", "- fix the login bug", Tier.FIRST), ("Goal", "ship it", Tier.FIRST)]


def items(*spec: tuple[str, str, int]) -> list[Item]:
    return [Item(section, text, tier, k) for k, (section, text, tier) in enumerate(spec)]


def index_names(text: str) -> list[str]:
    return [n for ln in text.split("\n") if ln.startswith(INDEX_LINE) for n in index_line_names(ln)]


def kept(text: str, section: str) -> list[str]:
    return [ln for ln in parse_sections(text).get(section, "").split("\n") if ln.startswith("- ")]


def test_the_index_lists_the_most_used_names_first_at_every_budget():
    """The index's names come ranked, most used first: it never lists a name while a more used one is left out. A
    short last line of the index fitted where the line before it did not, and the summary listed `handler_18
    handler_19` with `handler_6` to `handler_17` left out (the same room holds about as many of those)."""
    its = items(
        *HEAD,
        *(("Completed Actions", f"- edited src/mod_{k}.py", Tier.WORK) for k in range(4)),
        *(("Completed Actions", f"- read docs/page_{k}.md", Tier.DETAIL) for k in range(30)),
        ("Key Decisions", "- keep the cache", Tier.WORK),
    )
    # The index's lines the shares left go before the detail actions (after the work ones).
    text = fit(its, COUNTER, 300, [f"handler_{k}" for k in range(48)])
    assert len(index_names(text)) == 48 and 4 < len(kept(text, "Completed Actions")) < 34
    assert all(f"- edited src/mod_{k}.py" in kept(text, "Completed Actions") for k in range(4))
    for count in (20, 23, 30):
        names = [f"handler_{k}" for k in range(count)]
        for budget in range(100, 400, 3):
            text = fit(its, COUNTER, budget, list(names))
            listed = index_names(text)
            assert listed == names[: len(listed)], (count, budget, listed)
            assert COUNTER.text(text) <= budget
    # Nor does the index's own share skip a long name for the short names of a later line.
    names = [f"h{k}" for k in range(22)]
    names[8] = "src/components/settings/notifications/NotificationPreferencesPanel.test.tsx"
    for budget in range(100, 200, 4):
        listed = index_names(fit(its, COUNTER, budget, list(names)))
        assert listed == names[: len(listed)], (budget, listed)


def test_the_index_fit_of_all_the_names_is_their_number():
    """The last line of the names fitting whole is the end of them (it said 36 for 30 names: its callers sliced)."""
    names = [f"handler_{k}" for k in range(30)]
    assert index_fit(names, COUNTER, 10_000) == 30 and index_fit([], COUNTER, 10_000) == 0
