"""The restricted unpickler of the BrowserGym importer.

BrowserGym saves each step as a gzip-pickled ``StepInfo``. :func:`load_pickle` resolves
exact ``(module, name)`` pairs only (:data:`_ALLOWED`: numpy's array reconstruction, a few
containers, and AgentLab's chat messages and discussions); other names of numpy, builtins,
the standard library's object machinery and AgentLab's message module are refused
(:class:`UnsafePickle`), and any other class loads as an inert :class:`Record`. AgentLab's
chat messages are ``dict`` subclasses: they load as :class:`ChatMessage` (a dict of their
items, nothing of AgentLab's code); a record is never given items (a pickled dict subclass
that is not on the allow-list is refused).
Numpy dtypes must be plain and their pickled state must match what a plain dtype pickles;
arrays are rebuilt here from their raw bytes after their size is checked (at most
:data:`~mag_dataset.harness.browsergym_import.limits.MAX_ARRAY_BYTES`). It reads no file (the folder
reader, :mod:`~mag_dataset.harness.browsergym_import.folders`, bounds and decompresses them).
"""

from __future__ import annotations

import io
import pickle
import re
from typing import Any, Callable

from mag_dataset.harness.browsergym_import.limits import MAX_ARRAY_BYTES, _a


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

    def __setitem__(self, key: Any, value: Any) -> None:
        # pickle's SETITEM(S) on an object: the class was a dict subclass, and only the
        # allow-listed ones (ChatMessage) load as dicts
        raise UnsafePickle(f"the pickle stores items in {self._class}, a dict class that is not on the allow-list")

    def __repr__(self) -> str:
        return f"<{self._class} record>"


class ChatMessage(dict):
    """An AgentLab chat message (``agentlab.llm.llm_utils.BaseMessage`` and its subclasses):
    a plain dict of its items (``role``, ``content``...); ``_class`` names the original class.

    Pickle rebuilds it as it rebuilds any dict subclass (``__new__``, then SETITEM(S), then
    BUILD with the instance's attributes, which are kept apart in ``_attrs`` so that no key
    shadows a dict method); calling the class with arguments is refused.
    """

    _class = "?"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise UnsafePickle(f"the pickle calls {self._class}(...); a chat message is rebuilt from its items only")
        super().__init__()

    def __setstate__(self, state: Any) -> None:
        if state is not None and not (isinstance(state, dict) and all(isinstance(k, str) for k in state)):
            raise UnsafePickle(f"the pickle gives {self._class} the state {_a(state)}, not a dict of attributes")
        self.__dict__["_attrs"] = dict(state or {})


_AGENTLAB_LLM = "agentlab.llm.llm_utils"


def _message(name: str) -> type:
    return type(name, (ChatMessage,), {"_class": f"{_AGENTLAB_LLM}.{name}", "__module__": __name__})


def _record(module: str, name: str) -> type:
    return type(name, (Record,), {"_class": f"{module}.{name}", "__module__": __name__})


_CONTAINERS = (list, tuple, dict, set, frozenset)


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
    # AgentLab's chat messages (dict subclasses) and discussions (a list of messages), as data
    (_AGENTLAB_LLM, "BaseMessage"): _message("BaseMessage"),
    (_AGENTLAB_LLM, "SystemMessage"): _message("SystemMessage"),
    (_AGENTLAB_LLM, "HumanMessage"): _message("HumanMessage"),
    (_AGENTLAB_LLM, "AIMessage"): _message("AIMessage"),
    (_AGENTLAB_LLM, "Discussion"): _record(_AGENTLAB_LLM, "Discussion"),
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
#: Modules (and their submodules) whose names are never turned into records: only their allowed pairs resolve.
_GUARDED_MODULES = ("builtins", "__builtin__", "numpy", "_codecs", "codecs", "copyreg", "collections", "datetime",
                    "pickle", "_pickle", "io", "functools", "operator", "types", "importlib")
#: Single modules guarded the same way (AgentLab's other classes, its agent arguments, still load as records).
_GUARDED_EXACT = (_AGENTLAB_LLM,)


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
        if module.split(".")[0] in _GUARDED_MODULES or module in _GUARDED_EXACT:
            raise UnsafePickle(f"the pickle names {module}.{name}, which is not on the allow-list of exact names")
        if key not in self._classes:
            self._classes[key] = _record(module, name)
        return self._classes[key]


def load_pickle(data: bytes) -> Any:
    """Unpickle with the restricted unpickler (see the module docstring).

    Raises:
        UnsafePickle: the pickle names something outside the allow-list, or gives numpy a
            dtype state or array size this refuses.
    """
    return _RestrictedUnpickler(io.BytesIO(data)).load()
