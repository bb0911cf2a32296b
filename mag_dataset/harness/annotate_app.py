"""The human verification and adjudication app (Gradio), ``mag annotate --raw RAW_DIR``.

MAG (arXiv 2607.10079) verifies LLM-drafted guides by hand; WebMRE (arXiv 2609.27353)
resolves disputed audit steps by hand. Both happen here, on top of
:class:`mag_dataset.harness.annotation_store.AnnotationStore` (SQLite, so the app is
resumable: close it at any point, start it again, every decision is still there). This
module holds the Gradio layout; the app's data (:class:`Session`, no Gradio) is
:mod:`mag_dataset.harness.annotation_session`'s, the decision rules and the write-back are
:mod:`mag_dataset.harness.annotate`'s.

Verify tab
    One step at a time: the Set-of-Mark screenshot (with the recorded point drawn on it for
    a point-only step), the task intent, the guides of the earlier steps, the gold action
    with its target element; the draft (from ``guide_drafts.jsonl``; the current guide
    when a step has no draft), the original guide (what Reject restores) and the resulting
    guide with its source; the step's audit status, the screenshot's ``stale`` flag and
    whether the step's audit verdicts are stale (its guide or an earlier one changed after
    the audit) with the number of calls the next audit will make. The editable box holds
    the draft, or the decided guide of a decided step.
    Accept keeps the draft (``guide_source = llm``); Save edit stores the edited text
    (``guide_source = human``; an unchanged draft counts as accept, the unchanged original
    as reject); Reject keeps the guide the step had before annotation. Every decision is
    written back into the raw episode at once, with ``metadata["verified_by"]``. Each page
    load opens on the first undecided step.

    Keyboard shortcuts (outside a text box): ``a`` accept, ``e`` save edit, ``r`` reject,
    ``n`` next, ``p`` previous; anywhere: ``Alt`` + the same letter, and ``Ctrl+Enter`` in
    the guide box saves the edit.

Adjudicate tab
    The steps the audit left ``disputed`` (and those already adjudicated), each marked open
    or resolved; the list is reread whenever the tab is opened, and it opens on the first
    open step. The Resolve controls come first, then the recorded action, each judge's
    verdict from the verdict log and the candidate menu, next to the screenshot. The
    adjudicator resolves the step to confirmed, remapped (to a chosen element) or
    unmappable; the audit file is updated at once (with ``adjudicated_by``) and later audit
    runs keep the decision.

Input mistakes (no annotator name, an empty edit, a remap without an element) are shown as
a warning next to the buttons; nothing is raised, so neither the page nor the server log
shows an error. Every per-step control (guide box, resolution, element, note, warning) is
reset when the step changes.
"""

from __future__ import annotations

import os
from typing import Any

from mag_dataset.harness.annotation_session import Session

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


def _warn(text: str) -> str:
    return f"⚠️ {text}" if text else ""


#: The warning when a decision is made without an annotator name.
_NAME_FIRST = "Enter your name in 'Annotator' (top of the page) first."


def _as_sentence(e: ValueError) -> str:
    """An input mistake's message as the warning shown next to the buttons."""
    return str(e)[:1].upper() + str(e)[1:] + "."


def build_app(session: Session, annotator: str = "") -> Any:
    """The Gradio Blocks of the app (launch it with ``.launch(js=SHORTCUTS_JS)``)."""
    import gradio as gr

    with gr.Blocks(title="MAG annotation") as app:
        gr.Markdown("# MAG guide verification\nShortcuts: **a** accept · **e** save edit · **r** reject · "
                    "**n** / **p** next / previous (Alt+key anywhere; Ctrl+Enter in the guide box saves the edit).")
        who = gr.Textbox(label="Annotator", value=annotator, elem_id="mag-annotator", max_lines=1)
        with gr.Tab("Verify"):
            _verify_tab(gr, app, session, who)
        with gr.Tab("Adjudicate", elem_id="mag-adj-tab") as adj_tab:
            _adjudicate_tab(gr, adj_tab, session, who)
    return app


def _verify_tab(gr: Any, app: Any, session: Session, who: Any) -> None:
    """The Verify tab's controls and handlers (inside ``gr.Tab``)."""

    def show(i: int) -> tuple:
        v = session.view(i)
        return i, v["status"], v["image"], v["context"], v["guides"], v["audit"], v["guide"], ""

    def act(decision: str):
        def handler(i: int, text: str, person: str) -> tuple:
            if not person or not person.strip():
                return (*[gr.skip()] * 7, _warn(_NAME_FIRST))
            try:
                session.decide(i, decision, text, person)
            except ValueError as e:  # an input mistake: a warning next to the buttons, no error overlay
                return (*[gr.skip()] * 7, _warn(_as_sentence(e)))
            return show(min(i + 1, len(session.refs) - 1))
        return handler

    idx = gr.State(0)
    status = gr.Markdown(elem_id="mag-status")
    with gr.Row():
        image = gr.Image(label="Set-of-Mark screenshot", type="pil", format="png", interactive=False, elem_id="mag-image")
        with gr.Column():
            context = gr.Markdown(elem_id="mag-context")
            audit_md = gr.Markdown(elem_id="mag-audit")
            guides = gr.Markdown(elem_id="mag-guides")
            guide = gr.Textbox(label="Guide (edit, then 'Save edit')", lines=3, elem_id="mag-guide")
            with gr.Row():
                accept = gr.Button("Accept (a)", variant="primary", elem_id="mag-accept")
                edit = gr.Button("Save edit (e)", elem_id="mag-edit")
                reject = gr.Button("Reject (r)", variant="stop", elem_id="mag-reject")
            warning = gr.Markdown(elem_id="mag-warning")
            with gr.Row():
                prev = gr.Button("← Previous (p)", elem_id="mag-prev")
                nxt = gr.Button("Next (n) →", elem_id="mag-next")
    outs = [idx, status, image, context, guides, audit_md, guide, warning]
    accept.click(act("accept"), [idx, guide, who], outs)
    edit.click(act("edit"), [idx, guide, who], outs)
    reject.click(act("reject"), [idx, guide, who], outs)
    prev.click(lambda i: show(max(0, i - 1)), [idx], outs)
    nxt.click(lambda i: show(min(len(session.refs) - 1, i + 1)), [idx], outs)
    # every page load (a reload too) opens on the first undecided step
    app.load(lambda: show(session.first_undecided()), None, outs)


def _adjudicate_tab(gr: Any, tab: Any, session: Session, who: Any) -> None:
    """The Adjudicate tab's controls and handlers (inside ``gr.Tab``, which is ``tab``)."""
    with gr.Row():
        with gr.Column():
            steps = gr.Dropdown(label="Disputed step", choices=[], value=None, elem_id="mag-adj-step")
            outcome = gr.Radio(["confirmed", "remapped", "unmappable"], label="Resolution", elem_id="mag-adj-outcome")
            element = gr.Dropdown(label="Element (for remapped)", choices=[], value=None, elem_id="mag-adj-element")
            note = gr.Textbox(label="Note", max_lines=1, elem_id="mag-adj-note")
            resolve = gr.Button("Resolve", variant="primary", elem_id="mag-adj-resolve")
            adj_warning = gr.Markdown(elem_id="mag-adj-warning")
            adj_info = gr.Markdown(elem_id="mag-adj-info")
        adj_image = gr.Image(label="Set-of-Mark screenshot", type="pil", format="png", interactive=False,
                             elem_id="mag-adj-image")

    def pick(sid: str | None):
        # a new step: every per-step control starts empty (no note or resolution carried over)
        if not sid:
            return None, "No disputed step to adjudicate.", None, gr.update(choices=[], value=None), "", ""
        v = session.adjudication_view(sid)
        return v["image"], v["info"], None, gr.update(choices=v["ids"], value=None), "", ""

    def refresh(current: str | None):
        ids = session.disputed()
        value = current if current in ids else session.first_open() or (ids[0] if ids else None)
        return gr.update(choices=session.disputed_choices(), value=value)

    def do_resolve(sid: str | None, out: str | None, el: str | None, n: str, person: str):
        keep = [gr.skip()] * 6
        if not sid:
            return (*keep, _warn("Pick a disputed step first."))
        if not out:
            return (*keep, _warn("Pick a resolution: confirmed, remapped or unmappable."))
        if not person or not person.strip():
            return (*keep, _warn(_NAME_FIRST))
        try:
            session.adjudicate(sid, out, el, person, n or "")
        except ValueError as e:
            return (*keep, _warn(_as_sentence(e)))
        v = session.adjudication_view(sid)
        return (gr.update(choices=session.disputed_choices(), value=sid), v["image"], v["info"], None,
                gr.update(choices=v["ids"], value=None), "", "")

    pick_outs = [adj_image, adj_info, outcome, element, note, adj_warning]
    steps.change(pick, [steps], pick_outs)
    resolve.click(do_resolve, [steps, outcome, element, note, who], [steps, *pick_outs])
    tab.select(refresh, [steps], [steps])


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
