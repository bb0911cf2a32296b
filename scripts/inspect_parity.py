"""Check that ``inspect eval`` of the WebMRE task scores exactly like ``mag score``, on a whole split.

Serves a local OpenAI-compatible endpoint (tests/stub_openai.py) that answers every step
with its gold rendering or, for every other step, one of five broken variants (the same
ones as tests/test_inspect_task.py); runs the real ``inspect eval`` command against it
through Inspect's ``openai-api`` provider; writes the completions Inspect logged as a
predictions file; runs ``mag score --per-step`` on it; and compares every per-sample score
and every aggregate micro mean. Exits 1 on any difference.

    python scripts/inspect_parity.py                      # som/J and coord/J, bundled test split
    python scripts/inspect_parity.py --conditions som/JG coord/A --dataset path/to/built

Needs the ``inspect`` extra. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from stub_openai import StubOpenAI  # noqa: E402
from test_inspect_task import variant  # noqa: E402  (the same broken outputs as the test)

from mag_dataset.dataset import load_gold  # noqa: E402
from mag_dataset.prompts import render_target  # noqa: E402
from mag_dataset.scoring import ALL_METRICS  # noqa: E402


def _key(text: str, image_url: str) -> str:
    return hashlib.sha256((text + "\0" + image_url).encode()).hexdigest()


def _request_key(body: dict) -> str:
    user = body["messages"][-1]["content"]
    text = "".join(p.get("text", "") for p in user if p.get("type") == "text")
    image = next(p["image_url"]["url"] for p in user if p.get("type") == "image_url")
    return _key(text, image)


def _completion(sample: dict) -> str:
    content = sample["output"]["choices"][0]["message"]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content if p["type"] == "text")


def _run_cli(dataset: str, view: str, contract: str, answers: dict[str, str], logs: Path) -> int:
    """The ``inspect eval`` command against the local endpoint; returns the requests it received."""
    with StubOpenAI(responder=lambda body: answers[_request_key(body)]) as stub:
        env = {**os.environ, "STUB_API_KEY": "none"}
        cmd = ["inspect", "eval", f"{ROOT}/mag_dataset/inspect_task.py@webmre", "-T", f"view={view}",
               "-T", f"contract={contract}", "-T", f"dataset={dataset}", "--model", "openai-api/stub/stub-model",
               "--model-base-url", stub.base_url, "--log-dir", str(logs), "--log-format", "json",
               "--display", "none", "--max-connections", "8"]
        subprocess.run(cmd, check=True, env=env)
        requests = stub.count
    return requests


def _run_mock(dataset: str, view: str, contract: str, answers: dict[str, str], logs: Path) -> int:
    """``inspect_ai.eval`` with Inspect's mock model provider; returns the generations asked for."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from mag_dataset.inspect_task import webmre

    calls = []

    def respond(messages, tools, tool_choice, config):
        assert config.temperature == 0
        user = messages[-1].content
        key = _key("".join(p.text for p in user if p.type == "text"), next(p.image for p in user if p.type == "image"))
        calls.append(key)
        out = ModelOutput.from_content("mockllm/model", answers[key])
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tokenizer download
        return out

    task = webmre(view=view, contract=contract, dataset=dataset)
    log, = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=respond), log_dir=str(logs),
                        log_format="json", display="none", max_samples=16)
    if log.status != "success":
        raise SystemExit(f"inspect eval failed: {log.error}")
    return len(calls)


def check(dataset: str, view: str, contract: str, work: Path, provider: str) -> bool:
    from mag_dataset.inspect_task import load_samples

    samples = load_samples(dataset, view, contract)
    steps = load_gold(dataset, view, "test")
    answers: dict[str, str] = {}
    for k, (s, st) in enumerate(zip(samples, steps)):
        assert s.id == st.step_id
        user = s.input[-1].content
        text = "".join(p.text for p in user if p.type == "text")
        image = next(p.image for p in user if p.type == "image")
        # a step whose prompt and screenshot repeat an earlier one's gets that step's answer, as a model would
        answers.setdefault(_key(text, image), variant(render_target(st, view, contract), k))
    logs = work / f"logs_{provider}_{view}_{contract}"
    if provider == "mock":
        requests = _run_mock(dataset, view, contract, answers, logs)
    else:
        requests = _run_cli(dataset, view, contract, answers, logs)
    log = json.loads(next(logs.glob("*.json")).read_text("utf-8"))
    preds = work / f"preds_{view}_{contract}.jsonl"
    preds.write_text("".join(json.dumps({"step_id": s["id"], "output": _completion(s), "seed": 0}) + "\n"
                             for s in log["samples"]), "utf-8")
    report_path = work / f"report_{view}_{contract}.json"
    subprocess.run(["mag", "score", "--predictions", str(preds), "--dataset", dataset, "--view", view,
                    "--contract", contract, "--per-step", "--out", str(report_path)],
                   check=True, stdout=subprocess.DEVNULL)
    report = json.loads(report_path.read_text("utf-8"))
    per_step = {d["step_id"]: d for d in report["steps"]}
    bad = [s["id"] for s in log["samples"]
           if s["scores"]["webmre_scorer"]["value"] != {m: per_step[s["id"]][m] for m in ALL_METRICS
                                                        if per_step[s["id"]][m] is not None}]
    micro = {m: (report[m] if m in report else report["extensions"][m])["micro"] for m in ALL_METRICS}
    logged = {m: v["value"] for m, v in log["results"]["scores"][0]["metrics"].items()}
    expected = {m: v for m, v in micro.items() if v is not None}
    ok = not bad and logged == expected and len(log["samples"]) == len(steps) == requests
    print(f"{provider} {view}/{contract}: {len(steps)} steps, {requests} requests, per-sample mismatches {len(bad)}, "
          f"micro means equal: {logged == expected} (saa {expected.get('saa')}, ofcr {expected.get('ofcr')}, "
          f"bleu1 {expected.get('bleu1')}) -> {'OK' if ok else 'DIFFERENT'}")
    if logged != expected:
        print(f"  inspect: {logged}\n  mag score: {expected}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="bundled")
    ap.add_argument("--provider", nargs="+", choices=["mock", "cli"], default=["mock", "cli"],
                    help="mock: inspect_ai.eval with Inspect's mockllm; cli: the inspect eval command on a local endpoint")
    ap.add_argument("--conditions", nargs="+", default=["som/J", "coord/J"], help="view/contract pairs")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mag-inspect-parity-") as tmp:
        results = [check(args.dataset, *c.split("/"), Path(tmp), p) for p in args.provider for c in args.conditions]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
