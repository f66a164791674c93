"""`make eval`: continuation scoring (first) and the probe eval (second) over the real corpus, by group.

    python bench/eval_corpus.py                                   # everything: bench/results/eval.md and eval.json
    python bench/eval_corpus.py --only continuation --group long  # one group, continuation only (a few seconds to a minute)
    python bench/eval_corpus.py --only continuation --group long,codex --explain 20
    python bench/eval_corpus.py --only continuation --group codex --window-ratio 1.0 --targets "" --explain-context 30
        # facts compactctl kept but not in context: where they sat, in what form it kept them, and head-tail-fill
        # (held-out groups list none of their facts)

Continuation scoring (`compactctl.continuation`): each session is cut at 40%, 60% and 80% of its
messages; compactctl compacts the prefix with a context window of 0.4 x its tokens (target 20% with the
default threshold); head-tail, head-tail-fill, recent and masking get the same output tokens (head-tail:
the first 3 messages and the last whole groups, tool outputs cut to 500 characters; head-tail-fill: the first
messages for a quarter of the budget and the last for the rest, the boundary groups cut to fit); scored on the paths,
identifiers, commands, URLs and values of the prefix that the continuation writes again. Groups:
  long      the five long Claude Code sessions (claude-code/spotter/<uuid>.jsonl)
  short-cc  short Claude Code sessions (claude-code/agentcmd/*, spotter short/tool_heavy/subagent, spotter */subagents/*)
  codex     Codex rollouts (codex/agentcmd/*)
  swe-agent SWE-agent trajectories (swe-agent/**/*.traj)
held out (never read while tuning; pooled apart as "held-out"):
  openhands OpenHands event streams (openhands/**)
  tau-bench tau-bench airline conversations (openai-chat/tau-bench)
  gemini    Gemini CLI sessions (gemini/**)
  other     mini-swe-agent and Hermes trajectories
"all" pools every cut of the first four groups that ran, "held-out" those of the held-out groups.

The probe eval (`compactctl eval --probes`, facts of what each strategy removed, at a share of each
transcript's tokens; 50% for SWE-agent and tau-bench) runs on its own groups, as before. A partial
run (--only or --group) writes bench/results/eval-partial.{md,json}; a full run eval.{md,json}.
Groups whose files are absent are skipped; COMPACTCTL_CORPUS points to another corpus folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("COMPACTCTL_CORPUS", ROOT.parent / "shared" / "corpus"))  # as the tests
SPOTTER = CORPUS / "claude-code" / "spotter"
LONG = [
    "258c7280-ae70-4798-800f-63464d01a85d",
    "4d5611e5-241a-462a-8d15-5122611a9569",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46",
]

CONTINUATION_GROUPS = {
    "long": ("long Claude Code sessions", [SPOTTER / f"{s}.jsonl" for s in LONG]),
    "short-cc": (
        "short Claude Code sessions and subagents",
        sorted((CORPUS / "claude-code/agentcmd").glob("*.jsonl"))
        + [SPOTTER / n for n in ("short.jsonl", "tool_heavy.jsonl", "subagent.jsonl")]
        + sorted(SPOTTER.glob("*/subagents/*.jsonl")),
    ),
    "codex": ("Codex rollouts", sorted((CORPUS / "codex/agentcmd").glob("*.jsonl"))),
    "swe-agent": ("SWE-agent trajectories", sorted((CORPUS / "swe-agent").rglob("*.traj"))),
    # Held out: never read while tuning compaction (added to the eval in issue 9's fifth session, measured once
    # before anything was looked at); pooled apart from the groups above.
    "openhands": ("held out: OpenHands trajectories", sorted((CORPUS / "openhands").rglob("*.json*"))),
    "tau-bench": ("held out: tau-bench airline conversations", [CORPUS / "openai-chat/tau-bench/gpt-4o-airline.json"]),
    "gemini": ("held out: Gemini CLI sessions", sorted((CORPUS / "gemini").rglob("*.json"))),
    "other": (
        "held out: mini-swe-agent and Hermes trajectories",
        [CORPUS / "mini-swe-agent/github_issue.traj.json", CORPUS / "hermes/lucifexia/trajectory_samples.jsonl"],
    ),
}
HELD_OUT = {"openhands", "tau-bench", "gemini", "other"}

SHORT = {"SWE-agent trajectories (22)", "tau-bench airline (200)"}  # probe eval at 50%
PROBE_GROUPS = {
    "long Claude Code sessions (5)": [SPOTTER / f"{s}.jsonl" for s in LONG],
    "Codex rollouts + short Claude Code (10)": sorted((CORPUS / "codex/agentcmd").glob("*.jsonl"))
    + sorted((CORPUS / "claude-code/agentcmd").glob("*.jsonl")),
    "SWE-agent trajectories (22)": sorted((CORPUS / "swe-agent").rglob("*.traj")),
    "tau-bench airline (200)": [CORPUS / "openai-chat/tau-bench/gpt-4o-airline.json"],
    "bundled samples": [ROOT / "sample_transcripts" / n for n in ("long_session.jsonl", "parallel_calls.jsonl", "dataset.jsonl")],
}


def run_probes(files: list[Path], ratio: float, extra: list[str], strategies: str) -> dict:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "compactctl",
            "eval",
            "--probes",
            *map(str, files),
            "--ratio",
            str(ratio),
            "--json",
            "--strategies",
            strategies,
            *extra,
        ],
        capture_output=True,
        cwd=ROOT,
    )
    if r.returncode != 0:
        raise SystemExit(r.stderr.decode())
    return json.loads(r.stdout)["aggregate"]


def brief_rows(rows: list[dict]) -> list[dict]:
    """Per-cut figures without the fact lists (eval.json stays small)."""
    return [
        {
            "transcript": r["transcript"],
            "cut": r["cut"],
            "cut_index": r["cut_index"],
            "tokens_before": r["tokens_before"],
            "needed": len(r["facts"]),
            **{f"{n}_kept": sum(s["kept"]) for n, s in r["strategies"].items()},
            **{f"{n}_tokens": s["tokens_after"] for n, s in r["strategies"].items()},
            "compactctl_cannot_fit": r["strategies"]["compactctl"]["cannot_fit"],
        }
        for r in rows
    ]


def present(groups: dict[str, tuple[str, list[Path]]], names: list[str]) -> Iterator[tuple[str, str, list[Path]]]:
    """(key, title, files) of each named group, with the files this corpus has; a group with none is left out."""
    for key in names:
        title, files = groups[key]
        files = [f for f in files if f.exists()]
        if files:
            yield key, title, files


def pools(ran: set[str]) -> list[tuple[str, str, set[str]]]:
    """The pooled rows of a run (key, title, groups): every group but the held-out ones, and the held-out ones."""
    return [("all", "all groups", ran - HELD_OUT), ("held-out", "held-out groups", ran & HELD_OUT)]


def continuation_part(
    names: list[str], cuts: list[float], window_ratio: float, explain: int, explain_context: int = 0
) -> tuple[dict, list[str]]:
    from compactctl import continuation
    from compactctl.tokens import make_counter

    counter = make_counter("gpt-4o")
    out: dict = {}
    md: list[str] = []
    pooled: dict[str, list] = {}
    settings = f"cuts {', '.join(f'{c:.0%}' for c in cuts)}; compactctl (defaults, offline) with a context window of {window_ratio:g} x the prefix's tokens; baselines at its output tokens"
    md += ["## Continuation scoring", "", settings, ""]
    for key, title, files in present(CONTINUATION_GROUPS, names):
        t0 = time.time()
        res = continuation.evaluate_files([str(f) for f in files], cuts=cuts, window_ratio=window_ratio, counter=counter)
        dt = time.time() - t0
        pooled[key] = res["rows"]
        sessions = len({r["transcript"] for r in res["rows"]})
        out[key] = {
            "title": title,
            "sessions": sessions,
            "seconds": round(dt, 1),
            "aggregate": res["aggregate"],
            "rows": brief_rows(res["rows"]),
        }
        md += [
            f"### {title} ({sessions} sessions, {len(res['rows'])} cuts)",
            "",
            continuation.tables(res["aggregate"]),
            "",
            "Per session:",
            "",
            continuation.per_transcript(res["rows"], continuation.STRATEGIES),
            "",
        ]
        if (explain or explain_context) and key in HELD_OUT:
            md += ["(held out: its facts are not listed)", ""]
        elif explain:
            md += [f"Facts compactctl lost (first {explain}):", ""] + ["- " + x for x in continuation.explain(res["rows"], explain)] + [""]
        if explain_context and key not in HELD_OUT:
            ctx = continuation.explain(res["rows"], explain_context, what="context", versus="head-tail-fill")
            md += [
                f"Facts compactctl kept but not in context (first {explain_context}; in what form it kept them, and head-tail-fill):",
                "",
            ]
            md += ["- " + x for x in ctx] + [""]
        print(f"{key}: {len(res['rows'])} cuts in {dt:.1f} s", file=sys.stderr)
    for key, title, keys in pools(set(out)):
        rows = [r for k, rs in pooled.items() if k in keys for r in rs]
        if len(keys) > 1:
            agg = continuation.aggregate(rows, continuation.STRATEGIES)
            out[key] = {"title": title, "sessions": len({r["transcript"] for r in rows}), "aggregate": agg}
            md += [f"### {title} pooled ({out[key]['sessions']} sessions, {len(rows)} cuts)", "", continuation.tables(agg), ""]
    return out, md


def twice_part(names: list[str], window_ratio: float) -> tuple[dict, list[str]]:
    """Compacting twice (compactctl.twice): at 40%, carried on to 80% and compacted again, per group and pooled."""
    from compactctl import formats, twice
    from compactctl.tokens import make_counter

    counter = make_counter("gpt-4o")
    out: dict = {}
    rows: dict[str, list] = {}
    for key, title, files in present(CONTINUATION_GROUPS, names):
        t0 = time.time()
        res = twice.evaluate(formats.Reader().read([str(f) for f in files]), counter, window_ratio=window_ratio)
        rows[key] = res["rows"]
        out[key] = {"title": title, "aggregate": res["aggregate"], "rows": res["rows"]}
        print(f"twice {key}: {len(res['rows'])} sessions in {time.time() - t0:.1f} s", file=sys.stderr)
    for key, title, keys in pools(set(out)):
        if len(keys) > 1:
            out[key] = {"title": f"{title} pooled", "aggregate": twice.aggregate([r for k in keys for r in rows[k]])}
    md = [
        "## Compacting twice",
        "",
        f"compacted at 40% (window {window_ratio:g} x that prefix), carried on to 80% and compacted again with the window one"
        " compaction of the 80% prefix gets; scored on what the continuation after 80% uses (the facts above)",
        "",
        twice.table({v["title"]: v["aggregate"] for v in out.values()}),
        "",
    ]
    return out, md


def targets_part(names: list[str], ratios: list[float]) -> tuple[dict, list[str]]:
    """Continuation scoring at other targets: the same cuts with larger context windows (a prefix nearer its target,
    as most real compactions are), per group and pooled. A change that helps at the 20% target and costs here is
    tuned to one regime of the eval (a summary instead of pruning alone, measured in the twenty-seventh session)."""
    from compactctl import continuation
    from compactctl.tokens import make_counter

    counter = make_counter("gpt-4o")
    shown = ("compactctl", "head-tail", "head-tail-fill", "recent", "masking")
    out: dict = {}
    table: list[list[str]] = []
    for ratio in ratios:
        target = f"{ratio * 0.5:.0%}"  # the default threshold: the target is half the window
        rows: dict[str, list] = {}
        for key, _, files in present(CONTINUATION_GROUPS, names):
            t0 = time.time()
            rows[key] = continuation.evaluate_files([str(f) for f in files], window_ratio=ratio, counter=counter)["rows"]
            print(f"target {target} {key}: {len(rows[key])} cuts in {time.time() - t0:.1f} s", file=sys.stderr)
        groups = [(CONTINUATION_GROUPS[k][0], [k]) for k in rows]
        groups += [(f"{t} pooled", sorted(ks)) for _, t, ks in pools(set(rows)) if len(ks) > 1]
        for title, keys in groups:
            agg = continuation.aggregate([r for k in keys for r in rows[k]], shown)
            out[f"{target} {title}"] = agg
            c = agg["compactctl"]
            table.append(
                [target, title, str(c["cuts"]), f"{c['needed']:,}", *(continuation.pct(agg[s]["kept"]) for s in shown)]
                + [continuation.pct(c["reduction"]), str(c["cannot_fit"])]
            )
    md = [
        "## Other targets",
        "",
        "the cuts above with a context window of "
        + " and ".join(f"{r:g}" for r in ratios)
        + " x the prefix's tokens (targets of "
        + " and ".join(f"{r * 0.5:.0%}" for r in ratios)
        + " of it); baselines at compactctl's output tokens",
        "",
        continuation.md_table(["target", "group", "cuts", "needed facts", *shown, "reduction (compactctl)", "cannot fit"], table),
        "",
    ]
    return out, md


def probes_part(ratio: float, llm: bool) -> tuple[dict, list[str]]:
    from compactctl.evaluate import table

    out, md = {}, ["## Probe eval", ""]
    for group, all_files in PROBE_GROUPS.items():
        files = [f for f in all_files if f.exists()]
        if not files:
            continue
        t0 = time.time()
        r = max(ratio, 0.5) if group in SHORT else ratio
        base = run_probes(files, r, [], "compactctl,head-tail,masking" + (",compactctl-llm" if llm else ""))
        strict = run_probes(files, r, ["--last-ask", "tail"], "compactctl")
        rows = {"compactctl (defaults)": base.pop("compactctl"), "compactctl --last-ask tail": strict["compactctl"], **base}
        out[group] = rows
        md += [f"**{group}**, budget {r:.0%} of each transcript's tokens", "", table(rows), ""]
        print(f"probes {group}: {time.time() - t0:.1f} s", file=sys.stderr)
    return out, md


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("continuation", "probes"), help="run only one of the two evals")
    ap.add_argument(
        "--group", default=",".join(CONTINUATION_GROUPS), help=f"continuation groups, comma-separated ({', '.join(CONTINUATION_GROUPS)})"
    )
    ap.add_argument("--cuts", default="0.4,0.6,0.8")
    ap.add_argument("--window-ratio", type=float, default=0.4)
    ap.add_argument(
        "--targets", default="1.0,1.6", help="other context windows (x the prefix's tokens) for the 'Other targets' table; empty: none"
    )
    ap.add_argument("--explain", type=int, default=0, help="list N facts compactctl lost per group")
    ap.add_argument(
        "--explain-context",
        type=int,
        default=0,
        help="list N facts compactctl kept but not in context per group: where they sat, the form its output shows them in",
    )
    ap.add_argument("--ratio", type=float, default=0.2, help="probe eval budget")
    ap.add_argument("--llm", action="store_true", help="probe eval: also compactctl-llm (needs OPENAI_API_KEY or OPENAI_BASE_URL)")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    names = [g.strip() for g in a.group.split(",") if g.strip()]
    unknown = [g for g in names if g not in CONTINUATION_GROUPS]
    if unknown:
        raise SystemExit(f"unknown group(s) {', '.join(unknown)}; known: {', '.join(CONTINUATION_GROUPS)}")
    partial = bool(a.only) or set(names) != set(CONTINUATION_GROUPS)
    for key in sorted(set(names) - {k for k, _, _ in present(CONTINUATION_GROUPS, names)}):
        print(f"skipped {key}: no files", file=sys.stderr)
    out: dict = {}
    md: list[str] = []
    if a.only != "probes":
        out["continuation"], part = continuation_part(
            names, [float(x) for x in a.cuts.split(",")], a.window_ratio, a.explain, a.explain_context
        )
        md += part
        out["twice"], part = twice_part(names, a.window_ratio)
        md += part
        out["targets"], part = targets_part(names, [float(x) for x in a.targets.split(",") if x])
        md += part
    if a.only != "continuation":
        out["probes"], part = probes_part(a.ratio, a.llm)
        md += part
    res = ROOT / "bench" / "results"
    res.mkdir(parents=True, exist_ok=True)
    stem = "eval-partial" if partial else "eval"
    (res / f"{stem}.json").write_text(json.dumps(out, indent=2))
    (res / f"{stem}.md").write_text("\n".join(md))
    print("\n".join(md))
    print(f"written: {res / stem}.md, {res / stem}.json", file=sys.stderr)


if __name__ == "__main__":
    main()
