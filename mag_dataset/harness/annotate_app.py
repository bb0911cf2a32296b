"""The human verification and adjudication app (Gradio), ``mag annotate --raw RAW_DIR``.

MAG (arXiv 2607.10079) verifies LLM-drafted guides by hand; WebMRE (arXiv 2609.27353)
resolves disputed audit steps by hand. Both happen here, on top of
:class:`mag_dataset.harness.annotation_store.AnnotationStore` (SQLite, so the app is
resumable: close it at any point, start it again, every decision is still there). This
module holds the Gradio layout; the app's data (:class:`Session`, no Gradio) is
:mod:`mag_dataset.harness.annotation_session`'s, the decision rules and the write-back are
:mod:`mag_dataset.harness.annotate`'s.

Verify tab
    One step at a time. Left: the Set-of-Mark screenshot at full resolution in a pan/zoom
    viewer (:func:`viewer_html`: wheel zoom at the cursor, drag to pan, buttons and keys
    ``+`` ``-`` ``0`` (fit) ``t`` (to the target), ``m`` (the page without its Set-of-Mark
    boxes, where crowded labels hide it)); the gold target outlined in magenta over
    a dark halo with the rest of the page dimmed, a point-only step's point as a ring and
    cross. A step opens at 1:1 around its target (labels readable), or fitted when the whole
    image already shows at 1:1 or more (MiniWoB++, scaled up with square pixels) or the
    target is larger than the viewer. Under it the candidate list, filtered by id, role and
    text as you type, a row's box drawn on the image on hover. Right, in a panel that stays
    in view when the page scrolls: the guide box, Accept / Save edit / Reject, Previous /
    Next and the warning line; under it a note, the draft, the original and the resulting
    guide, the audit line, then the task, the earlier guides and the gold action (so a long
    episode never pushes the buttons below the fold: at 1366x900 they stay within it).
    Accept keeps the draft (``guide_source = llm``); Save edit stores the edited text
    (``guide_source = human``; an unchanged draft counts as accept, the unchanged original
    as reject); Reject keeps the guide the step had before annotation. Each decision is one
    response of its annotator (every response is kept; the step's resolution follows the
    rule of :mod:`mag_dataset.harness.annotation_store`) and carries the step version the
    page showed: if someone answered the step in between, nothing is saved, the warning
    line names who decided what, the step is shown afresh and the annotator's text stays
    in the box.

    Finding steps: a step id box (Enter jumps; an episode's task id opens its first step),
    and filters (:func:`matching_steps`): show all / undecided / drafted / disputed / mine,
    a site, an episode; Previous and Next move within what the filters let through. The
    progress line is the annotator's "M of N verified" with their queue when steps are
    assigned (``mag annotate --assign``). Each page load opens on the annotator's first
    queued step (else the first unanswered one). An edit not saved yet is kept per step
    when the annotator moves away and put back, with a warning, when they come back.

    Keyboard shortcuts (outside a text box): ``a`` accept, ``e`` save edit, ``r`` reject,
    ``n`` next, ``p`` previous; anywhere: ``Alt`` + the same letter, and ``Ctrl+Enter`` in
    the guide box saves the edit.

Adjudicate tab
    The steps to adjudicate (:func:`adjudication_choices`): those the audit left
    ``disputed`` and those whose verifications disagree, each marked open or resolved; the
    list is reread whenever the tab is opened, and it opens on the first open step. An
    audit dispute shows the Resolve controls, the recorded action, each judge's verdict
    and the candidate menu next to the screenshot (the same viewer); it resolves to
    confirmed, remapped (to a chosen element) or unmappable, and the audit file is updated
    at once (with ``adjudicated_by``). A guide disagreement shows every response (who,
    what, the guide, the note, when) and is resolved by the adjudicator's own verification
    (a new round). After a resolution the tab moves on to the next open step.

Team tab
    The lines of ``mag annotate --report``: progress overall and per annotator, queues,
    and agreement on the overlap (Cohen's kappa per pair, Krippendorff's alpha overall,
    per pair and per site), reread whenever the tab is opened.

Input mistakes (no annotator name, an empty edit, a remap without an element, an unknown
step id) are shown as a warning next to the buttons; nothing is raised, so neither the page
nor the server log shows an error. Every per-step control (resolution, element, note,
warning) is reset when the step changes.
"""

from __future__ import annotations

import base64
import os
from html import escape
from typing import Any

from mag_dataset.gradio_theme import theme
from mag_dataset.harness.annotation_session import Session
from mag_dataset.annotation_rules import DECISION_WORDS

APP_JS = """
() => {
  if (window.__magApp) return;
  window.__magApp = true;
  // ---- the image viewer: fit, wheel zoom at the cursor, drag to pan, zoom to the target ----
  const st = (v) => v.__mag || (v.__mag = {s: 1, x: 0, y: 0, mode: 'init', fitS: 1});
  const port = (v) => v.querySelector('.mag-vport');
  const apply = (v) => {
    const s = st(v), stage = v.querySelector('.mag-vstage');
    if (!stage) return;
    stage.style.transform = `translate(${s.x}px, ${s.y}px) scale(${s.s})`;
    v.dataset.scale = String(s.s);
    const z = v.querySelector('.mag-vzoom');
    if (z) z.textContent = Math.round(s.s * 100) + '%';
  };
  const fitScale = (v) => { const p = port(v); return Math.min(p.clientWidth / +v.dataset.w, p.clientHeight / +v.dataset.h); };
  const fit = (v) => {
    const p = port(v), w = +v.dataset.w, h = +v.dataset.h;
    if (!p || !p.clientWidth || !p.clientHeight) return false;
    const s = st(v), k = fitScale(v);
    Object.assign(s, {s: k, fitS: k, x: (p.clientWidth - w * k) / 2, y: (p.clientHeight - h * k) / 2, mode: 'fit'});
    apply(v);
    return true;
  };
  const zoomAt = (v, f, mx, my) => {
    const s = st(v), k = Math.max(0.05, Math.min(16, s.s * f));
    s.x = mx - (mx - s.x) * k / s.s; s.y = my - (my - s.y) * k / s.s; s.s = k; s.mode = 'free';
    apply(v);
  };
  // show the box (x0, y0, x1, y1) at scale k, centred, the image kept over the whole port where it can
  const centre = (v, k, box, mode) => {
    const p = port(v), s = st(v), w = +v.dataset.w * k, h = +v.dataset.h * k;
    const [x0, y0, x1, y1] = box, pw = p.clientWidth, ph = p.clientHeight;
    const clamp = (val, room) => room >= 0 ? room / 2 : Math.min(0, Math.max(room, val));
    s.s = k; s.mode = mode; s.fitS = fitScale(v);
    s.x = clamp(pw / 2 - (x0 + x1) / 2 * k, pw - w); s.y = clamp(ph / 2 - (y0 + y1) / 2 * k, ph - h);
    apply(v);
  };
  const targetBox = (v) => v.dataset.box ? v.dataset.box.split(',').map(Number) : [0, 0, 0, 0];
  // a step opens fitted when the whole image is shown at full resolution or larger (MiniWoB++)
  // or its target is larger than the port, else at full resolution (1:1, Set-of-Mark labels
  // readable) around the target
  const initial = (v) => {
    const p = port(v);
    if (!p || !p.clientWidth || !p.clientHeight) return false;
    const k = fitScale(v), [x0, y0, x1, y1] = targetBox(v);
    if (k >= 1 || x1 - x0 > p.clientWidth - 40 || y1 - y0 > p.clientHeight - 40) { fit(v); st(v).mode = 'init'; return true; }
    centre(v, 1, [x0, y0, x1, y1], 'init');
    return true;
  };
  const toTarget = (v) => {
    if (!v.dataset.box || !port(v).clientWidth) return fit(v);
    const [x0, y0, x1, y1] = targetBox(v), p = port(v), f = fitScale(v);
    const k = Math.min(Math.max(4, 2 * f), Math.max(Math.max(1, f), Math.min(p.clientWidth / (x1 - x0 + 120), p.clientHeight / (y1 - y0 + 120))));
    centre(v, k, [x0, y0, x1, y1], 'free');
  };
  const zoomCmd = (v, cmd) => {
    const p = port(v);
    if (cmd === 'fit') return fit(v);
    if (cmd === 'target') return toTarget(v);
    if (cmd === 'marks') return v.classList.toggle('mag-nomarks');
    if (cmd === '1') return zoomAt(v, 1 / st(v).s, p.clientWidth / 2, p.clientHeight / 2);
    zoomAt(v, cmd === 'in' ? 1.25 : 0.8, p.clientWidth / 2, p.clientHeight / 2);
  };
  const visibleViewer = () => [...document.querySelectorAll('.mag-viewer')].find((v) => v.offsetParent !== null);
  const ro = new ResizeObserver((entries) => {
    for (const e of entries) {
      const v = e.target.closest('.mag-viewer'), m = v && st(v).mode;
      if (m === 'fit') fit(v); else if (m === 'init') initial(v);
    }
  });
  const adopt = () => {
    for (const v of document.querySelectorAll('.mag-viewer:not([data-ready])')) {
      v.dataset.ready = '1';
      ro.observe(port(v));
      initial(v);
    }
  };
  new MutationObserver(adopt).observe(document.body, {childList: true, subtree: true});
  adopt();
  document.addEventListener('wheel', (e) => {
    const p = e.target.closest && e.target.closest('.mag-vport');
    if (!p) return;
    e.preventDefault();
    const r = p.getBoundingClientRect();
    zoomAt(p.closest('.mag-viewer'), e.deltaY < 0 ? 1.2 : 1 / 1.2, e.clientX - r.left, e.clientY - r.top);
  }, {passive: false});
  let drag = null;
  document.addEventListener('pointerdown', (e) => {
    const p = e.target.closest && e.target.closest('.mag-vport');
    if (!p || e.button !== 0) return;
    const v = p.closest('.mag-viewer'), s = st(v);
    drag = {v, p, x: e.clientX - s.x, y: e.clientY - s.y};
    p.classList.add('mag-dragging');
    e.preventDefault();
  });
  document.addEventListener('pointermove', (e) => {
    if (!drag) return;
    const s = st(drag.v);
    s.x = e.clientX - drag.x; s.y = e.clientY - drag.y; s.mode = 'free';
    apply(drag.v);
  });
  document.addEventListener('pointerup', () => { if (drag) drag.p.classList.remove('mag-dragging'); drag = null; });
  document.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('[data-mag-zoom]');
    if (b) { e.preventDefault(); zoomCmd(b.closest('.mag-viewer'), b.dataset.magZoom); }
  });
  // ---- the candidate list: a filter box over id, role and text; a row's box shown on hover ----
  document.addEventListener('input', (e) => {
    const f = e.target;
    if (!f.classList || !f.classList.contains('mag-cfilter')) return;
    const q = f.value.trim().toLowerCase(), list = f.closest('.mag-cands');
    let n = 0;
    for (const tr of list.querySelectorAll('tr[data-q]')) {
      const hit = !q || tr.dataset.q.includes(q);
      tr.style.display = hit ? '' : 'none';
      n += hit;
    }
    list.querySelector('.mag-ccount').textContent = `${n} shown`;
  });
  const hover = (e, on) => {
    const tr = e.target.closest && e.target.closest('tr[data-box]');
    if (!tr) return;
    const v = document.getElementById(tr.closest('.mag-cands').dataset.viewer);
    const r = v && v.querySelector('.mag-hover');
    if (!r) return;
    const [x0, y0, x1, y1] = tr.dataset.box.split(',').map(Number);
    Object.entries({x: x0, y: y0, width: Math.max(1, x1 - x0), height: Math.max(1, y1 - y0)}).forEach(([k, val]) => r.setAttribute(k, val));
    r.style.display = on ? '' : 'none';
  };
  document.addEventListener('mouseover', (e) => hover(e, true));
  document.addEventListener('mouseout', (e) => hover(e, false));
  // ---- keyboard shortcuts ----
  const keys = {KeyA: 'mag-accept', KeyE: 'mag-edit', KeyR: 'mag-reject', KeyN: 'mag-next', KeyP: 'mag-prev'};
  const zoomKeys = {Equal: 'in', NumpadAdd: 'in', Minus: 'out', NumpadSubtract: 'out', Digit0: 'fit', KeyT: 'target', KeyM: 'marks'};
  const press = (id) => {
    const el = document.getElementById(id);
    if (!el || el.offsetParent === null) return false;  // on another tab: a key never decides unseen
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
    const plain = !e.altKey && !e.ctrlKey && !e.metaKey;
    if (!typing && plain && zoomKeys[e.code]) {
      const v = visibleViewer();
      if (v) { e.preventDefault(); zoomCmd(v, zoomKeys[e.code]); }
      return;
    }
    const id = keys[e.code];
    if (!id) return;
    if (e.altKey && !e.ctrlKey && !e.metaKey) { e.preventDefault(); press(id); return; }
    if (!typing && plain && !e.shiftKey) { e.preventDefault(); press(id); }
  }, true);
}
"""


#: The app's styles: the viewer (a dark stage the image is panned and zoomed on, the gold
#: target drawn over it in a colour no Set-of-Mark box uses), the candidate list, and the
#: decision panel, which stays in view while the page scrolls.
APP_CSS = """
.mag-viewer {border: 1px solid var(--border-color-primary); border-radius: 6px; overflow: hidden;}
.mag-vtools {display: flex; flex-wrap: wrap; gap: 4px; align-items: center; padding: 4px 6px; font-size: 13px;
  background: var(--background-fill-secondary);}
.mag-vtools button {padding: 1px 9px; border: 1px solid var(--border-color-primary); border-radius: 4px;
  background: var(--background-fill-primary); cursor: pointer; font-size: 13px;}
.mag-vtools .mag-vzoom {min-width: 3.2em; text-align: right; font-variant-numeric: tabular-nums;}
.mag-vtools .mag-tlabel {margin-left: auto; color: #b0007f; font-weight: 600;}
.mag-vport {position: relative; overflow: hidden; width: 100%; max-height: 62vh; min-height: 240px;
  background: #2b2b2b; cursor: grab;
  touch-action: none; user-select: none;}
.mag-vport.mag-dragging {cursor: grabbing;}
.mag-vstage {position: absolute; left: 0; top: 0; transform-origin: 0 0;}
.mag-vstage img {display: block; max-width: none !important; max-height: none !important; -webkit-user-drag: none;}
.mag-viewer.mag-small .mag-vstage img {image-rendering: pixelated;}
.mag-vstage img.mag-plain-img, .mag-viewer.mag-nomarks img.mag-som {display: none;}
.mag-viewer.mag-nomarks img.mag-plain-img {display: block;}
.mag-viewer-none {padding: 2em; border: 1px dashed var(--border-color-primary);}
.mag-vstage svg {position: absolute; left: 0; top: 0; pointer-events: none; overflow: visible;}
.mag-dim {fill: rgba(0, 0, 0, 0.16); fill-rule: evenodd;}
.mag-gold-halo {fill: none; stroke: #000; stroke-width: 7px; stroke-opacity: 0.6; vector-effect: non-scaling-stroke;}
.mag-gold {fill: none; stroke: #ff1ecf; stroke-width: 3px; vector-effect: non-scaling-stroke;}
.mag-hover {fill: rgba(0, 190, 255, 0.15); stroke: #00b4ff; stroke-width: 2px; stroke-dasharray: 5 3;
  vector-effect: non-scaling-stroke;}
.mag-cands {font-size: 13px; margin-top: 6px;}
.mag-cands input {width: 16em; padding: 2px 6px; border: 1px solid var(--border-color-primary); border-radius: 4px;}
.mag-clist {max-height: 190px; overflow: auto; border: 1px solid var(--border-color-primary); margin-top: 4px;}
.mag-clist table {width: 100%; border-collapse: collapse;}
/* Gradio's prose rules box every cell in the text colour; one light rule under each row instead */
.mag-clist table {margin: 0;}
.prose .mag-clist tr {border: 0;}
.prose .mag-clist td, .mag-clist td {padding: 1px 6px; border: 0; border-bottom: 1px solid var(--border-color-primary);}
.mag-clist tr.mag-cgold td {background: #ffd9f5; color: #000; font-weight: 600;}
#mag-decide {position: sticky; top: 0; z-index: 20; background: var(--background-fill-primary); padding-bottom: 4px;}
/* Gradio's container hides its overflow, which makes it the sticky panel's scroll box (one
   that never scrolls); clip instead, which keeps the page as the scroll box */
.gradio-container {overflow: clip !important;}
#mag-guides-prev {max-height: 260px; overflow: auto;}
.mag-compact p {margin: 0 !important;}
"""


def _warn(text: str) -> str:
    return f"⚠️ {text}" if text else ""


#: The warning when a decision is made without an annotator name.
_NAME_FIRST = "Enter your name in 'Annotator' (top of the page) first."

#: The "Show" filter of the Verify tab (see :func:`matching_steps`).
SHOW = ("all", "undecided", "drafted", "disputed", "mine")

#: Images this small (MiniWoB++ is 160x210) are drawn with square pixels when scaled up.
_SMALL = 400


def _as_sentence(e: ValueError) -> str:
    """An input mistake's message as the warning shown next to the buttons."""
    return str(e)[:1].upper() + str(e)[1:] + "."


def _mime(data: bytes) -> str:
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "image/jpeg"


def _num(v: float) -> str:
    return f"{v:g}"


def _shown(text: str, limit: int) -> str:
    """A candidate's text for display: icon-font glyphs (Unicode private use, drawn as empty
    boxes outside their page) dropped, cut to ``limit`` characters, HTML-escaped."""
    import unicodedata

    return escape("".join(ch for ch in text if unicodedata.category(ch) != "Co").strip()[:limit])


def viewer_html(session: Session, i: int, key: str = "mag-viewer") -> str:
    """The screenshot of step ``i`` at full resolution in a pan/zoom viewer, with the gold target.

    The Set-of-Mark image is sent as its own bytes (no rescaling: a 1280x720 site screenshot
    stays 1280x720, so its labels stay sharp when zoomed); an SVG drawn in the image's own
    pixel coordinates lies over it, so the target's box is exactly the gold box at any zoom.
    The target is outlined in magenta over a dark halo with the rest of the page dimmed (no
    Set-of-Mark box looks like it); a point-only step gets a ring and cross at its point.
    The screenshot without marks is sent too (``m`` swaps them: on a crowded MiniWoB++ page
    the labels hide the page), and a step without a screenshot gets one line saying so.
    The candidate list below it filters by id, role and text and shows a row's box on hover.
    The viewer's behaviour lives in :data:`APP_JS` (no script in the HTML itself).
    """
    from mag_dataset.raw import RawDataError, screenshot_bytes, som_image_bytes

    _, st = session.load(i)
    folder = session.refs[i].folder
    try:
        data, plain = som_image_bytes(folder, st), screenshot_bytes(folder, st)
    except RawDataError as e:  # a step imported without a screenshot: say so, the rest of the page works
        return f'<div class="mag-viewer-none" id="{key}">⚠️ {escape(str(e))}</div>'
    w, h = st.image_width, st.image_height
    a = st.action
    point = a.coordinate if a.coordinate is not None and a.element_id is None else None
    box = None
    if a.element_id is not None:
        box = next((c.bbox for c in st.candidates if c.id == a.element_id), None) or st.target_bbox
    elif point is None and st.target_bbox is not None:
        box = st.target_bbox
    shapes = ""
    label = "no target (the action has no element or point)"
    zoom_box = ""
    if box is not None:
        x0, y0, x1, y1 = box
        bw, bh = max(1.0, x1 - x0), max(1.0, y1 - y0)
        rect = f'x="{_num(x0)}" y="{_num(y0)}" width="{_num(bw)}" height="{_num(bh)}"'
        shapes = (f'<path class="mag-dim" d="M0 0H{w}V{h}H0Z M{_num(x0)} {_num(y0)}h{_num(bw)}v{_num(bh)}h{_num(-bw)}Z"/>'
                  f'<rect class="mag-gold-halo" {rect}/><rect class="mag-gold" id="{key}-gold" {rect}/>')
        cand = next((c for c in st.candidates if c.id == a.element_id), None)
        label = (f"target [{escape(cand.id)}] {escape(cand.role)} “{_shown(cand.text, 40)}”" if cand
                 else "target box") + f" at ({_num(x0)}, {_num(y0)})–({_num(x1)}, {_num(y1)})"
        zoom_box = f"{_num(x0)},{_num(y0)},{_num(x1)},{_num(y1)}"
    elif point is not None:
        x, y = point
        r = max(5.0, min(w, h) / 40)
        shapes = (f'<circle class="mag-gold-halo" cx="{_num(x)}" cy="{_num(y)}" r="{_num(r)}"/>'
                  f'<circle class="mag-gold" id="{key}-gold" cx="{_num(x)}" cy="{_num(y)}" r="{_num(r)}"/>'
                  f'<path class="mag-gold" d="M{_num(x - 2 * r)} {_num(y)}H{_num(x + 2 * r)}M{_num(x)} {_num(y - 2 * r)}V{_num(y + 2 * r)}"/>')
        label = f"target point ({_num(x)}, {_num(y)}), no element"
        zoom_box = f"{_num(x - r)},{_num(y - r)},{_num(x + r)},{_num(y + r)}"
    small = " mag-small" if max(w, h) <= _SMALL else ""
    src = f"data:{_mime(data)};base64,{base64.b64encode(data).decode()}"
    plain_src = f"data:{_mime(plain)};base64,{base64.b64encode(plain).decode()}"
    rows = "".join(
        f'<tr data-q="{escape((c.id + " " + c.role + " " + c.text).lower())}" '
        f'data-box="{",".join(_num(v) for v in c.bbox)}"'
        + (' class="mag-cgold"' if c.id == a.element_id else "")
        + f"><td>[{escape(c.id)}]</td><td>{escape(c.role)}</td><td>{_shown(c.text, 80)}</td></tr>"
        for c in st.candidates)
    return (
        f'<div class="mag-viewer{small}" id="{key}" data-w="{w}" data-h="{h}" data-box="{zoom_box}" '
        f'data-step="{escape(session.refs[i].step_id)}">'
        '<div class="mag-vtools">'
        '<button data-mag-zoom="out" title="zoom out (-)">−</button><span class="mag-vzoom">100%</span>'
        '<button data-mag-zoom="in" title="zoom in (+)">+</button>'
        '<button data-mag-zoom="fit" title="fit (0)">Fit</button><button data-mag-zoom="1" title="1:1">1:1</button>'
        '<button data-mag-zoom="target" title="zoom to the target (t)">Target (t)</button>'
        '<button data-mag-zoom="marks" title="the page with or without its Set-of-Mark boxes (m)">Marks (m)</button>'
        f'<span>{w}×{h} · wheel zooms, drag pans</span><span class="mag-tlabel">{label}</span></div>'
        f'<div class="mag-vport" style="aspect-ratio: {w} / {h}"><div class="mag-vstage" style="width:{w}px;height:{h}px">'
        f'<img class="mag-som" src="{src}" width="{w}" height="{h}" '
        f'alt="Set-of-Mark screenshot of {escape(session.refs[i].step_id)}" draggable="false">'
        f'<img class="mag-plain-img" src="{plain_src}" width="{w}" height="{h}" '
        f'alt="screenshot of {escape(session.refs[i].step_id)} without marks" draggable="false">'
        f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}">{shapes}'
        '<rect class="mag-hover" style="display:none" x="0" y="0" width="1" height="1"/></svg>'
        "</div></div></div>"
        f'<div class="mag-cands" data-viewer="{key}"><input class="mag-cfilter" type="search" '
        f'placeholder="Filter candidates: id, role, text" aria-label="Filter candidates"> '
        f'<span class="mag-ccount">{len(st.candidates)} shown</span> of {len(st.candidates)} candidates '
        f'(the target’s row is pink; hover a row to see its box)'
        f'<div class="mag-clist"><table>{rows}</table></div></div>'
    )


# -- finding steps (no Gradio) --------------------------------------------------------------


def step_sites(session: Session) -> list[tuple[str, str]]:
    """``(site, episode id)`` of every step of ``session.refs``, in order (an episode's folder is named by its id)."""
    return [(r.site, r.folder.name) for r in session.refs]


def matching_steps(session: Session, sites: list[tuple[str, str]], show: str = "all", site: str | None = None,
                   episode: str | None = None, annotator: str = "") -> list[int]:
    """Indices of the steps the Verify tab's filters let through, in corpus order.

    ``show``: ``all``; ``undecided`` (nobody has answered it); ``drafted`` (it has an LLM
    draft); ``disputed`` (its verifications disagree, or the audit disputed its target);
    ``mine`` (``annotator``'s queue: assigned to them and not answered by them yet; when
    nothing is assigned, the steps they answered). ``site`` and ``episode`` (``None`` or
    ``""``: any) narrow it further.
    """
    if show not in SHOW:
        raise ValueError(f"unknown filter {show!r}; one of {', '.join(SHOW)}")
    ids: set[str] | None = None
    if show == "undecided":
        answered = {r.step_id for r in session.store.responses(kind="verify")}
        ids = {r.step_id for r in session.refs} - answered
    elif show == "drafted":
        ids = set(session.drafts)
    elif show == "disputed":
        from mag_dataset.raw import read_audit
        from mag_dataset.schema import AuditStatus

        recs = read_audit(session.audit_path) if session.audit_path.is_file() else {}
        ids = {s for s, r in recs.items() if r.status is AuditStatus.DISPUTED} | set(session.store.needs_adjudication())
    elif show == "mine":
        who = annotator.strip()
        if session.store.assignments():
            ids = {session.refs[i].step_id for i in session.queue(who)} if who else set()
        else:
            ids = {r.step_id for r in session.store.responses(annotator=who, kind="verify")} if who else set()
    return [i for i, r in enumerate(session.refs)
            if (not site or sites[i][0] == site) and (not episode or sites[i][1] == episode)
            and (ids is None or r.step_id in ids)]


def find_step(session: Session, text: str) -> int:
    """The index of the step whose id is ``text`` (an episode's task id alone: its first step).

    Raises:
        ValueError: no such step, with what a step id looks like.
    """
    q = (text or "").strip()
    if q in session.by_id:
        return session.refs.index(session.by_id[q])
    first = next((i for i, r in enumerate(session.refs) if r.step_id.rsplit(":", 1)[0] == q), None)
    if first is not None:
        return first
    raise ValueError(f"no step {q!r} in this corpus; a step id looks like {session.refs[0].step_id!r}")


def progress_line(session: Session, matching: list[int], annotator: str = "") -> str:
    """The annotator's "M of N verified" (everybody's without a name), their queue when
    steps are assigned, and how many steps the filters let through."""
    who = (annotator or "").strip()
    line = f"**{session.progress(who or None)}**" + (f" ({who})" if who else "")
    if who and session.store.assignments():
        line += f" · your queue: {len(session.queue(who))} left"
    return line + f" · {len(matching)} steps match the filter"


def build_app(session: Session, annotator: str = "") -> Any:
    """The Gradio Blocks of the app (launch it with ``.launch(js=APP_JS, css=APP_CSS)``)."""
    import gradio as gr

    with gr.Blocks(title="MAG annotation", fill_width=True) as app:
        with gr.Row(equal_height=True):
            gr.Markdown("### MAG guide verification\nKeys (outside a text box): **a** accept · **e** save edit · "
                        "**r** reject · **n**/**p** next/previous · **t** zoom to target, **+**/**−**/**0** zoom, **m** marks · "
                        "Alt+key anywhere; Ctrl+Enter in the guide box saves the edit.", elem_classes="mag-compact")
            who = gr.Textbox(label="Annotator", value=annotator, elem_id="mag-annotator", max_lines=1, scale=0,
                             min_width=220)
        with gr.Tab("Verify"):
            _verify_tab(gr, app, session, who)
        with gr.Tab("Adjudicate", elem_id="mag-adj-tab") as adj_tab:
            _adjudicate_tab(gr, adj_tab, session, who)
        with gr.Tab("Team", elem_id="mag-team-tab") as team_tab:
            team = gr.Markdown(elem_id="mag-team")
            # reread whenever the tab is opened: the same lines as ``mag annotate --report``
            team_tab.select(lambda: "```text\n" + "\n".join(session.report()) + "\n```", None, team)
    return app


def _verify_tab(gr: Any, app: Any, session: Session, who: Any) -> None:
    """The Verify tab's controls and handlers (inside ``gr.Tab``).

    Navigation moves within the steps the filters let through. An edit not saved yet is
    kept per step (in the page's state) when the annotator moves away, and put back in the
    box, with a warning saying so, when they come back to that step. Each decision carries
    the step version the page showed; when someone answered the step in between, nothing is
    saved, the warning names who decided what, the step is shown afresh and the
    annotator's text stays in the box.
    """
    from mag_dataset.harness.annotation_store import StaleView

    sites = step_sites(session)
    site_names = sorted({s for s, _ in sites})
    episode_names = sorted({e for _, e in sites})

    def show(i: int, kept: dict, warn: str = "", person: str = "", filt: tuple = ("all", "", "")) -> tuple:
        v = session.view(i)
        sid = session.refs[i].step_id
        text = kept.get(sid, v["guide"])
        warn = warn or ("Your unsaved edit of this step is back in the box: 'Save edit' keeps it."
                        if sid in kept else "")
        m = matching_steps(session, sites, *filt, annotator=person or "")
        return (i, v["version"], v["status"], viewer_html(session, i), v["context"], v["guides"], v["audit"], text,
                v["guide"], kept, _warn(warn), "", progress_line(session, m, person or ""))

    def keep_edit(i: int, text: str, shown: str, kept: dict) -> dict:
        """The page's unsaved edits after leaving step ``i`` with ``text`` in the box."""
        kept = dict(kept or {})
        sid = session.refs[i].step_id
        if text is not None and text.strip() != (shown or "").strip():
            kept[sid] = text
        else:
            kept.pop(sid, None)
        return kept

    def step_in(i: int, filt: tuple, person: str, forward: bool) -> int | None:
        later = [k for k in matching_steps(session, sites, *filt, annotator=person) if (k > i if forward else k < i)]
        return (later[0] if forward else later[-1]) if later else None

    # an input mistake: a warning next to the buttons, nothing else changes
    def mistake(text: str) -> tuple:
        return (*[gr.skip()] * 10, _warn(text), gr.skip(), gr.skip())

    def act(decision: str):
        def handler(i, seen, text, shown, kept, note, person, show_f, site, episode):
            filt = (show_f, site, episode)
            if not person or not person.strip():
                return mistake(_NAME_FIRST)
            try:
                session.decide(i, decision, text, person, seen_version=seen, note=note or "")
            except StaleView as e:  # someone answered since this view: show it afresh, keep the text
                kept = dict(kept or {})
                if text and text.strip():
                    kept[session.refs[i].step_id] = text
                out = list(show(i, kept, f"Not saved: {e}.", person, filt))
                out[11] = gr.skip()  # the note stays too
                return tuple(out)
            except ValueError as e:
                return mistake(_as_sentence(e))
            kept = dict(kept or {})
            kept.pop(session.refs[i].step_id, None)
            j = step_in(i, filt, person, True)
            if j is None:
                m = matching_steps(session, sites, *filt, annotator=person)
                j = m[0] if m else i
            return show(j, kept, "", person, filt)
        return handler

    idx = gr.State(0)
    seen = gr.State(0)  # the step version the page shows (sent back with a decision)
    shown = gr.State("")  # the text the guide box was loaded with (an edit is a change of it)
    kept = gr.State({})  # step id -> an edit not saved yet
    with gr.Row(equal_height=True):
        jump = gr.Textbox(label="Go to step id (Enter)", placeholder=session.refs[0].step_id, max_lines=1,
                          elem_id="mag-jump", scale=2)
        show_f = gr.Dropdown(list(SHOW), value="all", label="Show", elem_id="mag-show", scale=1)
        site_f = gr.Dropdown([("any site", "")] + [(x, x) for x in site_names], value="", label="Site",
                             elem_id="mag-site", scale=1)
        episode_f = gr.Dropdown([("any episode", "")] + [(e, e) for e in episode_names], value="", label="Episode",
                                elem_id="mag-episode", scale=2)
    with gr.Row(equal_height=True):
        status = gr.Markdown(elem_id="mag-status", elem_classes="mag-compact")
        progress = gr.Markdown(elem_id="mag-progress", elem_classes="mag-compact")
    with gr.Row():
        with gr.Column(scale=5):
            image = gr.HTML(elem_id="mag-image", js_on_load=None)
        with gr.Column(scale=2, min_width=460):
            with gr.Group(elem_id="mag-decide"):
                guide = gr.Textbox(label="Guide (edit, then 'Save edit')", lines=3, elem_id="mag-guide")
                with gr.Row():
                    accept = gr.Button("Accept (a)", variant="primary", elem_id="mag-accept", min_width=90)
                    edit = gr.Button("Save edit (e)", elem_id="mag-edit", min_width=90)
                    reject = gr.Button("Reject (r)", variant="stop", elem_id="mag-reject", min_width=90)
                with gr.Row():
                    prev = gr.Button("← Previous (p)", elem_id="mag-prev", size="sm")
                    nxt = gr.Button("Next (n) →", elem_id="mag-next", size="sm")
                warning = gr.Markdown(elem_id="mag-warning")
            note = gr.Textbox(label="Note (optional, kept with your decision)", max_lines=1, elem_id="mag-note")
            guides = gr.Markdown(elem_id="mag-guides")
            audit_md = gr.Markdown(elem_id="mag-audit")
            context = gr.Markdown(elem_id="mag-context")
    outs = [idx, seen, status, image, context, guides, audit_md, guide, shown, kept, warning, note, progress]
    inputs = [idx, seen, guide, shown, kept, note, who, show_f, site_f, episode_f]
    accept.click(act("accept"), inputs, outs)
    edit.click(act("edit"), inputs, outs)
    reject.click(act("reject"), inputs, outs)

    nav_in = [idx, guide, shown, kept, show_f, site_f, episode_f, who]

    def nav(forward: bool):
        def handler(i, text, shown_text, kept_d, s, site, episode, person):
            j = step_in(i, (s, site, episode), person, forward)
            warn = "" if j is not None else f"No {'later' if forward else 'earlier'} step matches the filter."
            return show(i if j is None else j, keep_edit(i, text, shown_text, kept_d), warn, person, (s, site, episode))
        return handler

    prev.click(nav(False), nav_in, outs)
    nxt.click(nav(True), nav_in, outs)

    def go(q, i, text, shown_text, kept_d, s, site, episode, person):
        try:
            j = find_step(session, q)
        except ValueError as e:
            return mistake(_as_sentence(e))
        return show(j, keep_edit(i, text, shown_text, kept_d), "", person, (s, site, episode))

    jump.submit(go, [jump, *nav_in], outs)

    def refilter(i, text, shown_text, kept_d, s, site, episode, person):
        m = matching_steps(session, sites, s, site, episode, annotator=person)
        if not m:
            return (*[gr.skip()] * 10, _warn("No step matches the filter."), gr.skip(), progress_line(session, m, person))
        return show(i if i in m else m[0], keep_edit(i, text, shown_text, kept_d), "", person, (s, site, episode))

    for f in (show_f, site_f, episode_f):
        f.input(refilter, nav_in, outs)
    # a name typed or changed: that annotator's progress and queue
    who.blur(lambda s, site, episode, person: progress_line(
        session, matching_steps(session, sites, s, site, episode, annotator=person), person),
        [show_f, site_f, episode_f, who], progress)
    # every page load (a reload too) opens on the annotator's first step: their queue's, else the first unanswered
    app.load(lambda s, site, episode, person: show(session.first_undecided(person), {}, "", person, (s, site, episode)),
             [show_f, site_f, episode_f, who], outs)


def adjudication_choices(session: Session) -> list[tuple[str, str]]:
    """``(label, step id)`` of every step to adjudicate: the audit's disputed targets
    (:meth:`Session.disputed_choices`) and the steps whose verifications disagree."""
    out = list(session.disputed_choices())
    listed = {sid for _, sid in out}
    split = set(session.guide_disputes())
    done = {sid: res for sid, res in session.store.resolutions("verify").items() if res.status == "adjudicated"}
    for r in session.refs:
        if r.step_id in listed:
            continue
        if r.step_id in split:
            out.append((f"{r.step_id} · guides disagree · open", r.step_id))
        elif r.step_id in done:
            out.append((f"{r.step_id} · guides disagreed · resolved: {DECISION_WORDS[done[r.step_id].decision]}",
                        r.step_id))
    return out


def first_open(session: Session) -> str | None:
    """The first step of :func:`adjudication_choices` nobody has resolved yet (else None)."""
    return next((sid for label, sid in adjudication_choices(session) if label.endswith("· open")), None)


def _adjudicate_tab(gr: Any, tab: Any, session: Session, who: Any) -> None:
    """The Adjudicate tab's controls and handlers (inside ``gr.Tab``, which is ``tab``).

    Two kinds of step are listed: the audit's disputed targets (resolved to confirmed,
    remapped or unmappable) and steps whose verifications disagree (resolved by the
    adjudicator's own verification, a new round, from the responses shown). After a
    resolution the tab moves on to the next open step. Decisions carry the step version
    shown, as on the Verify tab.
    """
    from mag_dataset.harness.annotation_store import StaleView

    seen = gr.State(0)
    with gr.Row():
        with gr.Column(scale=1, min_width=400):
            steps = gr.Dropdown(label="Step to adjudicate", choices=[], value=None, elem_id="mag-adj-step")
            with gr.Group(visible=True) as audit_box:
                outcome = gr.Radio(["confirmed", "remapped", "unmappable"], label="Resolution",
                                   elem_id="mag-adj-outcome")
                element = gr.Dropdown(label="Element (for remapped)", choices=[], value=None,
                                      elem_id="mag-adj-element")
            with gr.Group(visible=False) as guide_box:
                responses = gr.Markdown(elem_id="mag-adj-responses")
                adj_guide = gr.Textbox(label="Guide (edit, then 'Save edit')", lines=3, elem_id="mag-adj-guide")
                with gr.Row():
                    g_accept = gr.Button("Accept draft", variant="primary", elem_id="mag-adj-accept", min_width=80)
                    g_edit = gr.Button("Save edit", elem_id="mag-adj-edit", min_width=80)
                    g_reject = gr.Button("Reject", variant="stop", elem_id="mag-adj-reject", min_width=80)
            note = gr.Textbox(label="Note", max_lines=1, elem_id="mag-adj-note")
            resolve = gr.Button("Resolve", variant="primary", elem_id="mag-adj-resolve")
            adj_warning = gr.Markdown(elem_id="mag-adj-warning")
            adj_info = gr.Markdown(elem_id="mag-adj-info")
        with gr.Column(scale=2):
            adj_image = gr.HTML(elem_id="mag-adj-image", js_on_load=None)

    def guide_dispute(sid: str) -> bool:
        return sid not in set(session.disputed()) and session.store.resolution(sid).status in (
            "needs_adjudication", "adjudicated")

    def pick(sid: str | None, warn: str = ""):
        # a new step: every per-step control starts empty (no note or resolution carried over)
        if not sid:
            return (None, "No step to adjudicate.", None, gr.update(choices=[], value=None), "", warn, 0,
                    gr.update(visible=True), gr.update(visible=True), gr.update(visible=False), "", "")
        i = session.refs.index(session.by_id[sid])
        html = viewer_html(session, i, key="mag-adj-viewer")
        if guide_dispute(sid):
            v = session.view(i)
            res = session.store.resolution(sid)
            rows = "\n".join(f"- round {r.round}: **{r.annotator}** {DECISION_WORDS[r.decision]}"
                              + (f": “{r.guide}”" if r.decision != "accept" else f" the draft “{r.draft}”")
                              + (f" (note: {r.note})" if r.note else "") + f" · {r.decided_at}"
                              for r in res.responses)
            head = ("**Guides disagree**: answer with your own verification (a new round decides it)."
                    if res.status == "needs_adjudication" else f"**Adjudicated**: {res.decision} by "
                    f"{', '.join(res.verified_by)}")
            info = f"{v['context']}\n\n{v['guides']}"
            return (html, info, None, gr.update(choices=[], value=None), "", warn, v["version"],
                    gr.update(visible=False), gr.update(visible=False), gr.update(visible=True),
                    f"{head}\n\n{rows}", v["guide"] if res.resolved else session.draft(i))
        v = session.adjudication_view(sid)
        return (html, v["info"], None, gr.update(choices=v["ids"], value=None), "", warn, v["version"],
                gr.update(visible=True), gr.update(visible=True), gr.update(visible=False), "", "")

    def refresh(current: str | None):
        ids = [sid for _, sid in adjudication_choices(session)]
        value = current if current in ids else first_open(session) or (ids[0] if ids else None)
        return gr.update(choices=adjudication_choices(session), value=value)

    def moved_on(sid: str, done: str):
        nxt = first_open(session)
        target = nxt or sid
        return (gr.update(choices=adjudication_choices(session), value=target),
                *pick(target, done + ("" if nxt else " No open step left.")))

    keep = [gr.skip()] * 13

    def do_resolve(sid, out, el, n, person, version):
        if not sid:
            return (*keep[:6], _warn("Pick a step to adjudicate first."), *keep[:6])
        if not out:
            return (*keep[:6], _warn("Pick a resolution: confirmed, remapped or unmappable."), *keep[:6])
        if not person or not person.strip():
            return (*keep[:6], _warn(_NAME_FIRST), *keep[:6])
        try:
            session.adjudicate(sid, out, el, person, n or "", seen_version=version)
        except StaleView as e:
            return (gr.skip(), *pick(sid, _warn(f"Not saved: {e}.")))
        except ValueError as e:
            return (*keep[:6], _warn(_as_sentence(e)), *keep[:6])
        return moved_on(sid, f"Resolved {sid} as {out}.")

    def guide_act(decision: str):
        def handler(sid, text, n, person, version):
            if not sid:
                return (*keep[:6], _warn("Pick a step to adjudicate first."), *keep[:6])
            if not person or not person.strip():
                return (*keep[:6], _warn(_NAME_FIRST), *keep[:6])
            try:
                session.decide(session.refs.index(session.by_id[sid]), decision, text, person,
                               seen_version=version, note=n or "")
            except StaleView as e:
                return (gr.skip(), *pick(sid, _warn(f"Not saved: {e}.")))
            except ValueError as e:
                return (*keep[:6], _warn(_as_sentence(e)), *keep[:6])
            return moved_on(sid, f"Resolved {sid}: {DECISION_WORDS[decision]}.")
        return handler

    pick_outs = [adj_image, adj_info, outcome, element, note, adj_warning, seen, audit_box, resolve, guide_box,
                 responses, adj_guide]
    steps.input(pick, [steps], pick_outs)
    resolve.click(do_resolve, [steps, outcome, element, note, who, seen], [steps, *pick_outs])
    g_in = [steps, adj_guide, note, who, seen]
    g_accept.click(guide_act("accept"), g_in, [steps, *pick_outs])
    g_edit.click(guide_act("edit"), g_in, [steps, *pick_outs])
    g_reject.click(guide_act("reject"), g_in, [steps, *pick_outs])
    tab.select(refresh, [steps], [steps]).then(pick, [steps], pick_outs)


def launch(raw_dir: str | os.PathLike, *, drafts_path=None, db_path=None, audit_path=None, annotator: str = "",
           host: str = "127.0.0.1", port: int | None = None, block: bool = True) -> tuple[Any, Session]:
    """Start the app. Returns ``(app, session)``; with ``block=False`` it runs in the background."""
    session = Session(raw_dir, drafts_path, db_path, audit_path)
    try:
        app = build_app(session, annotator)
        app.launch(server_name=host, server_port=port, prevent_thread_lock=not block, js=APP_JS, css=APP_CSS,
                   theme=theme(), ssr_mode=False, quiet=not block, footer_links=[])
    except BaseException:
        session.close()
        raise
    return app, session
