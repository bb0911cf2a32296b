"""Ctrl-C in a live evaluation: the first one stops the run cleanly, the second at once.

Python's default SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread is.
Inside a Playwright call that is the dispatcher greenlet of Playwright's event loop: the
exception kills that greenlet, and the sync API then spins forever switching to it (a run
left going at 60 % CPU after Ctrl-C, stopped only by a second one). So while a run is
going, SIGINT is handled here instead:

* the first signal sets :func:`stop_requested`; the episode loop checks it after every
  attempt and ends the episode as ``interrupted``; an agent call in progress (an endpoint
  request, its retry waits) is interrupted at once, since it runs no Playwright code
  (:func:`agent_call`); a browser the signal also reached (a terminal signals the whole
  process group, Playwright's driver closes its browsers on SIGINT) makes the step fail,
  and that failure counts as the interruption, not as an error;
* a second signal in the driver runs its ``on_second`` callbacks (stopping the worker
  processes) and leaves with exit status 130 without cleaning up.

Every process of a run (the driver and each worker) has its own state here.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

#: exit status of a run stopped by SIGINT (128 + 2, as a shell reports it)
INTERRUPTED_EXIT = 130


class _State:
    def __init__(self) -> None:
        self.signals = 0
        self.in_agent = False
        self.on_second: list[Callable[[], None]] = []
        self.forward: list[Callable[[], None]] = []


_STATE = _State()


def stop_requested() -> bool:
    """Whether this process has been asked to stop (a SIGINT arrived)."""
    return _STATE.signals > 0


def request_stop() -> None:
    """Ask this process to stop as a first SIGINT would (tests; a worker told by its driver)."""
    _STATE.signals = max(_STATE.signals, 1)


@contextmanager
def agent_call() -> Iterator[None]:
    """Code that runs no Playwright: a SIGINT inside raises ``KeyboardInterrupt`` there, at once."""
    if stop_requested():
        raise KeyboardInterrupt
    _STATE.in_agent = True
    try:
        yield
    finally:
        _STATE.in_agent = False


def _handler(escalate: bool) -> Callable[[int, Any], None]:
    def handle(signum: int, frame: Any) -> None:
        _STATE.signals += 1
        if _STATE.signals == 1 and escalate:  # the driver speaks for its workers
            for fn in list(_STATE.forward):
                fn()
            print("\nlive-eval: stopping after the current step (Ctrl-C again to quit at once)", file=sys.stderr,
                  flush=True)
        elif escalate:
            for fn in list(_STATE.on_second):
                try:
                    fn()
                except Exception:  # noqa: BLE001 - leaving anyway
                    pass
            print("live-eval: quit; unfinished episodes are redone when the same command is run again",
                  file=sys.stderr, flush=True)
            os._exit(INTERRUPTED_EXIT)
        if _STATE.in_agent:
            _STATE.in_agent = False
            raise KeyboardInterrupt

    return handle


@contextmanager
def handling_sigint(escalate: bool = True) -> Iterator[_State]:
    """Handle SIGINT as described in the module docstring for the duration of the block.

    Args:
        escalate: a second signal leaves the process at once (the driver); workers only stop.

    Yields:
        The process's state; append to ``on_second`` (callbacks before a hard exit) and
        ``forward`` (callbacks passing the first signal on, e.g. to worker processes).
    """
    _STATE.signals = 0
    _STATE.on_second.clear()
    _STATE.forward.clear()
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        try:
            yield _STATE
        finally:
            _STATE.signals = 0
        return
    previous = signal.signal(signal.SIGINT, _handler(escalate))
    try:
        yield _STATE
    finally:
        signal.signal(signal.SIGINT, previous)
        _STATE.signals = 0  # the process is no longer stopping (a caller read stop_requested() inside)


def install_in_worker() -> None:
    """A worker process's handler for the rest of its life: stop, never leave mid-call."""
    _STATE.signals = 0
    signal.signal(signal.SIGINT, _handler(escalate=False))
