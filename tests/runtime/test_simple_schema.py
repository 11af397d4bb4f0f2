"""The simple-schema checker agrees with jsonschema-rs, error for error.

InputValidator checks the schemas of simple_schema's subset in Python; these tests make
the two engines meet on generated schemas and inputs, so that they cannot drift apart.
"""

from __future__ import annotations

import enum
import uuid
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_harness.errors import InvalidSchemaError
from mini_harness.runtime import InputValidator
from mini_harness.runtime.simple_schema import SimpleSchema
from mini_harness.runtime.validation import PYTHON_CHECKS, compile_schema, describe
from mini_harness.tools import default_registry

TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"]
NAMES = ["a", "b", "c", "text", "odd key", "x.y", "[0]"]

edge_ints = st.sampled_from(
    [0, 1, -1, 2, 5, 2**31, 2**53, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1]
)
ints = st.one_of(st.integers(-10, 10), edge_ints, st.integers(-(2**63), 2**64 - 1))
floats = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, 1.0, -1.5, 2.0**53, 2.0**63, 2.0**64, 1e300, 5e-324]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-10, 10).map(float),
)
limits = st.one_of(ints, floats)
counts = st.one_of(st.integers(0, 6), st.sampled_from([2**31, 2**63 - 1]))
type_keyword = st.one_of(
    st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=4, unique=True)
)
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)


@st.composite
def leaf_schemas(draw: st.DrawFn) -> dict[str, Any]:
    keywords = {
        "type": type_keyword,
        "minimum": limits,
        "maximum": limits,
        "minLength": counts,
        "maxLength": counts,
        "title": text,
        "description": text,
    }
    chosen = draw(st.lists(st.sampled_from(sorted(keywords)), unique=True, max_size=5))
    return {key: draw(keywords[key]) for key in chosen}


@st.composite
def root_schemas(draw: st.DrawFn) -> dict[str, Any]:
    parts: dict[str, Any] = {"type": "object"}
    if draw(st.booleans()):
        parts["properties"] = draw(
            st.dictionaries(st.sampled_from(NAMES), leaf_schemas(), max_size=len(NAMES))
        )
    if draw(st.booleans()):
        parts["required"] = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    if draw(st.booleans()):
        parts["additionalProperties"] = draw(st.booleans())
    if draw(st.booleans()):
        parts["description"] = draw(text)
    if parts.get("additionalProperties") is False and "required" in parts:
        declared = parts.get("properties", {})
        parts["required"] = [name for name in parts["required"] if name in declared]
    order = draw(st.permutations(sorted(parts)))
    return {key: parts[key] for key in order}


json_scalars = st.one_of(st.none(), st.booleans(), ints, floats, text)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)),
    max_leaves=6,
)
# Values near the limits and lengths the schemas use, so that most keywords are exercised.
near = st.one_of(
    ints, floats, st.text(st.sampled_from("ab\u00e9\U0001f600"), max_size=7), json_values
)
instances = st.one_of(
    json_scalars,
    st.dictionaries(st.one_of(st.sampled_from([*NAMES, ""]), text), near, max_size=8),
)


def raw(errors: Any) -> list[tuple[list[str | int], str, str]]:
    return [(list(e.instance_path), e.kind.name, describe(e)) for e in errors]


def reference_validator(schema: dict[str, Any]) -> InputValidator:
    """An InputValidator that uses jsonschema-rs alone."""
    validator = InputValidator("t", schema)
    validator._simple = None
    validator._validator = compile_schema("t", schema)
    return validator


def assert_agrees(schema: dict[str, Any], instance: Any) -> None:
    simple = SimpleSchema.of(schema)
    assert simple is not None
    compiled = jsonschema_rs.validator_for(schema)
    errors = simple.errors(instance)
    assert errors is not None
    assert raw(errors) == raw(compiled.iter_errors(instance))
    assert (not errors) == compiled.is_valid(instance)
    validator = InputValidator("t", schema)
    reference = reference_validator(schema)
    assert validator.check(instance) == reference.check(instance)
    assert validator.is_valid(instance) == reference.is_valid(instance)


class TestAgreesWithJsonschemaRs:
    @settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(schema=root_schemas(), instance=instances)
    def test_same_errors_in_the_same_order(self, schema: dict[str, Any], instance: Any) -> None:
        assert_agrees(schema, instance)

    @pytest.mark.thorough
    @settings(max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(schema=root_schemas(), instance=instances)
    def test_same_errors_in_the_same_order_thoroughly(
        self, schema: dict[str, Any], instance: Any
    ) -> None:
        assert_agrees(schema, instance)

    @settings(max_examples=200, deadline=None)
    @given(schema=root_schemas())
    def test_every_schema_of_the_subset_is_valid_and_rebuilds_equal(
        self, schema: dict[str, Any]
    ) -> None:
        """The subset skips the meta-schema check: it may hold only valid schemas."""
        jsonschema_rs.meta.validate(schema)
        simple = SimpleSchema.of(schema)
        assert simple is not None
        rebuilt = simple.to_schema()
        jsonschema_rs.meta.validate(rebuilt)
        assert SimpleSchema.of(rebuilt) is not None

    @settings(max_examples=200, deadline=None)
    @given(schema=root_schemas(), instance=instances)
    def test_the_rebuilt_schema_judges_alike(self, schema: dict[str, Any], instance: Any) -> None:
        simple = SimpleSchema.of(schema)
        assert simple is not None
        original = jsonschema_rs.validator_for(schema)
        rebuilt = jsonschema_rs.validator_for(simple.to_schema())
        assert raw(rebuilt.iter_errors(instance)) == raw(original.iter_errors(instance))


class Color(enum.Enum):
    RED = "red"


class Name(str):
    pass


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "string", "minLength": 2}},
    "required": ["a"],
    "additionalProperties": False,
}


def outcome(function: Any, instance: Any) -> Any:
    """What `function(instance)` returns, or the exception it raises (type and text)."""
    try:
        return function(instance)
    except ValueError as exc:
        return type(exc), str(exc)


class TestOutsideTheSubset:
    @pytest.mark.parametrize(
        "instance",
        [
            {"a": Color.RED},
            {"a": ("x", "y")},
            {"a": ["x", uuid.UUID(int=1)]},
            ("a",),
            [{"a": "xy"}],
            {"a": "xy", "b": uuid.UUID(int=1)},
            {"a": "x", "b": Color.RED},
        ],
    )
    def test_inputs_beyond_plain_json_are_judged_by_jsonschema_rs(self, instance: Any) -> None:
        validator = InputValidator("t", SCHEMA)
        reference = reference_validator(SCHEMA)
        assert outcome(validator.check, instance) == outcome(reference.check, instance)
        assert outcome(validator.is_valid, instance) == outcome(reference.is_valid, instance)

    def test_an_input_jsonschema_rs_cannot_read_still_raises(self) -> None:
        with pytest.raises(ValueError, match="Unsupported type"):
            InputValidator("t", SCHEMA).check({"a": Name("xy")})

    @pytest.mark.parametrize(
        ("schema", "message"),
        [
            (
                {"type": "object", "properties": {"a": {"type": "strin"}}},
                "Invalid input schema for tool t: ",
            ),
            ({"type": "object", "required": ["a", "a"]}, "Invalid input schema for tool t: "),
            (
                {"type": "object", "properties": {"a": {"minLength": -1}}},
                "Invalid input schema for tool t: ",
            ),
            ({"type": "object", "additionalProperties": "no"}, "Invalid input schema for tool t: "),
            ({"type": "array"}, 'Invalid input schema for tool t: root must have "type": "object"'),
        ],
    )
    def test_invalid_schemas_are_refused_at_once(
        self, schema: dict[str, Any], message: str
    ) -> None:
        assert SimpleSchema.of(schema) is None
        with pytest.raises(InvalidSchemaError) as info:
            InputValidator("t", schema)
        with pytest.raises(InvalidSchemaError) as expected:
            compile_schema("t", schema)
        assert str(info.value) == str(expected.value)
        assert str(info.value).startswith(message)

    def test_other_keywords_go_to_jsonschema_rs(self) -> None:
        schema = {"type": "object", "properties": {"a": {"enum": ["x"]}}}
        assert SimpleSchema.of(schema) is None
        assert [v.message for v in InputValidator("t", schema).check({"a": "y"})] == [
            'expected one of "x"'
        ]

    def test_changing_the_schema_after_registration_changes_nothing(self) -> None:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
        }
        validator = InputValidator("t", schema)
        schema["properties"]["a"]["type"] = "integer"
        schema["required"].append("b")
        assert validator.check({"a": "x"}) == []
        assert validator.check({"a": ("x",)})[0].message == "expected string"


def test_a_busy_validator_compiles_its_schema_and_answers_alike() -> None:
    """After PYTHON_CHECKS checks in Python, jsonschema-rs takes over: nothing changes."""
    validator = InputValidator("t", SCHEMA)
    inputs = [{"a": "xy"}, {"a": 1, "b": 2}, {}, 3]
    before = [validator.check(instance) for instance in inputs]
    assert validator._simple is not None
    for _ in range(PYTHON_CHECKS):
        validator.is_valid({"a": "xy"})
    assert validator._simple is None
    assert [validator.check(instance) for instance in inputs] == before
    assert before[0] == []
    assert [v.message for v in before[1]] == ['unexpected property "b"', "expected string"]


def test_the_built_in_tools_use_the_subset() -> None:
    """A CLI dispatch of a built-in tool needs no jsonschema-rs (see tests/test_imports.py)."""
    for tool in default_registry():
        assert SimpleSchema.of(tool.definition.input_schema) is not None, tool.name
        jsonschema_rs.meta.validate(tool.definition.input_schema)
