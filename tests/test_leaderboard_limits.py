"""Rate limits of the board's read endpoints (mag_dataset.board.limits, the Space's handlers)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from mag_dataset.board import BoardConfig
from mag_dataset.board.limits import MAX_CLIENTS, WINDOW_S, RateLimiter, refusal


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_per_client_limit_counts_a_sliding_window_and_says_how_long_to_wait():
    clock = Clock()
    lim = RateLimiter(per_client=3, overall=100, clock=clock)
    for i in range(3):
        assert lim.acquire("a") is None
        clock.t += 10
    assert lim.acquire("a") == pytest.approx(WINDOW_S - 30)  # the first request leaves the window at t0 + 60
    assert lim.acquire("b") is None  # another client is not held up
    clock.t += WINDOW_S - 30  # the first of a's requests has left the window
    assert lim.acquire("a") is None
    assert lim.acquire("a") is not None  # a refused request is not counted, the others still are


def test_overall_limit_holds_whatever_the_client_names():
    clock = Clock()
    lim = RateLimiter(per_client=5, overall=4, clock=clock)
    assert [lim.acquire(f"c{i}") for i in range(4)] == [None] * 4
    wait = lim.acquire("fresh-name")
    assert wait == pytest.approx(WINDOW_S)
    clock.t += WINDOW_S
    assert lim.acquire("fresh-name") is None


def test_zero_turns_a_limit_off_and_negative_is_refused():
    lim = RateLimiter(per_client=0, overall=0, clock=Clock())
    assert all(lim.acquire("a") is None for _ in range(1000))
    with pytest.raises(ValueError, match="negative"):
        RateLimiter(per_client=-1, overall=1)


def test_a_flood_of_client_names_keeps_memory_bounded():
    clock = Clock()
    lim = RateLimiter(per_client=1, overall=0, clock=clock)
    for i in range(MAX_CLIENTS + 500):
        assert lim.acquire(f"c{i}") is None
    assert len(lim._clients) == MAX_CLIENTS


def test_refusal_message_is_one_line_with_whole_seconds():
    assert refusal("compare", 0.2, 6, 30) == ("Too many compare requests: at most 6 per minute from one user and "
                                             "30 per minute from everyone. Try again in 1 s.")


def test_limits_come_from_the_environment():
    cfg = BoardConfig.from_env({"MAG_BOARD_COMPARE_PER_MIN": "2", "MAG_BOARD_COMPARE_ALL_PER_MIN": "9",
                                "MAG_BOARD_DETAILS_PER_MIN": "0", "MAG_BOARD_DETAILS_ALL_PER_MIN": "7"})
    assert (cfg.compare_per_min, cfg.compare_all_per_min, cfg.details_per_min, cfg.details_all_per_min) == (2, 9, 0, 7)
    default = BoardConfig.from_env({})
    assert (default.compare_per_min, default.compare_all_per_min) == (6, 30)
    assert default.local_submitter == "local" and BoardConfig.from_env({"MAG_BOARD_SUBMITTER": " lab-7 "}).local_submitter == "lab-7"
    with pytest.raises(ValueError, match="MAG_BOARD_COMPARE_PER_MIN must be an integer"):
        BoardConfig.from_env({"MAG_BOARD_COMPARE_PER_MIN": "lots"})


def test_handlers_count_users_by_login_or_address_never_by_a_header_they_write(tmp_path: Path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "leaderboard"))
    from lb_handlers import Handlers, client_key

    from test_leaderboard_board import gold

    from mag_dataset.board import Board

    def req(host, user=None, xff=None):
        return SimpleNamespace(username=user, client=SimpleNamespace(host=host),
                               headers={"x-forwarded-for": xff} if xff else {})

    assert client_key(req("10.0.0.1", user="alice")) == "user:alice"
    assert client_key(req("10.0.0.1", xff="1.2.3.4")) == "addr:10.0.0.1"
    assert client_key(None) == "unknown"
    board = Board(BoardConfig(data_dir=tmp_path / "b", compare_per_min=2, compare_all_per_min=3,
                              details_per_min=1, details_all_per_min=10), gold=gold())
    h = Handlers(board)
    me, other, third = req("10.0.0.1"), req("10.0.0.2", xff="10.0.0.1"), req("10.0.0.3")
    # ids of no stored submission: the comparison itself is refused by the board, but the request counts
    assert [h.compare("1", "2", me)[:8] for _ in range(3)] == ["choose t", "choose t", "Too many"]
    assert not h.compare("1", "2", other).startswith("Too many")  # its own address, whatever its header says
    assert h.compare("1", "2", third).startswith("Too many compare requests")  # 3 for everyone: the global limit


# ----------------------------------------------------------------------------- near-duplicate names


def test_name_key_reads_names_as_people_do():
    from mag_dataset.board.fields import name_key

    assert name_key("GPT-4o") == name_key("gpt 4o") == name_key("GPT_40") == name_key("Gpt-4ó")
    assert name_key("Llama-3.1-8B") == name_key("1lama 3.l 8b")
    assert name_key("gpt-4o") != name_key("gpt-4")


def test_near_duplicates_of_another_submitters_row_are_flagged_and_shown(tmp_path: Path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "leaderboard"))
    from lb_tables import ranked_rows, table_html

    from test_leaderboard_board import gold, jsonl, submit

    from mag_dataset.board import Board

    board = Board(BoardConfig(data_dir=tmp_path / "b", daily_cap=100), gold=gold())
    real = submit(board, jsonl(tag="r"), model_name="Qwen2.5-VL-7B-Instruct", submitter="qwen")
    twin = submit(board, jsonl(tag="t"), model_name="qwen 2.5 VL 7B instruct", submitter="mallory")  # same key
    typo = submit(board, jsonl(tag="y"), model_name="Qwen2.5-VL-7B-Instruc", submitter="eve")  # one edit
    own = submit(board, jsonl(tag="o"), model_name="Qwen2.5-VL-7B-instruct", submitter="qwen")  # same owner
    other = submit(board, jsonl(tag="x"), model_name="GPT-5", submitter="eve")
    short = submit(board, jsonl(tag="s"), model_name="GPT-4", submitter="mallory")  # short keys: not one edit
    assert board.similar_names() == {twin.id: real.id, typo.id: real.id}
    rows = {r["id"]: r for r in ranked_rows(board, "som")}
    assert rows[twin.id]["similar_to"] == real.id and rows[own.id]["similar_to"] is None
    assert rows[other.id]["similar_to"] is None and rows[short.id]["similar_to"] is None
    html = table_html(board, "som")
    assert f"≈#{real.id}</span>" in html and html.count('class="mag-similar"') == 2
