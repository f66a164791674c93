"""The README's "What compaction keeps" tables, printed from `make eval`'s bench/results/eval.json.

    python bench/readme_tables.py [bench/results/eval.json]

So the README's figures are the run's, not copied by hand. The "at the start" columns are issue 9's first runs
(fixed figures, `START` below); everything else comes from the file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUNED = ("long", "codex", "short-cc", "swe-agent", "all")
HELD = ("openhands", "tau-bench", "gemini", "other", "held-out")
# data name, sessions: the groups as the README names them
NAMES = {
    "long": ("long Claude Code sessions", 5),
    "codex": ("Codex rollouts", 5),
    "short-cc": ("short Claude Code sessions and subagents", 20),
    "swe-agent": ("SWE-agent trajectories", 22),
    "all": ("all", 52),
    "openhands": ("OpenHands trajectories", 9),
    "tau-bench": ("tau-bench airline conversations", 200),
    "gemini": ("Gemini CLI sessions", 6),
    "other": ("mini-swe-agent + Hermes", 2),
    "held-out": ("held out, pooled", 217),
}
# issue 9's first runs (tuned groups) and the held-out groups' first runs
START = {
    "long": "59.3%",
    "codex": "47.3%",
    "short-cc": "33.9%",
    "swe-agent": "100.0%",
    "all": "51.6%",
    "openhands": "83.4%",
    "tau-bench": "89.2%",
    "gemini": "78.1%",
    "other": "63.6% (at 7.0%)",
    "held-out": "88.3%",
}
TARGET_NAMES = {
    "long": "long Claude Code",
    "short-cc": "short Claude Code",
    "codex": "Codex",
    "swe-agent": "SWE-agent",
    "all": "**all**",
    "held-out": "held out, pooled",
}


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def both(s: dict) -> str:
    """kept (in context) of one strategy's aggregate."""
    return f"{pct(s['kept'])} ({pct(s['in_context'])})"


def main_table(cont: dict, groups: tuple[str, ...], first: str) -> list[str]:
    out = [
        f"| data (sessions, cuts) | {first} | **compactctl now** | in context | head-tail (in context) | "
        "head-tail-fill (in context) | recent | masking | reduction | at or under target | valid |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in groups:
        if g not in cont:
            continue
        a = cont[g]["aggregate"]
        c = a["compactctl"]
        name, sessions = NAMES[g]
        valid = f"{100 * c['valid'] / c['cuts']:.0f}%"
        out.append(
            f"| {name} ({sessions}, {c['cuts']}) | {START[g]} | **{pct(c['kept'])}** | {pct(c['in_context'])} | "
            f"{both(a['head-tail'])} | {both(a['head-tail-fill'])} | {pct(a['recent']['kept'])} | {pct(a['masking']['kept'])} | "
            f"{pct(c['reduction'])} | {c['within_target']}/{c['cuts']} | {valid} |"
        )
    return out


def kinds_line(cont: dict) -> str:
    a = cont["all"]["aggregate"]
    c = a["compactctl"]
    k, s = c["kinds"], c["sources"]
    src = lambda strat: pct(a[strat]["sources"]["output"]["share"])  # noqa: E731
    return (
        f"By kind (all tuned groups): paths {pct(k['path']['share'])}, identifiers {pct(k['identifier']['share'])}, "
        f"commands {pct(k['command']['share'])}, URLs {pct(k['url']['share'])} ({k['url']['needed']} facts), values "
        f"{pct(k['value']['share'])}. By source: {pct(s['written']['share'])} of the facts the person or the agent "
        f"wrote, {pct(s['output']['share'])} of those only in tool outputs (head-tail {src('head-tail')}, head-tail-fill "
        f"{src('head-tail-fill')}, masking {src('masking')}), {pct(s['injected']['share'])} of those only in harness text."
    )


def twice_table(tw: dict) -> list[str]:
    out = [
        "| data (sessions) | needed facts | one compaction | **compacted twice** | head-tail at twice's tokens | "
        "head-tail-fill | tokens twice / before |",
        "|---|---|---|---|---|---|---|",
    ]
    names = {"long": "long Claude Code", "short-cc": "short Claude Code", "codex": "Codex", "swe-agent": "SWE-agent"}
    names |= {"all": "all", "held-out": "held out, pooled"}
    for g, name in names.items():
        if g not in tw:
            continue
        a = tw[g]["aggregate"]
        k = a["kept"]
        out.append(
            f"| {name} ({a['sessions']}) | {a['needed']:,} | {pct(k['once'])} | **{pct(k['twice'])}** | "
            f"{pct(k['head-tail'])} | {pct(k['head-tail-fill'])} | {a['tokens']['twice']:,} / {a['tokens_before']:,} |"
        )
    return out


def targets_table(targets: dict, cont: dict) -> list[str]:
    out = [
        "| data | needed facts | at 50%: compactctl (in context) | head-tail | head-tail-fill (in context) | masking | "
        "reduction | at 80%: compactctl (in context) | head-tail | head-tail-fill (in context) | masking | reduction |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g, name in TARGET_NAMES.items():
        title = cont[g]["title"] if g in cont else None
        rows = [targets.get(f"{p} {title}") or targets.get(f"{p} {title} pooled") for p in ("50%", "80%")]
        if title is None or None in rows:
            continue
        cells = []
        for a in rows:
            c, ht, htf, m = a["compactctl"], a["head-tail"], a["head-tail-fill"], a["masking"]
            cells += [
                f"{pct(c['kept'])} ({pct(c['in_context'])})",
                pct(ht["kept"]),
                f"{pct(htf['kept'])} ({pct(htf['in_context'])})",
                pct(m["kept"]),
                pct(c["reduction"]),
            ]
        out.append(f"| {name} | {rows[0]['compactctl']['needed']:,} | " + " | ".join(cells) + " |")
    return out


def words_table(cont: dict) -> list[str]:
    strategies = ("compactctl", "head-tail", "head-tail-fill", "recent", "masking")
    out = ["| data | needed words | " + " | ".join(strategies) + " |", "|---|---|---|---|---|---|---|"]
    names = {"long": "long Claude Code", "short-cc": "short Claude Code", "codex": "Codex", "swe-agent": "SWE-agent"}
    names |= {"all": "all", "openhands": "held out: OpenHands", "tau-bench": "held out: tau-bench"}
    names |= {"gemini": "held out: Gemini CLI", "held-out": "held out, pooled"}
    for g, name in names.items():
        if g not in cont:
            continue
        a = cont[g]["aggregate"]
        shares = [a[s]["words"]["share"] for s in strategies]
        best = max(shares)
        cells = [f"**{pct(x)}**" if x == best else pct(x) for x in shares]
        out.append(f"| {name} | {a['compactctl']['words']['needed']:,} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench" / "results" / "eval.json"
    d = json.loads(path.read_text())
    cont = d["continuation"]
    if "all" not in cont or "twice" not in d or "targets" not in d:
        raise SystemExit(f"{path}: not a full `make eval` run (the README's tables need every group, twice and targets)")
    c = cont["all"]["aggregate"]["compactctl"]
    print(f"Tuned groups ({c['needed']:,} facts in {c['cuts']} cuts):\n")
    print("\n".join(main_table(cont, TUNED, "compactctl at the start")), end="\n\n")
    print("Held out:\n")
    print("\n".join(main_table(cont, HELD, "compactctl first run")), end="\n\n")
    print(kinds_line(cont), end="\n\n")
    print(
        f"Recovery: {c['recovered']} recovered, kept or recoverable {pct(c['with_recovery'])}; re-discovered "
        f"{pct(c['rediscovered'] / c['needed'])}, kept of the rest {pct(c['kept_not_rediscovered'])}; "
        + ", ".join(f"{s} {pct(cont['all']['aggregate'][s]['kept_not_rediscovered'])}" for s in ("head-tail", "head-tail-fill", "masking")),
        end="\n\n",
    )
    print("\n".join(twice_table(d["twice"])), end="\n\n")
    print("\n".join(targets_table(d["targets"], cont)), end="\n\n")
    print("\n".join(words_table(cont)), end="\n\n")
    for g, v in d.get("probes", {}).items():
        r = v["compactctl (defaults)"]
        print(f"probes: {g}: {pct(r['retention'])} at {pct(r['reduction'])} reduction")


if __name__ == "__main__":
    main()
