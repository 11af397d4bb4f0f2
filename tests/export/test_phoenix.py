"""A real backend: Arize Phoenix receives `export otel` and shows the spans as an AGENT
over LLM and TOOL spans, with their token counts. Opt-in, never in CI: set
MINI_HARNESS_PHOENIX to the `phoenix` executable of an environment where `pip install
arize-phoenix` was run. Phoenix's gRPC port listens on every interface, so the server,
the export and the reading back all run in a network namespace of their own (`unshare
-n`, as root), where only a loopback interface exists."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mini_harness
from tests.export.scenario import build

PHOENIX = os.environ.get("MINI_HARNESS_PHOENIX", "")

pytestmark = [
    pytest.mark.phoenix,
    pytest.mark.skipif(not PHOENIX, reason="set MINI_HARNESS_PHOENIX to a phoenix executable"),
    pytest.mark.skipif(
        shutil.which("unshare") is None or os.geteuid() != 0,
        reason="a network namespace for Phoenix needs unshare, as root",
    ),
]

# Run inside the namespace: bring up loopback, start Phoenix, export, read the spans back.
DRIVER = """
import json, os, subprocess, sys, time, urllib.request
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
phoenix, transcript, out, work = sys.argv[1:5]
env = {**os.environ, "PHOENIX_WORKING_DIR": work, "PHOENIX_HOST": "127.0.0.1",
       "PHOENIX_PORT": "6006", "PHOENIX_GRPC_PORT": "4317"}
server = subprocess.Popen([phoenix, "serve"], env=env, stdout=subprocess.DEVNULL,
                          stderr=open(os.path.join(work, "phoenix.log"), "w"))
try:
    for _ in range(240):
        try:
            urllib.request.urlopen("http://127.0.0.1:6006/healthz", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    sent = subprocess.run(
        [sys.executable, "-m", "mini_harness", "export", "otel", transcript,
         "--endpoint", "http://127.0.0.1:6006/v1/traces"],
        capture_output=True, text=True)
    spans = []
    for _ in range(60):
        with urllib.request.urlopen(
            "http://127.0.0.1:6006/v1/projects/default/spans?limit=1000", timeout=5
        ) as answer:
            spans = json.load(answer)["data"]
        if len(spans) >= int(sys.argv[5]):
            break
        time.sleep(0.5)
    json.dump({"sent": sent.returncode, "output": sent.stdout + sent.stderr, "spans": spans},
              open(out, "w"))
finally:
    server.terminate()
    server.wait(timeout=30)
"""


def test_phoenix_shows_agent_llm_and_tool_spans(tmp_path: Path) -> None:
    """The scenario's spans arrive in Phoenix as AGENT, LLM and TOOL spans, the LLM ones
    with the token counts the transcript recorded."""
    path, _ = build(tmp_path)
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER))
    out, work = tmp_path / "out.json", tmp_path / "phoenix"
    work.mkdir()
    expected = 19  # the spans of the three runs (12, 2 and 5)
    source = str(Path(mini_harness.__file__).parents[1])
    subprocess.run(
        ["unshare", "-n", sys.executable, str(driver), PHOENIX, str(path), str(out), str(work),
         str(expected)],
        check=True, timeout=300, env={**os.environ, "PYTHONPATH": source},
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert result["sent"] == 0, result["output"]
    spans = result["spans"]
    assert len(spans) == expected
    kinds: dict[str, set[str]] = {}
    for span in spans:
        kinds.setdefault(span["name"].split(" ")[0], set()).add(span["span_kind"])
    assert kinds["invoke_agent"] == {"AGENT"}
    assert kinds["chat"] == {"LLM"}
    assert kinds["execute_tool"] == {"TOOL"}
    tokens = sorted(
        (span["attributes"].get("llm.token_count.prompt"),
         span["attributes"].get("llm.token_count.completion"))
        for span in spans
        if span["span_kind"] == "LLM" and "llm.token_count.prompt" in span["attributes"]
    )  # fmt: skip
    assert tokens == [(100, 10), (120, 5), (150, 12)]
