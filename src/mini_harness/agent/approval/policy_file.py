"""Where the approval policy is: `.mini-harness/policy.toml` in the workspace, read as
every control file is (runtime/control_file.py: a regular file of bounded size, never a
FIFO or a device)."""

from __future__ import annotations

from typing import Final

POLICY_FILE: Final = ".mini-harness/policy.toml"
