"""The leaderboard page's own CSS and JavaScript (the rendered HTML is in ``lb_tables.py``).

:data:`TABLE_JS` sorts a ranked table by a header click and opens a row's Details;
:data:`CSS` styles the tables, bars, banner and Result box; :func:`upload_note_js` keeps the
upload cap's note visible when a file over the cap is refused. Plain strings: no Gradio here.
"""

from __future__ import annotations

#: The ranked tables: sorting by a header click, row click opens Details (see TABLE_JS).
TABLE_JS = r"""
element.addEventListener('click', (ev) => {
  if (ev.target.closest('a[href]')) return;  // a model's link opens itself, not the row's Details
  const th = ev.target.closest('th[data-col]');
  if (th) {
    const table = th.closest('table'), tb = table.tBodies[0], i = +th.dataset.col;
    const desc = th.getAttribute('aria-sort') !== 'descending';
    const val = (tr) => { const c = tr.cells[i]; return c.dataset.v !== undefined ? c.dataset.v : c.textContent; };
    const rows = [...tb.rows];
    rows.sort((a, b) => {
      const x = val(a), y = val(b);
      if (x === '' && y !== '') return 1;
      if (y === '' && x !== '') return -1;
      const nx = parseFloat(x), ny = parseFloat(y);
      const d = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
      return desc ? -d : d;
    });
    rows.forEach((r) => tb.appendChild(r));
    table.querySelectorAll('th[data-col]').forEach((h) => h.removeAttribute('aria-sort'));
    th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
    return;
  }
  const tr = ev.target.closest('tr[data-id]');
  if (tr) trigger('select', {index: [tr.rowIndex, 0], value: tr.dataset.id, selected: true});
});
// search and "show all": a block is the tools bar, then its table; rows past the top 20 carry
// .mag-beyond and show once the block is expanded or a search is typed
const block = (el) => { let t = el.closest('.mag-tools'); while (t && !(t.tagName === 'DIV' && t.querySelector('table'))) t = t.nextElementSibling; return t && t.querySelector('table'); };
const apply = (tools) => {
  const table = block(tools); if (!table) return;
  const q = (tools.querySelector('.mag-search').value || '').trim().toLowerCase();
  const all = tools.dataset.expanded === '1';
  let shown = 0;
  for (const tr of table.tBodies[0].rows) {
    const hit = q ? (tr.dataset.search || '').includes(q) : (all || !tr.classList.contains('mag-beyond'));
    tr.hidden = !hit; if (hit) shown++;
  }
  tools.querySelector('.mag-count').textContent = q ? `${shown} match${shown === 1 ? '' : 'es'}` : '';
};
element.addEventListener('input', (ev) => { const t = ev.target.closest('.mag-search'); if (t) apply(t.closest('.mag-tools')); });
element.addEventListener('click', (ev) => {
  const c = ev.target.closest('.mag-cols'); if (!c) return;
  const table = block(c.closest('.mag-tools')); if (!table) return;
  const all = table.classList.toggle('mag-less') === false;
  c.setAttribute('aria-pressed', String(all));
  c.textContent = all ? 'Fewer columns' : `All ${table.tHead.rows[0].cells.length} columns`;
});
element.addEventListener('click', (ev) => {
  const b = ev.target.closest('.mag-more'); if (!b) return;
  const tools = b.closest('.mag-tools'), open = tools.dataset.expanded !== '1';
  tools.dataset.expanded = open ? '1' : '';
  b.setAttribute('aria-expanded', String(open));
  b.textContent = open ? 'Show the top 20' : `Show all ${block(tools).tBodies[0].rows.length} rows`;
  const shownNote = tools.querySelector('.mag-shown'); if (shownNote) shownNote.hidden = open;
  apply(tools);
});
element.addEventListener('keydown', (ev) => {
  if (ev.key !== 'Enter' && ev.key !== ' ') return;
  const t = ev.target.closest('th[data-col], tr[data-id]');
  if (t) { ev.preventDefault(); t.click(); }
});
"""

#: The page's stylesheet (``launch(css=...)``): tables, bars, the gold banner, the Result box.
CSS = r"""
.mag-table-wrap { overflow: auto; max-width: 100%; max-height: 75vh; border: 1px solid var(--border-color-primary);
  border-radius: 6px; background: linear-gradient(to right, var(--background-fill-primary) 30%, transparent),
  linear-gradient(to left, var(--background-fill-primary) 30%, transparent) right,
  radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.25), transparent) right;
  background-repeat: no-repeat; background-size: 0 100%, 40px 100%, 14px 100%; background-attachment: local, local, scroll; }
table.mag-rank { border-collapse: separate; border-spacing: 0; width: max-content; min-width: 100%; font-size: 14px; }
table.mag-rank th, table.mag-rank td { padding: 6px 10px; border-bottom: 1px solid var(--border-color-primary);
  white-space: nowrap; text-align: right; background: var(--background-fill-primary); }
/* Gradio's prose rules box every cell in the text colour (.gradio-container-* .prose td); the board's
   tables keep one light rule under each row instead */
.prose table.mag-rank, .prose table.mag-bars { margin: 0; }
.prose table.mag-rank tr, .prose table.mag-bars tr { border: 0; }
.prose table.mag-rank th, .prose table.mag-rank td, .prose table.mag-bars th, .prose table.mag-bars td {
  border: 0; border-bottom: 1px solid var(--border-color-primary); }
.prose table.mag-rank .c-head { border-right: 2px solid var(--border-color-primary); }
table.mag-rank th { cursor: pointer; user-select: none; position: sticky; top: 0; z-index: 2;
  background: var(--background-fill-secondary); }
table.mag-rank th::after { content: ' \2195'; opacity: .35; }
table.mag-rank th[aria-sort=descending]::after { content: ' \25BC'; opacity: 1; }
table.mag-rank th[aria-sort=ascending]::after { content: ' \25B2'; opacity: 1; }
table.mag-rank td.txt, table.mag-rank th.txt { text-align: left; }
table.mag-rank tbody tr { cursor: pointer; }
table.mag-rank tbody tr:hover td { background: var(--background-fill-secondary); }
/* the three sticky columns have fixed widths, so each starts where the previous ends */
table.mag-rank .c-rank, table.mag-rank .c-model { box-sizing: border-box; }
table.mag-rank .c-rank { position: sticky; left: 0; z-index: 1; width: 4.2em; min-width: 4.2em; max-width: 4.2em;
  padding-left: 4px; padding-right: 6px; }
table.mag-rank .c-model { position: sticky; left: 4.2em; z-index: 1; width: 10em; min-width: 10em; max-width: 10em;
  white-space: normal; overflow-wrap: anywhere; }
table.mag-rank .c-head { position: sticky; left: 14.2em; z-index: 1; font-weight: 600;
  border-right: 2px solid var(--border-color-primary); }
table.mag-rank th.c-rank, table.mag-rank th.c-model, table.mag-rank th.c-head { z-index: 3; }
.mag-tools { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 4px 0 6px; font-size: 13px; }
.mag-search { flex: 1 1 14em; max-width: 24em; padding: 4px 8px; border: 1px solid var(--border-color-primary);
  border-radius: 6px; background: var(--background-fill-primary); color: inherit; }
table.mag-rank.mag-less .c-more { display: none; }
.mag-cols, .mag-more { padding: 3px 10px; border: 1px solid var(--border-color-primary); border-radius: 6px; cursor: pointer;
  background: var(--background-fill-secondary); color: inherit; }
.mag-scroll-cue { display: none; font-size: 13px; opacity: .8; margin: 2px 0 4px; }
.mag-contract small { font-weight: 400; opacity: .85; }
@media (max-width: 900px) { .mag-scroll-cue { display: block; }
  table.mag-rank { font-size: 13px; }
  table.mag-rank th, table.mag-rank td { padding: 5px 6px; }
  table.mag-rank .c-rank { width: 3.2em; min-width: 3.2em; max-width: 3.2em; }
  table.mag-rank .c-model { left: 3.2em; width: 6em; min-width: 6em; max-width: 6em; }
  /* rank, model, the score and its interval in view on a phone; the rest scrolls under them */
  table.mag-rank .c-head { left: 9.2em; width: 4.4em; min-width: 4.4em; max-width: 4.4em; box-sizing: border-box;
    border-right: none; }
  /* the interval on two lines ("[0.681," / "0.712]"): four columns in 19em, the rest scroll beside them */
  table.mag-rank .c-ci { position: sticky; left: 13.6em; z-index: 1; width: 5.4em; min-width: 5.4em; max-width: 5.4em;
    box-sizing: border-box; white-space: normal; border-right: 2px solid var(--border-color-primary); }
  .prose table.mag-rank .c-head { border-right: 0; }
  .prose table.mag-rank .c-ci { border-right: 2px solid var(--border-color-primary); }
  table.mag-rank th.c-ci { z-index: 3; }
  .mag-contract small { display: block; } }
.mag-contract { margin: 14px 0 4px; font-weight: 600; }
.mag-note { font-size: 13px; opacity: .85; }
.mag-similar { font-size: 11px; padding: 0 .3em; border-radius: .6em; background: #fde68a; color: #78350f; white-space: nowrap; }
.mag-tie { font-weight: 700; color: #b45309; margin-right: 1px; }
.mag-tie-legend { font-size: 12px; opacity: .9; margin: 0 0 4px; }
.mag-gold { padding: 8px 12px; border-radius: 6px; border: 1px solid var(--border-color-primary); }
.mag-gold.public { background: #fff4e5; color: #5f370e; border-color: #f0b36b; }
.mag-gold.hidden { background: #e8f4fd; color: #0b3c61; border-color: #8cc4ef; }
.mag-bars-wrap { overflow-x: auto; max-width: 100%; }
table.mag-bars { border-collapse: collapse; font-size: 14px; margin-bottom: 12px; }
table.mag-bars th[scope=row] { max-width: 16em; white-space: normal; }
details.mag-pooled { font-weight: 400; font-size: 12px; opacity: .8; max-width: 22em; white-space: normal; }
details.mag-pooled summary { cursor: pointer; }
table.mag-bars th, table.mag-bars td { padding: 4px 8px; border-bottom: 1px solid var(--border-color-primary); text-align: left; }
.mag-bar { display: flex; align-items: center; gap: 6px; min-width: 9em; }
.mag-bar span.b { display: inline-block; height: 12px; background: #4f6bed; border-radius: 2px; }
.mag-bar span.v { font-variant-numeric: tabular-nums; min-width: 2.6em; }
.mag-upload-note { font-size: 14px; padding: 6px 10px; border-radius: 6px; }
.mag-upload-note.too-big { background: #fdecea; color: #8a1c14; border: 2px solid #d93025; font-weight: 600; }
/* About: its tables scroll sideways rather than break words mid-word ("targe t acc") */
#about-text table { display: block; overflow-x: auto; max-width: 100%; }
#about-text th, #about-text td { word-break: normal !important; overflow-wrap: normal !important; hyphens: none; }
#about-text td:first-child, #about-text th:first-child { white-space: nowrap; }
#compare-out textarea { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px;
  white-space: pre; overflow-x: auto; }
.status-accepted textarea { background: #e6f4ea !important; color: #0d5223 !important; border: 2px solid #1e8e3e !important; font-weight: 600; }
.status-rejected textarea { background: #fdecea !important; color: #8a1c14 !important; border: 2px solid #d93025 !important; font-weight: 600; }
"""


def upload_note_js(cap: int) -> str:
    """JS for the note under the file field: a file over the cap is refused by Gradio with a
    toast that fades; this note keeps saying why (the cap in MiB) until another file is chosen."""
    mib = cap / (1024 * 1024)
    return (
        "const cap = %d, capText = '%s MiB';\n"
        "const base = element.innerHTML;\n"
        "const check = (files) => {\n"
        "  const big = [...(files || [])].find((f) => f.size > cap);\n"
        "  const box = element.querySelector('.mag-upload-note') || element;\n"
        "  if (big) {\n"
        "    box.classList.add('too-big');\n"
        "    const status = document.querySelector('#submit-status');  // the last result is not this file's\n"
        "    if (status) { const ta = status.querySelector('textarea'); if (ta) ta.value = '';\n"
        "      status.classList.remove('status-accepted', 'status-rejected'); }\n"
        "    box.textContent = `Not uploaded: ${big.name} is ${(big.size / 1048576).toFixed(1)} MiB, over the ` +\n"
        "      `upload cap of ${capText}. Compress it as .jsonl.gz or .parquet (the decoded text is capped at ` +\n"
        "      `${capText} too), or split its seeds into several files.`;\n"
        "  } else if (files && files.length) { element.innerHTML = base; }\n"
        "};\n"
        "document.addEventListener('change', (ev) => {\n"
        "  if (ev.target && ev.target.matches && ev.target.matches('#predictions input[type=file]')) check(ev.target.files);\n"
        "}, true);\n"
        "document.addEventListener('drop', (ev) => {\n"
        "  if (ev.target && ev.target.closest && ev.target.closest('#predictions') && ev.dataTransfer) check(ev.dataTransfer.files);\n"
        "}, true);\n"
    ) % (cap, f"{mib:g}")
