"""Hostile-upload benchmark (issue 17): time and peak memory of each bomb, and of the worst.

Starts the real leaderboard (``python leaderboard/app.py``) on 127.0.0.1 with its default
caps (20 MiB, 200,000 lines, 10 seeds, 2 workers) over the bundled gold, and uploads each
hostile file of :mod:`mag_dataset.testing.hostile` with ``gradio_client``, then a normal
file. For each it prints the wall time, the first words of the server's answer, the
server's peak resident memory (``VmHWM``, the whole run so far) and the peak resident
memory of the isolated decoder child, measured by running the same
``run_isolated("board.score", ...)`` call directly.

Run::

    python benchmarks/bench_hostile_uploads.py               # nested list of 10^8 values
    python benchmarks/bench_hostile_uploads.py --list-values 1000000000   # the issue's 10^9 (needs ~1 GB here)
"""

from __future__ import annotations

import argparse
import json
import os
import re
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


def _vmhwm_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024


def _uploads(step_ids: list[str], list_values: int) -> dict[str, tuple[str, bytes]]:
    from mag_dataset.testing import hostile

    # hundreds of seeds in ~15 MB decompressed, under the 20 MiB cap whatever the gold's size,
    # so the file reaches the seed cap (tests/test_leaderboard_hostile.py sizes it the same way)
    seed_output = "I would click the first button " * 2
    line = sum(len(json.dumps({"step_id": s, "output": seed_output, "seed": 100})) + 1 for s in step_ids)
    seeds = 15_000_000 // line
    normal = "".join(json.dumps({"step_id": s, "output": '{"action": {"type": "click", "element": "1"}, "guide": "Click."}'})
                     + "\n" for s in step_ids).encode()
    return {
        "normal .jsonl": ("normal.jsonl", normal),
        "dictionary bomb, 2,000 rows x 1 MiB": ("dict2k.parquet", hostile.dictionary_bomb(step_ids[0], 2_000)),
        "dictionary bomb, 200,000 rows x 1 MiB": ("dict200k.parquet", hostile.dictionary_bomb(step_ids[0], 200_000)),
        f"nested list<int8>, {list_values:,} values": ("nested.parquet", hostile.nested_list_bomb(step_ids[0], list_values)),
        "duplicate output column": ("dup.parquet", hostile.duplicate_column(step_ids)),
        "invalid UTF-8 in output": ("utf8.parquet", hostile.invalid_utf8(step_ids)),
        f"{seeds:,} seeds, .jsonl.gz": ("seeds.jsonl.gz", hostile.many_seeds_gz(step_ids, seeds, output=seed_output)),
        "second gzip member": ("two.jsonl.gz", hostile.two_gzip_members(normal, b'{"step_id": "x", "output": "{}"}\n')),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list-values", type=int, default=100_000_000, help="values in the nested list<int8> bomb")
    args = parser.parse_args(argv)

    from gradio_client import Client, handle_file

    from mag_dataset.actions import View
    from mag_dataset.board import BoardConfig
    from mag_dataset.dataset import bundled_dataset, load_steps
    from mag_dataset.isolation import Limits, run_isolated

    steps = load_steps(bundled_dataset(), "som", "test")
    ids = [s.step_id for s in steps]
    uploads = _uploads(ids, args.list_values)
    cfg = BoardConfig()

    tmp = Path(tempfile.mkdtemp(prefix="mag-bench-hostile-"))
    port = _free_port()
    env = dict(os.environ, MAG_BOARD_DIR=str(tmp / "data"), MAG_BOARD_DAILY_CAP="1000", HF_HUB_OFFLINE="1",
               GRADIO_ANALYTICS_ENABLED="False")
    for key in ("MAG_BOARD_MAX_MB", "MAG_BOARD_MAX_LINES", "MAG_BOARD_MAX_SEEDS", "MAG_BOARD_WORKERS"):
        env.pop(key, None)
    log = open(tmp / "server.log", "wb")
    server = subprocess.Popen([sys.executable, str(ROOT / "leaderboard" / "app.py"), "--port", str(port)],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(url + "/config", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    print((tmp / "server.log").read_text()[-2000:], file=sys.stderr)
                    return 1
                time.sleep(0.3)
        client = Client(url, verbose=False)
        start_mb = _vmhwm_mb(server.pid)
        print(f"server up, peak RSS so far {start_mb:.0f} MB; caps: {cfg.max_bytes:,} bytes, {cfg.max_lines:,} lines, "
              f"{cfg.max_seeds} seeds, {cfg.score_seconds:g} s, {cfg.worker_mb} MiB per decoder, {cfg.workers} workers\n")
        print(f"{'upload':42} {'bytes':>9} {'time s':>7} {'server MB':>10} {'decoder MB':>11}  answer")
        rows = []
        for name, (filename, data) in uploads.items():
            path = tmp / filename
            path.write_bytes(data)
            t0 = time.perf_counter()
            message, _ = client.predict(model_name=f"bench {name}", view="som", contract="J",
                                        predictions=handle_file(str(path)), api_name="/submit")
            elapsed = time.perf_counter() - t0
            server_mb = _vmhwm_mb(server.pid)
            direct = run_isolated("board.score", {
                "data": data, "filename": filename, "view": View.SOM.value, "contract": "J", "steps": steps,
                "verdicts": None, "max_bytes": cfg.max_bytes, "max_lines": cfg.max_lines, "max_seeds": cfg.max_seeds,
            }, Limits(memory_mb=cfg.worker_mb, seconds=cfg.score_seconds))
            child_mb = direct.peak_rss_kb / 1024 if direct.peak_rss_kb else float("nan")
            rows.append((name, len(data), elapsed, server_mb, child_mb, message))
            print(f"{name:42} {len(data):>9,} {elapsed:>7.2f} {server_mb:>10.0f} {child_mb:>11.0f}  {message[:90]}")
        hostile_rows = [r for r in rows if not r[0].startswith("normal")]
        worst = max(hostile_rows, key=lambda r: (r[2], r[4]))
        print(f"\nworst upload: {worst[0]} — {worst[2]:.2f} s, server peak RSS {max(r[3] for r in rows):.0f} MB "
              f"over the whole run, its decoder's peak RSS {worst[4]:.0f} MB")
        (tmp / "normal2.jsonl").write_bytes(uploads["normal .jsonl"][1] + b"\n")  # another hash
        msg, _ = client.predict(model_name="bench normal after", view="som", contract="J",
                                predictions=handle_file(str(tmp / "normal2.jsonl")), api_name="/submit")
        print(f"normal upload after the bombs: {msg[:60]}")
        ok = (all(r[5].startswith("Rejected: ") for r in hostile_rows) and max(r[3] for r in rows) < 1000
              and msg.startswith("Accepted"))
        return 0 if ok else 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


if __name__ == "__main__":
    sys.exit(main())
