"""How every command that takes `--run` or `--step` says what they take (the rule itself is
replay/history/select.py)."""

from __future__ import annotations

RUN_HELP = (
    "A run: its 1-based index in the file, or its id or a prefix of the id that no other "
    "run shares."
)
EVERY_RUN = "Default: every run."
LAST_AGENT_RUN = "Default: the last agent run of the file."
STEP_HELP = (
    "N counts an agent run's model requests from 1; a step no run made is an error naming "
    "the steps there are."
)
