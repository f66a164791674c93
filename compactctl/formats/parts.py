"""Content parts from one API's form to another's (`--to`): what each target takes, by role, and for a part it
cannot take, a text line that says what was there (counted, so the run can say so).

What each target takes (anything else becomes that line):
- OpenAI chat: a user message text, `image_url`, `input_audio`, `file`; an assistant one text and `refusal`;
  system, developer and tool messages text only.
- Anthropic's Messages API (and Claude Code's lines, which hold its messages): a user message text, `image`,
  `document`, `search_result`; an assistant one text and Anthropic's own blocks (thinking, server tools);
  a tool result text, `image`, `document`, `search_result`; images in JPEG, PNG, GIF or WebP only.
- The Responses API (Codex): user and developer messages `input_text`, `input_image`, `input_file`; an
  assistant one `output_text` and `refusal`; a call's output text only.
- ShareGPT: text only.
An image moves between the forms (`image_url`, `image` with a source, Codex's `input_image`) when the target
takes images there, and so does a file (OpenAI `file`, Codex `input_file`, Anthropic `document`); a refusal
part becomes text where there is no refusal part.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..model import TEXT_TYPES, is_value_part
from .blocks import ANTHROPIC_ONLY

FAMILY = {"openai": "chat", "anthropic": "anthropic", "claude_code": "anthropic", "codex": "responses", "sharegpt": "text"}
ANTHROPIC_ASSISTANT = ("text", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result")
TAKES: dict[str, dict[str, tuple[str, ...]]] = {
    "chat": {"user": ("text", "image_url", "input_audio", "file"), "assistant": ("text", "refusal")},
    "anthropic": {
        "user": ("text", "image", "document", "search_result"),
        "assistant": ANTHROPIC_ASSISTANT,
        "tool": ("text", "image", "document", "search_result"),
    },
    "responses": {r: ("input_text", "input_image", "input_file") for r in ("user", "system", "developer")}
    | {"assistant": ("output_text", "refusal")},
    "text": {},
}
# Each API's own part types (a part of the target's own type, in a role that takes it, stays as it is).
NATIVE = {
    "chat": ("image_url", "input_audio", "file", "refusal"),
    "anthropic": tuple(t for t in ANTHROPIC_ONLY if t not in ("tool_use", "tool_result")),  # calls and results are not parts
    "responses": ("input_image", "input_file", "refusal"),
}
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")  # what Anthropic takes
LABEL = {"image_url": "image", "input_image": "image", "input_file": "file", "input_audio": "audio"}


def takes(target: str, role: str, kind: str) -> bool:
    fam = FAMILY.get(target, "chat")
    return kind in TAKES[fam].get(role, ("input_text",) if fam == "responses" else ("text",))


def text_type(target: str, role: str) -> str:
    if FAMILY.get(target) == "responses":
        return "output_text" if role == "assistant" else "input_text"
    return "text"


def port(p: Any, target: str, role: str, lost: Counter | None = None) -> Any:
    """Part `p` as `target` takes it in a `role` message: the same part, the target's form of it, or a text line
    that says what was there (counted in `lost` under its kind)."""
    if not isinstance(p, dict):
        return p
    kind = p.get("type")
    if kind in TEXT_TYPES or is_value_part(p):
        keys = sorted(k for k, v in p.items() if k not in ("type", "text", "value") and v not in (None, "", [], {}))
        if keys and lost is not None:  # Anthropic's cache_control or citations, the Responses API's annotations
            lost[f"text part key ({', '.join(keys)}: another API's)"] += 1
        return {"type": text_type(target, role), "text": p.get("text", p.get("value", ""))}
    made = _made(p, kind, target, role)
    if made is not None:
        if lost is not None and made.get("type") == "image" and _image_detail(p) is not None:
            lost["image detail (low / high / auto: Anthropic's image has none)"] += 1
        return made
    label = LABEL.get(kind, kind) if isinstance(kind, str) else "part"
    if lost is not None:
        lost[f"{label} part (written as a line that says what was there)"] += 1
    return {"type": text_type(target, role), "text": f"[{label}: {_detail(p)}]"}


def _made(p: dict, kind: Any, target: str, role: str) -> dict | None:
    """The target's form of a part that is not text, or None when the target has none for it in `role`."""
    if "value" in p and not isinstance(p.get("source"), dict):
        return None  # LlamaFactory's image, video or audio: a path under "value", which no API takes
    if kind in NATIVE.get(FAMILY.get(target, "chat"), ()) and takes(target, role, kind):
        return p
    sourced = kind == "image" and isinstance(p.get("source"), dict)
    if sourced and p["source"].get("type") != "base64" and takes(target, role, "image"):
        return p  # Anthropic's own image by URL or uploaded file, for Anthropic (a base64 one gets a media type it takes)
    if kind in ("image_url", "input_image") or sourced:
        return _with_detail(_image_for(_image_url(p), target, role), _image_detail(p))
    if kind in ("file", "input_file", "document"):
        return _file_for(_file(p), target, role)
    if kind == "refusal" and isinstance(p.get("refusal"), str):
        return {"type": text_type(target, role), "text": p["refusal"]}
    return None


def _image_url(p: dict) -> str:
    """An image part's URL: http(s), a data URL, or "" when it has none (an uploaded file's id)."""
    if p.get("type") == "image":
        src: dict = p["source"] if isinstance(p.get("source"), dict) else {}
        if src.get("type") == "base64":
            return f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
        return src.get("url", "") if src.get("type") == "url" and isinstance(src.get("url"), str) else ""
    url = p.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    return url if isinstance(url, str) else ""


def _image_detail(p: dict) -> str | None:
    """An image's `detail` (low, high, auto: the resolution the model sees it at), in chat's or the Responses API's form."""
    d = p["image_url"].get("detail") if isinstance(p.get("image_url"), dict) else p.get("detail")
    return d if isinstance(d, str) else None


def _with_detail(made: dict | None, detail: str | None) -> dict | None:
    """The image part for chat or the Responses API with the source's `detail` (Anthropic's image has none)."""
    if made is None or detail is None:
        return made
    if made["type"] == "image_url":
        return {**made, "image_url": {**made["image_url"], "detail": detail}}
    return {**made, "detail": detail} if made["type"] == "input_image" else made


def _data(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a base64 data URL (its media type normalized: `image/jpg` is `image/jpeg`)."""
    head, sep, data = url.partition(",")
    if not url.startswith("data:") or not sep or not head.endswith(";base64"):
        return None
    media = head[5:].split(";")[0].strip().lower()
    return ("image/jpeg" if media == "image/jpg" else media), data


def _image_for(url: str, target: str, role: str) -> dict | None:
    fam = FAMILY.get(target, "chat")
    web = url.startswith(("https://", "http://"))
    data = _data(url)
    if not (web or data) or not takes(target, role, {"chat": "image_url", "anthropic": "image", "responses": "input_image"}.get(fam, "")):
        return None
    if fam == "chat":
        return {"type": "image_url", "image_url": {"url": url}}
    if fam == "responses":  # the Responses API takes what Anthropic takes (PNG, JPEG, GIF, WebP)
        return {"type": "input_image", "image_url": url} if web or (data and data[0] in IMAGE_TYPES) else None
    if data is None:
        return {"type": "image", "source": {"type": "url", "url": url}}
    if data[0] not in IMAGE_TYPES:
        return None
    return {"type": "image", "source": {"type": "base64", "media_type": data[0], "data": data[1]}}


def _file(p: dict) -> dict:
    """A file part's data URL, URL, text and name, whatever its form."""
    if p.get("type") == "document":
        src: dict = p["source"] if isinstance(p.get("source"), dict) else {}
        out = {"name": p.get("title")}
        if src.get("type") == "base64":
            out["data_url"] = f"data:{src.get('media_type', 'application/pdf')};base64,{src.get('data', '')}"
        elif src.get("type") == "text" and isinstance(src.get("data"), str):
            out["text"] = src["data"]
        elif src.get("type") == "url":
            out["url"] = src.get("url")
        return out
    f: dict = p["file"] if p.get("type") == "file" and isinstance(p.get("file"), dict) else p
    return {"data_url": f.get("file_data"), "name": f.get("filename"), "url": f.get("file_url")}


def _file_for(f: dict, target: str, role: str) -> dict | None:
    fam = FAMILY.get(target, "chat")
    data_url, name, text = f.get("data_url"), f.get("name"), f.get("text")
    if isinstance(text, str):
        return {"type": text_type(target, role), "text": text}
    data = _data(data_url) if isinstance(data_url, str) else None
    if fam == "chat" and data and takes(target, role, "file"):
        return {"type": "file", "file": {"file_data": data_url, "filename": name if isinstance(name, str) else "document.pdf"}}
    if fam == "responses" and data and takes(target, role, "input_file"):
        return {"type": "input_file", "file_data": data_url, "filename": name if isinstance(name, str) else "document.pdf"}
    if fam == "anthropic" and takes(target, role, "document"):
        if data and data[0] == "application/pdf":
            doc: dict = {"type": "document", "source": {"type": "base64", "media_type": data[0], "data": data[1]}}
        elif isinstance(f.get("url"), str) and f["url"].startswith(("https://", "http://")):
            doc = {"type": "document", "source": {"type": "url", "url": f["url"]}}
        else:
            return None
        if isinstance(name, str) and name:
            doc["title"] = name
        return doc
    return None


def _detail(p: dict) -> str:
    """A few words on what a part held: its media type, name, URL or path; never its data."""
    kind = p.get("type")
    if kind in ("image_url", "input_image", "image") and (url := _image_url(p)):
        return _url_detail(url)
    if kind in ("file", "input_file", "document"):
        f = _file(p)
        d = _data(f["data_url"]) if isinstance(f.get("data_url"), str) else None
        inner: dict = p["file"] if isinstance(p.get("file"), dict) else p
        return str(f.get("name") or (d[0] if d else None) or f.get("url") or inner.get("file_id") or "a file")[:200]
    if kind == "input_audio" and isinstance(p.get("input_audio"), dict):
        return str(p["input_audio"].get("format") or "not carried over")
    src = p.get("source")
    if isinstance(src, dict) and src.get("file_id"):
        return str(src["file_id"])
    for key in ("name", "value", "url", "file_id", "id"):
        if isinstance(p.get(key), str) and p[key]:
            return p[key][:200]
    return "not carried over"


def _url_detail(url: str) -> str:
    """An image's URL as a detail: a data URL's media type, never its data."""
    if not url.startswith("data:"):
        return url[:200]
    d = _data(url)
    return d[0] if d else url[5:].partition(",")[0].partition(";")[0][:100] or "data"
