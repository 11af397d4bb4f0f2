"""The per-event size cap: a value too large for one line is recorded as an explicit marker."""

from __future__ import annotations

import hashlib

import orjson

from mini_harness.events import JsonObject

DEFAULT_MAX_EVENT_BYTES = 4 * 1024 * 1024
"""4 MiB per line: far above any sensible tool result, far below what breaks line readers."""

OMITTED_KEY = "$omitted"
MESSAGE_KEEP_CHARS = 1000


def is_omitted(value: object) -> bool:
    """True for a marker written in place of an oversize value."""
    return isinstance(value, dict) and OMITTED_KEY in value and "sha256" in value


def shrink_wire(wire: JsonObject, cap: int) -> bool:
    """Replace the large payload of one line's JSON object in place; False if it has none.

    ToolCalled's `input` and ToolSucceeded's `output` become a marker carrying the size and
    SHA-256 of their compact JSON; a ToolFailed `error` keeps its kind and the start of its
    message; a tool name over MESSAGE_KEEP_CHARS keeps its start. Other events have no
    payload that may be dropped.
    """
    shrunk = False
    for key in ("input", "output"):
        if key in wire and wire["type"] in {"ToolCalled", "ToolSucceeded"}:
            encoded = orjson.dumps(wire[key])
            wire[key] = {
                OMITTED_KEY: f"value over the {cap}-byte event size cap",
                "bytes": len(encoded),
                "sha256": hashlib.sha256(encoded).hexdigest(),
            }
            shrunk = True
    name = wire.get("name")
    if isinstance(name, str) and len(name) > MESSAGE_KEEP_CHARS:
        # A tool name that long was never registered (the call fails as unknown_tool), but
        # its call is recorded all the same: the name keeps its start and says its size.
        size = len(name.encode("utf-8", "surrogatepass"))
        wire["name"] = (
            f"{name[:MESSAGE_KEEP_CHARS]} [... name of {size} bytes cut: over the {cap}-byte "
            "event size cap]"
        )
        shrunk = True
    error = wire.get("error")
    if wire["type"] == "ToolFailed" and isinstance(error, dict):
        size = len(orjson.dumps(error))
        message = str(error.get("message", ""))[:MESSAGE_KEEP_CHARS]
        kept: JsonObject = {
            "kind": error.get("kind"),
            "message": f"{message} [... error of {size} bytes cut: over the {cap}-byte "
            "event size cap]",
        }
        kept.update({k: error[k] for k in ("path", "type") if k in error})
        wire["error"] = kept
        shrunk = True
    return shrunk
