"""Fold a corpus as Ray tasks: the same summaries and report as `fold_corpus`, on a cluster.

Each task reads its file from a path every node can see (a shared file system) and sends
back a FileSummary, so only counts travel to the driver, never events. Ray is imported
here alone, and only when this is called (`pip install 'mini-harness[ray]'`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from mini_harness.errors import RayUnavailableError
from mini_harness.replay.corpus.summary import (
    FOLD,
    FileSummary,
    RegistryFactory,
    SummaryMerge,
    SummaryOptions,
    summarize_batch,
)
from mini_harness.replay.corpus.workers import (
    CorpusFile,
    CorpusReport,
    Progress,
    batches,
    expand_paths,
    in_flight,
    merged_report,
    missing_summaries,
)

LOOPBACK_ONLY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
"""Set before Ray is imported, this makes a local instance take the loopback address as its
node address, so every server it starts listens on 127.0.0.1 only (by default Ray binds
them to all interfaces, ready for other nodes to join)."""


def fold_corpus_ray(
    paths: Iterable[str | os.PathLike[str]],
    *,
    address: str | None = None,
    mode: str = FOLD,
    rerun: RegistryFactory | None = None,
    allow_side_effects: bool = False,
    progress: Progress | None = None,
) -> CorpusReport:
    """`fold_corpus` with each file folded by a Ray task.

    `address` is "auto" (the cluster this machine belongs to), a cluster address, or None
    for a local Ray instance started for this call (on loopback, stopped at the end). If
    Ray is already initialized in this process, that instance is used as it is. A local
    instance listens on loopback only when Ray is first imported here (see LOOPBACK_ONLY).
    """
    options = SummaryOptions(mode, rerun, allow_side_effects)
    return fold_files_ray(expand_paths(paths), options, address=address, progress=progress)


def fold_files_ray(
    files: Sequence[CorpusFile],
    options: SummaryOptions,
    *,
    address: str | None = None,
    progress: Progress | None = None,
) -> CorpusReport:
    """`fold_corpus_ray` over files already expanded (see `expand_paths`)."""
    ray = import_ray(local=address is None)
    started = not ray.is_initialized()
    if started:
        _start(ray, address)
    try:
        return merged_report(_summaries(ray, files, options), options, progress)
    finally:
        if started:
            ray.shutdown()


def import_ray(*, local: bool) -> Any:
    """The ray module; RayUnavailableError if it is not installed. `local`: for a local
    instance, set first what keeps it on loopback (see LOOPBACK_ONLY)."""
    if local:
        for name, value in LOOPBACK_ONLY.items():
            os.environ.setdefault(name, value)
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(
            "--ray needs Ray: pip install 'mini-harness[ray]' (or 'ray>=2.9,<3')"
        ) from None
    return ray


def _start(ray: Any, address: str | None) -> None:
    settings: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address is not None:
        settings["address"] = address
    try:
        ray.init(**settings)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "a local instance"
        raise RayUnavailableError(f"cannot start Ray ({where}): {exc}") from None


def _summaries(
    ray: Any, files: Sequence[CorpusFile], options: SummaryOptions
) -> Iterator[FileSummary | SummaryMerge]:
    """Missing files, then each batch's summary as its task ends (see `in_flight`)."""
    task = ray.remote(num_cpus=1, max_retries=1)(summarize_batch)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    yield from missing_summaries(files)
    options_ref = ray.put(options)
    yield from in_flight(
        batches([item.path for item in files if item.missing is None], cpus),
        cpus,
        start=lambda paths: task.remote(paths, options_ref),
        wait=lambda refs: ray.wait(refs, num_returns=1)[0],
        result=ray.get,
        lost=(ray.exceptions.RayError, "Ray task failed"),
    )
