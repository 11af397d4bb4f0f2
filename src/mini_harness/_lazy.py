"""Package roots that import a public name's module on first use (one mechanism for all)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`.

    `homes` maps each public name to the module that defines it, relative to `package`.
    A name is imported on first access and then stored in `namespace` (the package's
    globals), so later lookups are plain attribute reads.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", homes))

    return __getattr__, __dir__
