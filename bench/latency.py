"""Start-up and per-file latency, measured in one run (`make bench-latency`).

    python bench/latency.py               # every check, 7 runs each (the minimum is reported)
    python bench/latency.py --runs 3      # quicker
    python bench/latency.py --json        # machine-readable

What it runs, each as fresh processes (the way a hook or CI step runs the tool):
- `python -c pass` (the interpreter's own start-up, for reference), `compactctl --version`,
  `compactctl --help`, `compactctl compact` on a one-message file, and the four-stage pipe
  `prune | plan | summarize | repair` on the same file;
- one `compact` process per long Claude Code session of the corpus (../shared/corpus, the five
  UUID-named files of claude-code/spotter/), against the floor: one process that reads, parses
  (orjson) and counts the tokens of every message of the same five files.
Wall time is the minimum over the runs (other work on the machine only ever adds to it); CPU time
(user + system, of the process and its children) is the minimum too. The per-user rank cache
exists before timing starts (a first run builds it once, ~1 s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
CLI = [PY, "-m", "compactctl"]
CORPUS = Path(os.environ.get("COMPACTCTL_CORPUS", ROOT.parent / "shared" / "corpus"))
SESSIONS = CORPUS / "claude-code" / "spotter"
# As a user runs it: bytecode caches written and used (some shells export PYTHONDONTWRITEBYTECODE).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl$")


def run_once(cmd: list[str] | str, shell: bool = False) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU: the process and every descendant it waited for)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(
        cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, executable="/bin/bash" if shell else None, env=ENV
    )
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed ({p.returncode}): {err.decode()[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime


def best(cmd, runs: int, shell: bool = False) -> dict:
    walls, cpus = zip(*(run_once(cmd, shell) for _ in range(runs)), strict=True)
    return {"wall_s": round(min(walls), 4), "cpu_s": round(min(cpus), 4), "median_wall_s": round(sorted(walls)[len(walls) // 2], 4)}


FLOOR = r"""
import sys, orjson
from compactctl.tokens import make_counter
c = make_counter("gpt-4o")
def walk(v):
    if isinstance(v, str):
        return c.text(v)
    if isinstance(v, list):
        return sum(walk(x) for x in v)
    if isinstance(v, dict):
        return sum(walk(x) for k, x in v.items() if k not in ("signature", "id", "tool_use_id", "type"))
    return 0
total = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                rec = orjson.loads(line)
                m = rec.get("message") if isinstance(rec, dict) else None
                if isinstance(m, dict):
                    total += walk(m.get("content")) + 4
print(total, file=sys.stderr)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results: dict = {"runs": args.runs, "python": sys.version.split()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small.jsonl"
        small.write_text('{"role": "user", "content": "Fix the failing test in tests/test_api.py, please."}\n')
        # Warm-up: the rank cache and the bytecode caches exist before anything is timed.
        subprocess.run([*CLI, "compact", "-q", str(small)], check=True, stdout=subprocess.DEVNULL, env=ENV)
        subprocess.run(
            [*CLI, "compact", "-q", "sample_transcripts/long_session.jsonl"], check=True, stdout=subprocess.DEVNULL, env=ENV, cwd=ROOT
        )
        s = str(small)
        q = " ".join(CLI)
        checks = {
            "python -c pass": ([PY, "-c", "pass"], False),
            "compactctl --version": ([*CLI, "--version"], False),
            "compactctl --help": ([*CLI, "--help"], False),
            "compact (1 message)": ([*CLI, "compact", s], False),
            # An LLM configured (nothing listens there: the message fits, so no call is made, nor openai imported).
            "compact (1 message, an LLM configured)": ([*CLI, "compact", s, "--base-url", "http://127.0.0.1:9/v1"], False),
            "prune \\| plan \\| summarize \\| repair (1 message)": (f"{q} prune {s} | {q} plan | {q} summarize | {q} repair", True),
        }
        for name, (cmd, shell) in checks.items():
            results[name] = best(cmd, args.runs, shell)
        files = sorted(str(p) for p in SESSIONS.glob("*.jsonl") if UUID.match(p.name)) if SESSIONS.is_dir() else []
        if files:
            out = Path(tmp) / "out.jsonl"
            per_file = " && ".join(f"{q} compact -q --on-error skip {f} -o {out}" for f in files)
            results["sessions"] = {"files": len(files), "bytes": sum(os.path.getsize(f) for f in files)}
            results["floor (parse + tokenize, one process)"] = best([PY, "-c", FLOOR, *files], max(3, args.runs // 2))
            results["compact, one process per session"] = best(per_file, max(3, args.runs // 2), shell=True)
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(f"Python {results['python']}, {results['cpus']} CPUs; minimum of {args.runs} runs (wall, CPU = user + system)\n")
    print("| check | wall s (min) | CPU s (min) | wall s (median) |")
    print("|---|---|---|---|")
    for k, v in results.items():
        if isinstance(v, dict) and "wall_s" in v:
            print(f"| {k} | {v['wall_s']:.3f} | {v['cpu_s']:.3f} | {v['median_wall_s']:.3f} |")
    if "sessions" in results:
        f = results["floor (parse + tokenize, one process)"]
        c = results["compact, one process per session"]
        print(
            f"\n{results['sessions']['files']} sessions, {results['sessions']['bytes'] / 1e6:.1f} MB: "
            f"compact per file / floor = {c['wall_s'] / f['wall_s']:.2f}x wall, {c['cpu_s'] / f['cpu_s']:.2f}x CPU"
        )


if __name__ == "__main__":
    main()
