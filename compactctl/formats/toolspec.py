"""A record's tool definitions (`tools`, `tool_choice`) in the form of the API it is written for (`--to`).

OpenAI chat: `{"type": "function", "function": {"name", "description", "parameters"}}` and a `tool_choice` of
"auto" / "none" / "required" / `{"type": "function", "function": {"name"}}`. Anthropic: `{"name",
"description", "input_schema"}` and `{"type": "auto" | "any" | "none" | "tool", "name"}`. LlamaFactory (ShareGPT):
a JSON text of `[{"name", "description", "parameters"}]`. OpenAI's `parallel_tool_calls: false` is Anthropic's
`disable_parallel_tool_use` on its tool_choice. A definition the target has no form for (Anthropic's
server tools, which have no schema) is left out, counted in `lost`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson

NO_PARAMETERS = {"type": "object", "properties": {}}


def convert(meta: dict, source: str, target: str, lost: Counter | None = None) -> dict:
    """`meta` (a record's keys besides its messages) with its tool definitions in `target`'s form."""
    src, dst = _api(source), _api(target)
    if src == dst or dst is None or not any(k in meta for k in ("tools", "tool_choice", "parallel_tool_calls")):
        return meta
    out = dict(meta)
    said = lost if lost is not None else Counter()
    if "tools" in meta:
        functions = _functions(meta["tools"], src)
        if functions is None:  # not a list of tools this module knows: left out, said
            del out["tools"]
            said["tool definitions in a form not converted (left out)"] += 1
        else:
            dropped = len(meta["tools"] if isinstance(meta["tools"], list) else functions) - len(functions)
            if dropped > 0:
                said["tool definition without a schema (an Anthropic server tool: no form in the target)"] += dropped
            if functions:
                out["tools"] = _written(functions, dst)
            else:
                del out["tools"]  # an empty list: OpenAI refuses one; none says the same
    if "tool_choice" in meta:
        choice = _choice(meta["tool_choice"], dst)
        if choice is None or "tools" not in out:
            del out["tool_choice"]
            said["tool_choice the target cannot hold (left out)"] += 1
        else:
            out["tool_choice"] = choice
    _parallel(meta, out, src, dst)
    return out


def _parallel(meta: dict, out: dict, src: str | None, dst: str) -> None:
    """One call per turn: OpenAI's `parallel_tool_calls: false` is Anthropic's `disable_parallel_tool_use` on its
    tool_choice (an auto, any or named one; with none no call is made). Anthropic refuses the OpenAI key."""
    if src == "anthropic" and dst == "openai":
        c = meta.get("tool_choice")
        if isinstance(c, dict) and c.get("disable_parallel_tool_use") is True and "tools" in out:
            out["parallel_tool_calls"] = False
    elif src == "openai" and dst == "anthropic" and "parallel_tool_calls" in out:
        one_at_a_time = out.pop("parallel_tool_calls") is False and "tools" in out
        choice = out.get("tool_choice", {"type": "auto"})
        if one_at_a_time and choice["type"] != "none":
            out["tool_choice"] = {**choice, "disable_parallel_tool_use": True}


def _api(fmt: str) -> str | None:
    return {"openai": "openai", "anthropic": "anthropic", "sharegpt": "llamafactory"}.get(fmt)


def _functions(tools: Any, api: str | None) -> list[dict] | None:
    """(name, description, parameters) dicts of the tools; None when they are not in `api`'s form."""
    if api == "llamafactory" and isinstance(tools, str):
        try:
            tools = orjson.loads(tools)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(tools, list):
        return None
    out = []
    for t in tools:
        if not isinstance(t, dict):
            return None
        f: dict = t["function"] if isinstance(t.get("function"), dict) else t
        if not isinstance(f.get("name"), str):
            return None
        params = f.get("parameters", f.get("input_schema"))
        if api == "anthropic" and "input_schema" not in f:
            continue  # a server tool ({"type": "web_search_20250305", ...}): nothing another API could call
        d = {"name": f["name"]}
        if isinstance(f.get("description"), str):
            d["description"] = f["description"]
        d["parameters"] = params if isinstance(params, dict) else dict(NO_PARAMETERS)
        out.append(d)
    return out


def _written(functions: list[dict], api: str) -> Any:
    if api == "anthropic":  # its input_schema needs a "type" ("input_schema.type: Field required"); OpenAI's not
        return [{**{k: v for k, v in f.items() if k != "parameters"}, "input_schema": _typed(f["parameters"])} for f in functions]
    if api == "llamafactory":
        return orjson.dumps(functions).decode()
    return [{"type": "function", "function": f} for f in functions]


def _typed(schema: dict) -> dict:
    """A function's parameter schema with the top-level type every function's arguments have (a JSON object)."""
    return schema if "type" in schema else {"type": "object", **schema}


def _choice(choice: Any, dst: str) -> Any:
    """The tool_choice in `dst`'s form: its kind ("auto", "none", "required"/"any") and the tool it names."""
    kind: Any = None
    name: Any = None
    if isinstance(choice, str):
        kind = choice
    elif isinstance(choice, dict) and isinstance(choice.get("type"), str):
        kind = choice["type"]
        fn = choice.get("function")
        name = choice.get("name") if kind == "tool" else fn.get("name") if kind == "function" and isinstance(fn, dict) else None
    if not isinstance(kind, str):
        return None
    kind = {"any": "required", "tool": "named", "function": "named"}.get(kind, kind)
    if kind not in ("auto", "none", "required", "named") or (kind == "named" and not isinstance(name, str)):
        return None
    if dst == "anthropic":
        return {"type": "tool", "name": name} if kind == "named" else {"type": "any" if kind == "required" else kind}
    if dst == "openai":
        return {"type": "function", "function": {"name": name}} if kind == "named" else kind
    return None  # LlamaFactory records hold no tool_choice
