"""Continuing a run from its history: re-running its calls, replaying it offline,
resuming and forking it."""
