"""Reference costs measured beside compactctl in the same run.

python bench/floor.py floor FILE            read + orjson parse + count every message's tokens once
python bench/floor.py parse-serialize FILE  read + orjson parse + orjson serialize (to /dev/null)
"""

from __future__ import annotations

import sys

import orjson

from compactctl.tokens import make_counter


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "parse-serialize":
        with open(path, "rb") as f, open("/dev/null", "wb") as out:
            for line in f:
                out.write(orjson.dumps(orjson.loads(line)) + b"\n")
        return
    counter = make_counter("gpt-4o")
    total = 0
    with open(path, "rb") as f:
        for line in f:
            for m in orjson.loads(line)["messages"]:
                c = m.get("content")
                total += counter.text(c) if isinstance(c, str) else 0
                for call in m.get("tool_calls") or []:
                    total += counter.text(call["function"]["name"]) + counter.text(call["function"]["arguments"])
    print(total, file=sys.stderr)


if __name__ == "__main__":
    main()
