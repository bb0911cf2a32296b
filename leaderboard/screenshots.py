"""Screenshots of each tab of the leaderboard for ``leaderboard/README.md`` (``docs/leaderboard_*.png``).

Starts the real app on a free port with a fresh data folder and the default gold, submits a
few real prediction files (the no-model heuristic and gold answers with misses) through
``gradio_client``, and captures the tabs in Debian Chromium at 1366x900 (and the table at
390x844)::

    python leaderboard/screenshots.py                  # writes docs/leaderboard_*.png
    python leaderboard/screenshots.py --out /tmp/shots --chromium /usr/lib/chromium/chromium
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _files(folder: Path) -> list[tuple[str, str, str, Path]]:
    """(model name, view, contract, file) of the submissions shown."""
    from mag_dataset.actions import Contract, View
    from mag_dataset.dataset import bundled_dataset, load_gold
    from mag_dataset.heuristic import heuristic_predictions
    from mag_dataset.predictions import write_predictions
    from mag_dataset.prompts import render_target

    out = []
    for view in View:
        steps = load_gold(bundled_dataset(), view.value, "test")  # coord: with the som menus the heuristic reads
        for contract in ("J", "A", "G"):
            path = write_predictions(folder / f"heuristic-{view.value}-{contract}.jsonl",
                                     heuristic_predictions(steps, view.value, contract))
            out.append((f"heuristic ({contract})", view.value, contract, path))
        for every, name in ((4, "gold, 1 miss in 4"), (2, "gold, 1 miss in 2")):
            path = folder / f"gold-{view.value}-{every}.jsonl"
            path.write_text("\n".join(json.dumps({
                "step_id": s.step_id,
                "output": render_target(s, view, Contract.J) if i % every else '{"action": {"type": "finish"}, "guide": "Done."}',
            }) for i, s in enumerate(steps)) + "\n")
            out.append((name, view.value, "J", path))
    return out


def _crowd(folder: Path, n: int) -> list[tuple[str, str, str, Path]]:
    """``n`` som contract-J files of gold answers with a few misses each (1 step in 3 to 1 in 12,
    at shifted places): a crowded table with close scores, several of them shared ranks."""
    from mag_dataset.actions import Contract, View
    from mag_dataset.dataset import bundled_dataset, load_steps
    from mag_dataset.prompts import render_target

    steps = load_steps(bundled_dataset(), "som", "test")
    out = []
    for k in range(n):
        every, shift = 3 + k % 10, k // 10
        path = folder / f"crowd-{k:02d}.jsonl"
        path.write_text("\n".join(json.dumps({
            "step_id": s.step_id,
            "output": '{"action": {"type": "finish"}, "guide": "Done."}' if (i + shift) % every == 0
            else render_target(s, View.SOM, Contract.J),
        }) for i, s in enumerate(steps)) + "\n")
        out.append((f"agent-{k:02d}", "som", "J", path))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--chromium", default="/usr/lib/chromium/chromium")
    parser.add_argument("--crowd", type=int, default=40, help="extra som/J rows, for the crowded-table shots")
    args = parser.parse_args(argv)
    from gradio_client import Client, handle_file
    from playwright.sync_api import sync_playwright

    from mag_dataset.live import pw_stack

    pw_stack.install()  # cheap per-call stack capture (see its module)
    tmp = Path(tempfile.mkdtemp(prefix="mag-board-shots-"))
    port = _free_port()
    env = dict(os.environ, MAG_BOARD_DIR=str(tmp / "data"), MAG_BOARD_DAILY_CAP="1000",
               GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1")
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, str(ROOT / "leaderboard" / "app.py"), "--port", str(port)],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/config", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        client = Client(url, verbose=False)
        labs = ("MAG maintainers", "Lab A", "Lab B", "Lab C", "Lab D")
        for k, (name, view, contract, path) in enumerate(_files(tmp) + _crowd(tmp, args.crowd)):
            msg, _ = client.predict(model_name=name, view=view, contract=contract, organisation=labs[k % len(labs)],
                                    predictions=handle_file(str(path)), api_name="/submit")
            print(msg[:120])
        args.out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--headless", "--no-sandbox"])
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(url)
            page.locator("#table-som table").first.wait_for()
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(1000)
            page.screenshot(path=str(args.out / "leaderboard_board.png"))
            # the crowded J table: top 20, the "show all" button, shared ranks; then a search; then the
            # header kept in view while the table scrolls
            j = page.locator("#table-som .mag-table-wrap").filter(has=page.locator("table[data-contract=J]"))
            j.scroll_into_view_if_needed()
            tools = page.locator("#table-som .mag-tools[data-contract=J]")
            tools.evaluate("t => t.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(300)
            page.screenshot(path=str(args.out / "leaderboard_crowd.png"))
            tools.locator(".mag-search").fill("agent-0")
            page.wait_for_timeout(300)
            page.screenshot(path=str(args.out / "leaderboard_search.png"))
            tools.locator(".mag-search").fill("")
            tools.locator(".mag-more").click()
            j.evaluate("w => { w.scrollTop = 420; }")
            page.wait_for_timeout(300)
            page.screenshot(path=str(args.out / "leaderboard_sticky.png"))
            page.get_by_role("tab", name="Submit").click()
            page.locator("#model-name textarea, #model-name input").first.fill("my-model")
            page.locator("#predictions input[type=file]").set_input_files(str(tmp / "heuristic-som-J.jsonl"))
            page.locator("#predictions").get_by_text("heuristic-som-J").wait_for()
            page.locator("#submit-button").click()
            page.locator("#submit-status.status-rejected").wait_for(timeout=60_000)
            page.wait_for_timeout(500)
            page.screenshot(path=str(args.out / "leaderboard_submit.png"))
            page.get_by_role("tab", name="Leaderboard").click()
            page.locator("#table-som table[data-contract=J] tbody tr").first.click()
            page.locator("#details-breakdowns table").first.wait_for(timeout=60_000)
            page.locator("#compare-with input").click()
            page.get_by_role("option").first.click()
            page.locator("#compare-button").click()
            page.wait_for_function("() => document.querySelector('#compare-out textarea').value.startsWith('view')",
                                   timeout=60_000)
            page.screenshot(path=str(args.out / "leaderboard_details.png"), full_page=True)
            page.get_by_role("tab", name="About").click()
            page.wait_for_timeout(500)
            page.screenshot(path=str(args.out / "leaderboard_about.png"))
            phone = browser.new_page(viewport={"width": 390, "height": 844})
            phone.goto(url)
            phone.locator("#table-som table").first.wait_for()
            phone.wait_for_load_state("networkidle")
            phone.locator("#table-som table[data-contract=J]").scroll_into_view_if_needed()
            phone.locator("#table-som .mag-table-wrap").nth(2).evaluate("w => { w.scrollLeft = 260; }")
            phone.wait_for_timeout(800)
            phone.screenshot(path=str(args.out / "leaderboard_phone.png"))
            for tab, name in (("Submit", "submit"), ("Details", "details"), ("About", "about")):
                phone.get_by_role("tab", name=tab).click()
                if name == "details":
                    phone.locator("#details-choice input").click()
                    phone.get_by_role("option").first.click()
                    phone.locator("#details-breakdowns table").first.wait_for(timeout=60_000)
                phone.wait_for_timeout(800)
                phone.screenshot(path=str(args.out / f"leaderboard_phone_{name}.png"))
            browser.close()
    except BaseException:
        print(f"screenshots: failed; the server's log is kept in {tmp / 'server.log'}", file=sys.stderr)
        raise
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    shutil.rmtree(tmp, ignore_errors=True)  # the server's board, stopped: nothing of it is kept
    for f in sorted(args.out.glob("leaderboard_*.png")):
        print(f"{f}: {f.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
