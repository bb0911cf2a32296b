"""The human verification and adjudication app (Gradio), ``mag annotate RAW_DIR``.

MAG (arXiv 2607.10079) verifies LLM-drafted guides by hand; WebMRE (arXiv 2609.27353)
resolves disputed audit steps by hand. Both happen here, on top of
:class:`mag_dataset.harness.annotate.AnnotationStore` (SQLite, so the app is resumable:
close it at any point, start it again, every decision is still there).

Verify tab
    One step at a time: the Set-of-Mark screenshot, the task intent, the guides of the
    earlier steps, the gold action with its target element, and the draft (from
    ``guide_drafts.jsonl``; the current guide when a step has no draft) in an editable box.
    Accept keeps the draft (``guide_source = llm``); Save edit stores the edited text
    (``guide_source = human``; an unchanged text counts as accept); Reject keeps the guide
    the step had before annotation. Every decision is written back into the raw episode at
    once, with ``metadata["verified_by"]``. The app opens on the first undecided step.

    Keyboard shortcuts (outside a text box): ``a`` accept, ``e`` save edit, ``r`` reject,
    ``n`` next, ``p`` previous; anywhere: ``Alt`` + the same letter, and ``Ctrl+Enter`` in
    the guide box saves the edit.

Adjudicate tab
    The steps the audit left ``disputed`` (and those already adjudicated): the screenshot,
    the recorded action, each judge's verdict from the verdict log and the candidate menu.
    The adjudicator resolves the step to confirmed, remapped (to a chosen element) or
    unmappable; the audit file is updated at once and later audit runs keep the decision.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mag_dataset.harness.annotate import (
    DEFAULT_DB,
    DRAFTS_FILE,
    AnnotationStore,
    apply_adjudications,
    apply_decisions,
    describe_action,
    read_drafts,
)
from mag_dataset.raw import AUDIT_FILE, RawEpisode, RawStep, iter_episode_dirs, read_audit, read_episode, step_id
from mag_dataset.schema import AuditStatus

SHORTCUTS_JS = """
() => {
  if (window.__magShortcuts) return;
  window.__magShortcuts = true;
  const keys = {KeyA: 'mag-accept', KeyE: 'mag-edit', KeyR: 'mag-reject', KeyN: 'mag-next', KeyP: 'mag-prev'};
  const press = (id) => {
    const el = document.getElementById(id);
    if (!el) return false;
    const btn = el.tagName === 'BUTTON' ? el : el.querySelector('button');
    (btn || el).click();
    return true;
  };
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    const typing = t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.isContentEditable);
    if ((e.ctrlKey || e.metaKey) && e.key === 'Enter' && t && t.closest && t.closest('#mag-guide')) {
      e.preventDefault(); press('mag-edit'); return;
    }
    const id = keys[e.code];
    if (!id) return;
    if (e.altKey && !e.ctrlKey && !e.metaKey) { e.preventDefault(); press(id); return; }
    if (!typing && !e.altKey && !e.ctrlKey && !e.metaKey && !e.shiftKey) { e.preventDefault(); press(id); }
  }, true);
}
"""


@dataclass(frozen=True)
class _Ref:
    step_id: str
    folder: Path
    index: int


class Session:
    """The app's data: the corpus, drafts, audit and decisions (no Gradio here, testable).

    Args:
        raw_dir: the raw corpus (episodes are rewritten as decisions are made).
        drafts_path: drafts file (default ``RAW/guide_drafts.jsonl`` if present).
        db_path: decision database (default ``RAW/annotations.sqlite``).
        audit_path: audit file (default ``RAW/audit.jsonl``).
    """

    def __init__(self, raw_dir: str | os.PathLike, drafts_path: str | os.PathLike | None = None,
                 db_path: str | os.PathLike | None = None, audit_path: str | os.PathLike | None = None):
        self.raw_dir = Path(raw_dir)
        if not self.raw_dir.is_dir():
            raise FileNotFoundError(f"raw corpus folder not found: {self.raw_dir}")
        dp = Path(drafts_path) if drafts_path is not None else self.raw_dir / DRAFTS_FILE
        if drafts_path is not None and not dp.is_file():
            raise FileNotFoundError(f"drafts file not found: {dp}")
        self.drafts = read_drafts(dp) if dp.is_file() else {}
        self.audit_path = Path(audit_path) if audit_path is not None else self.raw_dir / AUDIT_FILE
        self.store = AnnotationStore(Path(db_path) if db_path is not None else self.raw_dir / DEFAULT_DB)
        self.refs: list[_Ref] = []
        for folder in iter_episode_dirs(self.raw_dir):
            ep = read_episode(folder)
            self.refs.extend(_Ref(step_id(ep.task_id, s.step_index), folder, s.step_index) for s in ep.steps)
        if not self.refs:
            raise ValueError(f"{self.raw_dir} holds no episodes")
        self.by_id = {r.step_id: r for r in self.refs}

    def close(self) -> None:
        self.store.close()

    def load(self, i: int) -> tuple[RawEpisode, RawStep]:
        ref = self.refs[i]
        ep = read_episode(ref.folder)
        return ep, ep.steps[ref.index]

    def draft(self, i: int) -> str:
        """The draft shown for step ``i``: its LLM draft, or the guide it had before annotation."""
        sid = self.refs[i].step_id
        if sid in self.drafts:
            return self.drafts[sid].draft
        orig = self.store.originals().get(sid)
        return orig[0] if orig else self.load(i)[1].guide

    def first_undecided(self) -> int:
        decided = self.store.decisions()
        return next((i for i, r in enumerate(self.refs) if r.step_id not in decided), 0)

    def decide(self, i: int, decision: str, text: str, annotator: str) -> None:
        ep, st = self.load(i)
        sid = self.refs[i].step_id
        draft = self.draft(i)
        original = self.store.originals().get(sid, (st.guide, st.guide_source.value))
        if decision == "edit" and " ".join(text.split()) == " ".join(draft.split()):
            decision = "accept"
        guide = {"accept": draft, "edit": text, "reject": original[0]}[decision]
        source = "llm" if sid in self.drafts else original[1]
        self.store.decide(sid, decision, guide, draft, annotator, original, draft_source=source)
        apply_decisions(self.raw_dir, self.store, {ep.episode_id})

    def view(self, i: int) -> dict[str, Any]:
        """Everything the verify tab shows for step ``i``."""
        ep, st = self.load(i)
        sid = self.refs[i].step_id
        d = self.store.decisions().get(sid)
        decided = sum(r.step_id in self.store.decisions() for r in self.refs)
        status = f"**Step {i + 1} / {len(self.refs)}** · `{sid}` · {decided} decided · "
        if d is None:
            status += "undecided"
        else:
            done = {"accept": "accepted", "edit": "edited", "reject": "rejected"}[d.decision]
            status += f"{done} by {d.annotator}"
        previous = "\n".join(f"{k + 1}. {s.guide}" for k, s in enumerate(ep.steps[: st.step_index])) or "(first step)"
        context = (
            f"**Task:** {ep.intent}\n\n**Earlier guides:**\n\n{previous}\n\n"
            f"**Gold action:** `{describe_action(st)}`\n\n"
            f"**Draft source:** {'LLM draft' if sid in self.drafts else 'current guide (' + st.guide_source.value + ')'}"
        )
        text = d.guide if d is not None and d.decision == "edit" else self.draft(i)
        return {"status": status, "image": self.image(i), "context": context, "guide": text}

    def image(self, i: int) -> Any:
        from PIL import Image

        _, st = self.load(i)
        with Image.open(self.refs[i].folder / st.som_screenshot) as img:
            return img.convert("RGB")

    # -- adjudication ------------------------------------------------------------------

    def disputed(self) -> list[str]:
        """Steps to adjudicate: disputed in the audit file, plus those already adjudicated."""
        recs = read_audit(self.audit_path) if self.audit_path.is_file() else {}
        adj = self.store.adjudications()
        ids = {s for s, r in recs.items() if r.status is AuditStatus.DISPUTED} | set(adj)
        return [r.step_id for r in self.refs if r.step_id in ids]

    def verdict_lines(self, sid: str) -> str:
        from mag_dataset.harness.audit import VERDICTS_FILE, read_verdicts

        path = self.audit_path.with_name(VERDICTS_FILE)
        if not path.is_file():
            return "(no verdict log)"
        rows = read_verdicts(path).get(sid, [])
        out = []
        for v in rows:
            vote = (v.vote.value + (f" → [{v.element_id}]" if v.element_id else "")) if v.vote else f"no vote ({v.error})"
            out.append(f"- **{v.judge}**: {vote}" + (f" — {v.reason}" if v.reason else ""))
        return "\n".join(out) or "(no verdicts)"

    def adjudication_view(self, sid: str) -> dict[str, Any]:
        i = self.refs.index(self.by_id[sid])
        ep, st = self.load(i)
        a = self.store.adjudications().get(sid)
        menu = "\n".join(f"- [{c.id}] {c.role} “{c.text}”" for c in st.candidates)
        info = (
            f"**Task:** {ep.intent}\n\n**Recorded action:** `{describe_action(st)}`\n\n**Guide:** {st.guide}\n\n"
            f"**Judges:**\n\n{self.verdict_lines(sid)}\n\n"
            + (f"**Adjudicated:** {a.status.value}" + (f" → [{a.element_id}]" if a.element_id else "") + f" by {a.annotator}\n\n" if a else "**Not adjudicated yet.**\n\n")
            + f"**Candidate menu:**\n\n{menu}"
        )
        return {"image": self.image(i), "info": info, "ids": [c.id for c in st.candidates]}

    def adjudicate(self, sid: str, status: str, element: str | None, annotator: str, note: str = "") -> None:
        if sid not in self.by_id:
            raise ValueError(f"step {sid!r} is not in {self.raw_dir}")
        _, st = self.load(self.refs.index(self.by_id[sid]))
        if status == AuditStatus.REMAPPED.value and element not in {c.id for c in st.candidates}:
            raise ValueError(f"step {sid}: element {element!r} is not in the candidate menu")
        self.store.adjudicate(sid, status, element, annotator, note)
        apply_adjudications(self.raw_dir, self.store, self.audit_path)


def build_app(session: Session, annotator: str = "") -> Any:
    """The Gradio Blocks of the app (launch it with ``.launch(js=SHORTCUTS_JS)``)."""
    import gradio as gr

    def show(i: int) -> tuple:
        v = session.view(i)
        return i, v["status"], v["image"], v["context"], v["guide"]

    def act(decision: str):
        def handler(i: int, text: str, who: str) -> tuple:
            if not who or not who.strip():
                raise gr.Error("Enter your name in 'Annotator' first.")
            try:
                session.decide(i, decision, text, who)
            except ValueError as e:
                raise gr.Error(str(e)) from None
            return show(min(i + 1, len(session.refs) - 1))
        return handler

    with gr.Blocks(title="MAG annotation") as app:
        gr.Markdown("# MAG guide verification\nShortcuts: **a** accept · **e** save edit · **r** reject · "
                    "**n** / **p** next / previous (Alt+key anywhere; Ctrl+Enter in the guide box saves the edit).")
        who = gr.Textbox(label="Annotator", value=annotator, elem_id="mag-annotator", max_lines=1)
        with gr.Tab("Verify"):
            idx = gr.State(session.first_undecided())
            status = gr.Markdown(elem_id="mag-status")
            with gr.Row():
                image = gr.Image(label="Set-of-Mark screenshot", type="pil", format="png", interactive=False, elem_id="mag-image")
                with gr.Column():
                    context = gr.Markdown(elem_id="mag-context")
                    guide = gr.Textbox(label="Guide draft (edit, then 'Save edit')", lines=3, elem_id="mag-guide")
                    with gr.Row():
                        accept = gr.Button("Accept (a)", variant="primary", elem_id="mag-accept")
                        edit = gr.Button("Save edit (e)", elem_id="mag-edit")
                        reject = gr.Button("Reject (r)", variant="stop", elem_id="mag-reject")
                    with gr.Row():
                        prev = gr.Button("← Previous (p)", elem_id="mag-prev")
                        nxt = gr.Button("Next (n) →", elem_id="mag-next")
            outs = [idx, status, image, context, guide]
            accept.click(act("accept"), [idx, guide, who], outs)
            edit.click(act("edit"), [idx, guide, who], outs)
            reject.click(act("reject"), [idx, guide, who], outs)
            prev.click(lambda i: show(max(0, i - 1)), [idx], outs)
            nxt.click(lambda i: show(min(len(session.refs) - 1, i + 1)), [idx], outs)
            app.load(show, [idx], outs)
        with gr.Tab("Adjudicate"):
            steps = gr.Dropdown(label="Disputed step", choices=session.disputed(), value=None, elem_id="mag-adj-step")
            with gr.Row():
                adj_image = gr.Image(label="Set-of-Mark screenshot", type="pil", format="png", interactive=False)
                with gr.Column():
                    adj_info = gr.Markdown(elem_id="mag-adj-info")
                    outcome = gr.Radio(["confirmed", "remapped", "unmappable"], label="Resolution", elem_id="mag-adj-outcome")
                    element = gr.Dropdown(label="Element (for remapped)", choices=[], value=None, elem_id="mag-adj-element")
                    note = gr.Textbox(label="Note", max_lines=1)
                    resolve = gr.Button("Resolve", variant="primary", elem_id="mag-adj-resolve")
                    refresh = gr.Button("Reload disputed steps")

            def pick(sid: str | None):
                if not sid:
                    return None, "Pick a disputed step.", gr.update(choices=[], value=None)
                v = session.adjudication_view(sid)
                return v["image"], v["info"], gr.update(choices=v["ids"], value=None)

            def do_resolve(sid: str | None, out: str | None, el: str | None, n: str, person: str):
                if not sid or not out:
                    raise gr.Error("Pick a step and a resolution.")
                if not person or not person.strip():
                    raise gr.Error("Enter your name in 'Annotator' first.")
                try:
                    session.adjudicate(sid, out, el, person, n or "")
                except ValueError as e:
                    raise gr.Error(str(e)) from None
                return pick(sid)

            steps.change(pick, [steps], [adj_image, adj_info, element])
            resolve.click(do_resolve, [steps, outcome, element, note, who], [adj_image, adj_info, element])
            refresh.click(lambda: gr.update(choices=session.disputed(), value=None), None, [steps])
    return app


def launch(raw_dir: str | os.PathLike, *, drafts_path=None, db_path=None, audit_path=None, annotator: str = "",
           host: str = "127.0.0.1", port: int | None = None, block: bool = True) -> tuple[Any, Session]:
    """Start the app. Returns ``(app, session)``; with ``block=False`` it runs in the background."""
    session = Session(raw_dir, drafts_path, db_path, audit_path)
    try:
        app = build_app(session, annotator)
        app.launch(server_name=host, server_port=port, prevent_thread_lock=not block, js=SHORTCUTS_JS,
                   ssr_mode=False, quiet=not block, footer_links=[])
    except BaseException:
        session.close()
        raise
    return app, session
