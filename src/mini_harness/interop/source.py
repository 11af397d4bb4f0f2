"""One session file of another agent, read as JSON lines, streamed: its bytes hashed as
they are read, each line parsed on its own, a line that does not parse reported (file,
line, reason) and passed over. Compressed rollouts (`.zst`) are read through the
`zstandard` package (the `import` extra) or Python's own `compression.zstd` (3.14+)."""

from __future__ import annotations

import importlib
import io
import os
from collections.abc import Iterator
from typing import IO, Any

import attrs
import orjson

from mini_harness.errors import SourceError

ZSTD_SUFFIX = ".zst"
_CHUNK = 1 << 20


@attrs.frozen
class SourceProblem:
    """A line of a source file that was not imported as it is, and why."""

    path: str
    line: int
    reason: str

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def _zstd_reader(raw: IO[bytes], path: str) -> IO[bytes]:
    """A stream of the decompressed bytes of a .zst file."""
    for name in ("compression.zstd", "zstandard"):
        try:
            module: Any = importlib.import_module(name)
        except ImportError:
            continue
        if name == "compression.zstd":
            return module.ZstdFile(raw)  # type: ignore[no-any-return]
        return module.ZstdDecompressor().stream_reader(raw)  # type: ignore[no-any-return]
    raise SourceError(
        f"cannot read {path}: it is compressed with zstd, and no zstd support is installed "
        "(pip install 'mini-harness[import]')"
    )


class SourceFile:
    """Iterate (line number, object) over a session file's JSON lines; `problems` collects
    the lines that are not JSON objects."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.problems: list[SourceProblem] = []
        self.lines = 0

    def __repr__(self) -> str:
        return f"<SourceFile(path={self.path!r}, lines={self.lines})>"

    def problem(self, line: int, reason: str) -> None:
        self.problems.append(SourceProblem(self.path, line, reason))

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        try:
            raw = open(self.path, "rb")  # noqa: SIM115 - closed below, after streaming
        except OSError as exc:
            raise SourceError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        with raw:
            stream: Any = raw
            if self.path.endswith(ZSTD_SUFFIX):
                stream = io.BufferedReader(_zstd_reader(raw, self.path), _CHUNK)
            try:
                yield from self._lines(stream)
            except OSError as exc:
                raise SourceError(f"cannot read {self.path}: {exc}") from None
            except Exception as exc:  # zstd's own errors: a damaged frame
                if type(exc).__module__.split(".")[0] not in ("zstandard", "compression", "_zstd"):
                    raise
                self.problem(self.lines + 1, f"the compressed data ends or is damaged: {exc}")

    def _lines(self, stream: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
        for number, line in enumerate(stream, 1):
            self.lines = number
            if not line.endswith(b"\n"):
                if not line.strip():
                    continue
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError:
                    self.problem(number, "the last line is cut short (no newline, not JSON)")
                    continue
            elif not line.strip():
                continue
            else:
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    self.problem(number, f"not JSON: {exc}")
                    continue
            if not isinstance(value, dict):
                self.problem(number, f"not a JSON object but {type(value).__name__}")
                continue
            yield number, value
