"""Run tracd on a clock that starts at the seed's fixed "now" (the tracker site's server).

Run by the site's venv Python::

    venv/bin/python trac_serve.py 2025-06-02T09:00:00+00:00 -s --hostname 127.0.0.1 --port 8472 ENV_DIR

Trac renders some dates relative to now whatever the date format (the roadmap's "due in 4
weeks", the timeline's last 30 days). ``trac.util.datefmt.datetime_now`` is replaced, before
any other Trac module imports it, by a clock that starts at the given instant and runs at
normal speed: pages look the same on every run, and what an episode creates is dated just
after the seed. ``time_now`` (login cookies) keeps the real clock.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta


def main() -> None:
    start_at = datetime.fromisoformat(sys.argv.pop(1))
    started = time.time()
    import trac.util.datefmt as datefmt

    def datetime_now(tz=None):  # same contract as datetime.now
        now = start_at + timedelta(seconds=time.time() - started)
        return now.astimezone(tz) if tz is not None else now.astimezone().replace(tzinfo=None)

    datefmt.datetime_now = datetime_now
    from trac.web.standalone import main as tracd

    sys.argv[0] = "tracd"
    tracd()


if __name__ == "__main__":
    main()
