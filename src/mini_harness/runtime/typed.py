"""Typed tools: a plain function becomes a tool whose schema comes from its signature.

The runtime validates the JSON input against the derived schema first; only then does the
wrapper built here structure it (cattrs) into the Python values the function declared,
and unstructure what the function returns back into JSON for the runtime's checks.
Everything a call needs is prepared once, at registration.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, NoReturn, Union, get_args, get_origin

import cattrs
import cattrs.v

from mini_harness.errors import (
    RejectedInputError,
    SchemaDerivationError,
    UnsupportedAnnotationError,
    Violation,
)
from mini_harness.events import JsonObject
from mini_harness.runtime.definitions import ToolAnnotations, ToolDefinition
from mini_harness.runtime.schema_derive import (
    Member,
    class_schema,
    is_record_class,
    object_schema,
    parse_docstring,
    schema_for,
    unwrap_annotated,
)
from mini_harness.runtime.validation import display_path

_CONVERTER = cattrs.Converter()
# Values of these types come out of validated JSON exactly as the function wants them.
_PLAIN_INPUT = frozenset({str, bool, types.NoneType, Any, list, dict})
# Values of these types are JSON already when a function returns them.
_PLAIN_OUTPUT = frozenset({str, bool, types.NoneType, int, float})
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)

Structure = Callable[[Any], Any]


def _is_plain(tp: object, plain: frozenset[object]) -> bool:
    """True when JSON values of `tp` (stripped of Annotated) need no conversion in this
    direction."""
    if tp is None or (isinstance(tp, type) and tp in plain):
        return True
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Literal:
        return all(v is None or type(v) in (str, bool) for v in args)
    if origin is list:
        return _is_plain(args[0], plain)
    if origin is dict:
        return _is_plain(args[1], plain)
    if origin is Union or origin is types.UnionType:
        return all(_is_plain(arg, plain) for arg in args)
    return False


def _structurer(tp: object) -> Structure | None:
    """A one-argument function turning validated JSON into a `tp`; None if it is one already."""
    tp = _strip_annotated(tp)  # cattrs hashes types; Annotated metadata need not be hashable
    if _is_plain(tp, _PLAIN_INPUT):
        return None
    if tp is int or tp is float:
        return tp  # validated: int(2.0) -> 2, float(3) -> 3.0, never a bool or a str
    hook = _CONVERTER.get_structure_hook(tp)
    return lambda value: hook(value, tp)


def _strip_annotated(tp: object) -> Any:
    """`tp` with every Annotated layer removed, at any depth."""
    tp = unwrap_annotated(tp)
    origin = get_origin(tp)
    args = get_args(tp)
    if not args or origin is Literal:
        return tp
    stripped = tuple(_strip_annotated(arg) for arg in args)
    if origin is Union or origin is types.UnionType:
        return Union[stripped]  # noqa: UP007 - built from a tuple at run time
    return origin[stripped]  # type: ignore[index]


def _refuse(tool: str, message: str, parameter: str | None = None) -> NoReturn:
    """Raise SchemaDerivationError for `tool` with the house message shape."""
    raise SchemaDerivationError(
        tool, f"Cannot derive a schema for tool {tool}: {message}", parameter=parameter
    )


def _hints(func: Callable[..., Any], tool: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(func, include_extras=True)
    except NameError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        for pname, annotation in getattr(func, "__annotations__", {}).items():
            if isinstance(annotation, str) and missing in annotation:
                where = "the return annotation" if pname == "return" else f"parameter {pname}"
                _refuse(
                    tool,
                    f"{where}: cannot resolve {annotation!r} ({exc}); types used in "
                    "annotations must be importable from the function's module",
                    pname,
                )
        _refuse(tool, f"cannot resolve the annotations: {exc}")
    except (SyntaxError, TypeError) as exc:  # e.g. a malformed string annotation
        _refuse(tool, f"cannot resolve the annotations: {exc}")


def _check_parameters(
    params: list[inspect.Parameter], hints: dict[str, Any], documented: set[str], tool: str
) -> None:
    """Every parameter must be a named, annotated property; docs must name real ones."""
    for param in params:
        if param.kind in _VARIADIC:
            stars = "*" if param.kind is inspect.Parameter.VAR_POSITIONAL else "**"
            _refuse(
                tool,
                f"parameter {stars}{param.name} is variadic; a tool takes named properties",
                param.name,
            )
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            _refuse(tool, f"parameter {param.name} is positional-only", param.name)
        if param.name not in hints:
            _refuse(tool, f"parameter {param.name} has no type annotation", param.name)
    unknown = sorted(documented - {p.name for p in params})
    if unknown:
        _refuse(tool, f"the docstring's Args section names {', '.join(unknown)}, not a parameter")


def derive_tool(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    annotations: ToolAnnotations | None = None,
) -> tuple[ToolDefinition, Callable[[Any], Any]]:
    """The definition and the JSON-in/JSON-out handler of a typed function."""
    tool: str = name or str(getattr(func, "__name__", ""))
    if not callable(func):
        _refuse(tool, f"{func!r} is not callable")
    hints = _hints(func, tool)
    params = list(inspect.signature(func).parameters.values())
    doc = parse_docstring(func.__doc__)
    _check_parameters(params, hints, set(doc.entries), tool)

    summary = doc.summary
    single = params[0] if len(params) == 1 else None
    record = unwrap_annotated(hints[single.name]) if single else None
    if single and single.default is inspect.Parameter.empty and is_record_class(record):
        assert isinstance(record, type)
        try:
            input_schema = class_schema(record)
        except UnsupportedAnnotationError as exc:
            _refuse(tool, f"parameter {single.name}: {exc}", single.name)
        described = input_schema.pop("description", "")  # it is the tool's, said once
        summary = summary or described
        hook = _CONVERTER.get_structure_hook(record)
        call = _call_with_instance(tool, func, lambda data: hook(data, record))
    else:
        members = [
            Member(
                p.name,
                hints[p.name],
                required=p.default is inspect.Parameter.empty,
                default=p.default,
                description=doc.entries.get(p.name),
            )
            for p in params
        ]
        try:
            input_schema = object_schema(members, None, where="parameter ")
        except UnsupportedAnnotationError as exc:
            _refuse(tool, str(exc), exc.member)
        call = _call_with_keywords(
            tool, func, [(p.name, _structurer(hints[p.name])) for p in params]
        )

    output_schema, unstructure = _output(hints, tool)
    definition = ToolDefinition(
        name=tool,
        description=description if description is not None else summary,
        input_schema=input_schema,
        annotations=annotations,
        output_schema=output_schema,
    )
    return definition, _handler(func, call, unstructure)


def _output(hints: dict[str, Any], tool: str) -> tuple[JsonObject | None, Structure | None]:
    """The output schema (object-shaped returns only, as MCP requires) and what turns a
    return value into JSON (None when values of the annotation are JSON already)."""
    returned = hints.get("return", Any)
    try:
        schema = schema_for(returned)
    except UnsupportedAnnotationError as exc:
        _refuse(
            tool, f"the return annotation: {exc} (annotate with Any to skip the schema)", "return"
        )
    output_schema = schema if schema.get("type") == "object" else None
    if returned is not Any and _is_plain(_strip_annotated(returned), _PLAIN_OUTPUT):
        return output_schema, None
    # By the value's own type, not the annotation: a subclass must not lose its fields.
    return output_schema, _CONVERTER.unstructure


def _format_exception(exc: BaseException, tp: type | None) -> str:
    # A class's own validator explains itself better than cattrs' "invalid value".
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return cattrs.v.format_exception(exc, tp)


def _rejected(tool: str, where: list[str | int], exc: Exception) -> RejectedInputError:
    """Input the schema allowed but structuring refused, as an Invalid input error."""
    first = cattrs.transform_error(exc, path="$", format_exception=_format_exception)[0]
    message, _, path = first.rpartition(" @ ")
    if not message:
        message, path = first, "$"
    shown = display_path(tool, where) + path[1:]
    violation = Violation(path=shown, keyword="structure", message=message)
    return RejectedInputError(tool, violation.full_message, path=shown, violations=[violation])


def _structured(tool: str, where: list[str | int], convert: Structure, value: Any) -> Any:
    """`convert(value)`; what it refuses is the call's invalid input."""
    try:
        return convert(value)
    except Exception as exc:
        raise _rejected(tool, where, exc) from exc


def _call_with_instance(
    tool: str, func: Callable[..., Any], convert: Structure
) -> Callable[[Any], Any]:
    return lambda data: func(_structured(tool, [], convert, data))


def _call_with_keywords(
    tool: str, func: Callable[..., Any], plan: list[tuple[str, Structure | None]]
) -> Callable[[Any], Any]:
    converting = [(pname, convert) for pname, convert in plan if convert is not None]
    if not converting:
        # Validation allowed only the parameters' names, each already the right type.
        return lambda data: func(**data)

    def call(data: Any) -> Any:
        kwargs = dict(data)
        for pname, convert in converting:
            if pname in kwargs:
                kwargs[pname] = _structured(tool, [pname], convert, kwargs[pname])
        return func(**kwargs)

    return call


def _handler(
    func: Callable[..., Any], call: Callable[[Any], Any], unstructure: Structure | None
) -> Callable[[Any], Any]:
    if inspect.iscoroutinefunction(func):

        async def handler_async(data: Any) -> Any:
            result = await call(data)
            return result if unstructure is None else unstructure(result)

        return functools.wraps(func)(handler_async)

    if unstructure is None:
        return functools.wraps(func)(call)

    def handler(data: Any) -> Any:
        return unstructure(call(data))

    return functools.wraps(func)(handler)
