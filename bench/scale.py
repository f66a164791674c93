"""Scaling benchmark: `compact --workers 1` vs `--workers 2`, and Ray Data on one machine, on the same data.

    python bench/scale.py                # the 100 MB dataset of bench/run.py (generated into bench/data/)
    python bench/scale.py --mb 10        # a quicker look
    python bench/scale.py --repeat 1     # one round (default 3)
    python bench/scale.py --boost        # every timed run at autogroup nice -10 (root): the other sessions
                                         # on a shared machine take less of the CPU (closer to an idle machine)

Each round runs, one after the other, on the same file: `--workers 1`, `--workers 2`, "ideal 2" (the file cut
in two halves at a line, two independent `--workers 1` processes at once: what two cores give this work
here and now with no coordination at all) and the Ray engine (2 workers) in one driver process that runs it
twice (start-up, first run, warm second run: Ray up and its task workers loaded; each run builds its own
Compactors, so the second does not reuse the first one's token-count memo of the same records, which made
repeating a record ~2x cheaper). Ratios are taken within a round (the same load on the machine)
and reported as min and median over the rounds. Every run is its own process; its whole process tree is
polled from /proc every 50 ms for CPU seconds and each process's peak RSS (VmHWM). The outputs of every run
are compared byte for byte. The load average and CPU pressure before each run are recorded. Results go to
bench/results/scale.json and scale.md. Other processes share the machine: read the load with the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
OPTS = ["--context-window", "32000", "-q"]
TICK = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, str(HERE))

from run import count, dataset  # noqa: E402


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def _tree(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += _children(p)
    return seen


def _stat(pid: int) -> tuple[str, float, float] | None:
    """(name, CPU seconds, peak RSS MB) of a live process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            head, rest = f.read().rsplit(")", 1)
        fields = rest.split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime + stime
        hwm = 0.0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) / 1024
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().split(b"\0")
        return head.split("(", 1)[1] + " " + b" ".join(cmd[1:4]).decode(errors="replace")[:80], cpu, hwm
    except (OSError, IndexError, ValueError):
        return None


def _load() -> dict:
    la = os.getloadavg()
    out = {"load1": round(la[0], 2), "load5": round(la[1], 2)}
    try:
        with open("/proc/pressure/cpu") as f:
            out["cpu_pressure_some_avg10"] = float(f.readline().split()[1].split("=")[1])
    except (OSError, IndexError, ValueError):
        pass
    return out


BOOST = 'echo -10 > /proc/self/autogroup && exec "$@"'


def timed(cmd: list[str], boost: bool) -> dict:
    """Wall and CPU seconds of the whole process tree; each process's peak RSS and CPU (polled every 50 ms:
    a process's last 50 ms may be missed). With `boost`, in a session of its own at autogroup nice -10."""
    procs: dict[int, tuple[str, float, float]] = {}
    load = _load()
    if boost:
        cmd = ["setsid", "sh", "-c", BOOST, "sh", *cmd]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            for pid in _tree(p.pid):
                s = _stat(pid)
                if s is not None:
                    old = procs.get(pid)
                    procs[pid] = (s[0], max(s[1], old[1] if old else 0.0), max(s[2], old[2] if old else 0.0))
            time.sleep(0.05)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    stdout, err = p.communicate()
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode()[-2000:]}")
    main = procs.get(p.pid)
    kids = {pid: v for pid, v in procs.items() if pid != p.pid}
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(sum(v[1] for v in procs.values()), 2),
        "main_cpu_s": round(main[1], 2) if main else None,
        "main_peak_rss_mb": round(main[2], 1) if main else None,
        "children": sorted(([round(v[1], 2), round(v[2], 1), v[0]] for v in kids.values() if v[1] >= 0.05), reverse=True),
        "load_before": load,
        "stdout": stdout.decode(),
    }


def digest(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    for f in files:
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def halves(data: Path) -> tuple[Path, Path]:
    """The file cut in two at the line nearest its middle byte (for the "ideal 2" reference)."""
    a, b = data.with_suffix(".half1.jsonl"), data.with_suffix(".half2.jsonl")
    if not (a.exists() and b.exists() and a.stat().st_size + b.stat().st_size == data.stat().st_size):
        raw = data.read_bytes()
        cut = raw.index(b"\n", len(raw) // 2) + 1
        a.write_bytes(raw[:cut])
        b.write_bytes(raw[cut:])
    return a, b


IDEAL_DRIVER = """
import subprocess, sys
py, a, b, oa, ob, *opts = sys.argv[1:]
ps = [subprocess.Popen([py, "-m", "compactctl", "compact", f, *opts, "-o", o, "--workers", "1"]) for f, o in ((a, oa), (b, ob))]
sys.exit(max(p.wait() for p in ps))
"""

RAY_DRIVER = """
import sys, time, json
t0 = time.perf_counter()
from compactctl import ray as cray
from compactctl.record import Options
cray.init(num_cpus=int(sys.argv[3]))
t1 = time.perf_counter()
opts = Options(context_window=32000, count_tokens=False)
st = cray.run_files([sys.argv[1]], sys.argv[2], opts, workers=int(sys.argv[3]), quiet=True)
t2 = time.perf_counter()
# the same again in this Ray session: warm workers (a long-lived driver, a pipeline that runs many datasets)
cray.run_files([sys.argv[1]], sys.argv[2].rstrip("/") + "-again/", opts, workers=int(sys.argv[3]), quiet=True)
t3 = time.perf_counter()
print(json.dumps({"init_s": round(t1 - t0, 2), "run_s": round(t2 - t1, 2), "warm_run_s": round(t3 - t2, 2), **st}))
"""


def _mm(xs: list[float]) -> dict:
    return {"min": round(min(xs), 2), "median": round(statistics.median(xs), 2), "all": [round(x, 2) for x in xs]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (each runs every engine once)")
    ap.add_argument("--boost", action="store_true", help="run each timed command at autogroup nice -10 (needs root)")
    args = ap.parse_args()
    data = dataset(args.mb)
    half_a, half_b = halves(data)
    n, msgs = count(data)
    size = data.stat().st_size / 1e6
    out = HERE / "results" / "scale"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    digests: dict[str, str] = {}
    rounds: list[dict] = []
    for k in range(args.repeat):
        rnd: dict = {}
        for w in (1, 2):
            target = out / f"w{w}.jsonl"
            r = timed([PY, "-m", "compactctl", "compact", str(data), *OPTS, "-o", str(target), "--workers", str(w)], args.boost)
            r.pop("stdout")
            rnd[f"workers{w}"] = r
            digests[f"workers {w}"] = digest(target)
            print(k, f"workers {w}", json.dumps(r), flush=True)
        oa, ob = out / "half1.jsonl", out / "half2.jsonl"
        r = timed([PY, "-c", IDEAL_DRIVER, PY, str(half_a), str(half_b), str(oa), str(ob), *OPTS], args.boost)
        r.pop("stdout")
        rnd["ideal2"] = r
        digests["ideal 2 (the halves, concatenated)"] = hashlib.sha256(oa.read_bytes() + ob.read_bytes()).hexdigest()[:16]
        print(k, "ideal 2", json.dumps(r), flush=True)
        if not args.no_ray:
            target = out / f"ray{k}"
            r = timed([PY, "-c", RAY_DRIVER, str(data), f"{target}/", "2"], args.boost)
            r.update(json.loads(r.pop("stdout").strip().splitlines()[-1]))
            r["one_shot_s"] = round(r["init_s"] + r["run_s"], 2)  # the command as a user runs it: start-up + one run
            rnd["ray"] = r
            digests["ray (the file under -o DIR/)"] = digest(target)
            print(k, "ray", json.dumps(r), flush=True)
        rounds.append(rnd)
    w1 = [r["workers1"] for r in rounds]
    w2 = [r["workers2"] for r in rounds]
    ideal = [r["ideal2"] for r in rounds]
    summary: dict = {
        "workers1_wall_s": _mm([r["wall_s"] for r in w1]),
        "workers2_wall_s": _mm([r["wall_s"] for r in w2]),
        "ideal2_wall_s": _mm([r["wall_s"] for r in ideal]),
        "workers1_records_per_s": _mm([n / r["wall_s"] for r in w1]),
        "workers2_records_per_s": _mm([n / r["wall_s"] for r in w2]),
        "speedup_workers2_vs_1": _mm([a["wall_s"] / b["wall_s"] for a, b in zip(w1, w2, strict=True)]),
        "speedup_ideal2_vs_workers1": _mm([a["wall_s"] / b["wall_s"] for a, b in zip(w1, ideal, strict=True)]),
        "workers2_vs_ideal2_wall": _mm([b["wall_s"] / i["wall_s"] for b, i in zip(w2, ideal, strict=True)]),
        "workers1_cpu_s": _mm([r["cpu_s"] for r in w1]),
        "workers2_cpu_s": _mm([r["cpu_s"] for r in w2]),
        "workers2_main_cpu_s": _mm([r["main_cpu_s"] or 0 for r in w2]),
        "workers1_peak_rss_mb": max(r["main_peak_rss_mb"] or 0 for r in w1),
        "workers2_worker_peak_rss_mb": sorted({c[1] for r in w2 for c in r["children"]}),
        "workers2_main_peak_rss_mb": max(r["main_peak_rss_mb"] or 0 for r in w2),
        "load1_before_runs": _mm([r["load_before"]["load1"] for rnd in rounds for r in rnd.values()]),
    }
    if not args.no_ray:
        ray = [r["ray"] for r in rounds]
        summary.update(
            {
                "ray_init_s": _mm([r["init_s"] for r in ray]),
                "ray_first_run_s": _mm([r["run_s"] for r in ray]),
                "ray_warm_run_s": _mm([r["warm_run_s"] for r in ray]),
                "ray_one_shot_s": _mm([r["one_shot_s"] for r in ray]),
                # the engine's steady per-run cost: a warm run (Ray up, workers loaded) against --workers 2
                "ray_warm_vs_workers2": _mm([r["warm_run_s"] / b["wall_s"] for r, b in zip(ray, w2, strict=True)]),
                "ray_first_run_vs_workers2": _mm([r["run_s"] / b["wall_s"] for r, b in zip(ray, w2, strict=True)]),
                "ray_one_shot_vs_workers2": _mm([r["one_shot_s"] / b["wall_s"] for r, b in zip(ray, w2, strict=True)]),
                "ray_driver_peak_rss_mb": max(r["main_peak_rss_mb"] or 0 for r in ray),
            }
        )
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "boost": args.boost,
        "dataset_mb": round(size, 1),
        "records": n,
        "messages": msgs,
        "summary": summary,
        "rounds": rounds,
        "output_sha256_16": digests,
        "identical_outputs": len(set(digests.values())) == 1,
    }
    (HERE / "results" / "scale.json").write_text(json.dumps(result, indent=2))
    lines = [
        "| round | load1 | w1 wall s | w2 wall s | ideal 2 wall s | w2/w1 speedup | ideal/w1 | w2 CPU s (main) | "
        "ray start-up s | ray first run s | ray warm s | ray warm / w2 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k, rnd in enumerate(rounds):
        a, b, i, r = rnd["workers1"], rnd["workers2"], rnd["ideal2"], rnd.get("ray")
        lines.append(
            f"| {k + 1} | {a['load_before']['load1']} | {a['wall_s']} | {b['wall_s']} | {i['wall_s']} | "
            f"{a['wall_s'] / b['wall_s']:.2f} | {a['wall_s'] / i['wall_s']:.2f} | {b['cpu_s']} ({b['main_cpu_s']}) | "
            + (f"{r['init_s']} | {r['run_s']} | {r['warm_run_s']} | {r['warm_run_s'] / b['wall_s']:.2f} |" if r else "- | - | - | - |")
        )
    (HERE / "results" / "scale.md").write_text("\n".join(lines) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "rounds"}, indent=2))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
