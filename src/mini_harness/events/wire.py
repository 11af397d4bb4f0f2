"""A declared value as JSON: the one encoder of events and of the payloads they carry.

The vocabulary is declared as msgspec Structs (`Declared` below), so that the one decoder
(transcripts/fields.py) is msgspec's, straight from a line's bytes into these classes.
Every field of a declared class is written under its name in camelCase (`tool_call_id` is
`toolCallId`), in declaration order. A field whose default is None is left out while it is
None, so a field added later leaves the lines of values that do not use it as they were;
every other field is always written. A class's `wire_rules` may say otherwise for a
field: `OMIT_DEFAULT` leaves it out while it equals its default (`Message.tool_calls`
when empty), `KEEP_NULL` writes it as null (the counts of `Usage`). A field holding
another declared class, or a tuple of them, is written as that class's object, or an
array of them, at any depth; anything else (JSON values, tuples of them) is written as it
is.

The encoder of a class is generated once, on first use: per field one attribute read
and one store, so a message is written as fast as a
hand-written `to_json` would write it. msgspec's own encoder is not used: it cannot leave
out a None field while writing another field's default, as the lines have always had it.
Decoding is the transcript layer's (transcripts/fields.py), from the same declarations.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import UnionType
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints

import msgspec

from mini_harness.events.jsonvalue import JsonObject, JsonValue

_OMIT = "mini_harness.wire.omit"
OMIT_DEFAULT: Mapping[str, bool] = {_OMIT: True}
"""Field metadata: left off the wire while the field equals its default."""
KEEP_NULL: Mapping[str, bool] = {_OMIT: False}
"""Field metadata: a field whose default is None is written as null, not left out."""

_IDENTIFIES = "mini_harness.wire.identifies"


def identifies(kind: str) -> Mapping[str, str]:
    """A wire rule: the field holds the id of a `kind` (`tool_use_id` a tool call's),
    where its name does not say it (see `identified`)."""
    return {_IDENTIFIES: kind}


def camel(name: str) -> str:
    """The wire key of a field: `tool_call_id` is `toolCallId`."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class Declared(msgspec.Struct, frozen=True, rename=camel, gc=False):
    """The base of every declared value (events and the payloads they carry): an immutable
    msgspec Struct whose wire keys are its fields in camelCase. `wire_rules` names the
    fields written otherwise than by the default rule (OMIT_DEFAULT, KEEP_NULL) and the ids
    a field's name does not say (`identifies`).

    Instances are not tracked by the cycle collector (gc=False): a value holds only JSON
    values and other declared values, made before it, so it is never part of a cycle, and
    a reader holding a million of them does not pay for the collector walking them.
    """

    wire_rules: ClassVar[Mapping[str, Mapping[str, Any]]] = {}


Field = msgspec.structs.FieldInfo
"""One field of a declared class: its `name`, `encode_name` (the wire key), `type`,
`default` (msgspec.NODEFAULT when it has none) and `required`."""


def declared(tp: Any) -> bool:
    """Whether `tp` is a declared class (a Struct of the vocabulary, or another Struct)."""
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def fields(cls: type) -> tuple[Field, ...]:
    """The fields of a declared class, in declaration order."""
    return msgspec.structs.fields(cls)


def _rule(cls: type, field: Field, key: str) -> Any:
    rules: Mapping[str, Mapping[str, Any]] = getattr(cls, "wire_rules", {})
    return rules.get(field.name, {}).get(key)


def identified(cls: type, field: Field) -> str | None:
    """What a field of `cls` is the id of: what its rule says (`identifies`), else what
    its name says: `run_id` a run's, `tool_call_id` a toolCall's, `id` one of `cls`'s own
    (`ToolCall.id`: a toolCall's); None for a field that is no id. Ids are what differs on
    every run of the same thing (normalization numbers them: testing/normalize.py)."""
    kind = _rule(cls, field, _IDENTIFIES)
    if kind is not None:
        return str(kind)
    if field.name == "id":
        return cls.__name__[:1].lower() + cls.__name__[1:]
    if field.name.endswith("_id"):
        return camel(field.name[: -len("_id")])
    return None


def omitted(cls: type, field: Field) -> bool:
    """Whether `field` of `cls` is left off the wire while it has its default value."""
    rule = _rule(cls, field, _OMIT)
    return bool(field.default is None if rule is None else rule)


Encoder = Callable[[Any, JsonObject], JsonObject]


@functools.cache
def encoder(cls: type, skip: frozenset[str] = frozenset()) -> Encoder:
    """The function that writes the fields of a `cls` (but those named in `skip`) into a
    JSON object and returns it. Generated once per class."""
    hints = get_type_hints(cls)
    namespace: dict[str, Any] = {}
    body = ["def encode(value, out):"]
    for index, field in enumerate(fields(cls)):
        if field.name in skip:
            continue
        key = camel(field.name)
        convert = _converter(hints[field.name])
        written = "v"
        if convert is not None:
            namespace[f"convert{index}"] = convert
            written = f"convert{index}(v)"
        if omitted(cls, field):
            namespace[f"default{index}"] = field.default
            test = "v is not None" if field.default is None else f"v != default{index}"
            body.append(f"    v = value.{field.name}")
            body.append(f"    if {test}: out[{key!r}] = {written}")
        elif convert is None:
            body.append(f"    out[{key!r}] = value.{field.name}")
        else:
            body += [f"    v = value.{field.name}", f"    out[{key!r}] = {written}"]
    body.append("    return out")
    encode: Encoder = generated(body, namespace, f"encode {cls.__name__}")
    return encode


def generated(lines: list[str], namespace: dict[str, Any], label: str) -> Any:
    """The function whose source is `lines` (`def NAME(...):` first), defined in
    `namespace`; `label` names its source in tracebacks (`<encode RunStarted>`).

    The source is compiled first and the code object run: exec() of a string goes through
    the interpreter's top-level runner, which marks a KeyboardInterrupt raised while the
    definition runs as unhandled even once the command has caught it, and the process then
    ends by SIGINT at exit instead of with its own exit code (130): a Ctrl-C in the first
    moments of `show --follow`, as the first records were decoded, did that.
    """
    code = compile("\n".join(lines), f"<{label}>", "exec")
    exec(code, namespace)  # noqa: S102 - source built by the caller from a declaration
    return namespace[lines[0].removeprefix("def ").partition("(")[0]]


def _converter(tp: Any) -> Callable[[Any], Any] | None:
    """How a value annotated `tp` becomes JSON (None: it is JSON as it is)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in {Union, UnionType} and type(None) in args and len(args) == 2:
        inner = _converter(next(arg for arg in args if arg is not type(None)))
        return None if inner is None else _or_none(inner)
    if declared(tp):
        return _object(tp)
    if origin is tuple and len(args) == 2 and args[1] is ...:
        item = _converter(args[0])
        return list if item is None else functools.partial(_array, item)
    return None


def _or_none(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def or_none(value: Any) -> Any:
        return None if value is None else convert(value)

    return or_none


def _object(cls: type) -> Callable[[Any], JsonObject]:
    """The converter of a field holding a `cls`: its encoder is made on first use, so a
    field that is always None where it is written (a tool run's `model`) costs nothing."""
    encode: Encoder | None = None

    def convert(value: Any) -> JsonObject:
        nonlocal encode
        if encode is None:
            encode = encoder(cls)
        return encode(value, {})

    return convert


def _array(convert: Callable[[Any], Any], values: Any) -> list[Any]:
    return [convert(value) for value in values]


def to_wire(value: Any) -> JsonValue:
    """The JSON value of a declared value (a class of the vocabulary), of a tuple or
    list of them, or of a JSON value (returned as it is)."""
    cls: Any = type(value)
    if declared(cls):
        return encoder(cls)(value, {})
    if isinstance(value, tuple | list):
        return [to_wire(item) for item in value]
    return value
