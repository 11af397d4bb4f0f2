"""An event class's fields as they are on the wire, derived from its attrs declaration.

Each field of an event class is read from its camelCase key and checked against its type
annotation. Adding an event type is declaring its class (events/vocabulary.py); its
decoder is derived from the declaration on first use. The common case of a field is one
`type(value) is T` test; anything else goes to the field's check, which converts (an object
for a nested attrs class, an array for a tuple), takes the default of an absent optional
field, or says exactly what is wrong. The codec (codec.py) decodes every line with this;
its counterpart, the encoder of the same declarations, is events/wire.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import attrs

from mini_harness.errors import FieldError
from mini_harness.events import JsonObject
from mini_harness.events.wire import camel, generated

_MISSING: Any = object()


class _NoValueIsOfThisType:
    """The `exact` type of fields whose every value goes to the check."""


Check = Callable[[Any], Any]


@attrs.frozen
class WireField:
    """One field of an event class as it is on the wire."""

    key: str  # the wire key: the attribute's name in camelCase
    attr: str
    exact: type  # a value of exactly this type is taken as is
    check: Check  # any other value: converted, or FieldError says why not
    default: Callable[[], Any] | None  # for an absent field; None: the field is required
    alias: str  # the name `__init__` takes it by


def _any(value: Any) -> Any:
    return value


def _expect(what: str) -> Check:
    def check(value: Any) -> Any:
        raise FieldError(f"expected {what}")

    return check


def _float(value: Any) -> float:
    # An integer is a float's value as it is (PEP 484's numeric tower): kept, so that what
    # a line says (`"durationMs":0`) is what reports of it show.
    if type(value) is int:
        return value
    raise FieldError("expected a number")


def _optional(check: Check) -> Check:
    def optional(value: Any) -> Any:
        return None if value is None else check(value)

    return optional


def _sequence(exact: type, check: Check, make: type) -> Check:
    def sequence(value: Any) -> Any:
        if type(value) is not list:
            raise FieldError("expected an array")
        out = []
        for index, element in enumerate(value):
            if type(element) is exact:
                out.append(element)
                continue
            try:
                out.append(check(element))
            except FieldError as exc:
                raise FieldError(exc.reason, f"[{index}]{exc.path}") from None
        return make(out)

    return sequence


def _literal(choices: tuple[Any, ...]) -> Check:
    def literal(value: Any) -> Any:
        if any(value == choice and type(value) is type(choice) for choice in choices):
            return value
        raise FieldError(f"expected one of {', '.join(repr(c) for c in choices)}")

    return literal


_NAMES = {str: "a string", int: "an integer", bool: "a boolean", dict: "an object"}


def _field_type(tp: Any) -> tuple[type, Check]:
    """(exact type, check) for a field annotated `tp`; TypeError for what the wire cannot hold."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return _NoValueIsOfThisType, _any
    if tp is float:
        return float, _float
    if tp in _NAMES:
        return tp, _expect(_NAMES[tp])
    if origin is dict and args in {(str, Any), ()}:
        return dict, _expect("an object")
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is ...):
        return _NoValueIsOfThisType, _sequence(*_field_type(args[0]), origin)
    if origin is Literal:
        return _NoValueIsOfThisType, _literal(args)
    if origin in {Union, UnionType} and type(None) in args and len(args) == 2:
        exact, check = _field_type(next(arg for arg in args if arg is not type(None)))
        return exact, _optional(check)
    if attrs.has(tp):
        return _NoValueIsOfThisType, functools.partial(_decode_nested, tp)
    raise TypeError(f"a transcript field cannot hold {tp!r}")


def _default(field: attrs.Attribute[Any]) -> Callable[[], Any] | None:
    default: Any = field.default
    if default is attrs.NOTHING:
        return None
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        if default.takes_self:
            raise TypeError(f"{field.name}: a default that takes self cannot be decoded")
        factory: Callable[[], Any] = default.factory
        return factory
    if default is None:
        return _none
    return lambda: default


def _none() -> None:
    return None


@functools.cache
def wire_fields(cls: type) -> tuple[WireField, ...]:
    """The fields of an attrs class as they are read from a line, in declaration order."""
    hints = get_type_hints(cls)
    return tuple(
        WireField(
            camel(field.name),
            field.name,
            *_field_type(hints[field.name]),
            _default(field),
            field.alias,
        )
        for field in attrs.fields(cls)
        if field.init
    )


@functools.cache
def structurer(cls: type) -> Callable[[JsonObject], Any]:
    """The function that makes a `cls` from its JSON object, derived from `wire_fields`.

    Generated once per class (as attrs generates `__init__`), as direct as a hand-written
    decoder: per field one lookup (a required one by subscript: its absence is the one
    KeyError) and one test of its type (none for a JsonValue field, and an absent optional
    field is its None as it is); everything else goes through `_settle`. Raises FieldError
    with the field's path.
    """
    fields = wire_fields(cls)
    namespace: dict[str, Any] = {"MISSING": _MISSING, "settle": _settle, "missing": _missing}
    body = ["def structure(data):", "    get = data.get", "    try:"]
    for index, field in enumerate(fields):
        namespace[f"field{index}"] = field
        namespace[f"exact{index}"] = field.exact
        value = f"v{index}"
        test: str | None = f"type({value}) is not exact{index}"
        if field.default is _none:  # optional: absent or null is None, as it is
            body.append(f"        {value} = get({field.key!r})")
            test = None if field.check is _any else f"{value} is not None and {test}"
        elif field.default is None:  # required: an absent one is the KeyError below
            body.append(f"        {value} = data[{field.key!r}]")
            test = None if field.check is _any else test
        else:  # an absent one takes its default
            body.append(f"        {value} = get({field.key!r}, MISSING)")
            test = f"{value} is MISSING" if field.check is _any else test
        if test is not None:
            body.append(f"        if {test}: {value} = settle(field{index}, {value})")
    body += ["    except KeyError as exc:", "        missing(exc)"]
    body += _construction(cls, fields, namespace)
    structure: Callable[[JsonObject], Any] = generated(body, namespace, f"structure {cls.__name__}")
    return structure


def _construction(cls: type, fields: tuple[WireField, ...], namespace: dict[str, Any]) -> list[str]:
    """The generated lines that build the instance from the values v0, v1, ...

    A slotted attrs class whose `__init__` only stores its arguments (no validator,
    converter or init hook) has its slots filled directly, as that `__init__` would: a
    frozen class's `__init__` stores each field through `object.__setattr__`, which costs
    about as much again as decoding the line. Any other class is called.
    """
    slots = getattr(cls, "__slots__", ())
    direct = (
        all(field.attr in slots for field in fields)
        and all(
            field.init and field.validator is None and field.converter is None
            for field in attrs.fields(cls)
        )
        and not any(hasattr(cls, hook) for hook in ("__attrs_pre_init__", "__attrs_post_init__"))
    )
    namespace["cls"] = cls
    if not direct:
        args = ", ".join(f"{field.alias}=v{index}" for index, field in enumerate(fields))
        return [f"    return cls({args})"]
    namespace["new"] = object.__new__
    lines = ["    made = new(cls)"]
    for index, field in enumerate(fields):
        namespace[f"store{index}"] = getattr(cls, field.attr).__set__
        lines.append(f"    store{index}(made, v{index})")
    lines.append("    return made")
    return lines


def _missing(exc: KeyError) -> None:
    """A required field is absent: the key `data[key]` did not find."""
    raise FieldError("required field missing", f".{exc.args[0]}") from None


def _settle(field: WireField, value: Any) -> Any:
    """A field's value that is not simply of its type: converted, defaulted, or refused."""
    if value is _MISSING:  # only a field with a default is looked up with MISSING
        return field.default()  # type: ignore[misc]
    try:
        return field.check(value)
    except FieldError as exc:
        raise FieldError(exc.reason, f".{field.key}{exc.path}") from None


def _decode_nested(cls: Any, value: Any) -> Any:
    if type(value) is not dict:
        raise FieldError("expected an object")
    return structurer(cls)(value)
