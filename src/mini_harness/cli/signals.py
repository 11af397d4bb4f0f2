"""SIGTERM and SIGHUP taken the way Ctrl-C is.

`timeout`, a container stop, a CI job cancelled and a closed terminal end a process with
SIGTERM or SIGHUP. Left to their default, they kill it on the spot: a run stays at its last
event, unfinished. Here each raises `TerminatedError` (a KeyboardInterrupt) in the main
thread instead, so a run ends `cancelled` in its log, as on Ctrl-C, and the command exits
128 + the signal's number (143, 129). A second signal finds the default back and ends the
process at once. A signal the process was started ignoring (`nohup`) stays ignored.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

from mini_harness.errors import ExitCode, TerminatedError

TERMINATING = (signal.SIGTERM, signal.SIGHUP)

_received: list[TerminatedError] = []


def _terminate(signum: int, frame: FrameType | None) -> None:
    for taken in TERMINATING:
        signal.signal(taken, signal.SIG_DFL)
    terminated = TerminatedError(signum, signal.Signals(signum).name)
    _received.append(terminated)
    raise terminated


def take_terminating_signals() -> None:
    """Raise TerminatedError on SIGTERM and SIGHUP (only from the main thread, and only
    where the signal still has its default action)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in TERMINATING:
        if signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, _terminate)


def exit_status(code: int) -> int:
    """The command's exit status: an interrupt's (130) is 128 + the signal's number when a
    termination signal was the interrupt."""
    if code == ExitCode.INTERRUPTED and _received:
        return _received[-1].exit_code
    return code
