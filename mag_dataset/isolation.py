"""Run the decoding of untrusted files in a child process under memory and time limits.

Both untrusted-input surfaces, a leaderboard upload (:mod:`mag_dataset.board`) and an
experiment folder of ``mag import-browsergym`` (:mod:`mag_dataset.harness.browsergym_import`), are
decoded in a fresh ``python -m mag_dataset.isolation`` child, as SWE-bench runs each
evaluation in its own container: the child sets its own limits with
:func:`resource.setrlimit` before it reads a byte (address space, CPU seconds, no core
file), and the parent kills it at a wall-clock deadline. A file that gets past every
specific check and still blows up (an unknown bomb) then costs one rejected file, never
the server or the rest of a batch.

The parent sends the request as a pickle it wrote itself (trusted); the child answers with
plain data only (dicts, lists, strings, bytes, numbers), which the parent reads with an
unpickler that resolves no global at all. The tasks a child may run are the literal table
:data:`TASKS`.

A child first imports its task's module (trusted code: most of a child's start-up, about
2 s for the board's scorer), then reads the request (the parent's own pickle), then sets its
limits and decodes it. With ``warm=True`` (the board) the next child is started as soon as
one is taken, so it has imported its module by the time the next upload comes: every upload still gets a fresh process with
today's limits, without waiting for its start-up. A waiting child holds no request and
exits when its parent does (its stdin closes).
"""

from __future__ import annotations

import atexit
import io
import math
import os
import pickle
import resource
import signal
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Task name -> ``module:function``; the function takes the request and returns plain data.
TASKS: dict[str, str] = {
    "board.score": "mag_dataset.board.grading:isolated_score",
    "browsergym_import.convert": "mag_dataset.harness.browsergym_import.convert:isolated_convert",
}

#: Task name -> ``module:function`` run before the child reads its request: it imports and
#: builds what the task's first call would (trusted code), so a warm child has done it before
#: its request arrives.
WARM_UPS: dict[str, str] = {
    "board.score": "mag_dataset.board.grading:warm_up",
}

#: Exceptions a task raises to refuse its input with a message (checked by class name, so
#: the child does not import every module that defines one).
REFUSALS: frozenset[str] = frozenset({"SubmissionRejected", "ImportErrorForEpisode", "PredictionsError", "UnsafePickle"})

_STDERR_TAIL = 2000


@dataclass(frozen=True)
class Limits:
    """Resource limits of one child.

    Attributes:
        memory_mb: address-space cap (``RLIMIT_AS``) in MiB.
        seconds: wall-clock limit; the CPU limit (``RLIMIT_CPU``) is the same, rounded up.
    """

    memory_mb: int = 1024
    seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.memory_mb < 128:
            raise ValueError(f"memory limit must be at least 128 MiB, got {self.memory_mb}")
        if not (self.seconds > 0 and math.isfinite(self.seconds)):
            raise ValueError(f"time limit must be a positive number of seconds, got {self.seconds}")


@dataclass(frozen=True)
class Outcome:
    """What a child run gave.

    Attributes:
        kind: ``ok`` (``value`` holds the result), ``refused`` (the task refused its input;
            ``message`` says why), ``memory`` / ``time`` (a limit was hit), ``crashed``
            (the child died otherwise; ``message`` names the signal or error).
        value: the task's result when ``ok``.
        message: the reason otherwise.
        peak_rss_kb: the child's peak resident memory (KiB) as it reported it, when known.
    """

    kind: str
    value: Any = None
    message: str = ""
    peak_rss_kb: int | None = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


class _PlainUnpickler(pickle.Unpickler):
    """Reads the child's answer: plain data only, no global is ever resolved."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"the isolated child answered with a global {module}.{name}")


def _package_root() -> str:
    return str(Path(__file__).resolve().parent.parent)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # Few threads and small malloc arenas: every thread stack and arena counts against RLIMIT_AS.
    env.update({
        "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2", "ARROW_DEFAULT_MEMORY_POOL": "system",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    root = _package_root()
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _start_child(task: str, limits: Limits) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "mag_dataset.isolation", task, str(limits.memory_mb), repr(float(limits.seconds))]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_child_env(), cwd=_package_root(), start_new_session=True)


class _Warm:
    """Children started ahead of their request, per (task, limits): at most ``WARM_CHILDREN``
    wait at once; each serves one request and is never reused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[tuple[str, Limits], deque[subprocess.Popen]] = {}
        atexit.register(self.close)

    def take(self, task: str, limits: Limits) -> subprocess.Popen:
        """A started child for ``(task, limits)`` (one waiting, else a new one); another is
        started to wait for the next request."""
        key = (task, limits)
        with self._lock:
            waiting = self._waiting.setdefault(key, deque())
            proc = None
            while waiting and proc is None:
                candidate = waiting.popleft()
                if candidate.poll() is None:  # still waiting (not killed, not exited)
                    proc = candidate
                else:
                    candidate.communicate()
            while len(waiting) < WARM_CHILDREN:
                waiting.append(_start_child(task, limits))
        return proc if proc is not None else _start_child(task, limits)

    def waiting(self, task: str, limits: Limits) -> list[int]:
        """PIDs of the children waiting for ``(task, limits)`` (tests, diagnostics)."""
        with self._lock:
            return [p.pid for p in self._waiting.get((task, limits), ()) if p.poll() is None]

    def close(self) -> None:
        """Stop every waiting child (at exit; they also exit on their own when stdin closes)."""
        with self._lock:
            procs = [p for q in self._waiting.values() for p in q]
            self._waiting.clear()
        for p in procs:
            _kill(p)
            try:
                p.communicate(timeout=5)
            except (subprocess.TimeoutExpired, ValueError, OSError):
                pass


#: Children kept waiting per (task, limits) when ``warm=True`` (the board scores two uploads at once by
#: default); ``MAG_ISOLATION_WARM=0`` starts each child on demand.
WARM_CHILDREN = int(os.environ.get("MAG_ISOLATION_WARM", "2") or 2)

_WARM = _Warm()


def run_isolated(task: str, request: Any, limits: Limits, *, warm: bool = False) -> Outcome:
    """Run ``TASKS[task](request)`` in a child under ``limits``.

    Args:
        task: a key of :data:`TASKS`.
        request: the task's input (pickled by this, trusted, process).
        limits: memory and time limits of the child.
        warm: take a child started ahead (it has imported its task's module already), and
            start the next one; a fresh process per request either way.

    Returns:
        The :class:`Outcome`; never raises for anything the child does.
    """
    if task not in TASKS:
        raise ValueError(f"unknown isolated task {task!r}")
    payload = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
    proc = _WARM.take(task, limits) if warm else _start_child(task, limits)
    try:
        out, err = proc.communicate(payload, timeout=limits.seconds)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.communicate()
        return Outcome("time", message=f"over the time limit of {limits.seconds:g} s")
    if out:
        try:
            kind, value, message, peak = _PlainUnpickler(io.BytesIO(out)).load()
            return Outcome(str(kind), value, str(message), peak)
        except Exception:  # a child killed mid-write leaves a partial answer: fall through to its status
            pass
    rc = proc.returncode
    if rc is not None and rc < 0:
        sig = -rc
        if sig == signal.SIGXCPU:
            return Outcome("time", message=f"over the CPU time limit of {limits.seconds:g} s")
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if sig in (signal.SIGKILL, signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS):
            return Outcome("crashed", message=f"the decoder was stopped by {name} (memory limit {limits.memory_mb:,} MiB)")
        return Outcome("crashed", message=f"the decoder was stopped by {name}")
    tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] if err else []
    return Outcome("crashed", message=f"the decoder exited with status {rc}" + (f": {tail[0][:300]}" if tail else ""))


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child leads its own session: its helpers go too
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


# --------------------------------------------------------------------------- the child


def _set_limits(memory_mb: int, seconds: float) -> None:
    mem = int(memory_mb) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    # RLIMIT_CPU counts from the process's start: the seconds of the task come on top of what the
    # import of its module took
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = max(1, math.ceil(used.ru_utime + used.ru_stime + seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _peak_kb() -> int:
    # VmHWM belongs to this process image; ru_maxrss would carry the parent's peak across exec
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _child(argv: list[str]) -> int:
    task, memory_mb, seconds = argv[0], int(argv[1]), float(argv[2])
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the task prints cannot corrupt the answer
    sys.stdout = sys.stderr
    import importlib

    module, _, func = TASKS[task].partition(":")
    run = getattr(importlib.import_module(module), func)  # trusted code, before any request exists
    if task in WARM_UPS:
        module, _, func = WARM_UPS[task].partition(":")
        getattr(importlib.import_module(module), func)()
    request_bytes = sys.stdin.buffer.read()  # a warm child waits here for its request (the parent's: trusted)
    if not request_bytes:  # the parent exited (or closed a waiting child) before sending one
        return 0
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    _set_limits(memory_mb, seconds)  # before a byte of the upload is decoded
    result: tuple[str, Any, str]
    try:
        request = pickle.loads(request_bytes)  # written by the parent: trusted
        del request_bytes
        value = run(request)
        result = ("ok", value, "")
    except MemoryError:
        result = ("memory", None, f"over the memory limit of {memory_mb:,} MiB")
    except RecursionError:
        result = ("refused", None, "the data nests too deeply to decode (recursion limit)")
    except Exception as e:  # noqa: BLE001 - every failure is an answer, never a traceback
        if type(e).__name__ in REFUSALS:
            result = ("refused", None, str(e))
        else:
            result = ("crashed", None, f"{type(e).__name__}: {str(e)[:300]}")
    try:
        data = pickle.dumps((*result, _peak_kb()), protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        data = pickle.dumps(("memory", None, f"over the memory limit of {memory_mb:,} MiB", None))
    answer.write(data)
    answer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
