"""The MAG harness beyond the offline protocol (MAG, arXiv 2607.10079; WebMRE, arXiv 2609.27353).

Modules (each imported only by the command that needs it):

* :mod:`~mag_dataset.harness.annotate` — LLM-assisted guide drafting (cached drafts) and
  writing human decisions back into episodes and the audit file.
* :mod:`~mag_dataset.harness.annotation_store` — the SQLite store of human decisions
  (verifications, adjudications) and its schema migrations.
* :mod:`~mag_dataset.harness.annotate_app` — the Gradio human verification and
  adjudication app.
* :mod:`~mag_dataset.harness.audit` — the three-judge label audit's runner (requests,
  cache, verdict log, audit file, replay, staleness).
* :mod:`~mag_dataset.harness.audit_rules` — the audit's pure rules: answer parser, merge
  rule, records, agreement.
* :mod:`~mag_dataset.harness.audit_prompt` / :mod:`~mag_dataset.harness.judges` — what a
  judge is asked; the judges file.
* :mod:`~mag_dataset.harness.llm_batch` — one batch of Set-of-Mark requests to LLM
  endpoints (lone probe, chunks), shared by drafting and the audit.
* :mod:`~mag_dataset.harness.preflight` — checks before the first LLM request and the
  failed-call limit (audit and drafting).
* :mod:`~mag_dataset.harness.unify` — coordinate-only step restoration and stale flags.
* :mod:`~mag_dataset.harness.recorder` — expert episodes recorded on MiniWoB++ and the sites
  (``mag record``, here or on Ray); :mod:`~mag_dataset.harness.recapture` — site episodes
  re-rendered on a site that has moved on; :mod:`~mag_dataset.harness.page_evidence` — the
  audit's DOM fingerprints for older episodes, by replay (``mag recapture --evidence``).
* :mod:`~mag_dataset.harness.browsergym_import` — BrowserGym/AgentLab experiment import.
* :mod:`~mag_dataset.harness.trace_import` — Playwright trace import;
  :mod:`~mag_dataset.harness.webarena_import` — WebArena result folders;
  :mod:`~mag_dataset.harness.import_common` — what the three importers share.
* :mod:`~mag_dataset.harness.live_eval` / :mod:`~mag_dataset.harness.agents` — live evaluation.
"""
