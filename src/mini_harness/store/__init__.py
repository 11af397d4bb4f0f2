"""The session store: every agent run recorded without `--log`, found again by the
workspace its RunStarted recorded (`mini-harness sessions`, `--last`, a run id prefix),
and removed only when asked (`sessions prune`). See docs/sessions.md.

Where it is (`places`) is read by every command that reads the settings; the store itself
(`sessions`, which reads transcripts) is imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_harness._exports import lazy_names
from mini_harness.store.places import (
    HOME_ENV,
    default_sessions_dir,
    harness_home,
    user_config_path,
)

if TYPE_CHECKING:
    from mini_harness.store.sessions import Pruned, SessionStore, StoredRun, Unreadable, iso
else:  # type checkers see the names above; at run time they are imported on first use
    __getattr__ = lazy_names(
        __name__,
        {
            "mini_harness.store.sessions": (
                "Pruned",
                "SessionStore",
                "StoredRun",
                "Unreadable",
                "iso",
            )
        },
    )

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
