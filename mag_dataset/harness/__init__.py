"""The MAG harness beyond the offline protocol (MAG, arXiv 2607.10079; WebMRE, arXiv 2609.27353).

Modules (each imported only by the command that needs it):

* :mod:`~mag_dataset.harness.annotate` — LLM-assisted guide drafting (cached drafts).
* :mod:`~mag_dataset.harness.annotate_app` — the Gradio human verification and
  adjudication app.
* :mod:`~mag_dataset.harness.audit` — the three-judge label audit and its merge rule.
* :mod:`~mag_dataset.harness.preflight` — checks before the first LLM request and the
  failed-call limit (audit and drafting).
* :mod:`~mag_dataset.harness.unify` — coordinate-only step restoration and stale flags.
* :mod:`~mag_dataset.harness.importer` — BrowserGym/AgentLab experiment import.
* :mod:`~mag_dataset.harness.live_eval` / :mod:`~mag_dataset.harness.agents` — live evaluation.
"""
