"""Validation cost per call: our InputValidator against the `jsonschema` package."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from _common import Config, Section, fmt_ratio, interleave, median, ratios

from mini_harness.runtime.validation import InputValidator
from mini_harness.tools.echo import ECHO

ORDER = 30

MEDIUM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "range": {
            "type": "object",
            "properties": {
                "start": {"type": "integer", "minimum": 1},
                "end": {"type": "integer", "minimum": 1},
            },
            "required": ["start", "end"],
            "additionalProperties": False,
        }
    },
    "properties": {
        "path": {"type": "string", "minLength": 1, "pattern": "^[^\\x00]+$"},
        "mode": {"enum": ["read", "write", "append"]},
        "encoding": {"type": "string", "default": "utf-8"},
        "ranges": {"type": "array", "items": {"$ref": "#/$defs/range"}, "maxItems": 16},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "limit": {"type": "integer", "minimum": 0, "maximum": 100000},
        "follow": {"type": "boolean"},
        "options": {
            "type": "object",
            "properties": {
                "depth": {"type": "integer", "minimum": 0},
                "hidden": {"type": "boolean"},
                "glob": {"type": ["string", "null"]},
            },
            "additionalProperties": False,
        },
    },
    "required": ["path", "mode"],
    "additionalProperties": False,
}
MEDIUM_VALID = {
    "path": "src/mini_harness/runtime/dispatch.py",
    "mode": "read",
    "ranges": [{"start": 1, "end": 40}, {"start": 100, "end": 140}],
    "tags": ["runtime", "hot-path"],
    "limit": 400,
    "follow": False,
    "options": {"depth": 2, "hidden": False, "glob": None},
}
MEDIUM_INVALID = {
    "path": "",
    "mode": "delete",
    "ranges": [{"start": 0, "end": 40}, {"start": 100}],
    "limit": -1,
    "options": {"depth": 2, "colour": True},
}
CASES = (
    ("small (echo), valid", ECHO.input_schema, {"text": "hello"}),
    ("small (echo), invalid", ECHO.input_schema, {"text": 123}),
    ("medium (8 properties, $ref, nesting), valid", MEDIUM_SCHEMA, MEDIUM_VALID),
    ("medium, invalid (7 violations)", MEDIUM_SCHEMA, MEDIUM_INVALID),
)


def per_call_us(func: Callable[[], object], count: int) -> Callable[[], float]:
    def measure() -> float:
        start = time.perf_counter()
        for _ in range(count):
            func()
        return (time.perf_counter() - start) / count * 1e6

    return measure


def run(config: Config) -> Section:
    import jsonschema

    count = config.scale(20_000, 3_000)
    section = Section(
        title="Validation per call",
        headers=(
            "schema, input",
            "mini-harness InputValidator.check (µs)",
            "jsonschema iter_errors (µs)",
            "speed-up",
        ),
    )
    for label, schema, instance in CASES:
        ours = InputValidator("bench", schema)
        theirs = jsonschema.Draft202012Validator(schema)
        # Same answer first: both see the same number of violations.
        assert len(ours.check(instance)) == len(list(theirs.iter_errors(instance))), label

        # One Python function around each contender's call, alike.
        def ours_once(o: InputValidator = ours, i: object = instance) -> object:
            return o.check(i)

        def theirs_once(t: Any = theirs, i: object = instance) -> object:
            return list(t.iter_errors(i))

        figures = interleave(
            {
                "ours": per_call_us(ours_once, count),
                "theirs": per_call_us(theirs_once, max(count // 10, 200)),
            },
            config.rounds,
        )
        speedup = median(ratios(figures["theirs"], figures["ours"]))
        section.rows.append(
            (
                label,
                f"{median(figures['ours']):.2f}",
                f"{median(figures['theirs']):.2f}",
                fmt_ratio(speedup),
            )
        )
    section.notes = [
        "Both validators are compiled once; a call returns every violation with its message "
        "(ours: `check`, with paths and messages in the reference's wording; jsonschema: "
        "`list(iter_errors(...))`). Each figure is the median over "
        f"{config.rounds} interleaved rounds. No target: this shows what validation costs "
        "inside a dispatch.",
    ]
    return section
