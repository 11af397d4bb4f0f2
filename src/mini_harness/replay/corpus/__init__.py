"""Corpora: many transcripts folded into one report, in worker processes or as Ray tasks
(`corpus.ray`, which imports Ray only when it is used)."""

from __future__ import annotations

from mini_harness.replay.corpus.summary import OK, PROBLEMS, UNREADABLE
from mini_harness.replay.corpus.workers import (
    CorpusFile,
    CorpusReport,
    ToolReport,
    corpus_report,
    expand_paths,
    fold_corpus,
    fold_files,
    is_corpus,
)

__all__ = [
    "OK",
    "PROBLEMS",
    "UNREADABLE",
    "CorpusFile",
    "CorpusReport",
    "ToolReport",
    "corpus_report",
    "expand_paths",
    "fold_corpus",
    "fold_files",
    "is_corpus",
]
