"""Greedy inference over a split, writing the predictions JSONL that ``mag score`` reads.

WebMRE (arXiv 2609.27353) evaluates every checkpoint with greedy decoding under locked
prompts; one test pass takes under a GPU hour. Prompts come from
:mod:`mag_dataset.prompts`; the raw decoded text is written unparsed (the scorer's format
gate judges it).

Output: ``--output preds.jsonl`` with one ``{"step_id", "output", "seed"}`` line per step,
plus ``preds.provenance.json`` (model, revision, dataset, split, view, contract, seed,
decoding settings, backend, software versions, sha256 of the predictions). The file is
written as ``preds.jsonl.partial`` while running and renamed when complete; rerunning the
same command resumes, skipping step ids already written.

Launch::

    # GPU, vLLM (pip install vllm); 8 GPUs: 4 replicas of 2-GPU tensor parallelism
    python -m baselines.infer --model_name_or_path runs/sft-qwen35-4b-som-J-s0 \\
        --dataset mag/webmre --view som --contract J --output preds/4b-som-J-s0.jsonl --backend vllm \\
        --tensor_parallel_size 2 --data_parallel_size 4
    # anywhere, transformers
    python -m baselines.infer --config baselines/configs/infer.yaml --model_name_or_path MODEL \\
        --output preds.jsonl
    mag score --predictions preds.jsonl --dataset mag/webmre --view som --contract J
    # a Ray cluster (pip install "mag_dataset[ray]"; `ray start --head` on the head node, then
    # `ray start --address HEAD:6379` on each GPU node): 16 vLLM replicas of 1 GPU, anywhere in it
    python -m baselines.infer --model_name_or_path MODEL --dataset mag/webmre --output preds.jsonl \\
        --backend ray --ray_engine vllm --data_parallel_size 16 --ray_address auto

``--backend ray`` runs the same decoding over ``data_parallel_size`` replicas with Ray Data:
the steps still to do become a dataset (step + screenshot bytes), ``map_batches`` sends
batches of ``batch_size`` to a pool of replicas, each holding one ``--ray_engine`` backend
(transformers, or vLLM with ``tensor_parallel_size`` GPUs per replica), and the driver appends
each finished batch to the ``.partial`` file, so a rerun resumes exactly as with the other
backends. Greedy decoding of a step does not depend on its batch, so the file equals the
single-process one. The screenshots of the steps to do are PNG-encoded into Ray's object
store at the start (about the size of the split's images; it spills to disk when full). Each node needs this package and the model (a Hub id, or a path that
exists on every node); the ``baselines`` folder is shipped to the workers by Ray.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from baselines import common
from mag_dataset import runners
from mag_dataset.fileio import atomic_write, atomic_write_json


@dataclass
class InferArguments:
    model_name_or_path: str = field(metadata={"help": "checkpoint folder or Hub model id"})
    output: str = field(metadata={"help": "predictions JSONL to write"})
    model_revision: str | None = field(default=None, metadata={"help": "Hub revision of the model"})
    dataset: str = field(default="bundled", metadata={"help": "built dataset folder, Hub repo id, or 'bundled'"})
    view: str = field(default="som", metadata={"help": "som or coord"})
    contract: str = field(default="J", metadata={"help": "A, G, J or JG"})
    split: str = field(default="test", metadata={"help": "train or test"})
    seed: int = field(default=0, metadata={"help": "seed recorded in the file (the training seed of the model)"})
    coord_space: str = field(default="pixels", metadata={
        "help": "coord view: the space the model answers in (pixels, norm1000, norm1 or resized:WxH); "
                "sets the prompt's wording and is recorded in the provenance sidecar for mag score"})
    backend: str = field(default="transformers", metadata={
        "help": "transformers, vllm, or ray (data_parallel_size replicas of --ray_engine with Ray Data)"})
    ray_engine: str = field(default="transformers", metadata={
        "help": "ray backend: the decoding engine of each replica, transformers or vllm"})
    ray_address: str | None = field(default=None, metadata={
        "help": "ray backend: cluster address (auto, HOST:6379); default RAY_ADDRESS, else a local Ray instance"})
    ray_num_gpus: float | None = field(default=None, metadata={
        "help": "ray backend: GPUs per replica (default: tensor_parallel_size for vllm; for transformers 1 if "
                "the cluster has GPUs, else 0)"})
    ray_num_cpus: float = field(default=1.0, metadata={"help": "ray backend: CPUs per replica"})
    batch_size: int = field(default=8, metadata={"help": "prompts per generate call (and per resumable chunk)"})
    tensor_parallel_size: int = field(default=1, metadata={"help": "GPUs per model replica (vLLM backend)"})
    data_parallel_size: int = field(default=1, metadata={
        "help": "model replicas, each on its own tensor_parallel_size GPUs (vLLM backend), or Ray replicas (ray)"})
    max_new_tokens: int = field(default=256, metadata={"help": "decoding budget per step"})
    dtype: str = field(default="auto", metadata={"help": "auto, bfloat16, float16 or float32"})
    device: str | None = field(default=None, metadata={"help": "cuda, cpu, ... (transformers backend)"})
    limit: int | None = field(default=None, metadata={"help": "only the first N steps (smoke tests)"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})


def _read_done(path: Path, seed: int, repair: bool = False) -> dict[str, str]:
    """Step id -> output of the complete lines already in a (partial) predictions file.

    With ``repair`` (the ``.partial`` file only) a last line cut by a crash is removed from
    the file, so appending continues on a clean line; a finished file is never modified.

    Raises:
        mag_dataset.errors.UserError: a line that is not a predictions record (not our file).
    """
    done: dict[str, str] = {}
    if not path.exists():
        return done
    data = path.read_bytes()
    if not data.endswith(b"\n"):  # a line cut by a crash: drop it, it is redone
        data = data[: data.rfind(b"\n") + 1]
        if repair:
            path.write_bytes(data)
    from mag_dataset.errors import UserError

    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        if line.strip():
            try:
                rec = json.loads(line)
                ok = isinstance(rec, dict) and isinstance(rec.get("step_id"), str) and isinstance(rec.get("output"), str)
            except json.JSONDecodeError:
                ok = False
            if not ok:
                raise UserError(f"{path}:{n}: not a predictions line ({{\"step_id\", \"output\", \"seed\"}}); "
                                "delete the file or choose another --output")
            if rec.get("seed", 0) == seed:
                done[rec["step_id"]] = rec["output"]
    return done


#: the arguments that must agree for a rerun to resume (or reuse) an earlier file
_RUN_KEYS = ("model_name_or_path", "model_revision", "dataset", "split", "view", "contract", "seed",
             "max_new_tokens", "coord_space")


def _run_key(args: InferArguments) -> dict[str, Any]:
    return {k: getattr(args, k) for k in _RUN_KEYS}


def _run_key_path(partial: Path) -> Path:
    return partial.with_name(partial.name + ".run.json")


def _check_same_run(args: InferArguments, out: Path, partial: Path) -> None:
    """Refuse to resume or reuse a file written by a different run (model, contract, ...)."""
    from mag_dataset.errors import UserError

    want = _run_key(args)
    prov_path = common.provenance_path(out)
    sources = []
    if out.exists() and prov_path.exists():
        prov = json.loads(prov_path.read_text(encoding="utf-8"))
        have = {"model_name_or_path": prov.get("model"), "model_revision": prov.get("model_revision"),
                "dataset": prov.get("dataset"), "split": prov.get("split"), "view": prov.get("view"),
                "contract": prov.get("contract"), "seed": prov.get("seed"),
                "max_new_tokens": (prov.get("decoding") or {}).get("max_new_tokens"),
                "coord_space": prov.get("coord_space", "pixels")}
        sources.append((out, have))
    if partial.exists() and _run_key_path(partial).exists():
        sources.append((partial, json.loads(_run_key_path(partial).read_text(encoding="utf-8"))))
    for path, have in sources:
        # files from before --coord_space existed were written in pixels
        diff = [k for k in _RUN_KEYS if have.get(k, "pixels" if k == "coord_space" else None) != want[k]]
        if diff:
            shown = ", ".join(f"{k}={have.get(k)!r} (now {want[k]!r})" for k in diff)
            raise UserError(f"{path} was written by another run ({shown}); "
                            f"delete it or choose another --output")


def provenance(args: InferArguments, n_steps: int, backend: str, predictions: Path) -> dict[str, Any]:
    from mag_dataset.prompts import PROMPT_VERSION

    return {
        "kind": "mag-predictions-provenance",
        "model": args.model_name_or_path,
        "model_revision": args.model_revision,
        "dataset": args.dataset,
        "dataset_revision": common.dataset_revision(args.dataset),
        "split": args.split,
        "view": args.view,
        "contract": args.contract,
        "seed": args.seed,
        "coord_space": args.coord_space,
        "steps": n_steps,
        "prompt_version": PROMPT_VERSION,
        "decoding": {"strategy": "greedy", "max_new_tokens": args.max_new_tokens,
                     "chat_template_kwargs": runners.CHAT_TEMPLATE_KWARGS},
        "backend": backend,
        "parallelism": {"tensor": args.tensor_parallel_size, "data": args.data_parallel_size},
        "dtype": args.dtype,
        "predictions_sha256": common.sha256_file(predictions),
        "environment": common.environment(),
    }


def predict(
    args: InferArguments,
    examples: Sequence[common.Example] | None = None,
    backend: Any = None,
) -> Path:
    """Decode every step of the split greedily and write the predictions file.

    Args:
        args: the run's arguments.
        examples: the steps to predict (default: loaded from ``args.dataset``).
        backend: a decoding backend (default: built from ``args``).

    Returns:
        The path of the completed predictions file.
    """
    from tqdm.auto import tqdm

    view, contract = common.view_and_contract(args.view, args.contract)
    args.coord_space = common.coord_space_arg(view, args.coord_space)
    out = Path(args.output)
    partial = out.with_name(out.name + ".partial")
    if examples is None:
        examples = common.load_examples(args.dataset, view, args.split, args.limit)
    elif args.limit is not None:
        examples = list(examples)[: args.limit]
    order = [e.step.step_id for e in examples]
    _check_same_run(args, out, partial)
    done = _read_done(out, args.seed) if out.exists() else {}
    if set(order) <= set(done):
        print(f"{out}: complete ({len(order)} steps), nothing to do", file=sys.stderr)
        return out
    done.update(_read_done(partial, args.seed, repair=True))
    todo = [e for e in examples if e.step.step_id not in done]
    if done:
        print(f"resuming: {len(done)} steps already in {partial}, {len(todo)} to go", file=sys.stderr)
    if args.backend == "ray":
        if backend is not None:
            raise ValueError("backend objects are for the in-process backends, not --backend ray")
        batches = _ray_batches(args, todo)
        backend_name = f"ray/{args.ray_engine}"
    else:
        if backend is None:
            backend = common.make_backend(
                args.backend, args.model_name_or_path, revision=args.model_revision, dtype=args.dtype,
                device=args.device, batch_size=args.batch_size, max_new_tokens=args.max_new_tokens, seed=args.seed,
                tensor_parallel_size=args.tensor_parallel_size, data_parallel_size=args.data_parallel_size,
            )
        batches = _local_batches(backend, args, todo, view, contract)
        backend_name = getattr(backend, "name", "custom")
    partial.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(_run_key_path(partial), _run_key(args))
    meter = common.Throughput()
    bar = tqdm(total=len(examples), initial=len(examples) - len(todo), desc="infer", unit="step",
               disable=not args.progress)
    with open(partial, "a", encoding="utf-8") as f:
        for pairs in batches:
            records = [{"step_id": step_id, "output": text, "seed": args.seed} for step_id, text in pairs]
            f.write(common.jsonl_lines(records))
            f.flush()
            os.fsync(f.fileno())
            for r in records:
                done[r["step_id"]] = r["output"]
            meter.add(len(records))
            bar.update(len(records))
            bar.set_postfix(steps_per_s=f"{meter.rate:.2f}")
    bar.close()
    meter.report(f"infer [{backend_name}]")
    # Final file in dataset order, written atomically; the partial file goes away.
    atomic_write(out, common.jsonl_lines({"step_id": s, "output": done[s], "seed": args.seed} for s in order))
    partial.unlink(missing_ok=True)
    _run_key_path(partial).unlink(missing_ok=True)
    atomic_write_json(common.provenance_path(out),
                             provenance(args, len(order), backend_name, out))
    return out


def _prompt(backend: Any, step: Any, view: Any, contract: Any, coord_space: str) -> str:
    # the default keeps the 3-argument call, so custom backends need no coord_space
    if coord_space == "pixels":
        return backend.prompt(step, view, contract)
    return backend.prompt(step, view, contract, coord_space=coord_space)


def _local_batches(backend: Any, args: InferArguments, todo: Sequence[common.Example], view: Any,
                   contract: Any) -> Iterator[list[tuple[str, str]]]:
    """(step id, output) of each chunk of ``batch_size`` steps, decoded in this process."""
    for i in range(0, len(todo), args.batch_size):
        chunk = todo[i : i + args.batch_size]
        prompts = [_prompt(backend, e.step, view, contract, args.coord_space) for e in chunk]
        decoded = backend.decode(prompts, [e.image for e in chunk])
        yield [(e.step.step_id, d.text) for e, d in zip(chunk, decoded)]


class RayReplica:
    """One Ray Data replica: a decoding backend built once, applied to batches of steps.

    Batches carry each step pickled and its screenshot as PNG bytes; the replica returns
    ``step_id`` and ``output`` columns.
    """

    def __init__(self, engine: str, model: str, revision: str | None, dtype: str, device: str | None,
                 batch_size: int, max_new_tokens: int, seed: int, tensor_parallel_size: int, view: str,
                 contract: str, coord_space: str):
        self.backend = common.make_backend(
            engine, model, revision=revision, dtype=dtype, device=device, batch_size=batch_size,
            max_new_tokens=max_new_tokens, seed=seed, tensor_parallel_size=tensor_parallel_size,
        )
        self.view, self.contract = common.view_and_contract(view, contract)
        self.coord_space = coord_space

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import io
        import pickle

        import numpy as np
        from PIL import Image

        steps = [pickle.loads(b) for b in batch["step"]]
        images = [Image.open(io.BytesIO(b)).convert("RGB") for b in batch["image"]]
        prompts = [_prompt(self.backend, s, self.view, self.contract, self.coord_space) for s in steps]
        decoded = self.backend.decode(prompts, images)
        return {"step_id": np.array([s.step_id for s in steps], dtype=object),
                "output": np.array([d.text for d in decoded], dtype=object)}


def _ray_batches(args: InferArguments, todo: Sequence[common.Example]) -> Iterator[list[tuple[str, str]]]:
    """(step id, output) of each batch decoded by ``data_parallel_size`` Ray Data replicas.

    The arguments and the cluster address are checked at the call; decoding starts when the
    result is iterated.

    Raises:
        mag_dataset.errors.UserError: Ray missing or unreachable, a bad engine or replica count.
    """
    from mag_dataset.errors import UserError
    from mag_dataset.harness.ray_backend import RayBackendError, check_ray

    if args.ray_engine not in common.BACKENDS:
        raise UserError(f"unknown --ray_engine {args.ray_engine!r}; choose one of {sorted(common.BACKENDS)}")
    if args.data_parallel_size < 1 or args.tensor_parallel_size < 1:
        raise UserError("tensor_parallel_size and data_parallel_size must be >= 1")
    if args.ray_engine == "transformers" and args.tensor_parallel_size != 1:
        raise UserError("--tensor_parallel_size needs --ray_engine vllm (a transformers replica decodes on one device)")
    try:
        check_ray(args.ray_address)  # now, before the .partial file is opened
    except RayBackendError as e:
        raise UserError(str(e)) from None
    return _ray_decode(args, todo) if todo else iter(())


def _ray_decode(args: InferArguments, todo: Sequence[common.Example]) -> Iterator[list[tuple[str, str]]]:
    import io
    import pickle

    from mag_dataset.errors import UserError
    from mag_dataset.harness.ray_backend import RayBackendError, forwarded_env, ray_session

    def png(image: Any) -> bytes:
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return buf.getvalue()

    try:
        # the baselines folder is uploaded to the workers when this run connects; a Ray that
        # the caller initialised already must reach it itself (locally: the driver's folder)
        job_env = {"py_modules": [str(Path(common.__file__).parent)], "env_vars": forwarded_env()}
        with ray_session(args.ray_address, runtime_env=job_env) as ray:
            import ray.data

            num_gpus = args.ray_num_gpus
            if num_gpus is None:
                num_gpus = (args.tensor_parallel_size if args.ray_engine == "vllm"
                            else float(ray.cluster_resources().get("GPU", 0) > 0))
            ctx = ray.data.DataContext.get_current()
            ctx.enable_progress_bars = False  # the driver's own bar counts written steps
            rows = [{"step": pickle.dumps(e.step), "image": png(e.image)} for e in todo]
            ds = ray.data.from_items(rows).map_batches(
                RayReplica,
                fn_constructor_kwargs=dict(
                    engine=args.ray_engine, model=args.model_name_or_path, revision=args.model_revision,
                    dtype=args.dtype, device=args.device, batch_size=args.batch_size,
                    max_new_tokens=args.max_new_tokens, seed=args.seed,
                    tensor_parallel_size=args.tensor_parallel_size, view=args.view, contract=args.contract,
                    coord_space=args.coord_space,
                ),
                batch_size=args.batch_size, batch_format="numpy",
                compute=ray.data.ActorPoolStrategy(size=args.data_parallel_size),
                num_cpus=args.ray_num_cpus, num_gpus=num_gpus,
            )
            for batch in ds.iter_batches(batch_size=args.batch_size, batch_format="numpy"):
                yield list(zip((str(x) for x in batch["step_id"]), (str(x) for x in batch["output"])))
    except RayBackendError as e:
        raise UserError(str(e)) from None


def main(argv: Sequence[str] | None = None) -> int:
    from mag_dataset.errors import UserError

    (args,) = common.parse_args([InferArguments], argv)
    try:
        out = predict(args)
    except UserError as e:
        print(f"infer: error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
