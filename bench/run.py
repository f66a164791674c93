"""The benchmark: speed and memory of each phase against the floor and baselines, measured in one run.

    python bench/run.py                 # 10 MB, 100 MB and 1 GB datasets + the LLM --jobs check (~15 min on 2 cores)
    python bench/run.py --sizes 10,100  # a quicker look

Datasets come from bench/gen.py (deterministic) into bench/data/ (not committed). Every command runs
as its own process under /usr/bin/time: wall and CPU seconds, peak RSS. Results go to
bench/results/bench.json and bench/results/bench.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
BUDGET = ["--context-window", "32000"]
# As a user runs it (and as bench/latency.py does): bytecode caches written and used, even where the
# shell exports PYTHONDONTWRITEBYTECODE (then every process compiles compactctl's modules again, ~0.07 s).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t0 = time.perf_counter()
        r = subprocess.run(
            ["/usr/bin/time", "-f", "%e %U %S %M", "-o", tf.name, *cmd],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=ENV,
        )
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr.decode()[-2000:]}")
        e, u, s, m = tf.read().split()[-4:]
    return {"wall_s": round(wall, 3), "cpu_s": round(float(u) + float(s), 3), "peak_rss_mb": round(int(m) / 1024, 1)}


def dataset(mb: int) -> Path:
    path = HERE / "data" / f"d{mb}.jsonl"
    if not path.exists() or path.stat().st_size < mb * 1e6 * 0.99:
        path.parent.mkdir(exist_ok=True)
        with open(path, "wb") as f:
            subprocess.run([PY, str(HERE / "gen.py"), "dataset", "--seed", "1", "--mb", str(mb), "--turns", "60"], stdout=f, check=True)
    return path


def count(path: Path) -> tuple[int, int]:
    n = m = 0
    with open(path, "rb") as f:
        for line in f:
            n += 1
            m += line.count(b'"role"')
    return n, m


def bench_size(mb: int) -> dict:
    path = dataset(mb)
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "compactctl")], cwd=ROOT, env=ENV, check=True)  # as pip install does
    size = path.stat().st_size
    transcripts, messages = count(path)
    out = HERE / "data" / "out.jsonl"
    cc = [PY, "-m", "compactctl"]
    runs = {
        "parse+serialize": timed([PY, str(HERE / "floor.py"), "parse-serialize", str(path)]),
        "floor (parse+tokens)": timed([PY, str(HERE / "floor.py"), "floor", str(path)]),
        "prune": timed([*cc, "prune", str(path), *BUDGET, "-q", "-o", str(out)]),
        "plan": timed([*cc, "plan", str(path), *BUDGET, "-q", "-o", str(out)]),
        "repair": timed([*cc, "repair", str(path), *BUDGET, "-q", "-o", str(out)]),
        "compact (offline)": timed([*cc, "compact", str(path), *BUDGET, "-q", "-o", str(out), "--summarizer", "offline"]),
    }
    out.unlink(missing_ok=True)
    for r in runs.values():
        r["mb_per_s"] = round(size / 1e6 / r["wall_s"], 2)
        r["messages_per_s"] = round(messages / r["wall_s"])
    floor, ps = runs["floor (parse+tokens)"]["wall_s"], runs["parse+serialize"]["wall_s"]
    ratios = {
        "compact / floor": round(runs["compact (offline)"]["wall_s"] / floor, 2),
        "prune / parse+serialize": round(runs["prune"]["wall_s"] / ps, 2),
        "repair / parse+serialize": round(runs["repair"]["wall_s"] / ps, 2),
    }
    return {"mb": round(size / 1e6, 1), "transcripts": transcripts, "messages": messages, "runs": runs, "ratios": ratios}


def bench_llm(n: int = 16, jobs: int = 4, latency: float = 1.0) -> dict:
    sys.path.insert(0, str(ROOT))
    from tests.llm_server import Server

    with tempfile.TemporaryDirectory() as d, Server(latency=latency) as srv:
        data = Path(d) / "llm.jsonl"
        with open(data, "wb") as f:
            subprocess.run(
                [PY, str(HERE / "gen.py"), "dataset", "--seed", "3", "--mb", str(0.2 * n), "--turns", "30"], stdout=f, check=True
            )
        lines = data.read_bytes().splitlines()
        assert len(lines) >= n, len(lines)
        data.write_bytes(b"\n".join(lines[:n]) + b"\n")  # n distinct transcripts, one LLM call each
        base = [
            PY,
            "-m",
            "compactctl",
            "compact",
            str(data),
            "--context-window",
            "4000",
            "--tail-tokens",
            "400",
            "--summary-min",
            "400",
            "--summary-max",
            "800",
            "--llm-model",
            "latency",
            "--base-url",
            srv.url,
            "--jobs",
            str(jobs),
            "-q",
            "--cache-dir",
            str(Path(d) / "cache"),
            "-o",
            str(Path(d) / "o.jsonl"),
        ]
        env = {**os.environ, "OPENAI_API_KEY": "x"}
        t0 = time.perf_counter()
        subprocess.run(base, env=env, check=True, cwd=ROOT)
        cold = time.perf_counter() - t0
        calls = len(srv.requests)
        t0 = time.perf_counter()
        subprocess.run(base, env=env, check=True, cwd=ROOT)
        warm = time.perf_counter() - t0
        ideal = calls * latency / jobs
        return {
            "transcripts": n,
            "jobs": jobs,
            "latency_s": latency,
            "calls": calls,
            "cold_wall_s": round(cold, 2),
            "ideal_s": round(ideal, 2),
            "cold / ideal": round(cold / ideal, 3),
            "warm_wall_s": round(warm, 2),
            "warm_calls": len(srv.requests) - calls,
        }


def markdown(res: dict) -> str:
    out = [f"Machine: {res['machine']}", ""]
    out.append("| dataset | command | wall s | CPU s | MB/s | messages/s | peak RSS MB |")
    out.append("|---|---|---|---|---|---|---|")
    for s in res["sizes"]:
        for name, r in s["runs"].items():
            out.append(
                f"| {s['mb']} MB ({s['transcripts']:,} transcripts) | {name} | {r['wall_s']} | {r['cpu_s']} | {r['mb_per_s']} | {r['messages_per_s']:,} | {r['peak_rss_mb']} |"
            )
    out += ["", "| dataset | compact / floor | prune / parse+serialize | repair / parse+serialize |", "|---|---|---|---|"]
    for s in res["sizes"]:
        r = s["ratios"]
        out.append(f"| {s['mb']} MB | {r['compact / floor']} | {r['prune / parse+serialize']} | {r['repair / parse+serialize']} |")
    if res.get("llm"):
        x = res["llm"]
        out += [
            "",
            f"LLM path: {x['transcripts']} transcripts, {x['calls']} calls at {x['latency_s']} s latency, --jobs {x['jobs']}: "
            f"{x['cold_wall_s']} s against the ideal {x['ideal_s']} s ({x['cold / ideal']}x); warm cache: {x['warm_wall_s']} s, {x['warm_calls']} calls.",
        ]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,100,1000", help="dataset sizes in MB, comma-separated")
    ap.add_argument("--no-llm", action="store_true")
    a = ap.parse_args()
    res = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}",
        "sizes": [bench_size(int(x)) for x in a.sizes.split(",")],
    }
    if not a.no_llm:
        res["llm"] = bench_llm()
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "bench.json").write_text(json.dumps(res, indent=2))
    md = markdown(res)
    (HERE / "results" / "bench.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
