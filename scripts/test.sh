#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing, then runs pytest.
#   bash scripts/test.sh            # everything (browser, training and server tests included)
#   bash scripts/test.sh -k scoring # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: Chromium drives the browser tests (Playwright cannot download its own
# browser here); PHP + MediaWiki serve the wiki site. Installed only when missing.
APT_PKGS="chromium php-cli php-sqlite3 php-mbstring php-xml php-intl mediawiki"
MISSING=""
for p in $APT_PKGS; do dpkg -s "$p" >/dev/null 2>&1 || MISSING="$MISSING $p"; done
if [ -n "$MISSING" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $MISSING >/dev/null
fi

# torch first and pinned: 2.13.0 is the CPU build on local disk; any other spec may pull CUDA.
python -m pip install -q --disable-pip-version-check "torch==2.13.0"
python -m pip install -q --disable-pip-version-check -e ".[all]"

# The real web applications (shop, tracker, wiki, forum): installed, seeded and snapshotted
# once per machine (a no-op when already set up); the site tests serve and reset them.
mag sites setup

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export GRADIO_ANALYTICS_ENABLED=False TOKENIZERS_PARALLELISM=false
# The site tests start BrowserGym's process-wide Playwright; a worker that ran them cannot start a
# second sync Playwright (the leaderboard's browser tests), so they run in their own pytest pass.
SITE_TESTS=$(ls tests/test_site_*.py)
python -m pytest -n 2 --dist loadfile $(for f in $SITE_TESTS; do printf -- "--ignore=%s " "$f"; done) "$@"
# --dist loadgroup: the modules of one site (its tests, recapture, re-recording, traces) share
# one worker, so no module stops or resets a site another worker is using.
exec python -m pytest -n 2 --dist loadgroup $SITE_TESTS "$@"
