"""Other agents' session files (Codex rollouts, Claude Code sessions) read into
mini-harness events: one run per session (and per subagent), with where it came from, so
that every reader of transcripts (show, view, replay, the corpus, verify) reads them.

The mapping is documented in docs/importing.md.
"""

from __future__ import annotations

from mini_harness.interop.build import SOURCE_RECORD
from mini_harness.interop.importer import (
    FORMATS,
    IMPORTER,
    ImportResult,
    detect,
    find_sessions,
    import_session,
    run_id_for,
)
from mini_harness.interop.source import SourceProblem

__all__ = [
    "FORMATS",
    "IMPORTER",
    "SOURCE_RECORD",
    "ImportResult",
    "SourceProblem",
    "detect",
    "find_sessions",
    "import_session",
    "run_id_for",
]
