"""Request rate limits of the board's read endpoints (``/compare``, ``/details``): a sliding
window per client and one for everyone, so twenty queued comparisons from one client cannot
hold up another user's submission. Submissions have their own cap (accepted files per
submitter per UTC day, :class:`~mag_dataset.board.Board`). Pure: the clock is injected.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from typing import Callable

#: Window of every rate (seconds).
WINDOW_S = 60.0

#: Most clients remembered at once; the least recently seen is forgotten first (a flood of new
#: client names cannot grow memory; the global window still counts their requests).
MAX_CLIENTS = 10_000


class RateLimiter:
    """At most ``per_client`` requests per client and ``overall`` requests in all within any
    :data:`WINDOW_S` seconds. ``0`` turns a limit off.

    Args:
        per_client: requests one client may make per window.
        overall: requests every client together may make per window.
        clock: a monotonic clock (seconds); tests pass their own.
    """

    def __init__(self, per_client: int, overall: int, clock: Callable[[], float] = time.monotonic) -> None:
        if per_client < 0 or overall < 0:
            raise ValueError("rate limits must not be negative")
        self.per_client, self.overall, self.clock = per_client, overall, clock
        self._lock = threading.Lock()
        self._all: deque[float] = deque()
        self._clients: OrderedDict[str, deque[float]] = OrderedDict()

    def _expire(self, q: deque[float], now: float) -> None:
        while q and q[0] <= now - WINDOW_S:
            q.popleft()

    def acquire(self, client: str) -> float | None:
        """Count a request of ``client`` if both limits allow it.

        Returns:
            ``None`` when the request may go ahead (it is counted), else the seconds until
            it would be allowed (it is not counted).
        """
        now = self.clock()
        with self._lock:
            self._expire(self._all, now)
            mine = self._clients.get(client)
            if mine is not None:
                self._expire(mine, now)
                self._clients.move_to_end(client)
            waits = []
            if self.per_client and mine is not None and len(mine) >= self.per_client:
                waits.append(mine[0] + WINDOW_S - now)
            if self.overall and len(self._all) >= self.overall:
                waits.append(self._all[0] + WINDOW_S - now)
            if waits:
                return max(waits)
            if mine is None:
                mine = self._clients[client] = deque()
                while len(self._clients) > MAX_CLIENTS:
                    self._clients.popitem(last=False)
            mine.append(now)
            self._all.append(now)
            return None


def refusal(what: str, wait: float, per_client: int, overall: int) -> str:
    """The one-line message of a refused request."""
    return (f"Too many {what} requests: at most {per_client} per minute from one user and {overall} per minute "
            f"from everyone. Try again in {max(1, math.ceil(wait))} s.")


__all__ = ["MAX_CLIENTS", "RateLimiter", "WINDOW_S", "refusal"]
