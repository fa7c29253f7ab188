"""GPU diagnostic for the open question of 2026-12-01 (docs/gpu.md, "Open"): after the supervised
warm-up (teacher-forced loss 1.04 -> 0.13), the Unsloth path generated almost no parseable tool calls,
in eval (greedy) and in GRPO (sampled). This separates the candidate causes in one run:

    python3 scripts/diagnose_unsloth_tokens.py /tmp/qc /tmp/lp/sft-seed0/sft/adapter

1. the tokenizer Unsloth returns: are <tool_call>/</tool_call> special there (decode would drop them)?
   does TRL's parser read a tool call with it?
2. does the adapter reach generation at all (loaded as eval loads it, with the warm-up's tag rows): the
   first generated token's top-5 for the base and the adapter, with Unsloth's decode graphs for Qwen2 and not;
3. greedy completions of two held-out questions, graphs on and off, raw ids and both decodings.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.getcwd())
os.environ.setdefault("UNSLOTH_DECODE_CUDA_GRAPHS", "1")
import unsloth  # noqa: E402,F401

import torch  # noqa: E402
from eval.checkpoint import load_with_unsloth  # noqa: E402

import generation  # noqa: E402
from agent_env import DEFAULT_STEP_BUDGET, SQLEnv, tool_methods  # noqa: E402
from chat_format import grpo_chat_template, parse_turn, prepare_tokenizer, render_ids, tool_call_text  # noqa: E402
from prompt import system_prompt  # noqa: E402
from spider_data import load_split, to_grpo_rows  # noqa: E402


def prompts(tokenizer, data_dir: str, count: int = 2) -> list[list[int]]:
    env, result = SQLEnv(), []
    questions = load_split(data_dir, "dev", progress=False).usable()[:count]
    for row in to_grpo_rows(questions, system_prompt(DEFAULT_STEP_BUDGET)):
        messages = [dict(message) for message in row["prompt"]]
        messages[-1]["content"] += env.reset(**row)
        result.append(render_ids(tokenizer, messages, template=grpo_chat_template(tokenizer),
                                 tools=tool_methods(env), add_generation_prompt=True))
    return result


def first_token_top5(model, tokenizer, ids: list[int]) -> list[tuple[int, str, float]]:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]).cuda()).logits[0, -1].float()
    top = torch.topk(logits.softmax(-1), 5)
    return [(int(i), tokenizer.decode([int(i)]), round(float(p), 3)) for p, i in zip(top.values, top.indices)]


def main(base: str, adapter: str, data_dir: str = "/tmp/lp/data") -> None:
    for name in (base, adapter):
        model, tokenizer = load_with_unsloth(name, max_seq_length=4096)  # as eval loads it: tag rows applied
        token = tokenizer.added_tokens_decoder.get(151657)
        print(f"== {name}: {type(tokenizer).__name__}, <tool_call> {token!r} special={getattr(token, 'special', None)}")
        prepare_tokenizer(tokenizer)
        call = tokenizer.encode(tool_call_text("describe", {"table": "x"}) + "<|im_end|>", add_special_tokens=False)
        header = tokenizer.apply_chat_template([{"role": "user", "content": "q"}], tokenize=True,
                                               add_generation_prompt=True, return_dict=False)
        print("parse of a written call:", parse_turn(tokenizer, call, list(header)))
        for ids in prompts(tokenizer, data_dir):
            print("first-token top-5:", first_token_top5(model, tokenizer, ids))
            for graphs in (False, True):
                generation.allow_unsloth_decode_graphs(model.config.model_type, graphs)
                output = model.generate(input_ids=torch.tensor([ids]).cuda(), max_new_tokens=40, do_sample=False)
                new = output[0][len(ids):].tolist()
                print(f"  graphs={graphs} ids={new[:24]}")
                print(f"    decode={tokenizer.decode(new)!r}")
                print(f"    parse={parse_turn(tokenizer, new, ids)}")
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(*sys.argv[1:])
