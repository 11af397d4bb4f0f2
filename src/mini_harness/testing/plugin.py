"""The pytest plugin (entry point `mini-harness`): `--update-goldens` and the `golden` fixture.

Loaded in every pytest run of a project that has mini-harness installed, so everything
heavier than pytest is imported only when a test asks for `golden`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import click

    from mini_harness.testing.golden import Golden, GoldenSession
    from mini_harness.testing.normalize import Normalization

_SESSION: pytest.StashKey[GoldenSession] = pytest.StashKey()
_CLAIMS = "mini_harness_golden_claims"  # the key of the claims directory in workerinput
_WRITTEN = "mini_harness_goldens_written"  # the key of what a worker wrote in workeroutput
UPDATE_FLAG = "--update-goldens"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mini-harness", "mini-harness golden files")
    group.addoption(
        UPDATE_FLAG,
        action="store_true",
        default=False,
        help="write missing golden files and rewrite those that differ, for the tests that "
        "run; ignored when the CI environment variable is set",
    )


def pytest_configure(config: pytest.Config) -> None:
    from mini_harness.testing.golden import GoldenSession

    # In CI when `CI` is set to anything but an empty, 0, false, no or off value.
    ci = os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no", "off"}
    update = bool(config.getoption(UPDATE_FLAG))
    # Under pytest-xdist a worker shares the claims of the controller, which made them.
    shared = getattr(config, "workerinput", {}).get(_CLAIMS)
    config.stash[_SESSION] = GoldenSession(
        update=update, ci=ci, root=config.rootpath, shared_claims=Path(shared) if shared else None
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION, None)
    if session is not None:
        session.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A pytest-xdist worker tells the controller which goldens it wrote."""
    golden_session = session.config.stash.get(_SESSION, None)
    output = getattr(session.config, "workeroutput", None)
    if golden_session is not None and output is not None:
        output[_WRITTEN] = golden_session.written()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller gives each worker the run's claims directory."""
    node.workerinput[_CLAIMS] = str(node.config.stash[_SESSION].claims())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller takes in what a worker wrote, for the summary."""
    written = getattr(node, "workeroutput", {}).get(_WRITTEN)
    if written:
        node.config.stash[_SESSION].add_written(written)


def pytest_report_header(config: pytest.Config) -> str | None:
    session = config.stash.get(_SESSION, None)
    if session is not None and session.update and session.ci:
        return f"mini-harness: {UPDATE_FLAG} is ignored because CI is set"
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    session = terminalreporter.config.stash.get(_SESSION, None)
    if session is None or not (session.created or session.updated):
        return
    terminalreporter.section("mini-harness goldens")
    for label, paths in (("created", session.created), ("updated", session.updated)):
        for path in paths:
            terminalreporter.write_line(f"{label}: {session.show(path)}")


@pytest.fixture(name="golden_normalization")
def _golden_normalization() -> Normalization:
    """The normalization every `golden` starts from; override it in a conftest.py to extend."""
    from mini_harness.testing.normalize import Normalization

    return Normalization()


@pytest.fixture(name="golden_directory")
def _golden_directory(request: pytest.FixtureRequest) -> Path:
    """Where a test's goldens live: `<test dir>/goldens/<module name>/`."""
    module = request.node.path
    return Path(module.parent, "goldens", module.stem)


@pytest.fixture(name="golden_command")
def _golden_command() -> click.Command | None:
    """The click command `golden.cli` runs in-process when a test names none.

    None (the default) runs the mini-harness CLI in a child process; a conftest.py may
    return the CLI's click command instead, to run it in-process (faster, same output).
    """
    return None


@pytest.fixture(name="golden")
def _golden(  # noqa: PLR0917 - pytest passes fixtures by name
    request: pytest.FixtureRequest,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    golden_normalization: Normalization,
    golden_directory: Path,
    golden_command: click.Command | None,
) -> Iterator[Golden]:
    """Record transcripts or run the CLI, then compare with golden files next to the test."""
    from mini_harness.testing.golden import Golden, golden_base_name

    cls = request.node.cls
    normalization = (
        golden_normalization.with_path(tmp_path, "<tmp>")
        .with_path(tmp_path_factory.getbasetemp(), "<basetemp>")
        .with_path(request.config.rootpath, "<rootdir>")
    )
    golden = Golden(
        session=request.config.stash[_SESSION],
        directory=golden_directory,
        base_name=golden_base_name(request.node.name, cls.__name__ if cls else None),
        nodeid=request.node.nodeid,
        tmp_path=tmp_path,
        normalization=normalization,
        command=golden_command,
    )
    yield golden
    golden.close()
