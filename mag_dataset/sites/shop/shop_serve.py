"""Run the shop's Django server on a clock that starts at the seed's fixed "now".

Run by the site's venv Python, in the site's app folder::

    venv/bin/python shop_serve.py 2025-06-02T09:00:00+00:00 runserver 127.0.0.1:8471 --noreload --insecure

The staff dashboard charts the orders of the last 24 hours on an hourly axis read from
``django.utils.timezone.now``: on the wall clock its labels move every hour, so the same page
looked different on every run (a replay of a dashboard episode never matched its recording).
``now`` is replaced, before Django or Oscar import it, by a clock that starts at the given
instant and runs at normal speed, as ``trac_serve.py`` does for the tracker: pages look the
same on every run, and what an episode creates (an order, a basket) is dated just after the
seed. Seeded dates are absolute (:mod:`mag_dataset.sites.shop.seed_data`).
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta


def main() -> None:
    start_at = datetime.fromisoformat(sys.argv.pop(1))
    if start_at.tzinfo is None:
        raise SystemExit(f"shop_serve.py: the start instant needs a UTC offset, got {start_at.isoformat()}")
    started = time.time()
    import django.utils.timezone as timezone

    def now() -> datetime:  # same contract as django.utils.timezone.now with USE_TZ = True
        return start_at + timedelta(seconds=time.time() - started)

    timezone.now = now
    from django.core.management import execute_from_command_line

    sys.argv[0] = "manage.py"
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
