"""Python annotations -> JSON Schema 2020-12, for tools defined from typed functions.

Nested classes are inlined (no `$ref`), which every model API reads; a class that
contains itself therefore has no schema and is refused. Descriptions come from docstrings
in Google, NumPy or reST style (read by `docstring_parser`): the summary a model reads and
per-name entries.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import typing
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import attrs
import jsonschema_rs

from mini_harness.errors import NotJsonError, UnsupportedAnnotationError
from mini_harness.events import JsonObject, check_json

_NUMBER_KEYWORDS = (
    ("ge", "minimum"),
    ("gt", "exclusiveMinimum"),
    ("le", "maximum"),
    ("lt", "exclusiveMaximum"),
    ("multiple_of", "multipleOf"),
)
# Each Field constraint: what it applies to (for the error) and its keyword per JSON type.
_CONSTRAINTS: dict[str, tuple[str, dict[str, str]]] = {
    **{attr: ("numbers", {"integer": key, "number": key}) for attr, key in _NUMBER_KEYWORDS},
    "min_length": (
        "one of str, list or dict",
        {"string": "minLength", "array": "minItems", "object": "minProperties"},
    ),
    "max_length": (
        "one of str, list or dict",
        {"string": "maxLength", "array": "maxItems", "object": "maxProperties"},
    ),
    "pattern": ("strings", {"string": "pattern"}),
}
# bool before int: True is an int too.
_SCALARS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _optional_number(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, int | float) or isinstance(value, bool)):
        raise TypeError(f"Field({attribute.name}=...) must be a number, got {value!r}")


def _optional_count(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise TypeError(f"Field({attribute.name}=...) must be an integer >= 0, got {value!r}")


@attrs.frozen(kw_only=True)
class Field:
    """Schema keywords for `Annotated[T, Field(...)]`: a description and constraints.

    `ge`/`gt`/`le`/`lt`/`multiple_of` apply to numbers; `min_length`/`max_length` to
    strings (characters), lists (items) and dicts (properties); `pattern` to strings.
    """

    description: str | None = None
    ge: float | None = attrs.field(default=None, validator=_optional_number)
    gt: float | None = attrs.field(default=None, validator=_optional_number)
    le: float | None = attrs.field(default=None, validator=_optional_number)
    lt: float | None = attrs.field(default=None, validator=_optional_number)
    multiple_of: float | None = attrs.field(default=None, validator=_optional_number)
    min_length: int | None = attrs.field(default=None, validator=_optional_count)
    max_length: int | None = attrs.field(default=None, validator=_optional_count)
    pattern: str | None = None


@attrs.frozen
class Member:
    """One property of a derived object: a parameter or a class field."""

    name: str
    annotation: Any
    required: bool
    default: Any = attrs.NOTHING  # shown in the schema when it is plain JSON
    description: str | None = None


@attrs.frozen
class Docstring:
    """`summary`: text before the first section; `entries`: name -> description."""

    summary: str = ""
    entries: dict[str, str] = attrs.field(factory=dict)


def parse_docstring(doc: str | None) -> Docstring:
    """A docstring's summary and its parameter and attribute entries, in whichever style it
    is written (Google `Args:`, NumPy `Parameters` with a rule under it, reST `:param x:`).
    An entry's lines are joined into one; `*args` and `**kwargs` are named without stars."""
    import docstring_parser  # only typed tools, as they are defined, read docstrings

    parsed = docstring_parser.parse(inspect.cleandoc(doc or ""))
    summary = parsed.short_description or ""
    if parsed.long_description:
        gap = "\n\n" if parsed.blank_after_short_description else "\n"
        summary = f"{summary}{gap}{parsed.long_description}"
    entries = {
        param.arg_name.lstrip("*"): " ".join((param.description or "").split())
        for param in parsed.params
    }
    return Docstring(summary=summary.strip(), entries=entries)


def class_docstring(cls: type) -> str | None:
    """The class's own docstring; None for the one dataclasses invent (`P(x: int)`)."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return None
    if "__dataclass_fields__" in cls.__dict__ and doc.startswith(f"{cls.__name__}("):
        return None
    return doc


def type_name(tp: object) -> str:
    """`int`, `Point`, `list[int]`: how an annotation reads in an error message."""
    if isinstance(tp, type) and not get_args(tp):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def json_default(value: object) -> object:
    """A default as a schema `default`, or attrs.NOTHING when it is not plain JSON (as
    neither a factory nor the markers of "no default" are)."""
    if isinstance(value, enum.Enum) and value is not attrs.NOTHING:
        value = value.value
    try:
        check_json(value)
    except NotJsonError:
        return attrs.NOTHING
    return value


def is_record_class(tp: object) -> bool:
    """True for attrs classes and dataclasses (the classes whose fields become properties)."""
    return isinstance(tp, type) and (attrs.has(tp) or dataclasses.is_dataclass(tp))


def unwrap_annotated(tp: object) -> object:
    """`tp` without its Annotated layer (Python flattens nested ones into one)."""
    return get_args(tp)[0] if get_origin(tp) is Annotated else tp


def _explicit_description(tp: object) -> bool:
    """True when Annotated metadata already says what the value is."""
    if get_origin(tp) is not Annotated:
        return False
    return any(
        isinstance(m, str) or (isinstance(m, Field) and m.description is not None)
        for m in get_args(tp)[1:]
    )


def schema_for(tp: object, stack: tuple[type, ...] = ()) -> JsonObject:
    """The JSON Schema of one annotation; raise UnsupportedAnnotationError if it has none."""
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Annotated:
        schema = schema_for(args[0], stack)
        for meta in args[1:]:
            schema = _apply_metadata(schema, meta)
        return schema
    if tp is Any:
        return {}
    if tp is None or tp is types.NoneType:
        return {"type": "null"}
    if isinstance(tp, type) and tp in _SCALARS:  # a type: hashing a generic may fail
        return {"type": _SCALARS[tp]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema(tp)
    if origin is Literal:
        if not all(value is None or type(value) in (str, int, bool) for value in args):
            raise UnsupportedAnnotationError(
                f"{type_name(tp)}: Literal values must be str, int, bool or None"
            )
        return _choices(args)
    if origin is Union or origin is types.UnionType:
        members = [a for a in args if a is not types.NoneType]
        if len(members) != 1 or len(members) == len(args):
            raise UnsupportedAnnotationError(
                f"unsupported union {type_name(tp)} (only T | None is supported)"
            )
        return nullable(schema_for(members[0], stack))
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        items = schema_for(args[0], stack)
        return {"type": "array", "items": items} if items else {"type": "array"}
    if origin is dict:
        if unwrap_annotated(args[0]) is not str:
            raise UnsupportedAnnotationError(f"dict keys must be str, not {type_name(args[0])}")
        values = schema_for(args[1], stack)
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    if tp in (list, tuple):
        return {"type": "array"}
    if tp is dict:
        return {"type": "object"}
    if origin is tuple:
        raise UnsupportedAnnotationError(
            f"unsupported annotation {type_name(tp)} (use tuple[T, ...] or list[T])"
        )
    if is_record_class(tp):
        assert isinstance(tp, type)
        return class_schema(tp, stack)
    raise UnsupportedAnnotationError(f"unsupported annotation {type_name(tp)}")


def nullable(schema: JsonObject) -> JsonObject:
    """`schema` that also accepts null, as flat as the schema allows."""
    kind = schema.get("type")
    if "enum" in schema:
        out = {**schema, "enum": [*schema["enum"], None]} if None not in schema["enum"] else schema
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        return out
    if isinstance(kind, str) and "const" not in schema:
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _json_type(value: object) -> str:
    """The JSON type of a Literal's or an enum's value (None, bool, int, float or str)."""
    if value is None:
        return "null"
    return next(name for kind, name in _SCALARS.items() if isinstance(value, kind))


def _choices(values: Sequence[object]) -> JsonObject:
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1:
        return {"type": kinds.pop(), "enum": list(values)}
    return {"enum": list(values)}


def _enum_schema(tp: type[enum.Enum]) -> JsonObject:
    values = [member.value for member in tp]
    if not values:
        raise UnsupportedAnnotationError(f"enum {tp.__qualname__} has no members")
    for value in values:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise UnsupportedAnnotationError(
                f"enum {tp.__qualname__}: values must be str, int or float, got {value!r}"
            )
    return _choices(values)


def _types_of(schema: JsonObject) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    if "anyOf" in schema:
        return set().union(*(_types_of(branch) for branch in schema["anyOf"]))
    if "enum" in schema:
        return {_json_type(v) for v in schema["enum"]}
    return set()


def _apply_metadata(schema: JsonObject, meta: object) -> JsonObject:
    if isinstance(meta, str):
        return {**schema, "description": meta}
    if not isinstance(meta, Field):
        return schema  # metadata for someone else: Annotated is shared
    out = dict(schema)
    if meta.description is not None:
        out["description"] = meta.description
    kinds = _types_of(schema)
    for attr, (applies, keywords) in _CONSTRAINTS.items():
        value = getattr(meta, attr)
        if value is None:
            continue
        chosen = {keywords[kind] for kind in kinds if kind in keywords}
        if len(chosen) != 1:
            raise UnsupportedAnnotationError(f"Field({attr}=...) applies to {applies} only")
        out[chosen.pop()] = value
    if meta.pattern is not None:
        try:
            jsonschema_rs.validator_for({"pattern": meta.pattern})
        except (jsonschema_rs.ValidationError, ValueError):
            raise UnsupportedAnnotationError(
                f"Field(pattern={meta.pattern!r}) is not a valid regular expression"
            ) from None
    return out


def _no_default(field: Any) -> bool:
    """An attrs or dataclass field with neither a default nor a factory (attrs keeps its
    Factory in `default`)."""
    if field.default is not attrs.NOTHING and field.default is not dataclasses.MISSING:
        return False
    return getattr(field, "default_factory", dataclasses.MISSING) is dataclasses.MISSING


def class_schema(cls: type, stack: tuple[type, ...] = ()) -> JsonObject:
    """An object schema from a class's init fields; refuses a class that contains itself."""
    if cls in stack:
        raise UnsupportedAnnotationError(
            f"class {cls.__qualname__} contains itself (not supported)"
        )
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except NameError as exc:
        raise UnsupportedAnnotationError(
            f"cannot resolve the annotations of {cls.__qualname__}: {exc}"
        ) from None
    doc = parse_docstring(class_docstring(cls))  # the summary, and `Attributes:` per field
    fields: Sequence[Any] = attrs.fields(cls) if attrs.has(cls) else dataclasses.fields(cls)
    members = [
        Member(
            field.name,
            hints.get(field.name, Any),
            required=_no_default(field),
            default=field.default,
            description=doc.entries.get(field.name),
        )
        for field in fields
        if field.init
    ]
    return object_schema(
        members, doc.summary or None, (*stack, cls), where=f"field {cls.__qualname__}."
    )


def object_schema(
    members: Sequence[Member],
    description: str | None,
    stack: tuple[type, ...] = (),
    *,
    where: str,
) -> JsonObject:
    """`{"type": "object", ...}` with every member a property and no others allowed."""
    properties: JsonObject = {}
    for member in members:
        try:
            prop = schema_for(member.annotation, stack)
        except UnsupportedAnnotationError as exc:
            raise UnsupportedAnnotationError(f"{where}{member.name}: {exc}", member.name) from None
        if member.description and not _explicit_description(member.annotation):
            prop = {**prop, "description": member.description}
        default = json_default(member.default)
        if default is not attrs.NOTHING:
            prop = {**prop, "default": default}
        properties[member.name] = prop
    schema: JsonObject = {"type": "object"}
    if description:
        schema["description"] = description
    schema["properties"] = properties
    required = [m.name for m in members if m.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema
