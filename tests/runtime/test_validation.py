from __future__ import annotations

from typing import Any

import pytest

from mini_harness.errors import InvalidSchemaError
from mini_harness.runtime.validation import InputValidator

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^h"},
        "items": {"type": "array", "items": {"type": "number"}, "minItems": 1},
        "mode": {"enum": ["fast", "slow"]},
        "fixed": {"const": 1},
        "n": {"type": "integer", "minimum": 1, "maximum": 9},
        "x": {"exclusiveMinimum": 0},
        "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "any": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "shape": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        "nested": {
            "type": "object",
            "properties": {"deep": {"type": "boolean"}},
            "required": ["deep"],
            "additionalProperties": False,
        },
        "odd key": {"type": "string"},
    },
    "required": ["text"],
}


@pytest.fixture(name="validator")
def _validator() -> InputValidator:
    return InputValidator("echo", SCHEMA)


CASES = [
    ({"text": 123}, "Invalid input for echo.text: expected string"),
    ({}, 'Invalid input for echo: missing required property "text"'),
    ([1], "Invalid input for echo: expected object"),
    ({"text": "hi", "items": [1, "x"]}, "Invalid input for echo.items[1]: expected number"),
    ({"text": "hi", "items": []}, "Invalid input for echo.items: expected at least 1 item"),
    ({"text": "hi", "mode": "warp"}, 'Invalid input for echo.mode: expected one of "fast", "slow"'),
    ({"text": "hi", "fixed": 2}, "Invalid input for echo.fixed: expected 1"),
    ({"text": "hi", "n": 0}, "Invalid input for echo.n: expected a number >= 1"),
    ({"text": "hi", "n": 10}, "Invalid input for echo.n: expected a number <= 9"),
    ({"text": "hi", "x": 0}, "Invalid input for echo.x: expected a number > 0"),
    ({"text": "h"}, "Invalid input for echo.text: expected a string of at least 2 characters"),
    ({"text": "hellooo"}, "Invalid input for echo.text: expected a string of at most 5 characters"),
    ({"text": "yo"}, 'Invalid input for echo.text: expected a string matching "^h"'),
    ({"text": "hi", "either": 1.5}, "Invalid input for echo.either: expected string or integer"),
    ({"text": "hi", "any": 3}, "Invalid input for echo.any: expected string or null"),
    (
        {"text": "hi", "shape": {}},
        "Invalid input for echo.shape: expected a value matching one of 2 allowed schemas (oneOf)",
    ),
    (
        {"text": "hi", "nested": {"deep": True, "extra": 1}},
        'Invalid input for echo.nested: unexpected property "extra"',
    ),
    (
        {"text": "hi", "nested": {}},
        'Invalid input for echo.nested: missing required property "deep"',
    ),
    ({"text": "hi", "odd key": 1}, 'Invalid input for echo["odd key"]: expected string'),
]


class TestMessages:
    @pytest.mark.parametrize(("instance", "message"), CASES)
    def test_first_violation_reads_like_the_reference(
        self, validator: InputValidator, instance: object, message: str
    ) -> None:
        """Each keyword gets a message of the reference's shape, with the exact path."""
        violations = validator.check(instance)
        assert violations, "expected the input to be invalid"
        assert violations[0].full_message == message

    def test_every_violation_is_kept(self, validator: InputValidator) -> None:
        """All problems are reported, not only the first."""
        violations = validator.check({"text": 1, "n": "x", "mode": "warp"})
        assert {v.path for v in violations} == {"echo.text", "echo.n", "echo.mode"}
        assert {v.keyword for v in violations} == {"type", "enum"}

    def test_valid_input_has_no_violations(self, validator: InputValidator) -> None:
        """Valid input passes untouched."""
        assert validator.check({"text": "hey", "items": [1, 2.5], "n": 5}) == []


class TestSchemas:
    @pytest.mark.parametrize(
        "schema",
        [
            {"type": "object", "properties": {"a": {"type": "strin"}}},
            {"type": "object", "required": ["a", "a"]},
            {"type": "object", "properties": {"a": {"minLength": -1}}},
            {"type": "object", "additionalProperties": "no"},
        ],
    )
    def test_invalid_schemas_are_refused_at_once(self, schema: dict[str, Any]) -> None:
        """A schema its meta-schema rejects fails when the validator is made, naming the tool."""
        with pytest.raises(InvalidSchemaError, match=r"^Invalid input schema for tool t: "):
            InputValidator("t", schema)

    def test_changing_the_schema_after_registration_changes_nothing(self) -> None:
        """The validator keeps the schema it was given, whatever later happens to the dict."""
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
        }
        validator = InputValidator("t", schema)
        schema["properties"]["a"]["type"] = "integer"
        schema["required"].append("b")
        assert validator.check({"a": "x"}) == []
        assert [v.full_message for v in validator.check({"a": 1})] == [
            "Invalid input for t.a: expected string"
        ]

    def test_tuples_are_judged_as_arrays(self) -> None:
        """A tuple in a Python input is an array, as it is once recorded."""
        validator = InputValidator("t", {"type": "object", "properties": {"a": {"type": "string"}}})
        assert validator.check({"a": ("x",)})[0].message == "expected string"
        assert validator.check({"b": ("x",)}) == []
