"""What one decode step of Unsloth's graphed generation costs as the batch grows, per attention core.

    python benchmarks/decode_step.py --model /tmp/qc --out decode_step.json            # the real 0.5B
    python benchmarks/decode_step.py --random-qwen2 /tmp/q05r --batches 6 96            # its shape, random weights

The model loads as train.py loads it (Unsloth, LoRA r=32 on every linear layer, Qwen2 decode graphs allowed), and
generates inside Unsloth's RL generation scope, where its decode steps replay CUDA graphs, exactly as a GRPO rollout
does. Prompts are random token ids of about --prompt-tokens each: ``equal`` gives every row that length, ``padded``
spreads them over +-30% (TRL left-pads a call's prompts to the longest, so the step carries a padding mask).
Every row is forced to its full length (min_new_tokens), so a step's cost is that of the whole batch.

A decode step's milliseconds are (seconds of a generate() of --long new tokens - seconds of one of --short) /
(long - short): prefill, setup and teardown cancel. Per core (``unsloth``: Unsloth's own attention core;
``grouped``: generation.py's) and padding, it prints a row per batch size, the floor set by reading the weights
and the KV cache once at the measured copy bandwidth, the SDPA backend PyTorch picks for Unsloth's padded call,
a profiler table of the kernels of --profile-batch rows, and whether the cores agree (greedy tokens).
``--lora attached disabled folded`` measures each row with the LoRA in the step, again with it switched off (PEFT's
disable_adapter: the base weights alone), and with it folded into the weights as train.py's rollouts decode
(merged_generation.py): what the adapter's small matrix products, two per projection and layer, add to a step that
costs many times its memory floor. (2026-12-06e: inside the 1.5B's GRPO steps the folded decode forward took
0.71x the attached one's; in this bare step, on a random 0.5B shape, folding removed the adapter's kernels as
disabling did, but the wall times scattered more than the states differ.) ``--gpu-busy-batch N``: how many of a
step's milliseconds at N rows its kernels keep the GPU busy (profiled); the rest the step waits on the host, between
graph segments.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))
COPY_BANDWIDTH_TB_S = 4.3  # an H200's device-to-device copy, measured here (bytes read + written)
CORES = ("unsloth", "grouped")
PADDINGS = ("equal", "padded")
LORA_STATES = ("attached", "disabled", "folded")


def build_random_qwen2(out_dir: Path) -> Path:
    """Qwen2.5-0.5B's exact shapes with random weights (bf16) and the project's Qwen tokenizer: decode costs depend
    on shapes, not weights."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    import models

    if (out_dir / "config.json").is_file():
        return out_dir
    config = Qwen2Config(vocab_size=151_936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32_768,
                         rope_theta=1_000_000.0, tie_word_embeddings=True, torch_dtype="bfloat16",
                         bos_token_id=151_643, eos_token_id=151_645)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out_dir)
    models.save_qwen3_tokenizer(out_dir)
    return out_dir


def load(model_dir: str) -> tuple[Any, Any]:
    """The model as a GRPO run of train.py holds it (LoRA attached, prepared for generation as train.py prepares
    it: Qwen2's decode graphs allowed, the LM head's input contiguous), switched to Unsloth's inference mode."""
    import generation
    import train
    from unsloth import FastLanguageModel

    agent = train.AgentConfig(model=model_dir, backend="unsloth")
    model, tokenizer = train.load_model(agent, types.SimpleNamespace(gradient_checkpointing=True, seed=0), None)
    generation.prepare_model(model, tokenizer, agent)
    FastLanguageModel.for_inference(model)
    return model, tokenizer


def prompts(batch: int, tokens: int, padding: str, pad_id: int, seed: int) -> tuple[Any, Any]:
    """Left-padded random prompts (ids 1,000-30,000) and their attention mask."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    if padding == "equal":
        lengths = [tokens] * batch
    else:
        lengths = torch.randint(int(tokens * 0.7), int(tokens * 1.3) + 1, (batch,), generator=generator).tolist()
    longest = max(lengths)
    ids = torch.full((batch, longest), pad_id, dtype=torch.long)
    mask = torch.zeros((batch, longest), dtype=torch.long)
    for row, length in enumerate(lengths):
        ids[row, longest - length:] = torch.randint(1_000, 30_000, (length,), generator=generator)
        mask[row, longest - length:] = 1
    return ids.cuda(), mask.cuda()


def timed_generate(model: Any, ids: Any, mask: Any, new_tokens: int, pad_id: int, greedy: bool = False) -> tuple[float, Any]:
    """Seconds of one generate() of exactly ``new_tokens`` tokens a row, inside Unsloth's RL generation scope."""
    import torch
    from unsloth.models import _decode_graphs

    torch.cuda.synchronize()
    started = time.perf_counter()
    with _decode_graphs.rl_generation(), torch.inference_mode():
        output = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens,
                                min_new_tokens=new_tokens, do_sample=not greedy, temperature=1.0, top_p=1.0, top_k=0,
                                pad_token_id=pad_id, disable_compile=True)
    torch.cuda.synchronize()
    return time.perf_counter() - started, output


def switch_core(model: Any, core: str) -> None:
    import generation
    from unsloth.models import _decode_graphs

    if core == "grouped":
        generation.install_grouped_decode_attention()
    else:
        generation.uninstall_grouped_decode_attention()
    _decode_graphs.release(model)  # a graph captured with the other core must not replay with this one


def graph_counters(model: Any) -> dict[str, Any]:
    from unsloth.models import _decode_graphs

    for module in model.modules():
        if "_unsloth_decode_graphs" in module.__dict__:
            return _decode_graphs.stats(module)
    return {}


def floor_ms(model: Any, batch: int, kv_tokens: int) -> float:
    """Reading every weight and the batch's KV cache once, at the measured copy bandwidth (read + write counted
    there, so a read-only pass is taken at the same bytes per second)."""
    config = model.config
    weight_bytes = sum(parameter.numel() * parameter.element_size() for parameter in model.parameters())
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    kv_bytes = 2 * config.num_hidden_layers * batch * kv_tokens * config.num_key_value_heads * head_dim * 2
    return 1000 * (weight_bytes + kv_bytes) / (COPY_BANDWIDTH_TB_S * 1e12)


def sdpa_choice(model: Any, batch: int, kv_tokens: int) -> str:
    """The SDPA backend PyTorch picks for Unsloth's padded decode call (grouped-query heads and a boolean mask)."""
    import torch

    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    q = torch.randn(batch, config.num_attention_heads, 1, head_dim, device="cuda", dtype=torch.bfloat16)
    cache = torch.randn(kv_tokens, batch, config.num_key_value_heads, head_dim, device="cuda", dtype=torch.bfloat16)
    k = cache.permute(1, 2, 0, 3)  # Unsloth's cache layout, seen as [batch, kv_heads, tokens, head_dim]
    mask = torch.ones(batch, 1, 1, kv_tokens, device="cuda", dtype=torch.bool)
    mask[0, ..., :10] = False
    try:
        choice = torch._fused_sdp_choice(q, k, k, mask, 0.0, False, scale=None, enable_gqa=True)
        return torch.nn.attention.SDPBackend(choice).name
    except Exception as error:  # a private function: say what happened rather than fail the run
        return f"unknown ({type(error).__name__}: {error})"


def profile_kernels(model: Any, batch: int, tokens: int, pad_id: int, rows: int = 12) -> list[dict[str, Any]]:
    """The kernels of 32 padded decode steps, by total GPU time."""
    from torch.profiler import ProfilerActivity, profile

    ids, mask = prompts(batch, tokens, "padded", pad_id, seed=1)
    timed_generate(model, ids, mask, 40, pad_id)  # captures this batch size's graphs outside the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        timed_generate(model, ids, mask, 40, pad_id)
    kernels = [event for event in prof.key_averages() if event.device_type.name == "CUDA"]
    events = sorted(kernels, key=lambda event: event.device_time_total, reverse=True)
    total = sum(event.device_time_total for event in events) or 1
    # The operators (with their input shapes) that spent the most GPU time: which call a costly kernel belongs to.
    operators = sorted((event for event in prof.key_averages(group_by_input_shape=True)
                        if event.device_type.name == "CPU" and event.key.startswith("aten::")
                        and event.key not in ("aten::copy_", "aten::to", "aten::_to_copy")),
                       key=lambda event: event.device_time_total, reverse=True)
    return {"kernels": [{"kernel": event.key[:90], "calls": event.count, "ms": round(event.device_time_total / 1000, 2),
                         "share": round(event.device_time_total / total, 3)} for event in events[:rows]],
            "operators": [{"operator": event.key, "shapes": str(event.input_shapes)[:160], "calls": event.count,
                           "ms": round(event.device_time_total / 1000, 2)} for event in operators[:rows]]}


def gpu_busy_per_step(model: Any, batch: int, tokens: int, pad_id: int, short: int, long: int) -> dict[str, Any]:
    """A decode step's wall milliseconds against the milliseconds its kernels keep the GPU busy (the profiled kernels
    of a --long generate() minus a --short one, per extra step): a share far below 1 is a step that waits on the
    host (eager code between graph segments, launches), which fewer FLOPs or bytes would not shorten."""
    from torch.profiler import ProfilerActivity, profile

    ids, mask = prompts(batch, tokens, "padded", pad_id, seed=3)
    timed_generate(model, ids, mask, long, pad_id)  # captures this batch size's graphs outside the profiles
    busy, wall = {}, {}
    for new_tokens in (short, long):
        wall[new_tokens] = timed_generate(model, ids, mask, new_tokens, pad_id)[0]  # unprofiled: the profiler slows
        with profile(activities=[ProfilerActivity.CUDA]) as prof:                 # the host side it would measure
            timed_generate(model, ids, mask, new_tokens, pad_id)
        busy[new_tokens] = sum(event.device_time_total for event in prof.key_averages()
                               if event.device_type.name == "CUDA") / 1000
    return busy_summary(batch, busy[long] - busy[short], 1000 * (wall[long] - wall[short]), long - short)


def busy_summary(batch: int, busy_ms: float, wall_ms: float, steps: int) -> dict[str, Any]:
    step_busy, step_wall = busy_ms / steps, wall_ms / steps
    return {"batch": batch, "step_wall_ms": round(step_wall, 3), "step_gpu_busy_ms": round(step_busy, 3),
            "gpu_busy_share": round(step_busy / step_wall, 3) if step_wall > 0 else None}


def agreement(model: Any, pad_id: int, tokens: int, batch: int = 8, new_tokens: int = 24) -> dict[str, Any]:
    """Greedy completions of the same padded prompts under each core: rows whose tokens are all the same."""
    ids, mask = prompts(batch, tokens, "padded", pad_id, seed=2)
    outputs = {}
    for core in CORES:
        switch_core(model, core)
        outputs[core] = timed_generate(model, ids, mask, new_tokens, pad_id, greedy=True)[1][:, ids.shape[1]:]
    same_rows = int((outputs["unsloth"] == outputs["grouped"]).all(dim=1).sum())
    same_tokens = float((outputs["unsloth"] == outputs["grouped"]).float().mean())
    return {"batch": batch, "new_tokens": new_tokens, "identical_rows": same_rows,
            "identical_token_share": round(same_tokens, 3)}


def lora_state(model: Any, state: str) -> contextlib.AbstractContextManager[Any]:
    """The LoRA as a rollout decodes with it attached (``attached``), switched off for the block (``disabled``), or
    folded into the weights for the block (``folded``, train.py's default since 2026-12-06e)."""
    if state == "disabled":
        return model.disable_adapter()
    if state == "folded":
        from merged_generation import MergedGeneration

        merged = MergedGeneration.of(model)
        if merged is None:
            raise SystemExit("--lora folded: this model has no LoRA layer to fold")
        return merged.folded()
    return contextlib.nullcontext()


def measure(model: Any, core: str, padding: str, batch: int, arguments: argparse.Namespace, pad_id: int) -> dict[str, Any]:
    import torch

    ids, mask = prompts(batch, arguments.prompt_tokens, padding, pad_id, seed=batch)
    timed_generate(model, ids, mask, arguments.long, pad_id)  # sizes the buffers and captures this batch's graphs
    torch.cuda.reset_peak_memory_stats()
    short, long = [], []
    for _ in range(arguments.repeats):
        short.append(timed_generate(model, ids, mask, arguments.short, pad_id)[0])
        long.append(timed_generate(model, ids, mask, arguments.long, pad_id)[0])
    step_ms = 1000 * (statistics.median(long) - statistics.median(short)) / (arguments.long - arguments.short)
    kv_tokens = ids.shape[1] + (arguments.long + arguments.short) // 2
    floor = floor_ms(model, batch, kv_tokens)
    return {"core": core, "padding": padding, "batch": batch, "prompt_tokens_max": ids.shape[1],
            "decode_ms": round(step_ms, 3), "floor_ms": round(floor, 3), "x_floor": round(step_ms / floor, 1),
            "row_steps_per_s": round(1000 * batch / step_ms, 1), "generate_long_s": round(statistics.median(long), 3),
            "peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2), **graph_counters(model)}


def print_table(rows: list[dict[str, Any]]) -> None:
    columns = ["lora", "core", "padding", "batch", "decode_ms", "floor_ms", "x_floor", "row_steps_per_s",
               "peak_allocated_gib", "captures", "replays", "eager_steps", "error"]
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(column, "")) for column in columns) + " |")
    by_key = {(row.get("lora", "attached"), row["core"], row["padding"], row["batch"]): row["decode_ms"]
              for row in rows if "decode_ms" in row}
    if by_key and not any(row.get("replays") for row in rows):
        # 2026-12-03b: a run whose model skipped generation.prepare_model decoded eagerly, 36 ms a step at 6 rows.
        print("WARNING: no decode step replayed a CUDA graph: these are eager figures, not a GRPO rollout's "
              "(Unsloth's decode graphs were not allowed for this model type)")
    for lora in LORA_STATES:
        for core in CORES:
            for padding in PADDINGS:
                batches = sorted(batch for (state, c, p, batch) in by_key if (state, c, p) == (lora, core, padding))
                if len(batches) > 1:
                    low, high = batches[0], batches[-1]
                    print(f"LoRA {lora}, {core}, {padding}: {high} rows / {low} rows = "
                          f"{by_key[(lora, core, padding, high)] / by_key[(lora, core, padding, low)]:.2f}x the step")
    for (lora, core, padding, batch), step_ms in sorted(by_key.items()):
        for other in ("disabled", "folded") if lora == "attached" else ():
            without = by_key.get((other, core, padding, batch))
            if without:  # the same step without the adapter's products
                print(f"{core}, {padding}, {batch} rows: the attached LoRA adds {step_ms - without:.2f} ms to the "
                      f"{other} step of {without:.2f} ms ({step_ms / without:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="a model folder (python models.py fetch qwen2.5-coder-0.5b-instruct --out DIR)")
    source.add_argument("--random-qwen2", type=Path, help="build (once) a random-weight Qwen2.5-0.5B-shaped model here")
    parser.add_argument("--batches", type=int, nargs="+", default=[6, 24, 48, 96])
    parser.add_argument("--cores", nargs="+", default=list(CORES), choices=CORES)
    parser.add_argument("--paddings", nargs="+", default=list(PADDINGS), choices=PADDINGS)
    parser.add_argument("--prompt-tokens", type=int, default=1000, help="a prompt's tokens (padded: +-30%%)")
    parser.add_argument("--short", type=int, default=16, help="new tokens of the short generate()")
    parser.add_argument("--long", type=int, default=112, help="new tokens of the long generate()")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile-batch", type=int, default=96, help="0: no profile")
    parser.add_argument("--gpu-busy-batch", type=int, default=0,
                        help="also measure how much of a decode step at this many rows keeps the GPU busy, for each "
                             "core and LoRA state (0: not)")
    parser.add_argument("--lora", nargs="+", default=["attached"], choices=LORA_STATES,
                        help="measure with the LoRA in the step (attached), switched off (disabled) and/or folded into the "
                             "weights (folded, as train.py's rollouts decode)")
    parser.add_argument("--out", type=Path, default=None, help="the rows as JSON, rewritten after each")
    arguments = parser.parse_args()
    if arguments.long <= arguments.short:
        parser.error("--long must be more new tokens than --short")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import unsloth  # noqa: F401  (before transformers and trl, as in train.py)
    import torch

    if not torch.cuda.is_available():
        sys.exit("decode_step.py measures Unsloth's CUDA-graph decode: it needs a CUDA GPU")
    model_dir = arguments.model or str(build_random_qwen2(arguments.random_qwen2))
    model, tokenizer = load(model_dir)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    head = model.get_output_embeddings().weight
    print(f"LM head: {tuple(head.shape)} {head.dtype}, tied to the embeddings: "
          f"{head.data_ptr() == model.get_input_embeddings().weight.data_ptr()}", flush=True)
    report: dict[str, Any] = {"model": model_dir, "lm_head": f"{tuple(head.shape)} {head.dtype}", "settings": {k: str(v) for k, v in vars(arguments).items()},
                              "device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}

    def save() -> None:
        if arguments.out:
            arguments.out.write_text(json.dumps(report, indent=2))

    report["sdpa_backend_for_unsloth_padded_call"] = sdpa_choice(model, max(arguments.batches), arguments.prompt_tokens)
    print(f"SDPA backend for Unsloth's padded grouped-query decode call: {report['sdpa_backend_for_unsloth_padded_call']}",
          flush=True)
    for lora in arguments.lora:
        with lora_state(model, lora):
            for core in arguments.cores:
                switch_core(model, core)  # also drops graphs captured in the other LoRA state
                for padding in arguments.paddings:
                    for batch in arguments.batches:
                        try:
                            row = {"lora": lora, **measure(model, core, padding, batch, arguments, pad_id)}
                        except torch.OutOfMemoryError as error:
                            row = {"lora": lora, "core": core, "padding": padding, "batch": batch,
                                   "error": f"out of memory: {error}"[:200]}
                            torch.cuda.empty_cache()
                        print(json.dumps(row), flush=True)
                        report["rows"].append(row)
                        save()
                if arguments.gpu_busy_batch:
                    busy = {"lora": lora, "core": core,
                            **gpu_busy_per_step(model, arguments.gpu_busy_batch, arguments.prompt_tokens, pad_id,
                                                arguments.short, arguments.long)}
                    print(f"GPU busy: LoRA {lora}, {core}, {busy['batch']} rows: {busy['step_gpu_busy_ms']} ms of "
                          f"kernels in a {busy['step_wall_ms']} ms step ({busy['gpu_busy_share']:.0%})", flush=True)
                    report.setdefault("gpu_busy", []).append(busy)
                    save()
    if set(arguments.cores) == set(CORES):
        report["agreement"] = agreement(model, pad_id, arguments.prompt_tokens)
        print(f"greedy agreement of the cores: {report['agreement']}", flush=True)
        save()
    if arguments.profile_batch:
        report["profile"] = {}
        for core in arguments.cores:
            switch_core(model, core)
            report["profile"][core] = profile_kernels(model, arguments.profile_batch, arguments.prompt_tokens, pad_id)
            print(f"\nkernels of 40 padded decode steps at {arguments.profile_batch} rows, {core} core:")
            for kernel in report["profile"][core]["kernels"]:
                print(f"  {kernel['ms']:9.2f} ms {kernel['share']:6.1%} x{kernel['calls']:<6} {kernel['kernel']}")
            print("operators by GPU time (input shapes):")
            for operator in report["profile"][core]["operators"]:
                print(f"  {operator['ms']:9.2f} ms x{operator['calls']:<6} {operator['operator']} {operator['shapes']}")
            save()
    print()
    print_table(report["rows"])


if __name__ == "__main__":
    main()
