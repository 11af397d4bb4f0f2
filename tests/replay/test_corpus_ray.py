"""The corpus fold as Ray tasks, on a local Ray instance on loopback (one for the module)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mini_harness.cli import cli
from mini_harness.replay import fold_corpus
from mini_harness.replay.corpus.ray import LOOPBACK_ONLY, fold_corpus_ray
from tests.replay.corpus_files import write_agent_run, write_calls

os.environ.update(LOOPBACK_ONLY)  # before Ray is imported: its servers bind 127.0.0.1 only
ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed (make test installs it)")


@pytest.fixture(name="local_ray", scope="module")
def _local_ray() -> Iterator[Any]:
    """A local Ray instance with two CPUs, listening on loopback only, for every test here."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    assert ray.util.get_node_ip_address() == "127.0.0.1"
    yield ray
    ray.shutdown()


@pytest.fixture(name="corpus")
def _corpus(tmp_path: Path) -> Path:
    """Two call transcripts (one in a subdirectory), an agent run and a bad file."""
    (tmp_path / "sub").mkdir()
    write_calls(tmp_path / "a.jsonl", [("echo", None, 1.0), ("read", "timeout", 7.0)])
    write_calls(tmp_path / "sub" / "b.jsonl", [("echo", None, 2.5), ("echo", None, None)])
    write_agent_run(
        tmp_path / "agent.jsonl",
        stop_reason="final",
        usages=[{"inputTokens": 12, "outputTokens": 3, "cachedTokens": 4}],
    )
    (tmp_path / "bad.jsonl").write_text("not a transcript\n")
    return tmp_path


class TestRayCorpus:
    def test_same_report_as_local(self, local_ray: Any, corpus: Path) -> None:
        """Ray tasks give the report a local fold gives, byte for byte, bad file included."""
        through_ray = fold_corpus_ray([corpus])
        local = fold_corpus([corpus], workers=1)
        assert orjson.dumps(through_ray.to_json()) == orjson.dumps(local.to_json())
        assert through_ray.exit_code == 2
        assert local_ray.is_initialized()  # an instance it did not start is left running

    def test_cli_ray_option(self, local_ray: Any, corpus: Path) -> None:
        """`replay PATHS --ray` prints the report `--workers 1` prints, with the same exit code."""
        runner = CliRunner()
        through_ray = runner.invoke(cli, ["replay", str(corpus), "--json", "--ray"])
        local = runner.invoke(cli, ["replay", str(corpus), "--json", "--workers", "1"])
        assert through_ray.stdout == local.stdout
        assert through_ray.exit_code == local.exit_code == 2
