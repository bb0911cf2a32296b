"""Reading BrowserGym/AgentLab experiment folders, as untrusted input.

One folder per episode, as ``browsergym.experiments.loop`` writes it (see
:mod:`mag_dataset.harness.browsergym_import`): :func:`find_experiments` finds them; the readers here
return what one holds (the summary and whether it reports a success, the task and seed,
the step infos, the goal, a screenshot, the log's crash) with every file bounded: a
symlink leading outside the folder is refused, sizes are capped before reading, gzip is
decompressed in bounded chunks, pickles go through the restricted unpickler
(:mod:`~mag_dataset.harness.browsergym_import.unpickle`) and images pass the pixel cap before
decoding. It converts nothing (:mod:`~mag_dataset.harness.browsergym_import.convert`).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import re
import zlib
from pathlib import Path
from typing import Any, Iterable

from mag_dataset.harness.browsergym_import.limits import (
    MAX_PICKLE_BYTES,
    MAX_PIXELS,
    MAX_STEP_FILE_BYTES,
    ImportErrorForEpisode,
    _a,
)
from mag_dataset.harness.browsergym_import.unpickle import UnsafePickle, load_pickle
from mag_dataset.harness.import_common import open_image


def find_experiments(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Experiment directories under ``paths`` (each a directory or a root of many), sorted.

    Directories named ``_*`` or ``.*`` are skipped (AgentLab's convention for superseded runs).
    """
    found: dict[str, Path] = {}  # real path -> path as reached (a folder reached twice counts once)
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            raise FileNotFoundError(f"experiment directory not found: {p}")
        if _is_experiment(p):
            found.setdefault(os.path.realpath(p), p)
            continue
        seen: set[str] = set()
        # symlinked folders are followed (studies are often linked in); each real folder is
        # walked once, so a link cycle ends
        for dirpath, dirnames, _ in os.walk(p, followlinks=True):
            real = os.path.realpath(dirpath)
            if real in seen:
                dirnames[:] = []
                continue
            seen.add(real)
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
            d = Path(dirpath)
            if d != p and _is_experiment(d):
                found.setdefault(real, d)
    return sorted(found.values())


def _is_experiment(d: Path) -> bool:
    return (d / "summary_info.json").is_file() or (d / "step_0.pkl.gz").is_file()


_DIRNAME = re.compile(r"_on_(?P<task>.+)_(?P<seed>\d+)(?:_\d+)?$")


def _inside(exp: Path, path: Path) -> Path:
    """``path`` resolved, refused when it (a symlink) leads outside the experiment folder."""
    real, root = path.resolve(), exp.resolve()
    if real != root and root not in real.parents:
        raise ImportErrorForEpisode(f"{path.name} is a symlink to a file outside the experiment folder; refused")
    return real


def _read_file(exp: Path, path: Path, cap: int) -> bytes:
    real = _inside(exp, path)
    if not real.is_file():
        raise ImportErrorForEpisode(f"{path.name} is not a regular file")
    size = real.stat().st_size
    if size > cap:
        raise ImportErrorForEpisode(f"{path.name} is {size:,} bytes, over the cap of {cap:,} bytes")
    return real.read_bytes()


def _gunzip(data: bytes, name: str, cap: int = MAX_PICKLE_BYTES) -> bytes:
    """Decompress gzip data in bounded chunks: a bomb is refused at ``cap``, never expanded."""
    out = bytearray()
    try:
        while data:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk = d.decompress(data, cap + 1 - len(out))
            while True:
                out += chunk
                if len(out) > cap:
                    raise ImportErrorForEpisode(f"{name} decompresses to over the cap of {cap:,} bytes")
                if not d.unconsumed_tail:
                    break
                chunk = d.decompress(d.unconsumed_tail, cap + 1 - len(out))
            if not d.eof:
                raise ImportErrorForEpisode(f"{name} cannot be read: the gzip stream is truncated")
            data = d.unused_data  # gzip allows several members one after another
    except zlib.error as e:
        raise ImportErrorForEpisode(f"{name} cannot be read: not valid gzip data ({e})") from None
    return out


def _load_pickle_file(exp: Path, path: Path, gz: bool) -> Any:
    data = _read_file(exp, path, MAX_STEP_FILE_BYTES)
    if gz:
        data = _gunzip(data, path.name)
    try:
        return load_pickle(data)
    except UnsafePickle as e:
        raise ImportErrorForEpisode(f"{path.name} is refused: {e}") from None
    except MemoryError:
        raise
    except Exception as e:  # corrupt pickle: skip the episode, say which file
        raise ImportErrorForEpisode(f"{path.name} cannot be read: {type(e).__name__}: {str(e)[:200]}") from None


def _task_and_seed(exp: Path) -> tuple[str, int | None, str]:
    args_file = exp / "exp_args.pkl"
    if args_file.is_file() or args_file.is_symlink():
        try:
            args = _load_pickle_file(exp, args_file, gz=False)
        except ImportErrorForEpisode as e:  # a corrupt exp_args.pkl falls back to the directory name ...
            if "cannot be read" not in str(e):  # ... a refused one (unsafe, symlinked, too big) skips
                raise
            args = None
        env = getattr(args, "env_args", None)
        task = getattr(env, "task_name", None) if env is not None else None
        if isinstance(task, str) and 0 < len(task) <= 300:
            seed = getattr(env, "task_seed", None)
            agent = getattr(getattr(args, "agent_args", None), "agent_name", None)
            seed_ok = isinstance(seed, numbers.Integral) and not isinstance(seed, bool)
            return task, int(seed) if seed_ok else None, agent if isinstance(agent, str) else ""
    m = _DIRNAME.search(exp.name)
    if m is None:
        raise ImportErrorForEpisode("no readable exp_args.pkl and the directory name does not say the task")
    return m.group("task"), int(m.group("seed")), ""


def _goal_text(obs: dict[str, Any], exp: Path) -> str:
    goal = obs.get("goal")
    if isinstance(goal, str) and goal.strip():
        return " ".join(goal.split())
    go = obs.get("goal_object")
    path = exp / "goal_object.pkl.gz"
    if go is None and (path.is_file() or path.is_symlink()):
        go = _load_pickle_file(exp, path, gz=True)
        if go is not None and not isinstance(go, (list, tuple)):
            raise ImportErrorForEpisode(f"goal_object.pkl.gz holds {_a(go)}, not a list of message parts")
    texts = [p["text"] for p in (go or []) if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)]
    return " ".join(" ".join(texts).split())


def _screenshot(exp: Path, i: int) -> Any:
    import numpy as np

    for ext in ("png", "jpg"):
        p = exp / f"screenshot_step_{i}.{ext}"
        if p.is_file() or p.is_symlink():
            return np.asarray(open_image(_inside(exp, p), p.name, ImportErrorForEpisode, MAX_PIXELS))
    return None


NO_SCREENSHOTS = ("no screenshots saved: the run has no screenshot_step_<n>.png and no screenshot in its steps "
                  "(saved with BrowserGym's save_screenshot off, or removed since)")


def has_screenshots(exp: Path, infos: list[Any]) -> bool:
    """Whether the run kept any screenshot: in a step's observation, or as
    ``screenshot_step_<n>.png``/``.jpg`` beside its steps (what ``StepInfo.save_step_info`` writes)."""
    for n, info in enumerate(infos):
        obs = getattr(info, "obs", None)
        if isinstance(obs, dict) and obs.get("screenshot") is not None:
            return True
        if any((exp / f"screenshot_step_{n}.{ext}").is_file() or (exp / f"screenshot_step_{n}.{ext}").is_symlink()
               for ext in ("png", "jpg")):
            return True
    return False


TIKTOKEN_CRASH = ("unsuccessful: the run crashed in BrowserGym's token counting (StepInfo.make_stats calls tiktoken, "
                  "which downloads its encoding: offline that fails); rerun online or with tiktoken's encoding "
                  "cached (TIKTOKEN_CACHE_DIR)")


def _tiktoken_crash(text: str) -> bool:
    return "tiktoken" in text and ("make_stats" in text or "count_tokens" in text)


def _log_tail(exp: Path, cap: int = 256 * 1024) -> str:
    """The end of ``experiment.log`` (BrowserGym's loop logs a crash's traceback there)."""
    log = exp / "experiment.log"
    if not log.is_file() or log.is_symlink():
        return ""
    with open(log, "rb") as f:
        f.seek(max(0, log.stat().st_size - cap))
        return f.read(cap).decode("utf-8", "replace")


def _miniwob_raw_reward(infos: list[Any]) -> float | None:
    """MiniWoB's own raw reward of an episode: the last ``task_info["RAW_REWARD_GLOBAL"]``
    stored in its step infos (None when no step stores one)."""
    for info in reversed(infos):
        task_info = getattr(info, "task_info", None)
        value = task_info.get("RAW_REWARD_GLOBAL") if isinstance(task_info, dict) else None
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)  # NaN stays NaN: the caller counts it as a failure
    return None



def read_summary(exp: Path, min_reward: float) -> tuple[dict[str, Any], float]:
    """``summary_info.json`` of a successful run, and its ``cum_reward``.

    Raises:
        ImportErrorForEpisode: no summary, not JSON, an error, or a reward that is not a
            finite number at least ``min_reward`` (why).
    """
    summary_file = exp / "summary_info.json"
    if not (summary_file.is_file() or summary_file.is_symlink()):
        # BrowserGym's loop fails to write the summary of a crashed run whose agent returns an
        # AgentInfo (it assigns agent_info["err_msg"]): its experiment.log still says why
        if _tiktoken_crash(_log_tail(exp)):
            raise ImportErrorForEpisode(TIKTOKEN_CRASH + " (its summary_info.json was never written)")
        raise ImportErrorForEpisode("no summary_info.json (the run did not finish)")
    try:
        summary = json.loads(_read_file(exp, summary_file, 1024 * 1024).decode("utf-8") or "null")
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ImportErrorForEpisode(f"summary_info.json is not JSON: {type(e).__name__}: {str(e)[:200]}") from None
    if not isinstance(summary, dict):
        raise ImportErrorForEpisode("summary_info.json is empty")
    if summary.get("err_msg"):
        if _tiktoken_crash(f"{summary.get('err_msg')}\n{summary.get('stack_trace') or ''}"):
            raise ImportErrorForEpisode(TIKTOKEN_CRASH)
        raise ImportErrorForEpisode("unsuccessful: the run ended with an error")
    reward = summary.get("cum_reward")
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
        raise ImportErrorForEpisode(f"unsuccessful: cum_reward {reward!r} is not a finite number")
    if reward < min_reward:
        raise ImportErrorForEpisode(f"unsuccessful: cum_reward {reward!r} < {min_reward:g}")
    return summary, reward


_STEP_FILE = re.compile(r"^step_(\d{1,6})\.pkl\.gz$")


def read_step_infos(exp: Path) -> list[Any]:
    """The unpickled ``step_<n>.pkl.gz`` infos, in order (records, not BrowserGym's classes).

    Raises:
        ImportErrorForEpisode: no step file, a gap in their numbering, or one refused (why).
    """
    numbered = {}
    for f in exp.glob("step_*.pkl.gz"):
        m = _STEP_FILE.match(f.name)
        if m is None:
            raise ImportErrorForEpisode(f"unexpected step file {f.name[:80]!r}: step files are named step_<n>.pkl.gz")
        numbered[int(m.group(1))] = f
    files = [numbered[k] for k in sorted(numbered)]
    if not files:
        raise ImportErrorForEpisode("no step_*.pkl.gz files")
    infos = []
    for n, f in enumerate(files):
        if f.name != f"step_{n}.pkl.gz":
            raise ImportErrorForEpisode(f"step files are not numbered 0..{len(files) - 1}: {f.name}")
        infos.append(_load_pickle_file(exp, f, gz=True))
    return infos
