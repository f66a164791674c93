"""Scaling benchmark: `compact --workers 1` vs `--workers 2`, and Ray Data on one machine, on the same data.

    python bench/scale.py              # the 100 MB dataset of bench/run.py (generated into bench/data/)
    python bench/scale.py --mb 10      # a quicker look
    python bench/scale.py --repeat 1   # one run of each (default 3, interleaved; the fastest is reported)

Every run is its own process. Wall seconds, records/s, the main process's peak RSS (/usr/bin/time) and,
for --workers, each worker's peak RSS (VmHWM, polled from /proc). The outputs of every run are compared
byte for byte. Ray is timed three ways: the whole command (Ray's start-up included), the first run
alone (after ray.init, workers still importing), and a second run in the same session (warm workers). Results go to bench/results/scale.json and scale.md. Other processes share the machine:
run it when it is quiet, and more than once.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
OPTS = ["--context-window", "32000", "-q"]
sys.path.insert(0, str(HERE))

from run import count, dataset  # noqa: E402


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def timed(cmd: list[str]) -> dict:
    """Wall, CPU, the main process's peak RSS; each child's peak RSS and CPU seconds (polled every 50 ms,
    so a process's last 50 ms may be missed)."""
    peaks: dict[int, float] = {}
    cpus: dict[int, float] = {}
    main_cpu: dict[int, float] = {}
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t0 = time.perf_counter()
        p = subprocess.Popen(
            ["/usr/bin/time", "-f", "%e %U %S %M", "-o", tf.name, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
        )
        done = threading.Event()

        def poll() -> None:
            while not done.is_set():
                for main in _children(p.pid):  # /usr/bin/time -> compactctl -> workers
                    c = _cpu_s(main)
                    if c is not None:
                        main_cpu[main] = c
                    for w in _children(main):
                        m = _hwm_mb(w)
                        if m is not None:
                            peaks[w] = max(peaks.get(w, 0.0), m)
                        c = _cpu_s(w)
                        if c is not None:
                            cpus[w] = c
                time.sleep(0.05)

        th = threading.Thread(target=poll, daemon=True)
        th.start()
        stdout, err = p.communicate()
        done.set()
        th.join()
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {err.decode()[-2000:]}")
        e, u, s, m = tf.read().split()[-4:]
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(float(u) + float(s), 2),
        "main_peak_rss_mb": round(int(m) / 1024, 1),
        "worker_peak_rss_mb": sorted(round(v, 1) for v in peaks.values()),
        "stdout": stdout.decode(),
        "main_cpu_s": round(max(main_cpu.values()), 2) if main_cpu else None,
        "worker_cpu_s": sorted(round(v, 2) for v in cpus.values()),
    }


def digest(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    for f in files:
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


RAY_DRIVER = """
import sys, time, json
t0 = time.perf_counter()
from compactctl import ray as cray
from compactctl.record import Options
cray.init(num_cpus=int(sys.argv[3]))
t1 = time.perf_counter()
st = cray.run_files([sys.argv[1]], sys.argv[2], Options(context_window=32000, count_tokens=False), workers=int(sys.argv[3]), quiet=True)
t2 = time.perf_counter()
# the same again in this Ray session: warm workers (a long-lived driver, a pipeline that runs many datasets)
cray.run_files([sys.argv[1]], sys.argv[2].rstrip("/") + "-again/", Options(context_window=32000, count_tokens=False), workers=int(sys.argv[3]), quiet=True)
t3 = time.perf_counter()
print(json.dumps({"init_s": round(t1 - t0, 2), "run_s": round(t2 - t1, 2), "warm_run_s": round(t3 - t2, 2), **st}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each --workers setting; the fastest is reported")
    args = ap.parse_args()
    data = dataset(args.mb)
    n, msgs = count(data)
    size = data.stat().st_size / 1e6
    out = HERE / "results" / "scale"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rows = []
    digests = {}
    runs: dict[int, list[dict]] = {1: [], 2: []}
    for _ in range(args.repeat):  # interleaved, so that a busy moment of the machine hits both alike
        for w in (1, 2):
            target = out / f"w{w}.jsonl"
            r = timed([PY, "-m", "compactctl", "compact", str(data), *OPTS, "-o", str(target), "--workers", str(w)])
            r.pop("stdout", None)
            runs[w].append(r)
            digests[f"workers {w}"] = digest(target)
            print(w, r, flush=True)
    for w in (1, 2):
        r = dict(min(runs[w], key=lambda x: x["wall_s"]))  # the best of --repeat: the least disturbed run
        r.update(
            engine="local",
            workers=w,
            records_per_s=round(n / r["wall_s"], 1),
            mb_per_s=round(size / r["wall_s"], 2),
            all_walls_s=[x["wall_s"] for x in runs[w]],
            all_cpu_s=[x["cpu_s"] for x in runs[w]],
        )
        rows.append(r)
    if not args.no_ray:
        target = out / "ray"
        r = timed([PY, "-c", RAY_DRIVER, str(data), f"{target}/", "2"])
        split = json.loads(r["stdout"].strip().splitlines()[-1])
        # the process ran twice (cold, then warm): the one-shot command is start-up + the first run
        one_shot = split["init_s"] + split["run_s"]
        r.update(
            engine="ray",
            workers=2,
            driver_wall_both_runs_s=r["wall_s"],
            wall_s=round(one_shot, 2),
            cpu_s=None,
            records_per_s=round(n / one_shot, 1),
            mb_per_s=round(size / one_shot, 2),
            ray_init_s=split["init_s"],
            ray_run_s=split["run_s"],
            ray_warm_run_s=split["warm_run_s"],
            records_per_s_warm=round(n / split["warm_run_s"], 1),
            worker_peak_rss_mb=[],
        )  # Ray's workers are not children of the driver: not polled
        digests["ray (the file under -o DIR/)"] = digest(target)
        rows.append(r)
        r.pop("stdout", None)
        print(r, flush=True)
    w1, w2 = rows[0], rows[1]
    # What the load of the machine changes least: CPU seconds. A conservative model of the 2-worker wall on
    # 2 idle cores: the main process's CPU (start-up, then reading, counted as if nothing overlapped it)
    # plus the busiest worker's CPU; against the 1-worker run's CPU.
    crit = max([*w2["worker_cpu_s"], 0.0]) or None
    model = {
        "workers_1_cpu_s": w1["cpu_s"],
        "workers_2_total_cpu_s": w2["cpu_s"],
        "workers_2_main_cpu_s": w2["main_cpu_s"],
        "workers_2_busiest_worker_cpu_s": crit,
        "modelled_speedup_on_idle_cores": round(w1["cpu_s"] / (crit + (w2["main_cpu_s"] or 0)), 2) if crit else None,
    }
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "dataset_mb": round(size, 1),
        "records": n,
        "messages": msgs,
        "rows": rows,
        "speedup_workers_2_vs_1": round(w1["wall_s"] / w2["wall_s"], 2),
        "cpu_model": model,
        "output_sha256_16": digests,
        "identical_outputs": len(set(digests.values())) == 1,
    }
    if len(rows) > 2:
        ray_row = rows[2]
        result["ray_vs_workers2"] = round(ray_row["wall_s"] / w2["wall_s"], 2)
        result["ray_first_run_without_init_vs_workers2"] = round(ray_row["ray_run_s"] / w2["wall_s"], 2)
        result["ray_warm_run_vs_workers2"] = round(ray_row["ray_warm_run_s"] / w2["wall_s"], 2)
    (HERE / "results" / "scale.json").write_text(json.dumps(result, indent=2))
    lines = [
        "| engine | workers | wall s | CPU s | records/s | MB/s | main peak RSS MB | worker peak RSS MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        label = r["engine"] if r["engine"] != "ray" else "ray (start-up + first run)"
        lines.append(
            f"| {label} | {r['workers']} | {r['wall_s']} | {r['cpu_s'] if r['cpu_s'] is not None else '-'} | {r['records_per_s']} | "
            f"{r['mb_per_s']} | {r['main_peak_rss_mb']} | {', '.join(map(str, r['worker_peak_rss_mb'])) or '-'} |"
        )
        if r["engine"] == "ray":
            lines.append(
                f"| ray (warm: a second run, same session) | 2 | {r['ray_warm_run_s']} | - | {r['records_per_s_warm']} | "
                f"{round(size / r['ray_warm_run_s'], 2)} | - | - |"
            )
    (HERE / "results" / "scale.md").write_text("\n".join(lines) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
