"""Field cleaning: the free-text and choice fields of a submission (model name,
organisation, link, view, contract, provenance tag, submitter) normalised or refused with a
:class:`SubmissionRejected` that names the field. Holds no file checks (see
:mod:`mag_dataset.board.upload`) and no storage.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from mag_dataset.actions import Contract, View
from mag_dataset.board.errors import SubmissionRejected

#: Self-declared provenance of a submission's predictions.
PROVENANCE_TAGS: tuple[str, ...] = ("self-reported", "externally evaluated", "reproduced")

MAX_NAME_CHARS = 120
MAX_LINK_CHARS = 500

#: Bidirectional-text controls: they make a name display differently from how it is stored
#: (U+202E turns "fo\u202eoba" into "foabo"), so a name could pass for another.
BIDI_CONTROLS: frozenset[int] = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})


def check_characters(text: str, what: str) -> None:
    """Refuse lone surrogates (not storable as UTF-8) and bidirectional controls in ``text``."""
    for i, ch in enumerate(text, 1):
        o = ord(ch)
        if 0xD800 <= o <= 0xDFFF:
            raise SubmissionRejected(
                f"{what} contains a lone surrogate U+{o:04X} (character {i}), which is not valid Unicode text"
            )
        if o in BIDI_CONTROLS:
            raise SubmissionRejected(
                f"{what} contains the bidirectional control character U+{o:04X} (character {i}), "
                "which makes text display differently from how it is stored"
            )


#: Characters that show as nothing or as blank space and are not whitespace to ``str.split``
#: (a name holding one renders as another name, or as no name): Hangul and halfwidth fillers,
#: the braille blank; the format characters (category Cf: zero-width space and joiners, BOM,
#: soft hyphen, word joiner, ...) are refused by category.
INVISIBLE: frozenset[int] = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F})

#: Combining marks allowed on one base character (Vietnamese needs two; more stack into the
#: rows above and below the name).
MAX_COMBINING_MARKS = 2

#: Scripts whose letters look like Latin ones: a word that mixes one with Latin (a Cyrillic
#: "о" in "gpt-4о") is refused, as it would pass for the all-Latin name.
_LOOKALIKE_SCRIPTS = frozenset({"CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE"})


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else None


def check_name_characters(text: str, what: str) -> None:
    """Refuse what makes a name look like another or like nothing: invisible and format
    characters, more than :data:`MAX_COMBINING_MARKS` combining marks on one character, and a
    word mixing Latin letters with look-alike letters of another script."""
    for i, ch in enumerate(text, 1):
        o = ord(ch)
        if o in INVISIBLE or unicodedata.category(ch) == "Cf":
            raise SubmissionRejected(
                f"{what} contains the invisible character U+{o:04X} ({unicodedata.name(ch, 'unnamed')}, "
                f"character {i}), which would make it display as another name")
    marks, base = 0, ""
    for ch in unicodedata.normalize("NFD", text):  # a precomposed letter counts its own marks
        if unicodedata.category(ch) in ("Mn", "Me"):
            marks += 1
            if marks > MAX_COMBINING_MARKS:
                raise SubmissionRejected(
                    f"{what} stacks more than {MAX_COMBINING_MARKS} combining marks on one character ({base!r})")
        else:
            marks, base = 0, ch
    for word in text.split():
        scripts = {sc for ch in word if (sc := _script(ch))}
        mixed = scripts & _LOOKALIKE_SCRIPTS
        if "LATIN" in scripts and mixed:
            ch = next(ch for ch in word if _script(ch) in mixed)
            raise SubmissionRejected(
                f"{what} mixes Latin letters with the {_script(ch).title()} letter {ch!r} (U+{ord(ch):04X}) in "
                f"{word!r}: it would pass for an all-Latin name")


#: Digits and letters read alike in a model name ("gpt-4o" / "gpt-40", "llama" / "1lama").
_ALIKE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l", "5": "s", "$": "s", "3": "e"})


def name_key(name: str) -> str:
    """What a model name reads as: case, accents, spacing and punctuation dropped, and the
    characters people confuse (0/o, 1/l/i, 5/s, 3/e) made one. Two names with the same key
    are told apart by no reader of the board."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name).casefold())
    text = "".join(ch for ch in text if ch.isalnum() and unicodedata.category(ch) not in ("Mn", "Me"))
    return text.translate(_ALIKE)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one inserted, deleted, replaced or two swapped adjacent characters."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    if len(a) > len(b):
        a, b = b, a
    i = next((k for k in range(len(a)) if a[k] != b[k]), len(a))
    return a[i:] == b[i + 1:]


#: Shortest name key that one edit may separate from another before it counts as a near
#: duplicate ("gpt4" and "gpt5" are different models; "qwen25vl7b" and "qwen25vl7bb" are not).
NEAR_DUPLICATE_MIN_KEY = 8


def near_duplicate_of(name: str, owner: str, rows: list[tuple[int, str, str]]) -> int | None:
    """The id of the oldest row whose model name reads like ``name``, when it is another owner's.

    Args:
        name: the model name (cleaned).
        owner: who submits it (submitter, else organisation); rows of the same owner never count.
        rows: ``(id, model name, owner)`` of the earlier rows, oldest first.

    Returns:
        The row id, or None (also when the oldest such row is the owner's own). A row counts
        when its name reads the same (:func:`name_key`; the same name included: two
        submitters' "GPT-4o" rows are told apart only by the mark), or is one edit from it and
        both keys have at least :data:`NEAR_DUPLICATE_MIN_KEY` characters.
    """
    key = name_key(name)
    for sid, other, other_owner in rows:
        k = name_key(other)
        if k == key or (min(len(k), len(key)) >= NEAR_DUPLICATE_MIN_KEY and _one_edit(k, key)):
            # the first row that reads alike decides: the owner's own earlier name is no look-alike
            return None if other_owner == owner else sid
    return None


def clean_text(value: str | None, what: str, limit: int = MAX_NAME_CHARS, required: bool = False) -> str:
    """Normalise a free-text field (names) or refuse it; the text is always shown as text.

    The text is put in Unicode NFKC form (full-width letters, ligatures and compatibility
    forms become the plain ones) and its whitespace collapsed; then lone surrogates,
    bidirectional controls (:func:`check_characters`), control characters and what
    :func:`check_name_characters` refuses are refused.
    """
    if value is not None and not isinstance(value, str):
        raise SubmissionRejected(f"{what} must be text, got {type(value).__name__}")
    check_characters(value or "", what)  # before NFKC, which cannot take a lone surrogate
    text = " ".join(unicodedata.normalize("NFKC", value or "").split())
    if required and not text:
        raise SubmissionRejected(f"{what} is required")
    if len(text) > limit:
        raise SubmissionRejected(f"{what} is {len(text)} characters long, the limit is {limit}")
    check_characters(text, what)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise SubmissionRejected(f"{what} contains control characters")
    check_name_characters(text, what)
    return text


def clean_link(value: str | None) -> str:
    """An optional link: empty, or an http(s) URL without spaces."""
    if value is not None and not isinstance(value, str):
        raise SubmissionRejected(f"link must be text, got {type(value).__name__}")
    link = (value or "").strip()
    if not link:
        return ""
    if len(link) > MAX_LINK_CHARS:
        raise SubmissionRejected(f"link is {len(link)} characters long, the limit is {MAX_LINK_CHARS}")
    check_characters(link, "link")
    low = link.lower()
    if not (low.startswith("http://") or low.startswith("https://")) or len(link.split("//", 1)[1]) == 0:
        raise SubmissionRejected("link must be an http:// or https:// URL")
    if any(c.isspace() or ord(c) < 32 for c in link) or any(c in link for c in "<>\"'`"):
        raise SubmissionRejected("link must be a plain URL (no spaces, quotes or angle brackets)")
    return link


def parse_enum(enum_cls: Any, value: Any, what: str) -> Any:
    """``enum_cls(value)`` (surrounding whitespace ignored), or a refusal listing the choices."""
    try:
        return enum_cls(str(value).strip() if value is not None else value)
    except ValueError:
        allowed = ", ".join(m.value for m in enum_cls)
        raise SubmissionRejected(f"{what} must be one of {allowed}, got {value!r}") from None


def clean_provenance_tag(value: Any) -> str:
    """One of :data:`PROVENANCE_TAGS` (empty means ``self-reported``), or a refusal."""
    tag = (value or "self-reported").strip() if isinstance(value, (str, type(None))) else value
    if tag not in PROVENANCE_TAGS:
        raise SubmissionRejected(f"provenance tag must be one of {list(PROVENANCE_TAGS)}, got {tag!r}")
    return tag


def uploaded_bytes(data: Any) -> bytes:
    """The upload as ``bytes``, or a refusal when no file came with the request."""
    if not isinstance(data, (bytes, bytearray)):
        raise SubmissionRejected("no predictions file was uploaded")
    return bytes(data)


@dataclass(frozen=True)
class Entry:
    """A submission's cleaned fields (everything but the file).

    Attributes:
        model_name: shown on the board.
        organisation: shown on the board ('' when not given).
        link: '' or an http(s) URL.
        view: the declared view.
        contract: the declared contract.
        provenance_tag: one of :data:`PROVENANCE_TAGS`.
        submitter: who the daily cap counts against.
    """

    model_name: str
    organisation: str
    link: str
    view: View
    contract: Contract
    provenance_tag: str
    submitter: str

    @classmethod
    def clean(cls, *, model_name: Any, organisation: Any, link: Any, view: Any, contract: Any,
              provenance_tag: Any, submitter: Any) -> "Entry":
        """Every field checked in the order the board has always checked them; the submitter
        defaults to the organisation, else the model name.

        Raises:
            SubmissionRejected: naming the first bad field.
        """
        model_name = clean_text(model_name, "model name", required=True)
        organisation = clean_text(organisation, "organisation")
        link = clean_link(link)
        v = parse_enum(View, view, "view")
        c = parse_enum(Contract, contract, "contract")
        tag = clean_provenance_tag(provenance_tag)
        who = clean_text(submitter, "submitter") or organisation or model_name
        return cls(model_name, organisation, link, v, c, tag, who)


__all__ = [
    "BIDI_CONTROLS", "Entry", "MAX_LINK_CHARS", "MAX_NAME_CHARS", "PROVENANCE_TAGS", "check_characters",
    "NEAR_DUPLICATE_MIN_KEY", "clean_link", "clean_provenance_tag", "clean_text", "name_key", "near_duplicate_of",
    "parse_enum", "uploaded_bytes",
]
