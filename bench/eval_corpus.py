"""`make eval`: compactctl eval over the real corpus, by group, against the baselines.

    python bench/eval_corpus.py [--ratio 0.2] [--llm]     # writes bench/results/eval.md and eval.json

Groups: the five long Claude Code sessions; the short Claude Code and Codex sessions; SWE-agent
trajectories; tau-bench (200 conversations); the bundled samples. Each row is one strategy at the
same budget (`--ratio` of each transcript's tokens; 50% for SWE-agent and tau-bench, whose system
prompt and task alone exceed 20% of these short transcripts: no strategy that keeps the system
prompt can reach 20% there). Two compactctl rows: the defaults, and with
`--last-ask summary --summary-ratio 0.5`. Groups whose files are absent are skipped.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
LONG = ["258c7280-ae70-4798-800f-63464d01a85d", "4d5611e5-241a-462a-8d15-5122611a9569", "8463c716-a2ea-4c14-9efa-87158ebd9f20",
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04", "fa812bfe-b295-4cca-9c2f-fdf01028cb46"]
SHORT = {"SWE-agent trajectories (22)", "tau-bench airline (200)"}  # evaluated at 50%
GROUPS = {
    "long Claude Code sessions (5)": [CORPUS / f"claude-code/spotter/{s}.jsonl" for s in LONG],
    "Codex rollouts + short Claude Code (10)": sorted((CORPUS / "codex/agentcmd").glob("*.jsonl")) + sorted((CORPUS / "claude-code/agentcmd").glob("*.jsonl")),
    "SWE-agent trajectories (22)": sorted((CORPUS / "swe-agent").rglob("*.traj")),
    "tau-bench airline (200)": [CORPUS / "openai-chat/tau-bench/gpt-4o-airline.json"],
    "bundled samples": [ROOT / "sample_transcripts" / n for n in ("long_session.jsonl", "parallel_calls.jsonl", "dataset.jsonl")],
}


def run(files: list[Path], ratio: float, extra: list[str], strategies: str) -> dict:
    r = subprocess.run([sys.executable, "-m", "compactctl", "eval", *map(str, files), "--ratio", str(ratio), "--json",
                        "--strategies", strategies, *extra], capture_output=True, cwd=ROOT)
    if r.returncode != 0:
        raise SystemExit(r.stderr.decode())
    return json.loads(r.stdout)["aggregate"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ratio", type=float, default=0.2)
    ap.add_argument("--llm", action="store_true", help="also compactctl-llm (needs OPENAI_API_KEY or OPENAI_BASE_URL)")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from compactctl.evaluate import table

    out, md = {}, []
    for group, files in GROUPS.items():
        files = [f for f in files if f.exists()]
        if not files:
            continue
        ratio = max(a.ratio, 0.5) if group in SHORT else a.ratio
        base = run(files, ratio, [], "compactctl,head-tail,masking" + (",compactctl-llm" if a.llm else ""))
        tuned = run(files, ratio, ["--last-ask", "summary", "--summary-ratio", "0.5"], "compactctl")
        rows = {"compactctl (defaults)": base.pop("compactctl"), "compactctl --last-ask summary --summary-ratio 0.5": tuned["compactctl"], **base}
        out[group] = rows
        md += [f"**{group}**, budget {ratio:.0%} of each transcript's tokens", "", table(rows), ""]
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "eval.json").write_text(json.dumps(out, indent=2))
    (ROOT / "bench" / "results" / "eval.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
