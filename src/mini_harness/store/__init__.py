"""The session store: every agent run recorded without `--log`, found again by the
workspace its RunStarted recorded (`mini-harness sessions`, `--last`, a run id prefix),
and removed only when asked (`sessions prune`). See docs/sessions.md."""

from __future__ import annotations

from mini_harness.store.places import (
    HOME_ENV,
    default_sessions_dir,
    harness_home,
    user_config_path,
)
from mini_harness.store.sessions import Pruned, SessionStore, StoredRun, Unreadable, iso

__all__ = [
    "HOME_ENV",
    "Pruned",
    "SessionStore",
    "StoredRun",
    "Unreadable",
    "default_sessions_dir",
    "harness_home",
    "iso",
    "user_config_path",
]
