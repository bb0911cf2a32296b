"""Field cleaning: the free-text and choice fields of a submission (model name,
organisation, link, view, contract, provenance tag, submitter) normalised or refused with a
:class:`SubmissionRejected` that names the field. Holds no file checks (see
:mod:`mag_dataset.board.upload`) and no storage.
"""

from __future__ import annotations

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


def clean_text(value: str | None, what: str, limit: int = MAX_NAME_CHARS, required: bool = False) -> str:
    """Normalise a free-text field (names) or refuse it; the text is always shown as text."""
    if value is not None and not isinstance(value, str):
        raise SubmissionRejected(f"{what} must be text, got {type(value).__name__}")
    text = " ".join((value or "").split())
    if required and not text:
        raise SubmissionRejected(f"{what} is required")
    if len(text) > limit:
        raise SubmissionRejected(f"{what} is {len(text)} characters long, the limit is {limit}")
    check_characters(text, what)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise SubmissionRejected(f"{what} contains control characters")
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
    "clean_link", "clean_provenance_tag", "clean_text", "parse_enum", "uploaded_bytes",
]
