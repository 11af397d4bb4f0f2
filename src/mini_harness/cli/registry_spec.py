"""`--registry module:attribute`: load a user's ToolRegistry, with errors that say why not."""

from __future__ import annotations

import importlib
import os
import sys

from mini_harness.errors import MiniHarnessError, RegistrySpecError
from mini_harness.runtime import ToolRegistry

SPEC_HELP = (
    "Serve the tools of this registry instead of the built-in ones: `module:attribute`, where "
    "the attribute is a ToolRegistry or a callable taking no arguments that returns one. The "
    "current directory is importable."
)


def load_registry(spec: str, *, flag: str = "--registry") -> ToolRegistry:
    """Import `module:attribute` and return the registry it names; RegistrySpecError if not.

    `flag` names the option in messages, so each command can use its own.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise RegistrySpecError(spec, f"{flag} must look like module:attribute (got {spec!r})")
    # Console scripts put their own directory on sys.path, not the working directory;
    # users expect `--registry mytools:registry` to find ./mytools.py, as `python -m` would.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name or module_name.startswith(f"{exc.name}."):
            raise RegistrySpecError(
                spec, f"{flag} {spec}: no module named {module_name!r}"
            ) from None
        raise RegistrySpecError(
            spec, f"{flag} {spec}: importing {module_name} failed: {_describe(exc)}"
        ) from None
    except Exception as exc:  # whatever the user's module raises on import
        raise RegistrySpecError(
            spec, f"{flag} {spec}: importing {module_name} failed: {_describe(exc)}"
        ) from None

    target: object = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise RegistrySpecError(
                spec, f"{flag} {spec}: {module_name} has no attribute {attribute!r}"
            ) from None

    if isinstance(target, ToolRegistry):
        return target
    if not callable(target):
        raise RegistrySpecError(
            spec,
            f"{flag} {spec}: expected a ToolRegistry or a callable returning one, "
            f"got {type(target).__name__}",
        )
    try:
        result = target()
    except MiniHarnessError as exc:
        # e.g. a RegistrationError: our own message already says what is wrong.
        raise RegistrySpecError(spec, f"{flag} {spec}: {exc.message}") from None
    except Exception as exc:  # the factory is user code
        raise RegistrySpecError(
            spec, f"{flag} {spec}: calling {attribute}() failed: {_describe(exc)}"
        ) from None
    if not isinstance(result, ToolRegistry):
        raise RegistrySpecError(
            spec,
            f"{flag} {spec}: {attribute}() returned {type(result).__name__}, not a ToolRegistry",
        )
    return result


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
