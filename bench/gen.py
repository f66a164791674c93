"""Deterministic generator of long, tool-heavy agent sessions (OpenAI chat format).

    python bench/gen.py session --seed 1 --turns 40 > s.jsonl          # one session file
    python bench/gen.py dataset --seed 1 --mb 100 > d.jsonl            # a dataset of about 100 MB

Sessions have a task with constraints (several languages), parallel tool calls, large JSON and log
outputs, failing and passing test runs, file reads and edits, decisions and identifiers.
"""

from __future__ import annotations

import argparse
import random
import sys

import orjson

TASKS = [
    (
        "Fix the failing date parsing in the billing service and make the test suite pass.",
        [
            "You must not change the public API of billing/api.py.",
            "Never commit directly to main.",
            "Only use the standard library for date handling.",
        ],
    ),
    (
        "Add retry with exponential backoff to the HTTP client in net/client.py.",
        ["Always keep the timeout at 30 seconds.", "Don't add new dependencies.", "Prefer small commits."],
    ),
    (
        "Migrate the settings loader from INI to TOML, keeping old files readable.",
        [
            "Il faut garder la compatibilité avec les anciens fichiers.",
            "Ne modifie pas le format des logs.",
            "Tests must pass on Python 3.10.",
        ],
    ),
    (
        "Speed up the report generator; it takes 40 s on the March export.",
        ["必须保持输出格式不变。", "不要使用多线程。", "Only touch reports/."],
    ),
    (
        "Write a CLI command that exports users to CSV with filters.",
        ["Du musst die bestehenden Tests behalten.", "Nie Passwörter exportieren.", "Use click, not argparse."],
    ),
]
FILES = [
    "billing/api.py",
    "billing/dates.py",
    "billing/tests/test_dates.py",
    "net/client.py",
    "net/retry.py",
    "settings/loader.py",
    "settings/tests/test_loader.py",
    "reports/generate.py",
    "reports/render.py",
    "cli/export.py",
    "cli/tests/test_export.py",
    "pyproject.toml",
    "README.md",
    "docs/usage.md",
]
WORDS = (
    "value result config handler parse window budget record stream buffer token client retry session "
    "export filter render cache index schema table column"
).split()


def _code(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        w = rng.sample(WORDS, 3)
        out.append(f"{'    ' * rng.randint(0, 2)}{w[0]}_{w[1]} = {w[2]}({i}, {rng.randint(0, 999)})")
    return "\n".join(out)


def _pytest(rng: random.Random, fail: bool, n: int) -> str:
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
        f"collected {n} items",
        "",
    ]
    for i in range(n):
        lines.append(f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)}_{i} PASSED [{100 * (i + 1) // n:3d}%]")
    if fail:
        name = rng.choice(WORDS)
        lines += [
            "",
            "=================================== FAILURES ===================================",
            f"_____________________________ test_{name}_edge _____________________________",
            "    def test_edge():",
            f">       assert parse_{name}('2024-02-30') == None",
            f"E       ValueError: day is out of range for month (got '2024-02-30' in {name})",
            f"FAILED tests/test_{name}.py::test_{name}_edge - ValueError: day is out of range for month",
            f"========================= 1 failed, {n - 1} passed in 2.31s =========================",
        ]
    else:
        lines.append(f"============================== {n} passed in 1.94s ==============================")
    return "\n".join(lines)


def _json_blob(rng: random.Random, items: int) -> str:
    return orjson.dumps(
        [
            {
                "id": f"{rng.getrandbits(64):016x}",
                "name": rng.choice(WORDS),
                "score": rng.random(),
                "tags": rng.sample(WORDS, 3),
                "nested": {"a": rng.randint(0, 9), "b": [rng.randint(0, 99) for _ in range(5)]},
            }
            for _ in range(items)
        ],
        option=orjson.OPT_INDENT_2,
    ).decode()


class Session:
    def __init__(self, rng: random.Random, scale: float = 1.0):
        self.rng, self.scale, self.msgs, self.n = rng, scale, [], 0

    def call_id(self) -> str:
        self.n += 1
        return f"call_{self.n:04d}_{self.rng.getrandbits(32):08x}"

    def add_calls(self, calls: list[tuple[str, dict, str]], text: str | None = None) -> None:
        ids = [self.call_id() for _ in calls]
        self.msgs.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": i, "type": "function", "function": {"name": name, "arguments": orjson.dumps(args).decode()}}
                    for i, (name, args, _) in zip(ids, calls, strict=True)
                ],
            }
        )
        for i, (_, _, out) in zip(ids, calls, strict=True):
            self.msgs.append({"role": "tool", "tool_call_id": i, "content": out})


def session(seed: int, turns: int = 30, scale: float = 1.0) -> list[dict]:
    rng = random.Random(seed)
    task, constraints = TASKS[seed % len(TASKS)]
    s = Session(rng, scale)
    s.msgs.append(
        {"role": "system", "content": "You are a coding agent. Use the tools to inspect and change the repository. Report what you did."}
    )
    s.msgs.append(
        {
            "role": "user",
            "content": f"{task}\n\n"
            + "\n".join(constraints)
            + "\nThe repo is at https://git.example.com/acme/app (branch fix/dates-4821).",
        }
    )
    big = lambda k: max(1, int(k * scale))  # noqa: E731
    for turn in range(turns):
        r = rng.random()
        f1, f2 = rng.sample(FILES, 2)
        if r < 0.25:
            s.add_calls(
                [("read_file", {"path": f1}, _code(rng, big(120))), ("read_file", {"path": f2}, _code(rng, big(80)))],
                "Let me read both files in parallel.",
            )
        elif r < 0.45:
            fail = rng.random() < 0.5
            s.add_calls(
                [("terminal", {"command": "python -m pytest -x -q"}, _pytest(rng, fail, big(60)) + f"\nexit code: {1 if fail else 0}")]
            )
            if fail:
                s.msgs.append(
                    {
                        "role": "assistant",
                        "content": f"The test fails because {f1} does not validate the day. I'll fix the validation in {f1} instead of catching the error.",
                    }
                )
        elif r < 0.6:
            s.add_calls(
                [
                    (
                        "patch",
                        {"path": f1, "old_string": _code(rng, 3), "new_string": _code(rng, big(25))},
                        f"Applied patch to {f1}: 1 hunk, +{rng.randint(3, 30)} -{rng.randint(1, 9)} lines",
                    )
                ]
            )
        elif r < 0.7:
            s.add_calls(
                [
                    (
                        "terminal",
                        {"command": f"curl -s http://localhost:{rng.choice([8000, 8080, 5432])}/api/items?limit=200"},
                        _json_blob(rng, big(40)) + "\nexit code: 0",
                    )
                ]
            )
        elif r < 0.8:
            s.add_calls(
                [
                    (
                        "search_files",
                        {"pattern": rng.choice(WORDS), "path": "."},
                        "\n".join(f"{rng.choice(FILES)}:{rng.randint(1, 400)}: {_code(rng, 1)}" for _ in range(big(30))),
                    )
                ]
            )
        elif r < 0.87:
            s.add_calls(
                [
                    (
                        "terminal",
                        {"command": "npm run build"},
                        "\n".join(f"[build] compiling module {i}" for i in range(big(40)))
                        + "\nnpm ERR! code ELIFECYCLE\nError: Cannot find module 'left-pad'\nexit code: 1",
                    )
                ]
            )
        elif r < 0.93:
            s.add_calls([("write_file", {"path": f2, "content": _code(rng, big(60))}, f"Wrote {f2}")])
        else:
            s.msgs.append(
                {
                    "role": "user",
                    "content": rng.choice(
                        [
                            "Also, please keep the changelog updated.",
                            "Can you check whether version 2.4.1 fixed this?",
                            "Don't touch the migrations folder.",
                            "Make sure to run the linter before you finish.",
                        ]
                    ),
                }
            )
            s.msgs.append({"role": "assistant", "content": "Understood. I will keep that in mind and continue with the fix."})
        if turn == turns // 2:
            s.add_calls(
                [
                    (
                        "terminal",
                        {"command": "git log --oneline -3"},
                        "a1b2c3d Fix off-by-one in window\n9f8e7d6 Add retry to client\n4c5d6e7 Initial import\nexit code: 0",
                    )
                ]
            )
    s.msgs.append({"role": "assistant", "content": "The fix is in place and the suite passes locally. Commit a1b2c3d is on the branch."})
    s.msgs.append(
        {
            "role": "user",
            "content": "Great. Now open a pull request against main with a summary of the changes, and only include the billing files.",
        }
    )
    return s.msgs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["session", "dataset"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--scale", type=float, default=1.0, help="size factor of tool outputs")
    ap.add_argument("--mb", type=float, default=10, help="dataset size in MB")
    a = ap.parse_args()
    out = sys.stdout.buffer
    if a.kind == "session":
        for m in session(a.seed, a.turns, a.scale):
            out.write(orjson.dumps(m) + b"\n")
        return
    target, written, k = a.mb * 1e6, 0, 0
    while written < target:
        line = orjson.dumps({"id": f"traj-{a.seed}-{k}", "messages": session(a.seed * 100_003 + k, a.turns, a.scale)}) + b"\n"
        out.write(line)
        written += len(line)
        k += 1


if __name__ == "__main__":
    main()
