"""Where the test run's sites live: their own home and ports, never the user's.

``scripts/test.sh`` sets the sites up here (``eval "$(python tests/_site_env.py)"`` exports the
variables before ``mag sites setup``) and ``conftest`` sets the same defaults for a bare
``pytest``. A user's own ``mag sites serve`` (default home, default ports) is therefore never
reset, stopped or shadowed by the suite: the tests only ever start, reset and stop servers of
this home.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

#: The sites' home of the test run (installs, databases, snapshots, server records).
TEST_SITES_HOME = Path.home() / ".cache" / "mag_dataset" / "test-sites"
#: Port of each site under the test run: the default port + 10000.
TEST_PORTS = {"shop": 18471, "tracker": 18472, "wiki": 18473, "forum": 18474}


def test_site_env() -> dict[str, str]:
    """The variables that point the sites at the test home and ports."""
    env = {"MAG_SITES_HOME": str(TEST_SITES_HOME)}
    env.update({f"MAG_SITE_{name.upper()}_PORT": str(port) for name, port in TEST_PORTS.items()})
    return env


def apply_defaults() -> None:
    """Set each variable unless the caller already chose it."""
    for key, value in test_site_env().items():
        os.environ.setdefault(key, value)


if __name__ == "__main__":
    for key, value in test_site_env().items():
        print(f"export {key}={shlex.quote(os.environ.get(key, value))}")
