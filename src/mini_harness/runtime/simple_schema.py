"""The simple schemas most tools declare, checked without jsonschema-rs.

A tool's input schema is usually an object with a few properties of primitive type, some
of them required, perhaps closed to other properties. Such a schema is recognised here and
checked in plain Python, which spares a process that dispatches a tool once (the CLI) the
import of jsonschema-rs. Everything else goes to jsonschema-rs, as do inputs holding
anything but plain dicts, lists, strings, numbers, booleans and None.

The contract is exactness: for a schema this module accepts, `SimpleSchema.errors` yields
the errors jsonschema-rs yields, in its order, with the same keyword and details, so that
validation.describe() words them identically; and every schema it accepts is valid under
the meta-schema and compiles. tests/runtime/test_simple_schema.py checks both against
jsonschema-rs on generated schemas and inputs.

The subset: the root has "type": "object" and may have "properties", "required" (unique
strings; when "additionalProperties" is false, each one a declared property),
"additionalProperties" (true or false), "title" and "description". The schema of each
property (whose name is not empty) may have "type" (a name or a list of unique names),
"minimum" and "maximum" (64-bit integers or finite floats), "minLength" and "maxLength"
(non-negative integers), "title" and "description". Nothing else, and only plain Python
types throughout.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# The order in which jsonschema-rs lists the types a value did not have.
_TYPE_ORDER = ("null", "boolean", "integer", "number", "string", "array", "object")
_TYPE_NAMES = frozenset(_TYPE_ORDER)
_CLASSES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "array": (list,),
    "object": (dict,),
}
_ROOT_KEYS = frozenset(
    {"type", "properties", "required", "additionalProperties", "title", "description"}
)
_LEAF_KEYS = frozenset(
    {"type", "minimum", "maximum", "minLength", "maxLength", "title", "description"}
)
# Types of values this module judges; anything else (a tuple, a str subclass, an enum) is
# left to jsonschema-rs, which has its own rules for them.
_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})
_SCALARS = frozenset({str, int, float, bool, type(None)})


class Kind:
    """What went wrong, shaped like the `kind` of a jsonschema-rs error (its name and the
    attribute validation.describe() reads for that name)."""

    __slots__ = ("limit", "name", "property", "types", "unexpected")

    def __init__(
        self,
        name: str,
        *,
        types: list[str] | None = None,
        limit: int | float | None = None,
        property: str | None = None,
        unexpected: list[str] | None = None,
    ) -> None:
        self.name = name
        self.types = types
        self.limit = limit
        self.property = property
        self.unexpected = unexpected


class Error:
    """One error, shaped like a jsonschema-rs ValidationError (`instance_path`, `kind`)."""

    __slots__ = ("instance_path", "kind")

    def __init__(self, instance_path: list[str], kind: Kind) -> None:
        self.instance_path = instance_path
        self.kind = kind


def _is_limit(value: object) -> bool:
    if type(value) is int:
        return -(2**63) <= value < 2**64
    if type(value) is float:
        return value - value == 0.0  # finite
    return False


def _is_count(value: object) -> bool:
    return type(value) is int and 0 <= value < 2**63


def _type_list(value: object) -> list[str] | None:
    """The names a valid "type" keyword lists, or None."""
    if type(value) is str:
        return [value] if value in _TYPE_NAMES else None
    if type(value) is not list or not value:
        return None
    names: list[str] = []
    for name in value:
        if type(name) is not str or name not in _TYPE_NAMES or name in names:
            return None
        names.append(name)
    return names


class _Leaf:
    """One property's schema."""

    __slots__ = (
        "classes",
        "integral_floats",
        "keywords",
        "max_length",
        "maximum",
        "min_length",
        "minimum",
        "numbers",
        "strings",
        "types",
    )

    def __init__(self, schema: dict[str, Any]) -> None:
        # What validates, copied: enough to rebuild an equivalent schema (to_schema).
        self.keywords = {
            key: list(value) if type(value) is list else value
            for key, value in schema.items()
            if key not in ("title", "description")
        }
        names = _type_list(schema["type"]) if "type" in schema else None
        self.types = sorted(names, key=_TYPE_ORDER.index) if names is not None else None
        self.minimum = schema.get("minimum")
        self.maximum = schema.get("maximum")
        self.min_length = schema.get("minLength")
        self.max_length = schema.get("maxLength")
        # For the quick test of a valid value: the Python types "type" admits outright (an
        # integral float passes "integer" too), and whether lengths or limits apply.
        self.classes = (
            None if names is None else frozenset(cls for n in names for cls in _CLASSES[n])
        )
        self.integral_floats = names is not None and "integer" in names and "number" not in names
        self.strings = self.min_length is not None or self.max_length is not None
        self.numbers = self.minimum is not None or self.maximum is not None

    @staticmethod
    def accepts(schema: object) -> bool:
        if type(schema) is not dict:
            return False
        for key, value in schema.items():
            if type(key) is not str or key not in _LEAF_KEYS:
                return False
            if key == "type":
                if _type_list(value) is None:
                    return False
            elif key in ("minimum", "maximum"):
                if not _is_limit(value):
                    return False
            elif key in ("minLength", "maxLength"):
                if not _is_count(value):
                    return False
            elif type(value) is not str:  # title, description
                return False
        return True

    def has_type(self, value: Any, kind: type) -> bool:
        assert self.classes is not None
        return kind in self.classes or (
            self.integral_floats and kind is float and value.is_integer()
        )

    def admits(self, value: Any, kind: type) -> bool:
        """True if `value` (of type `kind`, plain) breaks none of this schema's keywords."""
        if self.classes is not None and not self.has_type(value, kind):
            return False
        if kind is str:
            if self.strings:
                if self.min_length is not None and len(value) < self.min_length:
                    return False
                if self.max_length is not None and len(value) > self.max_length:
                    return False
        elif (kind is int or kind is float) and self.numbers:
            if self.minimum is not None and value < self.minimum:
                return False
            if self.maximum is not None and value > self.maximum:
                return False
        return True

    def errors(self, value: object, path: list[str]) -> Iterator[Error]:
        kind = type(value)
        if self.types is not None and not self.has_type(value, kind):
            yield Error(path, Kind("type", types=list(self.types)))
        if kind is int or kind is float:
            if self.minimum is not None and value < self.minimum:
                yield Error(path, Kind("minimum", limit=self.minimum))
            if self.maximum is not None and value > self.maximum:
                yield Error(path, Kind("maximum", limit=self.maximum))
        elif kind is str:
            if self.min_length is not None and len(value) < self.min_length:  # type: ignore[arg-type]
                yield Error(path, Kind("minLength", limit=self.min_length))
            if self.max_length is not None and len(value) > self.max_length:  # type: ignore[arg-type]
                yield Error(path, Kind("maxLength", limit=self.max_length))


def _plain(value: object) -> bool:
    """True if `value` holds only plain dicts (with str keys), lists, str, numbers, bools
    and None."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is list:
        return all(_plain(item) for item in value)  # type: ignore[attr-defined]
    if kind is dict:
        return all(
            type(key) is str and _plain(item)
            for key, item in value.items()  # type: ignore[attr-defined]
        )
    return False


class SimpleSchema:
    """A root schema of the subset, taken apart; later changes to the dict it came from do
    not reach it (as with a compiled jsonschema-rs validator)."""

    __slots__ = ("additional", "has_properties", "properties", "required")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.properties = {name: _Leaf(leaf) for name, leaf in schema.get("properties", {}).items()}
        self.has_properties = "properties" in schema
        self.required: list[str] = list(schema.get("required", ()))
        self.additional: bool | None = schema.get("additionalProperties")

    @classmethod
    def of(cls, schema: object) -> SimpleSchema | None:
        """The schema taken apart if it is in the subset, else None."""
        if type(schema) is not dict or schema.get("type") != "object":
            return None
        for key, value in schema.items():
            if type(key) is not str or key not in _ROOT_KEYS:
                return None
            if key == "type":
                if type(value) is not str:
                    return None
            elif key == "properties":
                if type(value) is not dict:
                    return None
                for name, leaf in value.items():
                    # jsonschema-rs gives the path of a property named "" as the root's.
                    if type(name) is not str or not name or not _Leaf.accepts(leaf):
                        return None
            elif key == "required":
                if _unique_strings(value) is None:
                    return None
            elif key == "additionalProperties":
                if type(value) is not bool:
                    return None
            elif type(value) is not str:  # title, description
                return None
        if schema.get("additionalProperties") is False and any(
            name not in schema.get("properties", {}) for name in schema.get("required", ())
        ):
            return None  # jsonschema-rs reports such a name missing even when it is there
        return cls(schema)

    def to_schema(self) -> dict[str, Any]:
        """An equivalent JSON Schema, for jsonschema-rs to compile when it must."""
        schema: dict[str, Any] = {"type": "object", "required": list(self.required)}
        if self.has_properties:
            schema["properties"] = {
                name: dict(leaf.keywords) for name, leaf in self.properties.items()
            }
        if self.additional is not None:
            schema["additionalProperties"] = self.additional
        return schema

    def errors(self, instance: object) -> list[Error] | None:
        """Every error jsonschema-rs would report for `instance`, in its order; None if
        `instance` holds something this module leaves to jsonschema-rs."""
        kind = type(instance)
        if kind is not dict:
            if kind in _SCALARS:
                return [Error([], Kind("type", types=["object"]))]
            return None
        # First a quick pass that only says whether the input is valid (and plain).
        properties = self.properties
        closed = self.additional is False
        valid = True
        for key, value in instance.items():  # type: ignore[attr-defined]
            kind = type(value)
            if type(key) is not str or (kind not in _SCALARS and not _plain(value)):
                return None
            if valid:
                leaf = properties.get(key)
                valid = not closed if leaf is None else leaf.admits(value, kind)
        if valid:
            for name in self.required:
                if name not in instance:  # type: ignore[operator]
                    valid = False
                    break
        if valid:
            return []
        return self._errors(instance)  # type: ignore[arg-type]

    def _errors(self, instance: dict[str, Any]) -> list[Error]:
        found: list[Error] = []
        missing = [
            Error([], Kind("required", property=name))
            for name in self.required
            if name not in instance
        ]
        # jsonschema-rs reports a closed object's one required property last, and any
        # other required properties first.
        last = self.additional is False and len(self.required) == 1
        if not last:
            found.extend(missing)
        unexpected: list[str] = []
        properties = self.properties
        for key, value in instance.items():
            leaf = properties.get(key)
            if leaf is None:
                if self.additional is False:
                    unexpected.append(key)
                continue
            found.extend(leaf.errors(value, [key]))
        if unexpected:
            # Without "properties", jsonschema-rs words a closed object as a false schema.
            if self.has_properties:
                found.append(Error([], Kind("additionalProperties", unexpected=unexpected)))
            else:
                found.append(Error([], Kind("falseSchema")))
        if last:
            found.extend(missing)
        return found


def _unique_strings(value: object) -> list[str] | None:
    if type(value) is not list:
        return None
    seen: list[str] = []
    for item in value:
        if type(item) is not str or item in seen:
            return None
        seen.append(item)
    return seen
