"""Make Playwright's per-call stack capture cheap (a process-wide, behaviour-preserving patch).

Playwright for Python (1.44, the version BrowserGym pins) calls :func:`inspect.stack` on every
API call to name the call in its protocol metadata. ``inspect.stack()`` resolves each frame's
source file and module and reads a line of source around it (``getsourcefile``,
``getmodule``, ``findsource``): under pytest and BrowserGym, whose stacks are deep, that was
30% of the CPU time of a site expert's episode (py-spy, ``tests/test_site_tracker.py``).
Playwright reads only each frame's file name, line number, function and locals, so
:func:`install` gives its modules an ``inspect`` whose ``stack`` builds exactly those
:class:`inspect.FrameInfo` fields by walking the frames (no source lookups); everything else is
the standard module. Later Playwright releases made the same change upstream.

Usage::

    from mag_dataset.live import pw_stack
    pw_stack.install()      # idempotent; done by mag_dataset.live.env before any browser starts
"""

from __future__ import annotations

import inspect
import sys
import types

#: The Playwright modules that call ``inspect.stack()`` on each API call.
_MODULES = ("playwright._impl._connection", "playwright._impl._sync_base", "playwright._impl._network")


def frame_stack(depth: int = 1) -> list[inspect.FrameInfo]:
    """What ``inspect.stack(context=0)`` returns ``depth`` frames up (1: the caller's frame
    first), without resolving any source file: file name, line number and function per frame."""
    out = []
    frame = sys._getframe(depth)
    while frame is not None:
        code = frame.f_code
        out.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None))
        frame = frame.f_back
    return out


class _Inspect(types.ModuleType):
    """The :mod:`inspect` module with a cheap ``stack``."""

    @staticmethod
    def stack(context: int = 1) -> list[inspect.FrameInfo]:
        return frame_stack(2)  # 2: the frame that called ``inspect.stack()``

    def __getattr__(self, name: str):
        return getattr(inspect, name)


def install() -> bool:
    """Patch the Playwright modules that are importable; returns whether any was patched."""
    import importlib

    patched = False
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if isinstance(getattr(module, "inspect", None), _Inspect):
            patched = True
            continue
        if getattr(module, "inspect", None) is inspect:
            module.inspect = _Inspect("inspect")
            patched = True
    return patched
