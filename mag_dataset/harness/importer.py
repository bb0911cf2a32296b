"""Import BrowserGym / AgentLab experiment directories as raw episodes.

WebMRE (arXiv 2609.27353) is built from successful WebArena trajectories. Those runs are
usually BrowserGym/AgentLab experiment directories; this importer turns the successful
ones into raw episodes (:mod:`mag_dataset.raw`) that the builder reads.

Input layout (written by ``browsergym.experiments.loop``; one directory per episode)::

    <date>_<agent>_on_<task_name>_<seed>/
        exp_args.pkl                  # pickled ExpArgs (env_args.task_name, task_seed, ...)
        summary_info.json             # n_steps, cum_reward, err_msg, terminated, truncated, ...
        step_0.pkl.gz, step_1.pkl.gz  # gzip-pickled StepInfo: obs, action, reward, ...
        screenshot_step_0.png         # obs["screenshot"], saved apart from the pickle
        screenshot_som_step_0.png     # optional (save_som=True)
        goal_object.pkl.gz            # optional: obs["goal_object"] saved once

``StepInfo.action`` of step *i* is the action chosen on the observation of step *i*; the
last step has no action.

Hostile runs
    Every experiment folder is converted in a child process with a memory and a time limit
    (:mod:`mag_dataset.isolation`, :data:`IMPORT_LIMITS`), so even an unknown bomb costs one
    skipped folder, never the batch. Pickles are read with a restricted unpickler that
    resolves exact ``(module, name)`` pairs only (:data:`_ALLOWED`: numpy's array
    reconstruction and a few containers); other names of numpy, builtins and the standard
    library's object machinery are refused, and any other class (BrowserGym's, AgentLab's)
    loads as an inert :class:`Record`. Numpy dtypes must be plain and their pickled state
    must match what a plain dtype pickles; arrays are rebuilt here from their raw bytes
    after their size is checked (at most :data:`MAX_ARRAY_BYTES`); no builtin allocates
    from a size the pickle chooses. Observations are type-checked before use, the DOM
    snapshot walked iteratively with cycle detection (:func:`check_dom`); images pass a
    pixel cap (:data:`MAX_PIXELS`) before decoding; gzip files are decompressed in bounded
    chunks; a file that is a symlink leading outside the experiment folder is refused; a
    non-finite ``cum_reward`` is a failure.

What is imported
    An episode is imported when ``summary_info.json`` reports no error and
    ``cum_reward >= min_reward`` (default 1.0: strict success). BrowserGym's MiniWoB++
    reward is 1 for any positive raw reward (partial credit), so a MiniWoB++ episode must
    also have MiniWoB's own raw reward (``task_info["RAW_REWARD_GLOBAL"]`` of its last
    step that stores one) ``>= min_reward``. Each step with an action
    becomes a raw step: the screenshot (cropped to MiniWoB's task area, whole otherwise),
    the candidate menu and Set-of-Mark screenshot — with :func:`mag_dataset.live.observe.observe`
    when the observation holds the DOM snapshot, else from the accessibility tree and
    BrowserGym's element properties (elements BrowserGym marks for set-of-marks) — the
    action mapped onto the benchmark action space, and a template guide
    (:func:`mag_dataset.guides.template_guide`). ``noop()`` steps are dropped. An episode
    with an action that has no benchmark equivalent (several actions in one step,
    ``keyboard_type`` without a focused element, drag and drop, file upload...) is skipped
    as a whole, with the reason reported, because dropping a step would break the
    trajectory. ``mouse_click(x, y)`` becomes a coordinate-only click with a point-sized
    target box; run ``mag unify`` afterwards to restore its element.

Sites and templates
    MiniWoB++: the site and template are the task name (``click-button``). WebArena: the
    site comes from the port of the first URL (WebArena's standard ports, :data:`WEBARENA_PORTS`),
    the template is the task name unless ``templates`` maps task names to template ids.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import json
import math
import numbers
import os
import pickle
import re
import shutil
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlparse

from mag_dataset.isolation import Limits, run_isolated
from mag_dataset.raw import RawDataError, RawEpisode, RawStep, parse_step, write_episode
from mag_dataset.schema import Action, Candidate

#: WebArena's standard ports -> WebMRE site names.
WEBARENA_PORTS: dict[int, str] = {
    7770: "shopping",
    7780: "shopping_admin",
    9999: "reddit",
    8023: "gitlab",
    3000: "map",
    443: "map",
    8888: "wikipedia",
}

MINIWOB_SCALE = 1.5

#: How a multi-option ``select_option(bid, [a, b])`` is stored: one ``select`` action whose
#: value is the options in the order given, joined by this separator.
MULTI_OPTION_SEPARATOR = ", "


class ImportErrorForEpisode(ValueError):
    """An experiment directory cannot be imported; the message says why."""


# -- restricted unpickling ----------------------------------------------------------------

#: Caps applied while unpickling and validating (a BrowserGym step file is a few MB).
MAX_ARRAY_BYTES = 256 * 1024 * 1024
MAX_PICKLE_BYTES = 256 * 1024 * 1024
MAX_STEP_FILE_BYTES = 256 * 1024 * 1024
MAX_PIXELS = 25_000_000
MAX_ACTION_CHARS = 100_000
MAX_DOM_NODES = 500_000
MAX_DOM_DEPTH = 1000  # the DOM reader (live.observe) recurses per level: see isolated_convert
MAX_DOM_CHARS = 64 * 1024 * 1024


class UnsafePickle(pickle.UnpicklingError):
    """A pickle asks for something the restricted unpickler refuses; the message says what."""


class Record:
    """An object of a class that is not imported (BrowserGym's StepInfo, AgentLab's classes...).

    Its pickled state becomes attributes; ``_class`` names the original class.
    """

    _class = "?"

    def __init__(self, *args: Any, **kwargs: Any):
        self._args = args
        self.__dict__.update(kwargs)

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2 and (state[0] is None or isinstance(state[0], dict)):
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update(state)
        else:
            self.__dict__["_state"] = state

    def __getattr__(self, name: str) -> Any:  # absent fields read as None, like dataclass defaults
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    def __repr__(self) -> str:
        return f"<{self._class} record>"


_CONTAINERS = (list, tuple, dict, set, frozenset)


def _a(value: Any) -> str:
    """``value``'s type with its article: "an int", "a list"."""
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _collection(kind: type) -> Callable[..., Any]:
    """``list(x)`` and friends, from an already-loaded container only (never a size or a range)."""

    def make(*args: Any) -> Any:
        if len(args) > 1 or (args and not isinstance(args[0], _CONTAINERS)):
            raise UnsafePickle(f"the pickle calls {kind.__name__}() on {_a(args[0])}; only containers are accepted")
        return kind(*args)

    make.__name__ = kind.__name__
    return make


def _bytearray(*args: Any) -> bytearray:
    # protocol 2 pickles a bytearray as bytearray(str, 'latin-1'); never from an int size
    if not args:
        return bytearray()
    if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
        return bytearray(args[0])
    if len(args) == 2 and isinstance(args[0], str) and args[1] in ("latin-1", "latin1"):
        return bytearray(args[0], "latin-1")
    shown = ", ".join(repr(a)[:40] if isinstance(a, (int, str)) else type(a).__name__ for a in args)
    raise UnsafePickle(f"the pickle calls bytearray({shown}): only bytes are accepted, never a size")


def _codecs_encode(obj: Any, encoding: str = "utf-8") -> bytes:
    # protocol 2 pickles bytes as _codecs.encode(str, 'latin1')
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1"):
        raise UnsafePickle("the pickle calls _codecs.encode() with something other than a latin-1 string")
    return obj.encode("latin-1")


def _complex(*args: Any) -> complex:
    if len(args) > 2 or not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args):
        raise UnsafePickle("the pickle calls complex() with something other than numbers")
    return complex(*args)


def _deque(*args: Any) -> Any:
    import collections

    if (args and not isinstance(args[0], _CONTAINERS)) or len(args) > 2:
        raise UnsafePickle("the pickle calls deque() on something other than a container")
    return collections.deque(*args)


def _defaultdict(*args: Any) -> Any:
    import collections

    factory = args[0] if args else None
    if factory is not None and factory not in _SAFE_FACTORIES:
        raise UnsafePickle("the pickle builds a defaultdict with a factory that is not a plain container")
    if len(args) > 2 or (len(args) == 2 and not isinstance(args[1], (dict, list, tuple))):
        raise UnsafePickle("the pickle calls defaultdict() with unexpected arguments")
    return collections.defaultdict(*args)


def _ordered_dict(*args: Any) -> Any:
    import collections

    if len(args) > 1 or (args and not isinstance(args[0], _CONTAINERS)):
        raise UnsafePickle("the pickle calls OrderedDict() on something other than a container")
    return collections.OrderedDict(*args)


def _reconstructor(cls: Any, base: Any, state: Any) -> Any:
    # copyreg._reconstructor(cls, object, None) is how protocols 0/1 make plain objects;
    # any other base (bytearray, int...) would allocate from the pickle's arguments
    if base is not object or state is not None or not (isinstance(cls, type) and issubclass(cls, Record)):
        raise UnsafePickle("the pickle calls copyreg._reconstructor with a base other than object")
    return object.__new__(cls)


def _refuse_slice(*args: Any) -> Any:
    if not all(a is None or (isinstance(a, int) and not isinstance(a, bool)) for a in args) or len(args) > 3:
        raise UnsafePickle("the pickle calls slice() with something other than integers")
    return slice(*args)


# numpy: dtypes are plain (no object fields, no structure) and arrays are rebuilt by this
# module from their raw bytes after their size is checked, never by numpy's own pickle path
_PLAIN_DTYPE = re.compile(r"^[<>|=]?(?:[biufc][1248]|c16|f16|b1|[?bBhHiIlLqQefdgFDG]|[SU]\d{1,6})$")


class _DtypeSpec:
    """A pickled ``numpy.dtype(code, align, copy)``, checked before it becomes a real dtype."""

    def __init__(self, obj: Any = None, align: Any = False, copy: Any = False) -> None:
        import numpy as np

        if not isinstance(obj, str) or not _PLAIN_DTYPE.match(obj):
            raise UnsafePickle(f"the pickle asks for numpy dtype {str(obj)[:40]!r}: only plain number, bool and string dtypes are allowed")
        self.dtype = np.dtype(obj)
        if self.dtype.hasobject or self.dtype.fields is not None or self.dtype.subdtype is not None:
            raise UnsafePickle(f"the pickle asks for numpy dtype {obj!r}, which is not a plain dtype")

    def __setstate__(self, state: Any) -> None:
        # numpy's own dtype.__setstate__ trusts this tuple (object flags, fields, sizes): a
        # crafted one corrupts memory. Accept exactly what a plain dtype pickles, in any byte order.
        if "dtype" not in vars(self) or not isinstance(state, tuple) or len(state) < 2 or state[1] not in ("<", ">", "|", "="):
            raise UnsafePickle("the pickle gives a numpy dtype a state that does not match a plain dtype")
        dt = self.dtype if state[1] in ("|", "=") else self.dtype.newbyteorder(state[1])
        if state != dt.__reduce__()[2]:
            raise UnsafePickle(f"the pickle gives numpy dtype {self.dtype.str!r} the state {str(state)[:120]}, "
                               "which does not match a plain dtype")
        self.dtype = dt


def _spec(dtype: Any) -> Any:
    if not isinstance(dtype, _DtypeSpec) or "dtype" not in vars(dtype):
        raise UnsafePickle(f"the pickle gives a numpy array the dtype {type(dtype).__name__}, not a plain pickled dtype")
    return dtype.dtype


def _array_size(shape: Any, dtype: Any) -> int:
    if not (isinstance(shape, tuple) and len(shape) <= 8 and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
        raise UnsafePickle(f"the pickle gives a numpy array the shape {str(shape)[:80]}, not a tuple of sizes")
    n = dtype.itemsize
    for k in shape:
        n *= k
    if n > MAX_ARRAY_BYTES:
        raise UnsafePickle(f"the pickle declares a numpy array of shape {shape} ({n:,} bytes), over the cap of {MAX_ARRAY_BYTES:,} bytes")
    return n


class _NDArrayName:
    """``numpy.ndarray`` as named by a pickle: only a marker for ``_reconstruct``, never called."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise UnsafePickle("the pickle calls numpy.ndarray(...) directly (an array over a crafted buffer or strides)")


def _loaded_array_class() -> type:
    import numpy as np

    class LoadedArray(np.ndarray):
        """An array being unpickled: its ``__setstate__`` checks the state first."""

        def __setstate__(self, state: Any) -> None:
            if not (isinstance(state, tuple) and len(state) == 5):
                raise UnsafePickle("the pickle gives a numpy array a malformed state")
            version, shape, dtype, fortran, raw = state
            dt = _spec(dtype)
            n = _array_size(shape, dt)
            if isinstance(raw, str):
                raw = raw.encode("latin-1")
            if not isinstance(raw, (bytes, bytearray)) or not isinstance(fortran, bool):
                raise UnsafePickle("the pickle gives a numpy array data that is not raw bytes")
            if len(raw) != n:
                raise UnsafePickle(f"the pickle gives a numpy array of shape {shape} {len(raw):,} bytes of data for {n:,}")
            np.ndarray.__setstate__(self, (version, shape, dt, fortran, raw))

    return LoadedArray


def _reconstruct(subtype: Any, shape: Any, dtype_code: Any) -> Any:
    import numpy as np

    if subtype is not _NDArrayName or shape != (0,):
        raise UnsafePickle("the pickle calls numpy's _reconstruct with something other than the plain ndarray recipe")
    return np.ndarray.__new__(_LOADED_ARRAY[0], (0,), np.uint8)


def _frombuffer(buf: Any, dtype: Any, shape: Any, order: Any) -> Any:
    import numpy as np

    dt = _spec(dtype)
    n = _array_size(shape, dt)
    if isinstance(buf, pickle.PickleBuffer):
        buf = bytes(buf.raw())
    if not isinstance(buf, (bytes, bytearray)) or len(buf) != n or order not in ("C", "F"):
        raise UnsafePickle(f"the pickle gives a numpy array of shape {shape} a buffer that does not hold exactly {n:,} bytes")
    return np.frombuffer(bytes(buf), dtype=dt).reshape(shape, order=order)


def _scalar(dtype: Any, data: Any = None) -> Any:
    import numpy as np

    dt = _spec(dtype)
    if isinstance(data, str):
        data = data.encode("latin-1")
    if not isinstance(data, (bytes, bytearray)) or len(data) != dt.itemsize:
        raise UnsafePickle("the pickle gives a numpy scalar data of the wrong size")
    return np.frombuffer(bytes(data), dtype=dt)[0]


_LOADED_ARRAY: list[type] = []

#: The exact (module, name) pairs a pickle may name; every other pair of these modules is
#: refused, and a pair of any other module loads as an inert :class:`Record`.
_ALLOWED: dict[tuple[str, str], Any] = {
    ("builtins", "list"): _collection(list),
    ("builtins", "tuple"): _collection(tuple),
    ("builtins", "dict"): _collection(dict),
    ("builtins", "set"): _collection(set),
    ("builtins", "frozenset"): _collection(frozenset),
    ("builtins", "bytearray"): _bytearray,
    ("builtins", "complex"): _complex,
    ("builtins", "slice"): _refuse_slice,
    ("builtins", "object"): object,
    ("_codecs", "encode"): _codecs_encode,
    ("copyreg", "_reconstructor"): _reconstructor,
    ("collections", "OrderedDict"): _ordered_dict,
    ("collections", "defaultdict"): _defaultdict,
    ("collections", "deque"): _deque,
    ("numpy", "dtype"): _DtypeSpec,
    ("numpy", "ndarray"): _NDArrayName,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.multiarray", "scalar"): _scalar,
    ("numpy._core.multiarray", "scalar"): _scalar,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
}
_SAFE_FACTORIES = frozenset({_ALLOWED[("builtins", n)] for n in ("list", "dict", "set", "tuple")})
_DATETIME_NAMES = frozenset({"datetime", "date", "time", "timedelta", "timezone"})
#: Modules whose names are never turned into records: only their allowed pairs resolve.
_GUARDED_MODULES = ("builtins", "__builtin__", "numpy", "_codecs", "codecs", "copyreg", "collections", "datetime",
                    "pickle", "_pickle", "io", "functools", "operator", "types", "importlib")


class _RestrictedUnpickler(pickle.Unpickler):
    _classes: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key in _ALLOWED:
            if not _LOADED_ARRAY and module.startswith("numpy"):
                _LOADED_ARRAY.append(_loaded_array_class())
            return _ALLOWED[key]
        if module == "datetime" and name in _DATETIME_NAMES:
            import datetime

            return getattr(datetime, name)
        if module.split(".")[0] in _GUARDED_MODULES:
            raise UnsafePickle(f"the pickle names {module}.{name}, which is not on the allow-list of exact names")
        if key not in self._classes:
            self._classes[key] = type(name, (Record,), {"_class": f"{module}.{name}"})
        return self._classes[key]


def load_pickle(data: bytes) -> Any:
    """Unpickle with the restricted unpickler (see the module docstring).

    Raises:
        UnsafePickle: the pickle names something outside the allow-list, or gives numpy a
            dtype state or array size this refuses.
    """
    return _RestrictedUnpickler(io.BytesIO(data)).load()


# -- actions ------------------------------------------------------------------------------


def parse_action_calls(text: str) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """Parse a BrowserGym action string into ``(function, args, kwargs)`` calls.

    Raises:
        ImportErrorForEpisode: not a sequence of calls with literal arguments.
    """
    if text.lstrip().startswith(("{", "[")):
        return _tool_calls(text)
    try:
        tree = ast.parse(text.strip())
    except SyntaxError as e:
        raise ImportErrorForEpisode(f"action {text!r} is not valid Python: {e.msg}") from None
    calls = []
    for node in tree.body:
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)):
            raise ImportErrorForEpisode(f"action {text!r} is not a sequence of function calls")
        try:
            args = [ast.literal_eval(a) for a in node.value.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in node.value.keywords if k.arg}
        except ValueError:
            raise ImportErrorForEpisode(f"action {text!r} has non-literal arguments") from None
        calls.append((node.value.func.id, args, kwargs))
    return calls


def _tool_calls(text: str) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """AgentLab tool-call actions, stored as ``ToolCallAction.model_dump_json()``:
    ``{"id": ..., "function": {"name": "click", "arguments": {"bid": "12"}}}`` (arguments may
    be a JSON string, as OpenAI returns them), a bare ``{"name", "arguments"}``, or a list."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise ImportErrorForEpisode(f"action {text[:200]!r} is neither a BrowserGym call nor tool-call JSON: {e}") from None
    calls = []
    for item in data if isinstance(data, list) else [data]:
        fn = item.get("function", item) if isinstance(item, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        arguments = fn.get("arguments", {}) if isinstance(fn, dict) else None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except (json.JSONDecodeError, RecursionError):
                arguments = None
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,60}", name) or not isinstance(arguments, dict):
            raise ImportErrorForEpisode(f"tool-call action {text[:200]!r} has no function name and arguments object")
        calls.append((name, [], {str(k): v for k, v in arguments.items()}))
    return calls


@dataclass
class _View:
    """What one step's observation gives the importer."""

    png: bytes
    som_png: bytes
    width: int
    height: int
    candidates: list[Candidate]
    crop: tuple[int, int, int, int]
    scale: float
    url: str
    focused: str | None
    boxes: dict[str, tuple[float, float, float, float]]  # every visible bid, screenshot px
    names: dict[str, tuple[str, str]]  # bid -> (role, text)
    missing: str = ""  # why no element can be located (observation keys the preprocessor dropped)
    checked: dict[str, bool] = field(default_factory=dict)  # bid -> checked, for checkboxes and radios


def _arg(args: list[Any], kwargs: dict[str, Any], i: int, name: str, default: Any = None) -> Any:
    return args[i] if len(args) > i else kwargs.get(name, default)


def map_action(text: str, view: _View) -> tuple[Action, Candidate | None, tuple[float, float, float, float] | None] | None:
    """Map a BrowserGym action string onto the benchmark action space.

    Returns:
        ``(action, target candidate, target box)``, or None for a ``noop``.

    Raises:
        ImportErrorForEpisode: the action has no benchmark equivalent.
    """
    calls = [c for c in parse_action_calls(text) if c[0] != "noop"]
    if not calls:
        return None
    if len(calls) > 1:
        raise ImportErrorForEpisode(f"action {text!r} holds {len(calls)} actions in one step")
    fn, args, kw = calls[0]

    def target(bid: Any, atype: str, **extra: Any) -> tuple[Action, Candidate | None, Any]:
        bid = str(bid)
        cand = next((c for c in view.candidates if c.id == bid), None)
        if cand is None:
            if view.missing:
                raise ImportErrorForEpisode(f"{view.missing}; {fn}({bid!r}) cannot be located")
            box = view.boxes.get(bid)
            if box is None:
                raise ImportErrorForEpisode(f"{fn}({bid!r}) acts on an element that is not visible on the screenshot")
            role, name = view.names.get(bid, ("", ""))
            cand = Candidate(id=bid, role=role or "generic", text=name, bbox=box)
            view.candidates.append(cand)
        cx, cy = (cand.bbox[0] + cand.bbox[2]) / 2.0, (cand.bbox[1] + cand.bbox[3]) / 2.0
        return Action(type=atype, element_id=bid, coordinate=(round(cx, 2), round(cy, 2)), **extra), cand, cand.bbox

    if fn in ("check", "uncheck") and view.checked.get(str(_arg(args, kw, 0, "bid"))) is (fn == "check"):
        return None  # the box is already in that state: Playwright's check() does nothing
    if fn in ("click", "dblclick", "focus", "check", "uncheck"):
        # focus: what a user does to focus a field is click it; check/uncheck: click the box
        return target(_arg(args, kw, 0, "bid"), "click")
    if fn == "hover":
        return target(_arg(args, kw, 0, "bid"), "hover")
    if fn == "fill":
        return target(_arg(args, kw, 0, "bid"), "type", text=str(_arg(args, kw, 1, "value", "")))
    if fn == "clear":
        return target(_arg(args, kw, 0, "bid"), "type", text="")
    if fn == "select_option":
        opts = _arg(args, kw, 1, "options")
        if isinstance(opts, (list, tuple)):
            if not opts:
                raise ImportErrorForEpisode(f"action {text!r} selects no option")
            # several options (a multiple <select>): one select action whose value lists them,
            # in the order given, joined by MULTI_OPTION_SEPARATOR
            opts = MULTI_OPTION_SEPARATOR.join(str(o) for o in opts)
        return target(_arg(args, kw, 0, "bid"), "select", value=str(opts))
    if fn in ("keyboard_press", "press"):
        key = _arg(args, kw, 0 if fn == "keyboard_press" else 1, "key" if fn == "keyboard_press" else "key_comb")
        return Action(type="press", key=str(key)), None, None
    if fn in ("keyboard_type", "keyboard_insert_text"):
        if not view.focused:
            raise ImportErrorForEpisode(f"action {text!r} types without a focused element")
        return target(view.focused, "type", text=str(_arg(args, kw, 0, "text", "")))
    if fn in ("scroll", "scroll_at"):
        dx, dy = (float(_arg(args, kw, 0, "delta_x", 0)), float(_arg(args, kw, 1, "delta_y", 0))) if fn == "scroll" else (
            float(_arg(args, kw, 2, "dx", 0)), float(_arg(args, kw, 3, "dy", 0)))
        if dx == 0 and dy == 0:
            return None
        direction = ("down" if dy > 0 else "up") if abs(dy) >= abs(dx) else ("right" if dx > 0 else "left")
        return Action(type="scroll", direction=direction), None, None
    if fn == "goto":
        return Action(type="goto", url=str(_arg(args, kw, 0, "url"))), None, None
    if fn in ("go_back", "go_forward", "new_tab"):
        return Action(type=fn), None, None
    if fn == "tab_focus":
        return Action(type="tab_focus", value=str(int(_arg(args, kw, 0, "index", 0)))), None, None
    if fn == "tab_close":
        return Action(type="close_tab"), None, None
    if fn in ("send_msg_to_user", "report_infeasible"):
        answer = _arg(args, kw, 0, "text" if fn == "send_msg_to_user" else "reason", "")
        return Action(type="finish", answer=str(answer) or None), None, None
    if fn in ("mouse_click", "mouse_dblclick", "mouse_move"):
        x, y = float(_arg(args, kw, 0, "x")), float(_arg(args, kw, 1, "y"))
        # BrowserGym's mouse actions take full-screenshot pixels; ours are cropped
        px, py = round(x - view.crop[0], 2), round(y - view.crop[1], 2)
        if not (0 <= px <= view.width and 0 <= py <= view.height):
            raise ImportErrorForEpisode(f"action {text!r} points outside the screenshot")
        atype = "hover" if fn == "mouse_move" else "click"
        return Action(type=atype, coordinate=(px, py)), None, (px, py, px, py)
    raise ImportErrorForEpisode(f"action {fn}() has no equivalent in the benchmark action space")


# -- checks of untrusted observations ----------------------------------------------------


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(float(x))


def _int_list(value: Any, what: str, lo: int, hi: int, length: int | None = None) -> list[int]:
    if not isinstance(value, list):
        raise ImportErrorForEpisode(f"{what} is {_a(value)}, not a list")
    if length is not None and len(value) != length:
        raise ImportErrorForEpisode(f"{what} has {len(value):,} entries for {length:,} nodes")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v < hi:
            raise ImportErrorForEpisode(f"{what}[{i}] is {str(v)[:40]!r}, not an index in [{lo}, {hi})")
    return value


def _dict(value: Any, what: str, optional: bool = True) -> dict[str, Any]:
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise ImportErrorForEpisode(f"{what} is {_a(value)}, not an object")
    return value


def check_dom(dom: Any, where: str) -> None:
    """Check a DOMSnapshot before any walk: types, index ranges, sizes, one node per bid,
    and parent chains that end (no node its own ancestor) within :data:`MAX_DOM_DEPTH`.

    The walk is iterative and marks each node once, so a cycle is found, not followed.
    """
    dom = _dict(dom, f"{where}: dom_object", optional=False)
    strings, docs = dom.get("strings"), dom.get("documents")
    if not isinstance(strings, list) or not isinstance(docs, list):
        raise ImportErrorForEpisode(f"{where}: dom_object needs the lists 'strings' and 'documents'")
    chars = 0
    for i, t in enumerate(strings):
        if not isinstance(t, str):
            raise ImportErrorForEpisode(f"{where}: dom_object strings[{i}] is {_a(t)}, not a string")
        chars += len(t)
    if chars > MAX_DOM_CHARS:
        raise ImportErrorForEpisode(f"{where}: the DOM snapshot holds {chars:,} characters, over the cap of {MAX_DOM_CHARS:,}")
    n_str, total = len(strings), 0
    bids: dict[str, tuple[int, int]] = {}
    for d, doc in enumerate(docs):
        w = f"{where}: DOM document {d}"
        nodes = _dict(_dict(doc, w, optional=False).get("nodes"), f"{w} nodes", optional=False)
        parents = nodes.get("parentIndex")
        if not isinstance(parents, list):
            raise ImportErrorForEpisode(f"{w}: parentIndex is missing or not a list")
        m = len(parents)
        total += m
        if total > MAX_DOM_NODES:
            raise ImportErrorForEpisode(f"{where}: the DOM snapshot has over {MAX_DOM_NODES:,} nodes")
        _int_list(parents, f"{w} parentIndex", -1, m)
        types = _int_list(nodes.get("nodeType"), f"{w} nodeType", 0, 1 << 16, m)
        _int_list(nodes.get("nodeName"), f"{w} nodeName", -1, n_str, m)
        if "nodeValue" in nodes:
            _int_list(nodes["nodeValue"], f"{w} nodeValue", -1, n_str, m)
        attributes = nodes.get("attributes")
        if not isinstance(attributes, list) or len(attributes) != m:
            raise ImportErrorForEpisode(f"{w}: attributes is not a list of one entry per node")
        for i, al in enumerate(attributes):
            _int_list(al, f"{w} attributes[{i}]", -1, n_str)
            bid = ""
            for k in range(0, len(al) - 1, 2):  # as the DOM reader does: the last "bid" attribute wins
                if al[k] >= 0 and strings[al[k]] == "bid":
                    bid = strings[al[k + 1]] if al[k + 1] >= 0 else ""
            if bid and types[i] == 1:
                if bid in bids:  # two nodes with one bid make the element tree cyclic
                    raise ImportErrorForEpisode(
                        f"{where}: the DOM snapshot gives bid {bid[:40]!r} to two nodes "
                        f"(document {bids[bid][0]} node {bids[bid][1]} and document {d} node {i})")
                bids[bid] = (d, i)
        for key in ("inputValue", "textValue"):
            block = _dict(nodes.get(key), f"{w} {key}")
            index = _int_list(block.get("index", []), f"{w} {key}.index", 0, m)
            _int_list(block.get("value", []), f"{w} {key}.value", -1, n_str, len(index))
        _int_list(_dict(nodes.get("inputChecked"), f"{w} inputChecked").get("index", []), f"{w} inputChecked.index", 0, m)
        layout = _dict(doc.get("layout"), f"{w} layout")
        _int_list(layout.get("nodeIndex", []), f"{w} layout.nodeIndex", 0, m)
        depth = [-1] * m
        for i in range(m):
            path, on_path, j = [], set(), i
            while j >= 0 and depth[j] < 0:
                if j in on_path:
                    raise ImportErrorForEpisode(f"{w}: node {j} is its own ancestor (a parentIndex cycle)")
                on_path.add(j)
                path.append(j)
                j = parents[j]
            level = depth[j] if j >= 0 else -1
            for k in reversed(path):
                level += 1
                depth[k] = level
            if level > MAX_DOM_DEPTH:
                raise ImportErrorForEpisode(f"{w}: the DOM nests {level} levels deep, over the limit of {MAX_DOM_DEPTH}")


def check_image_array(arr: Any, what: str) -> None:
    """A screenshot array: uint8, H x W (x 1/3/4), at most :data:`MAX_PIXELS`, plainly laid out."""
    import numpy as np

    if not isinstance(arr, np.ndarray):
        raise ImportErrorForEpisode(f"{what} is {_a(arr)}, not an image array")
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (1, 3, 4)):
        raise ImportErrorForEpisode(f"{what} is a {arr.dtype} array of shape {arr.shape}, not an 8-bit image")
    h, w = int(arr.shape[0]), int(arr.shape[1])
    if h * w > MAX_PIXELS or h == 0 or w == 0:
        raise ImportErrorForEpisode(f"{what} is {w}x{h} pixels, outside 1 to the cap of {MAX_PIXELS:,} pixels")
    if 0 in arr.strides or not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        raise ImportErrorForEpisode(f"{what} is not a plainly laid out array (zero or crafted strides)")


def check_observation(obs: Any, n: int) -> None:
    """Types and sizes of one saved observation's fields, before anything walks them."""
    if not isinstance(obs, dict):
        raise ImportErrorForEpisode(f"step {n} has no observation")
    where = f"step {n}"
    expected = {"axtree_object": (dict, "an object"), "extra_element_properties": (dict, "an object"),
                "dom_object": (dict, "an object"), "goal_object": ((list, tuple), "a list of message parts"),
                "goal": (str, "a string"), "url": (str, "a string"), "focused_element_bid": ((str, int), "a string"),
                "axtree_txt": (str, "a string"), "dom_txt": (str, "a string"), "pruned_html": (str, "a string")}
    for key, (kinds, what) in expected.items():
        value = obs.get(key)
        if value is not None and not isinstance(value, kinds):
            raise ImportErrorForEpisode(f"{where}: {key} is {_a(value)}, not {what}")
        if isinstance(value, str) and len(value) > MAX_DOM_CHARS:
            raise ImportErrorForEpisode(f"{where}: {key} is {len(value):,} characters, over the cap of {MAX_DOM_CHARS:,}")
    ax = obs.get("axtree_object") or {}
    nodes = ax.get("nodes", [])
    if not isinstance(nodes, list) or len(nodes) > MAX_DOM_NODES:
        raise ImportErrorForEpisode(f"{where}: axtree_object nodes is not a list of at most {MAX_DOM_NODES:,} nodes")
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise ImportErrorForEpisode(f"{where}: axtree_object node {i} is {_a(node)}, not an object")
        bid = node.get("browsergym_id")
        if bid is not None and not isinstance(bid, (str, int)):
            raise ImportErrorForEpisode(f"{where}: axtree_object node {i} has a browsergym_id that is not a string")
        for key in ("role", "name"):
            if node.get(key) is not None and not isinstance(node[key], dict):
                raise ImportErrorForEpisode(f"{where}: axtree_object node {i} {key} is {_a(node[key])}, not an object")
            value = (node.get(key) or {}).get("value")
            if value is not None and not isinstance(value, (str, int, float)):  # str() of a shared-reference
                raise ImportErrorForEpisode(  # tree grows exponentially: never call it on one
                    f"{where}: axtree_object node {i} {key} value is {_a(value)}, not text")
    for bid, pr in (obs.get("extra_element_properties") or {}).items():
        if pr is None:
            continue
        if not isinstance(pr, dict):
            raise ImportErrorForEpisode(f"{where}: extra_element_properties[{str(bid)[:40]!r}] is not an object")
        bb = pr.get("bbox")
        if bb is not None and not (isinstance(bb, (list, tuple)) and len(bb) == 4 and all(_is_number(x) for x in bb)):
            raise ImportErrorForEpisode(f"{where}: the bbox of element {str(bid)[:40]!r} is not four finite numbers")
        if pr.get("visibility") is not None and not _is_number(pr["visibility"]):
            raise ImportErrorForEpisode(f"{where}: the visibility of element {str(bid)[:40]!r} is not a number")
    for i, part in enumerate(obs.get("goal_object") or ()):
        if isinstance(part, dict) and part.get("text") is not None and not isinstance(part["text"], str):
            raise ImportErrorForEpisode(f"{where}: goal_object part {i} has a text that is not a string")
    if obs.get("dom_object") is not None:
        check_dom(obs["dom_object"], where)
    if obs.get("screenshot") is not None:
        check_image_array(obs["screenshot"], f"{where}: the screenshot")


# -- observations -------------------------------------------------------------------------


#: One line of BrowserGym's ``flatten_axtree_to_str``: ``[bid] role 'name'`` (repr-quoted name).
_AXTREE_LINE = re.compile(r"^\s*\[(?P<bid>[^\]\s]{1,40})\] (?P<role>[A-Za-z]{1,40})(?: (?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))?")


def _axtree_txt_names(text: str) -> dict[str, tuple[str, str]]:
    """``bid -> (role, name)`` from ``axtree_txt``, the text AX tree that BrowserGym's default
    ``obs_preprocessor`` keeps when it drops ``axtree_object``."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        m = _AXTREE_LINE.match(line)
        if m is None or m["bid"] in out:
            continue
        name = ""
        if m["name"]:
            try:
                name = str(ast.literal_eval(m["name"]))
            except (ValueError, SyntaxError):
                name = m["name"][1:-1]
        out[m["bid"]] = (m["role"], " ".join(name.split())[:200])
    return out


_CHECKED = re.compile(r"^\s*\[(?P<bid>[^\]\s]{1,40})\] (?:checkbox|radio|switch|menuitemcheckbox|menuitemradio) .*?checked='(?P<v>true|false)'")


def _axtree_checked(obs: dict[str, Any]) -> dict[str, bool]:
    """``bid -> checked`` of the check boxes and radios in the AX tree (object or ``axtree_txt``)."""
    out: dict[str, bool] = {}
    nodes = (obs.get("axtree_object") or {}).get("nodes") or []
    for node in nodes:
        bid = node.get("browsergym_id")
        for prop in node.get("properties") or []:
            if bid is not None and isinstance(prop, dict) and prop.get("name") == "checked":
                value = (prop.get("value") or {}).get("value") if isinstance(prop.get("value"), dict) else None
                if value in ("true", "false", True, False):
                    out[str(bid)] = value in ("true", True)
    if not nodes and isinstance(obs.get("axtree_txt"), str):
        for line in obs["axtree_txt"].splitlines():
            m = _CHECKED.match(line)
            if m:
                out.setdefault(m["bid"], m["v"] == "true")
    return out


def _axtree_names(obs: dict[str, Any]) -> dict[str, tuple[str, str]]:
    if not (obs.get("axtree_object") or {}).get("nodes") and isinstance(obs.get("axtree_txt"), str):
        return _axtree_txt_names(obs["axtree_txt"])
    out: dict[str, tuple[str, str]] = {}
    for node in (obs.get("axtree_object") or {}).get("nodes", []):
        bid = node.get("browsergym_id")
        if bid is None or str(bid) in out:
            continue
        role = str((node.get("role") or {}).get("value") or "")
        name = " ".join(str((node.get("name") or {}).get("value") or "").split())
        out[str(bid)] = (role, name[:200])
    return out


def _bid_key(bid: str) -> tuple[int, str]:
    return (int(bid), "") if bid.isdigit() else (1 << 30, bid)


def process_observation(obs: dict[str, Any], task_name: str) -> _View:
    """Screenshot, Set-of-Mark screenshot and candidate menu of one saved observation."""
    import numpy as np
    from PIL import Image

    from mag_dataset.live.observe import draw_som, encode_png, observe

    miniwob = task_name.startswith("miniwob")
    scale = MINIWOB_SCALE if miniwob else 1.0
    names = _axtree_names(obs)
    if obs.get("dom_object"):
        ob = observe(obs, crop=miniwob, scale=scale)
        boxes = {bid: b for bid in ob.elements if (b := ob.screen_box(bid)) is not None}
        return _View(ob.png, ob.som_png, ob.width, ob.height, list(ob.candidates), ob.conv.crop, scale,
                     ob.url, ob.focused, boxes, names,
                     checked={b: el.checked for b, el in ob.elements.items() if el.checked is not None})
    # no DOM snapshot (BrowserGym's default obs_preprocessor drops it): element properties for
    # the boxes, the AX tree (object or axtree_txt) for the names
    image = Image.fromarray(np.asarray(obs["screenshot"], dtype=np.uint8)).convert("RGB")
    full_w, full_h = image.size
    props = obs.get("extra_element_properties") or {}
    full: dict[str, tuple[float, float, float, float]] = {}
    marked: list[str] = []
    for bid, pr in sorted(props.items(), key=lambda kv: _bid_key(str(kv[0]))):
        bb = (pr or {}).get("bbox")
        if not bb or float(pr.get("visibility") or 0) < 0.5:
            continue
        full[str(bid)] = (float(bb[0]), float(bb[1]), float(bb[0] + bb[2]), float(bb[1] + bb[3]))
        if pr.get("set_of_marks"):
            marked.append(str(bid))
    crop = _task_area_from_text(obs, props, full, marked, full_w, full_h) if miniwob else (0, 0, full_w, full_h)
    image = image.crop(crop)
    w, h = image.size
    boxes: dict[str, tuple[float, float, float, float]] = {}
    cands = []
    for bid, (bx0, by0, bx1, by1) in full.items():
        x0, y0 = max(0.0, bx0 - crop[0]), max(0.0, by0 - crop[1])
        x1, y1 = min(float(w), bx1 - crop[0]), min(float(h), by1 - crop[1])
        if x1 - x0 < 2 or y1 - y0 < 2:
            continue
        box = (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2))
        boxes[bid] = box
        if bid in marked:
            role, name = names.get(bid, ("", ""))
            cands.append(Candidate(id=bid, role=role or "generic", text=name, bbox=box))
    return _View(encode_png(image), encode_png(draw_som(image, cands)), w, h, cands, crop, scale,
                 str(obs.get("url") or ""), str(obs.get("focused_element_bid") or "") or None, boxes, names,
                 missing=_missing_keys(obs), checked=_axtree_checked(obs))


#: Observation keys the importer reads; BrowserGym's demo agent's obs_preprocessor keeps none
#: of the first four.
OBSERVATION_KEYS = ("extra_element_properties", "url", "goal", "focused_element_bid")


def _missing_keys(obs: dict[str, Any]) -> str:
    """Why elements cannot be located in an observation without the DOM snapshot ("" when they can)."""
    if obs.get("extra_element_properties"):
        return ""
    absent = [k for k in OBSERVATION_KEYS if obs.get(k) is None]
    if not obs.get("axtree_object") and not obs.get("axtree_txt"):
        absent.append("axtree_object/axtree_txt")
    return (f"missing observation keys {', '.join(absent)} (and dom_object): no element boxes. "
            "BrowserGym's demo-agent obs_preprocessor drops them; record with a preprocessor that keeps "
            "extra_element_properties, url, goal and focused_element_bid (BrowserGym's default does)")


_AREA_TAG = re.compile(r"<[a-z]+ bid=\"(?P<bid>[^\"]{1,40})\"[^>]*? id=\"(?P<id>wrap|area)\"")


def _task_area_from_text(obs: dict[str, Any], props: dict[str, Any], boxes: dict[str, tuple[float, float, float, float]],
                         marked: list[str], full_w: int, full_h: int) -> tuple[int, int, int, int]:
    """MiniWoB's task area without the DOM snapshot: the bids of ``#area`` / ``#wrap`` from
    ``dom_txt`` or ``pruned_html`` (BrowserGym's default preprocessor keeps both), grown to hold
    every marked element, as :func:`mag_dataset.live.observe.observe` crops with the DOM."""
    found: dict[str, str] = {}
    for key in ("dom_txt", "pruned_html"):
        for m in _AREA_TAG.finditer(obs.get(key) or ""):
            found.setdefault(m["id"], m["bid"])
    box = None
    for name in ("area", "wrap"):
        bid = found.get(name)
        pr = props.get(bid) if bid is not None else None
        bb = (pr or {}).get("bbox")
        if bb and float(pr.get("visibility") or 0) > 0:
            box = (float(bb[0]), float(bb[1]), float(bb[0] + bb[2]), float(bb[1] + bb[3]))
            break
    if box is None:
        return (0, 0, full_w, full_h)
    x0, y0, x1, y1 = box
    for bid in marked:
        b = boxes[bid]
        if b[2] > b[0] and b[3] > b[1] and b[0] < full_w and b[1] < full_h and b[2] > 0 and b[3] > 0:
            x0, y0, x1, y1 = min(x0, b[0]), min(y0, b[1]), max(x1, b[2]), max(y1, b[3])
    return (max(0, math.floor(x0)), max(0, math.floor(y0)), min(full_w, math.ceil(x1)), min(full_h, math.ceil(y1)))


# -- experiment directories ---------------------------------------------------------------


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


def _site_and_template(task_name: str, url: str, templates: dict[str, str]) -> tuple[str, str]:
    bench, _, rest = task_name.partition(".")
    if bench == "miniwob":
        return rest, templates.get(task_name, rest)
    site = bench or "unknown"
    try:
        parsed = urlparse(url)
        port, host = parsed.port, parsed.hostname
    except ValueError:  # a malformed URL (port out of range...) names no site
        port, host = None, None
    if bench in ("webarena", "visualwebarena") and port in WEBARENA_PORTS:
        site = WEBARENA_PORTS[port]
    elif host:
        site = host
    return site, templates.get(task_name, task_name)


def _redraw_som(view: _View) -> bytes:
    from PIL import Image

    from mag_dataset.live.observe import draw_som, encode_png

    with Image.open(io.BytesIO(view.png)) as img:
        return encode_png(draw_som(img.convert("RGB"), view.candidates))


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
    from PIL import Image

    for ext in ("png", "jpg"):
        p = exp / f"screenshot_step_{i}.{ext}"
        if p.is_file() or p.is_symlink():
            real = _inside(exp, p)
            try:
                with Image.open(real) as img:  # reads the header only
                    w, h = img.size
                    if w * h > MAX_PIXELS:  # checked before a pixel is decoded
                        raise ImportErrorForEpisode(f"{p.name} is {w}x{h} pixels, over the cap of {MAX_PIXELS:,} pixels")
                    return np.asarray(img.convert("RGB"))
            except (OSError, ValueError, Image.DecompressionBombError) as e:  # truncated or not an image
                raise ImportErrorForEpisode(f"{p.name} cannot be read: {type(e).__name__}: {e}") from None
    return None


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


def convert_experiment(exp: Path, min_reward: float = 1.0, templates: dict[str, str] | None = None) -> tuple[RawEpisode, dict[str, bytes]]:
    """Convert one experiment directory into a raw episode and its images.

    Raises:
        ImportErrorForEpisode: the episode is unsuccessful or cannot be converted (why).
    """
    from mag_dataset.guides import template_guide

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
    task_name, seed, agent = _task_and_seed(exp)
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
    raw = _miniwob_raw_reward(infos) if task_name.startswith("miniwob.") else None
    if raw is not None and not raw >= min_reward:  # NaN is a failure
        raise ImportErrorForEpisode(
            f"unsuccessful: MiniWoB raw reward {raw:g} < {min_reward:g} (BrowserGym's reward counts partial credit)"
        )
    steps: list[RawStep] = []
    images: dict[str, bytes] = {}
    intent, first_url = "", ""
    for n, info in enumerate(infos):
        obs = getattr(info, "obs", None)
        action_text = getattr(info, "action", None)
        check_observation(obs, n)
        if action_text is not None and not isinstance(action_text, str):
            raise ImportErrorForEpisode(f"step {n}: the action is {_a(action_text)}, not a string")
        if action_text is not None and len(action_text) > MAX_ACTION_CHARS:
            raise ImportErrorForEpisode(f"step {n}: the action is {len(action_text):,} characters, over the cap of {MAX_ACTION_CHARS:,}")
        if n == 0:
            intent = _goal_text(obs, exp)
            first_url = str(obs.get("url") or "")
        if action_text is None:
            continue
        obs = dict(obs)
        if obs.get("screenshot") is None:
            obs["screenshot"] = _screenshot(exp, n)
        if obs.get("screenshot") is None:
            raise ImportErrorForEpisode(f"step {n} has no screenshot (screenshot_step_{n}.png)")
        view = process_observation(obs, task_name)
        n_marked = len(view.candidates)
        mapped = map_action(action_text, view)
        if mapped is None:
            continue
        if len(view.candidates) != n_marked:  # the target was added to the menu: label it too
            view.som_png = _redraw_som(view)
        action, target, box = mapped
        k = len(steps)
        shot, som = f"step_{k:03d}.png", f"step_{k:03d}_som.png"
        images[shot], images[som] = view.png, view.som_png
        steps.append(RawStep(
            step_index=k, screenshot=shot, som_screenshot=som, image_width=view.width, image_height=view.height,
            candidates=tuple(view.candidates), action=action, target_bbox=box,
            guide=template_guide(action, target), url=view.url,
            metadata={"browsergym_action": str(action_text), "browsergym_step": n,
                      "conversion": {"scale_factor": view.scale, "crop": list(view.crop)}},
        ))
    if not steps:
        raise ImportErrorForEpisode("no step with an action")
    if not intent:
        raise ImportErrorForEpisode("the observation holds no goal text")
    site, template = _site_and_template(task_name, first_url, templates or {})
    episode_id = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{task_name}.seed-{seed}" if seed is not None else task_name)
    ep = RawEpisode(
        episode_id=episode_id, task_id=episode_id, site=site, intent=intent, intent_template_id=template,
        steps=tuple(steps), source="browsergym", seed=seed, reward=float(reward), success=True,
        metadata={"browsergym_task": task_name, "agent": agent, "experiment": exp.name,
                  "n_steps": summary.get("n_steps"), "cum_reward": reward},
    )
    try:
        for st in ep.steps:  # validate against the raw format before anything is written
            parse_step(st.to_json(), ep.episode_id, None)
    except RawDataError as e:
        raise ImportErrorForEpisode(f"the converted episode is not valid raw data: {e}") from None
    return ep, images


_STEP_FILE = re.compile(r"^step_(\d{1,6})\.pkl\.gz$")


def isolated_convert(request: dict[str, Any]) -> dict[str, Any]:
    """Child side of :func:`import_experiments`: convert one experiment folder.

    Runs in :mod:`mag_dataset.isolation`'s limited child; returns plain data only.
    """
    import sys

    # live.observe's text walk recurses ~5 frames per DOM level; check_dom caps the depth at
    # MAX_DOM_DEPTH, and this child's stack holds that comfortably (measured: 1,000 levels)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 6 * MAX_DOM_DEPTH))
    ep, images = convert_experiment(Path(request["exp"]), request["min_reward"], request["templates"])
    return {"episode": ep.to_json(), "images": dict(images)}


def _episode_from_json(d: dict[str, Any]) -> RawEpisode:
    eid = str(d["episode_id"])
    return RawEpisode(
        episode_id=eid, task_id=str(d["task_id"]), site=str(d["site"]), intent=str(d["intent"]),
        intent_template_id=str(d["intent_template_id"]),
        steps=tuple(parse_step(s, eid, None) for s in d["steps"]), source=str(d["source"]), seed=d["seed"],
        reward=d["reward"], success=bool(d["success"]), metadata=dict(d["metadata"]),
    )


@dataclass
class ImportReport:
    """What :func:`import_experiments` did.

    Attributes:
        found: experiment directories found.
        imported: episode ids written.
        skipped: ``(experiment dir, reason)`` for every directory not imported.
        steps: raw steps written.
    """

    found: int = 0
    imported: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    steps: int = 0

    def summary(self) -> str:
        reasons = Counter(r.split(":")[0] for _, r in self.skipped)
        lines = [f"{self.found} experiments: imported {len(self.imported)} episodes ({self.steps} steps), "
                 f"skipped {len(self.skipped)}" + (f" ({', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))})" if reasons else "")]
        lines += [f"  skipped {d}: {r}" for d, r in self.skipped]
        return "\n".join(lines)


def _task_seed_key(ep: RawEpisode) -> str:
    task = str(ep.metadata.get("browsergym_task") or ep.intent_template_id)
    return f"{task}.seed-{ep.seed}" if ep.seed is not None else task


#: ``--task-key`` rules: which imported runs are repeats of one task. Repeats are kept in one
#: split (the key is stored as the episode's ``metadata["task_key"]``, which the builder's
#: default split groups by) and ``keep="first"/"best"`` keeps one run per key.
TASK_KEYS: dict[str, Callable[[RawEpisode], str]] = {
    "task-seed": _task_seed_key,  # the same task and seed (BrowserGym's task_name + task_seed)
    "task": lambda ep: str(ep.metadata.get("browsergym_task") or ep.intent_template_id),  # every seed of a task
    "template": lambda ep: f"{ep.site}/{ep.intent_template_id}",  # every task of an intent template
}

#: ``keep`` choices: every run, the first run of each task key (experiment folders sort by
#: their date prefix), or the best (highest cum_reward, then fewest steps, then the first).
KEEP_CHOICES = ("all", "first", "best")


def _rank(ep: RawEpisode) -> tuple[float, int]:
    n = ep.metadata.get("n_steps")  # BrowserGym's step count (noops included)
    return (float(ep.reward or 0.0), -(n if isinstance(n, int) and not isinstance(n, bool) else len(ep.steps)))


#: Limits of the child process that converts one experiment folder (see :mod:`mag_dataset.isolation`).
IMPORT_LIMITS = Limits(memory_mb=2048, seconds=300.0)


def import_experiments(
    paths: Iterable[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    min_reward: float = 1.0,
    templates: dict[str, str] | None = None,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
    limits: Limits | None = None,
    task_key: str = "task-seed",
    keep: str = "all",
) -> ImportReport:
    """Import every successful experiment under ``paths`` into the raw corpus ``out_dir``.

    Args:
        paths: experiment directories or roots holding many.
        out_dir: the raw corpus to add episodes to (created when missing).
        min_reward: the least ``cum_reward`` of a successful episode.
        templates: optional ``task_name -> intent_template_id`` map.
        overwrite: replace an episode that already exists in ``out_dir`` (default: skip it).
        progress: called with one line per experiment.
        limits: memory and time limits of the child process that converts each experiment
            folder (default :data:`IMPORT_LIMITS`); a folder that exhausts them is skipped.
        task_key: a :data:`TASK_KEYS` rule: runs with one key are repeats of one task and
            land in one split.
        keep: a :data:`KEEP_CHOICES` entry: every run, or the first or best run per task key.

    Returns:
        An :class:`ImportReport`; each episode is written atomically. One bad folder never
        stops the batch: it is skipped with its reason.
    """
    if task_key not in TASK_KEYS:
        raise ValueError(f"unknown task key rule {task_key!r}; choose from {', '.join(TASK_KEYS)}")
    if keep not in KEEP_CHOICES:
        raise ValueError(f"unknown keep choice {keep!r}; choose from {', '.join(KEEP_CHOICES)}")
    out = Path(out_dir)
    limits = limits or IMPORT_LIMITS
    exps = find_experiments(paths)
    report = ImportReport(found=len(exps))
    taken: set[str] = set()
    kept: dict[str, tuple[tuple[float, int], str, str, int]] = {}  # key -> (rank, episode id, exp name, steps)
    for exp in exps:
        request = {"exp": str(exp), "min_reward": float(min_reward), "templates": dict(templates or {})}
        got = run_isolated("importer.convert", request, limits)
        try:
            if got.kind == "refused":
                raise ImportErrorForEpisode(got.message)
            if got.kind == "time":
                raise ImportErrorForEpisode(f"refused: converting it took longer than the limit of {limits.seconds:g} s")
            if got.kind == "memory":
                raise ImportErrorForEpisode(f"refused: converting it needs more than the memory limit of {limits.memory_mb:,} MiB")
            if got.kind != "ok":
                raise ImportErrorForEpisode(f"cannot be converted: {got.message}")
            try:
                ep, images = _episode_from_json(got.value["episode"]), dict(got.value["images"])
            except (KeyError, TypeError, ValueError) as e:
                raise ImportErrorForEpisode(f"cannot be converted: a malformed result ({type(e).__name__})") from None
        except ImportErrorForEpisode as e:
            report.skipped.append((exp.name, str(e)))
            if progress:
                progress(f"skipped {exp.name}: {e}")
            continue
        key = TASK_KEYS[task_key](ep)
        ep = dataclasses.replace(ep, metadata={**ep.metadata, "task_key": key})
        replaced = None
        if keep != "all" and key in kept:
            rank, old_id, old_exp, old_steps = kept[key]
            if keep == "first" or _rank(ep) <= rank:
                why = "the first" if keep == "first" else "a better or equal earlier"
                report.skipped.append((exp.name, f"a repeat: task key {key!r} already has {why} run ({old_exp})"))
                continue
            replaced = (old_id, old_exp, old_steps)
            taken.discard(old_id)
        base, n = ep.episode_id, 2
        while ep.episode_id in taken:  # a repeat of a task: its own id, the same task key
            ep = dataclasses.replace(ep, episode_id=f"{base}-{n}", task_id=f"{base}-{n}")
            n += 1
        taken.add(ep.episode_id)
        if (out / ep.episode_id).exists() and not overwrite and not (replaced and replaced[0] == ep.episode_id):
            report.skipped.append((exp.name, f"already imported: {ep.episode_id} exists in {out}"))
            continue
        if replaced is not None:
            old_id, old_exp, old_steps = replaced
            if old_id != ep.episode_id:
                shutil.rmtree(out / old_id, ignore_errors=True)
            report.imported.remove(old_id)
            report.steps -= old_steps
            report.skipped.append((old_exp, f"a repeat: task key {key!r} has a better run ({exp.name})"))
        write_episode(out, ep, images)
        kept[key] = (_rank(ep), ep.episode_id, exp.name, len(ep.steps))
        report.imported.append(ep.episode_id)
        report.steps += len(ep.steps)
        if progress:
            progress(f"imported {exp.name} -> {ep.episode_id} ({len(ep.steps)} steps)")
    return report
