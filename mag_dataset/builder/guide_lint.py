"""The guide lint: gold guides that would mislead the person reading them.

A guide is the label a model learns to write, so a guide that contradicts its own action
teaches the contradiction. The builder runs these rules over every step it builds and
records what they find in ``build_info.json`` (``guide_lint``) and the card; ``mag lint-guides
--raw DIR`` lists the findings; a test keeps the bundled sample at none.

Rules (:data:`RULES`), each on one step and the task it belongs to:

``press_key``
    a key press whose guide gives it another key's purpose: a page key (``PageDown``,
    ``End``, ``ArrowDown``, ...) or ``Escape`` said "to confirm what you entered", to submit
    or to save; ``Escape`` not said to close, dismiss or cancel; ``Enter`` said to scroll or
    to close. Quoted labels are not read as the guide's words ("press End to reach the
    'Save changes' button" is fine).
``finish_kind``
    a ``finish`` guide that speaks of an answer for a task that changes the site (its gold
    answer is ``done``), or of the task being done or saved for a question (any other
    answer).
``odd_characters``
    private-use characters (icon-font glyphs such as Font Awesome's), control or format
    characters (zero-width spaces) in the guide.
``cut_label``
    a quoted label that ends in an ellipsis (``…``) no element of the page (the step's menu,
    or the next step's, which a scroll names) reads that way: the guide cut it, and the
    reader cannot match it to the screen. A page's own ellipsis ("Little Fox Orange Pajama
    …" in a product grid) and three full stops ("Write comment...") are the page's text.
``unnamed_target``
    a targeted step (click, hover, type, select) whose guide names neither the target's
    label nor, for an element without one, what kind of element it is ("the search field",
    "the drop-down"). A label is named when the guide holds it whole (case, punctuation
    and spacing aside) or, for a label of more than eight words, its first five.

Pure functions of the raw steps; no model, no page.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from mag_dataset.actions import ActionType
from mag_dataset.raw import RawEpisode, RawStep, read_corpus, step_id

#: The rules, in the order findings are reported.
RULES: tuple[str, ...] = ("press_key", "finish_kind", "odd_characters", "cut_label", "unnamed_target")

#: Keys that move the page or the selection, never confirm an entry.
MOVE_KEYS = frozenset({"PageDown", "PageUp", "End", "Home", "ArrowDown", "ArrowUp", "ArrowLeft", "ArrowRight",
                       "Space", " "})
_CONFIRMS = re.compile(r"\b(confirm\w*|submit\w*|what you (?:entered|typed)|save\w*|send\w*)\b", re.IGNORECASE)
_CLOSES = re.compile(r"\b(clos\w*|dismiss\w*|cancel\w*|hid\w*|leav\w*|exit\w*)\b", re.IGNORECASE)
_SCROLLS = re.compile(r"\b(scroll\w*)\b", re.IGNORECASE)
_ANSWER = re.compile(r"\banswer\w*\b", re.IGNORECASE)
_DONE = re.compile(r"\b(is done|are done|is saved|is complete|has been (?:made|saved)|nothing is left|"
                   r"change is)\b|['\"]done['\"]", re.IGNORECASE)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_CUT = re.compile(r"['\"]([^'\"]*…)['\"]")
_TARGETED = (ActionType.CLICK, ActionType.HOVER, ActionType.TYPE, ActionType.SELECT)
#: What a guide may call an element that has no label of its own.
KIND_WORDS = ("field", "box", "drop-down", "dropdown", "menu", "list", "button", "link", "checkbox", "option",
              "tab", "icon", "area", "editor", "input", "picker", "calendar", "toggle", "switch", "row", "image")


@dataclass(frozen=True)
class Finding:
    """One guide one rule finds fault with."""

    step_id: str
    rule: str
    detail: str
    guide: str

    def line(self) -> str:
        return f"{self.step_id} [{self.rule}] {self.detail}: {self.guide!r}"


@dataclass
class LintReport:
    """The findings over a set of steps."""

    steps: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def by_rule(self) -> dict[str, int]:
        counts = Counter(f.rule for f in self.findings)
        return {rule: counts.get(rule, 0) for rule in RULES}

    def summary(self) -> str:
        rules = ", ".join(f"{rule} {n}" for rule, n in self.by_rule.items())
        return f"{len(self.findings)} findings in {self.steps} guides ({rules})"

    def to_dict(self) -> dict[str, object]:
        """What ``build_info.json`` records: the count per rule and the first few findings."""
        return {"steps": self.steps, "findings": len(self.findings), "by_rule": self.by_rule,
                "examples": [f.line() for f in self.findings[:5]]}


def _plain(text: str) -> str:
    """Lower case, letters and digits only, single spaces: how a label is looked for in a guide."""
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def names_label(guide: str, label: str) -> bool:
    """Whether ``guide`` names ``label`` (whole, or the first five words of a label over eight)."""
    want = _plain(label)
    if not want:
        return True
    words = want.split()
    if len(words) > 8:
        want = " ".join(words[:5])
    return f" {want} " in f" {_plain(guide)} "


def _odd(ch: str) -> bool:
    return unicodedata.category(ch) in ("Co", "Cc", "Cf", "Cs", "Cn") and ch not in "\n\t"


def _target_label(step: RawStep) -> tuple[str, str] | None:
    """``(label, role)`` of the element a targeted step acts on; None for an untargeted step."""
    if step.action.type not in _TARGETED:
        return None
    eid = step.action.element_id or step.metadata.get("expert_element_id")
    cand = next((c for c in step.candidates if c.id == eid), None) if eid else None
    if cand is None:
        return None
    label = " ".join(cand.text.split()).rstrip(":").strip()
    return label, cand.role


def lint_step(step: RawStep, sid: str, *, answer: str | None = None, next_step: RawStep | None = None) -> list[Finding]:
    """The findings on one step's guide.

    Args:
        step: the raw step.
        sid: its step id (for the findings).
        answer: the gold ``finish`` answer of its task (None: unknown, the finish rule is skipped).
        next_step: the step after it (whose target a scroll guide may name).
    """
    guide, out = step.guide, []
    words = _QUOTED.sub(" ", guide)  # the guide's own words, quoted labels aside

    def find(rule: str, detail: str) -> None:
        out.append(Finding(sid, rule, detail, guide))

    a = step.action
    if a.type is ActionType.PRESS:
        key = a.key or ""
        if (key in MOVE_KEYS or key == "Escape") and _CONFIRMS.search(words):
            find("press_key", f"{key} said to {_CONFIRMS.search(words).group(0).lower()}")
        elif key == "Escape" and not _CLOSES.search(words):
            find("press_key", "Escape not said to close, dismiss or cancel")
        elif key == "Enter" and (_SCROLLS.search(words) or _CLOSES.search(words)):
            find("press_key", "Enter said to scroll or close")
    if a.type is ActionType.FINISH and answer is not None:
        changes_site = answer.strip().lower() in ("", "done")
        if changes_site and _ANSWER.search(guide):
            find("finish_kind", "speaks of an answer for a task that changes the site")
        elif not changes_site and _DONE.search(guide):
            find("finish_kind", f"speaks of a change done for a question (answer {answer!r})")
    odd = sorted({f"U+{ord(ch):04X}" for ch in guide if _odd(ch)})
    if odd:
        find("odd_characters", " ".join(odd))
    shown = [" ".join(c.text.split()) for st in (step, next_step) if st is not None for c in st.candidates]
    for cut in _CUT.findall(guide):
        if not any(" ".join(cut.split()) in text for text in shown):
            find("cut_label", f"{cut!r} is no element's text")
            break
    target = _target_label(step)
    if target is not None:
        label, role = target
        plain = _plain(guide)
        if label and not names_label(guide, label):
            find("unnamed_target", f"the target's label {label[:60]!r} is not in the guide")
        elif not label and not any(f" {_plain(w)} " in f" {plain} " for w in KIND_WORDS):
            find("unnamed_target", f"an unlabelled {role} named by no kind of element")
    return out


def _answer(episode: RawEpisode) -> str | None:
    last = episode.steps[-1].action if episode.steps else None
    return (last.answer or "") if last is not None and last.type is ActionType.FINISH else None


def lint_episodes(episodes: Iterable[RawEpisode]) -> LintReport:
    """Lint every step of ``episodes``."""
    report = LintReport()
    for ep in episodes:
        answer = _answer(ep)
        for i, st in enumerate(ep.steps):
            report.steps += 1
            nxt = ep.steps[i + 1] if i + 1 < len(ep.steps) else None
            report.findings.extend(lint_step(st, step_id(ep.task_id, st.step_index), answer=answer, next_step=nxt))
    return report


def lint_corpus(raw_dir: str | os.PathLike) -> LintReport:
    """Lint every guide of a raw corpus (episodes validated as they are read)."""
    return lint_episodes(read_corpus(raw_dir))
