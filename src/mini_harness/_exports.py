"""Names a package offers from modules it imports only when a name is first used.

A package's face (`mini_harness`, `mini_harness.runtime`, `mini_harness.transcripts`)
is imported whenever any module inside it is: importing the modules behind every name it
offers would make each command pay for all of them. `lazy_names` gives the package a
module `__getattr__` (PEP 562) that imports a name's module on first use; the package
lists the same names under `TYPE_CHECKING` for type checkers.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, modules: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """The `__getattr__` of `package` that finds each name of `modules[module]` in that
    module, imported on first use (then kept in the package); any other name is the
    AttributeError a missing attribute raises."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
