"""Supervised warm-up: teach the tool protocol by imitating the oracle's episodes, before GRPO.

    python train.py --phase sft                                            # LoRA on the oracle's episodes
    python train.py --phase easy --start_adapter outputs/sft/adapter       # GRPO from the warm-up

GRPO learns only from groups whose episodes score differently. A model that never writes a
well-formed tool call, or never reaches ``answer``, gets the same zero for every generation and
no gradient at all; a pretrained Qwen3 mostly avoids that, a small or random one never does.
This phase gives it the protocol first: the oracle (``policies.OraclePolicy``) plays every
usable training question through the real ``SQLEnv`` (describe the gold tables, run the gold
query, answer the gold result, then stop), and the model is trained to write the assistant
turns of those episodes.

The episodes are rendered exactly as GRPO training renders them: the same system prompts (with
the few-shot examples, as in the curriculum's first epoch, and without, alternating), the four
tools passed to the chat template, TRL's training version of the template (the one with
``{% generation %}`` markers), thinking off. The loss is on the tokens the model generates (the
template marks assistant turns; the empty think block the generation prompt supplies is left
out), and the LM head runs on those positions only, so a 150k-token vocabulary costs little.

The LoRA has the rank and targets of the GRPO phases and is saved to OUTPUT_DIR/sft/adapter, where
``--start_adapter`` picks it up. With ``--sft_full_finetune`` every weight trains and the whole
model is saved to OUTPUT_DIR/sft/model, the ``--model`` of the GRPO phases: LoRA adapts pretrained
weights, and a small random-weight model (experiments/learning_proof.py) has none.
The settings are train.py's: ``--sft_epochs``,
``--sft_batch_size`` (in micro-batches of ``--per_device_train_batch_size``), ``--learning_rate`` when
given (else ``SFT_LEARNING_RATE``) with ``--warmup_steps`` and a cosine decay, ``--seed``.
"""

from __future__ import annotations

import functools
import json
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from agent_env import SQLEnv, tool_methods
from chat_format import masked_chat_template, tool_token_ids
from fewshot import FewShotPrompt, training_questions
from models import save_tool_token_rows
from output_folders import ADAPTER_DIRNAME, phase_dir, save_warmup_questions
from policies import UNTRAINED_TURN, NeverStopPolicy, OraclePolicy, Policy, RetryPolicy, play_episode
from prompt import CLOSING_MESSAGE
from spider_data import SpiderExample, parse_hardness, question_key, to_grpo_rows
from sql_structure import Hardness
from training_logs import write_run_config

PHASE_NAME = "sft"
MODEL_DIRNAME = "model"  # --sft_full_finetune: a whole model, the --model of the GRPO phases
# The warm-up the learning proof measured on the real 0.5B (docs/learning_proof.md): 2,400 easy and medium questions
# spread over the train split (46.7% held-out, seed 28; 600 of them read 36-42% over ten seeds), one pass, 8 episodes
# a step, learning rate 1e-3 (a LoRA's rate is far above GRPO's 2e-5, which would barely move it). The same on all
# four classes (--sft_hardness's default) took the real 1.5B to 71.3% and 70.8% (seeds 30, 31; docs/gpu.md
# 2026-12-07c, d).
# --max_questions and --learning_rate given on the command line win.
SFT_LEARNING_RATE = 1e-3
SFT_MAX_QUESTIONS = 2400
IGNORE_INDEX = -100


# --------------------------------------------------------------------------------------------- data


def shares_fit(*shares: float) -> bool:
    """Whether shares of the warm-up's episodes, each given a different policy, fit into one set of episodes."""
    return all(0.0 <= share <= 1.0 for share in shares) and sum(shares) <= 1.0


def oracle_conversations(
    rows: Sequence[dict[str, Any]], *, step_budget: int, never_stop_share: float = 0.0, retry_share: float = 0.0,
    seed: int = 0,
) -> list[list[dict[str, Any]]]:
    """The chat messages of one oracle episode per row, closed by a short final assistant turn.

    ``never_stop_share`` of the episodes (chosen with ``seed``) keep querying after the answer, as
    the first run's models did: a warm start with that habit, for measuring what the penalty does.
    ``retry_share`` of them first run a query with a wrong column, read SQLite's error and then run
    the gold query (policies.RetryPolicy; a question where no such query exists plays the plain oracle).
    """
    if not shares_fit(never_stop_share, retry_share):
        raise ValueError(f"never_stop_share and retry_share must be between 0 and 1 and add up to at most 1, got "
                         f"{never_stop_share} and {retry_share}")
    chooser = random.Random(seed)
    env = SQLEnv(step_budget=step_budget)
    conversations = []
    for row in rows:
        draw = chooser.random()
        policy: Policy = (NeverStopPolicy() if draw < never_stop_share
                          else RetryPolicy() if draw < never_stop_share + retry_share else OraclePolicy())
        transcript = play_episode(env, row, policy)
        if not transcript.episode.is_correct:
            raise ValueError(f"the oracle got {row['question']!r} wrong; the verifier and the gold disagree")
        conversations.append(transcript.messages + [{"role": "assistant", "content": CLOSING_MESSAGE}])
    return conversations


def rows_with_both_prompts(examples: Sequence[SpiderExample], fewshot: FewShotPrompt) -> list[dict[str, Any]]:
    """Trainer rows whose system prompt alternates between the two GRPO uses: with the few-shot
    examples (the curriculum's first epoch) and without (after). A small model that saw only one
    of them is thrown by the other."""
    with_examples = fewshot.system_prompt()
    prompts = [with_examples, fewshot.base_prompt] if with_examples != fewshot.base_prompt else [fewshot.base_prompt]
    return [row for index, example in enumerate(examples)
            for row in to_grpo_rows([example], prompts[index % len(prompts)])]


@dataclass(frozen=True)
class EncodedConversation:
    """Token ids of one conversation and, for each, whether the model is trained to write it."""

    input_ids: list[int]
    is_assistant: list[bool]

    @property
    def trained_tokens(self) -> int:
        return sum(self.is_assistant)


def encode_conversation(
    tokenizer: Any, messages: list[dict[str, Any]], chat_template: str | None
) -> EncodedConversation:
    """Render with the tools and TRL's training template, and mark the tokens the model writes itself.

    The template's generation markers give each assistant turn; of a turn, only what generation
    produces is trained: not the part the generation prompt already holds (Qwen3's empty think
    block with thinking off) nor what follows the end-of-turn token. A turn marked
    ``policies.UNTRAINED_TURN`` (a deliberate mistake) is context only.
    """
    rendered = tokenizer.apply_chat_template(
        messages, tools=tool_methods(SQLEnv()), chat_template=chat_template, tokenize=True, return_dict=True,
        return_assistant_tokens_mask=True, enable_thinking=False,
    )
    input_ids = list(rendered["input_ids"])
    mask = [bool(flag) for flag in rendered["assistant_masks"]]
    if not any(mask):
        raise ValueError("the chat template marks no assistant tokens: it needs {% generation %} markers")
    turns = _runs(mask)
    assistant_messages = [message for message in messages if message["role"] == "assistant"]
    if len(turns) != len(assistant_messages):
        raise ValueError(f"the chat template marks {len(turns)} assistant turns in a conversation of "
                         f"{len(assistant_messages)}; each assistant message needs its own generation block")
    for (start, end), message in zip(turns, assistant_messages, strict=True):
        if message.get(UNTRAINED_TURN):
            mask[start:end] = [False] * (end - start)
    prompted = generation_prompt_ids(tokenizer, chat_template)
    for start, end in turns:
        for position in range(start, start + _prompted_length(input_ids, start, prompted)):
            mask[position] = False
        turn_end = next((p for p in range(start, end) if input_ids[p] == tokenizer.eos_token_id), end - 1)
        for position in range(turn_end + 1, end):
            mask[position] = False
    return EncodedConversation(input_ids=input_ids, is_assistant=mask)


def generation_prompt_ids(tokenizer: Any, chat_template: str | None) -> list[int]:
    """The tokens the generation prompt adds after a user turn (Qwen3, thinking off: header and empty think)."""
    user = [{"role": "user", "content": "x"}]
    options = {"chat_template": chat_template, "tokenize": True, "return_dict": False, "enable_thinking": False}
    with_prompt = list(tokenizer.apply_chat_template(user, add_generation_prompt=True, **options))
    without = list(tokenizer.apply_chat_template(user, add_generation_prompt=False, **options))
    return with_prompt[len(without):]


def _runs(mask: list[bool]) -> list[tuple[int, int]]:
    """(start, end) of each run of True values."""
    runs, start = [], None
    for position, flag in enumerate([*mask, False]):
        if flag and start is None:
            start = position
        elif not flag and start is not None:
            runs.append((start, position))
            start = None
    return runs


def _prompted_length(input_ids: list[int], start: int, prompted: list[int]) -> int:
    """How many tokens from ``start`` on finish the generation prompt that begins just before ``start``."""
    for inside in range(len(prompted), 0, -1):
        before = len(prompted) - inside
        if start >= before and input_ids[start - before : start + inside] == prompted:
            return inside
    return 0


# -------------------------------------------------------------------------------------------- training


# Above this tool-tag loss (probability 0.5) free generation rarely opens a tool call: the Qwen2.5-Coder 0.5B
# ended its H200 warm-ups at 1.6 (probability 0.20) and wrote no parseable call in 614 held-out episodes.
TAG_LOSS_WARNING = math.log(2)


class ToolTagRows(torch.nn.Module):
    """The embedding and LM-head rows of the tool-call tags, trained by the warm-up beside the LoRA.

    A LoRA changes how hidden states are computed, not what a token's row is, and the fetched models
    start these rows untrained (SmolLM2's are new; the Qwen2.5-Coder GGUF's were the vector of its unused
    rows): a probability of about 0.0006 for writing ``<tool_call>`` where the oracle does. PEFT's
    ``trainable_token_indices`` fixed that under plain transformers (tag loss 7.4 -> 0.0006 in 10 steps on
    the H200) and not under Unsloth (7.4 -> 1.6 whatever the learning rate: the LoRA's doing alone), so the
    warm-up trains the rows itself, the same way on both backends: its own parameters, read in place of the
    frozen rows on the way in (``embed``) and on the way out (``logits``); under Unsloth on the H200 that
    took the tag loss 7.5 -> 0.002 in 10 steps. Tied embeddings share one set.
    They are saved as ``tool_token_rows.safetensors`` beside the adapter, which every loader applies.
    """

    def __init__(self, model: Any, token_ids: Sequence[int]) -> None:
        super().__init__()
        embeddings, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
        self.tied = head.data_ptr() == embeddings.data_ptr()
        self.register_buffer("indices", torch.tensor(list(token_ids), dtype=torch.long, device=embeddings.device))
        # float32 copies: AdamW steps on bf16 rows would lose most of their bits
        self.embed_rows = torch.nn.Parameter(embeddings.detach()[self.indices].float().clone())
        self.head_rows = None if self.tied else torch.nn.Parameter(head.detach()[self.indices].float().clone())

    def embed(self, embeddings: Any, input_ids: torch.Tensor) -> torch.Tensor:
        """Input embeddings with the tags' rows taken from these parameters (differentiable)."""
        frozen = embeddings(input_ids)
        which = (input_ids.unsqueeze(-1) == self.indices).to(frozen.dtype)  # one-hot over the tags, 0 elsewhere
        from_rows = which @ self.embed_rows.to(frozen.dtype)
        return torch.where(which.sum(-1, keepdim=True) > 0, from_rows, frozen)

    def logits(self, head: Any, hidden: torch.Tensor) -> torch.Tensor:
        """LM-head logits with the tags' columns computed from these parameters (differentiable)."""
        rows = self.embed_rows if self.head_rows is None else self.head_rows
        tag_logits = hidden @ rows.to(hidden.dtype).T
        return head(hidden).index_copy(-1, self.indices, tag_logits)

    def saved_rows(self) -> dict[str, torch.Tensor]:
        """The rows in models.save_tool_token_rows' layout (the LM head's only when untied)."""
        rows = {"indices": self.indices.cpu(), "embed_tokens": self.embed_rows.detach().cpu()}
        if self.head_rows is not None:
            rows["lm_head"] = self.head_rows.detach().cpu()
        return rows


@dataclass
class TagLoss:
    """Summed cross-entropy of the targets that are tool-call tags, and how many there are."""

    loss: float = 0.0
    count: int = 0


def assistant_token_loss(model: Any, batch: list[EncodedConversation], pad_id: int,
                         tag_ids: Sequence[int] = (), tags: TagLoss | None = None,
                         tag_rows: ToolTagRows | None = None) -> tuple[torch.Tensor, int]:
    """Summed cross-entropy of the assistant tokens of a right-padded batch, and how many there are.

    The decoder runs on the whole batch; the LM head only on the hidden states that predict an
    assistant token, which is most of the saving on a 150k-token vocabulary. With ``tags``, the loss of
    the targets in ``tag_ids`` is added to it too: an average loss can be low while the one token that
    opens a tool call stays unlikely, and then free generation never calls a tool. With ``tag_rows``, the
    tags' rows come from those parameters.
    """
    device = next(model.parameters()).device
    longest = max(len(item.input_ids) for item in batch)
    input_ids = torch.full((len(batch), longest), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(batch), longest), dtype=torch.long)
    targets = torch.full((len(batch), longest), IGNORE_INDEX, dtype=torch.long)
    for row, item in enumerate(batch):
        length = len(item.input_ids)
        input_ids[row, :length] = torch.tensor(item.input_ids)
        attention_mask[row, :length] = 1
        # Position p predicts token p + 1: the target at p is the next token when that one is the assistant's.
        next_tokens = torch.tensor(item.input_ids[1:])
        trained = torch.tensor(item.is_assistant[1:])
        targets[row, : length - 1] = torch.where(trained, next_tokens, torch.full_like(next_tokens, IGNORE_INDEX))
    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model  # through a PEFT wrapper
    input_ids, attention_mask = input_ids.to(device), attention_mask.to(device)
    if tag_rows is None:
        hidden = causal_lm.get_decoder()(input_ids=input_ids, attention_mask=attention_mask,
                                         use_cache=False).last_hidden_state
    else:
        hidden = causal_lm.get_decoder()(inputs_embeds=tag_rows.embed(causal_lm.get_input_embeddings(), input_ids),
                                         attention_mask=attention_mask, use_cache=False).last_hidden_state
    trained_positions = (targets != IGNORE_INDEX).to(device)
    head = causal_lm.get_output_embeddings()
    logits = head(hidden[trained_positions]) if tag_rows is None else tag_rows.logits(head, hidden[trained_positions])
    trained_targets = targets.to(device)[trained_positions]
    token_losses = torch.nn.functional.cross_entropy(logits.float(), trained_targets, reduction="none")
    if tags is not None and tag_ids:
        is_tag = torch.isin(trained_targets, torch.tensor(list(tag_ids), device=device))
        tags.loss += float(token_losses[is_tag].detach().sum())
        tags.count += int(is_tag.sum())
    return token_losses.sum(), int(trained_positions.sum())


def warmup_cosine(step: int, *, warmup_steps: int, total_steps: int, floor: float = 0.1) -> float:
    """The learning-rate factor: linear warm-up, then a cosine down to ``floor`` at the last step."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


@dataclass
class WarmupConfig:
    """The warm-up's own settings (``--phase sft``), parsed with train.py's (its AgentConfig extends this)."""

    train_tool_tokens: bool = field(
        default=True,
        metadata={"help": "--phase sft: also train the embedding (and LM-head) rows of <tool_call> and </tool_call> "
                          "(a LoRA alone cannot move them; the fetched models start them untrained). They are saved "
                          "beside the adapter (tool_token_rows.safetensors); later phases and eval carry them."},
    )
    sft_epochs: float = field(
        default=1.0, metadata={"help": "--phase sft: passes over the oracle's episodes of the train split."}
    )
    sft_hardness: list[str] = field(
        default_factory=lambda: ["easy", "medium", "hard", "extra"],
        metadata={"help": "--phase sft: hardness classes of the train split to imitate. All four since the real "
                          "1.5B's warm-up on them reached 71.3%% held-out against 54.2%% on easy and medium only "
                          "(2,400 questions each, seed 30; hard 15.6%% -> 69.7%%; docs/gpu.md 2026-12-07c); seed "
                          "31: 70.8%% (2026-12-07d)."},
    )
    sft_batch_size: int = field(
        default=8,
        metadata={"help": "--phase sft: episodes per optimizer step (in micro-batches of "
                          "--per_device_train_batch_size)."},
    )
    sft_full_finetune: bool = field(
        default=False,
        metadata={"help": "--phase sft: train every weight and save a full model to OUTPUT_DIR/sft/model, the "
                          "--model of later phases (for small random-weight models; LoRA needs pretrained ones)."},
    )
    sft_never_stop_share: float = field(
        default=0.0,
        metadata={"help": "--phase sft: share of episodes that keep calling tools after answering (reproduces "
                          "the first run's habit, to measure the post-episode penalty). Leave at 0 otherwise."},
    )
    sft_retry_share: float = field(
        default=0.0,
        metadata={"help": "--phase sft: share of episodes whose first query has a wrong column (in a join, one "
                          "under the other table's alias), shown, not trained; then, after the error, the gold query "
                          "(the learning proof's arm sft-4x-recover: at 0.25 it taught the 0.5B to query again after "
                          "a refusal, mostly the same query; docs/results.md 2026-12-05e)."},
    )

    def __post_init__(self) -> None:
        if (self.sft_epochs <= 0 or self.sft_batch_size < 1
                or not shares_fit(self.sft_never_stop_share, self.sft_retry_share)):
            raise ValueError("--sft_epochs must be above 0, --sft_batch_size at least 1, and --sft_never_stop_share "
                             "and --sft_retry_share between 0 and 1 with a sum of at most 1, got "
                             f"{self.sft_epochs}, {self.sft_batch_size}, {self.sft_never_stop_share} and "
                             f"{self.sft_retry_share}")
        try:  # the data loader's own reading of the names, so that what passes here loads
            chosen = parse_hardness(self.sft_hardness)
        except ValueError:
            chosen = None
        if not chosen:
            raise ValueError(f"--sft_hardness takes one or more of {', '.join(level.value for level in Hardness)}, "
                             f"got {' '.join(self.sft_hardness) or 'none'}")


@dataclass
class SFTSettings:
    epochs: float
    learning_rate: float
    batch_size: int  # episodes per optimizer step
    micro_batch_size: int  # episodes per forward pass
    warmup_steps: int
    seed: int
    max_grad_norm: float = 1.0


def step_episodes(episodes: int, batch_size: int, seed: int) -> Iterator[list[int]]:
    """The episodes (indices) of each warm-up step, endlessly: epochs are reshuffled passes over the data."""
    order_rng = random.Random(seed)
    stream: list[int] = []
    while True:
        while len(stream) < batch_size:
            epoch = list(range(episodes))
            order_rng.shuffle(epoch)
            stream += epoch
        yield stream[:batch_size]
        stream = stream[batch_size:]


def cut_into_micro_batches(ordered: Sequence[int], micro_batch_size: int) -> list[list[int]]:
    return [list(ordered[start : start + micro_batch_size]) for start in range(0, len(ordered), micro_batch_size)]


def length_sorted_micro_batches(picked: Sequence[int], data: Sequence[EncodedConversation],
                                micro_batch_size: int) -> list[list[int]]:
    """A step's episodes cut into micro-batches of neighbours in length.

    The step's gradient is the sum over its episodes whatever the grouping, so grouping by length only
    cuts the padding each micro-batch carries: oracle episodes range from a few hundred tokens to a few
    thousand, and a micro-batch is as long as its longest."""
    return cut_into_micro_batches(sorted(picked, key=lambda index: len(data[index].input_ids)), micro_batch_size)


def train_sft(model: Any, data: list[EncodedConversation], settings: SFTSettings, pad_id: int,
              log: Callable[[dict[str, float]], None], tag_ids: Sequence[int] = (),
              tag_rows: ToolTagRows | None = None, progress: bool = True) -> list[dict[str, float]]:
    """AdamW on the trainable parameters (and ``tag_rows``); every optimizer step's mean token loss (and, with
    ``tag_ids``, the mean loss of the tool-call tags) is logged and returned; ``progress`` shows a bar of steps."""
    parameters = [parameter for parameter in model.parameters() if parameter.requires_grad]
    if tag_rows is not None:
        parameters += list(tag_rows.parameters())
    optimizer = torch.optim.AdamW(parameters, lr=settings.learning_rate, weight_decay=0.0)
    examples_per_step = settings.batch_size
    total_steps = max(1, math.ceil(len(data) * settings.epochs / examples_per_step))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, functools.partial(warmup_cosine, warmup_steps=settings.warmup_steps, total_steps=total_steps))
    draws = step_episodes(len(data), examples_per_step, settings.seed)
    history = []
    model.train()
    started = time.perf_counter()
    # A bar like the trainer's: SmolLM2's warm-up spends minutes between its first logged step and its last.
    bar = tqdm(total=total_steps, desc="warm-up (sft)", unit="step", disable=not progress)
    for step in range(1, total_steps + 1):
        picked = next(draws)
        micro_batches = length_sorted_micro_batches(picked, data, settings.micro_batch_size)
        total_tokens = sum(data[index].trained_tokens for index in picked)
        step_loss, tags = 0.0, TagLoss()
        for micro in micro_batches:
            loss, _ = assistant_token_loss(model, [data[index] for index in micro], pad_id, tag_ids, tags, tag_rows)
            (loss / total_tokens).backward()
            step_loss += loss.item()
        grad_norm = torch.nn.utils.clip_grad_norm_(parameters, settings.max_grad_norm)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        entry = {"step": step, "epoch": round(step * examples_per_step / len(data), 3),
                 "loss": step_loss / total_tokens, "grad_norm": float(grad_norm),
                 "learning_rate": schedule.get_last_lr()[0], "elapsed_s": round(time.perf_counter() - started, 2)}
        if tags.count:
            entry["tool_tag_loss"] = tags.loss / tags.count
        history.append(entry)
        log(entry)
        bar.set_postfix(loss=f"{entry['loss']:.3f}", refresh=False)
        bar.update()
    bar.close()
    model.eval()
    return history


# ------------------------------------------------------------------------------------------------ main


def onto_gpu(model: Any) -> Any:
    """The model on the GPU where there is one. GRPO's Trainer places the model itself; this loop does not,
    and transformers loads onto the CPU: on the H200 the warm-up with --backend transformers ran there
    (fewer than 20 steps of 8 episodes in 8 minutes). A quantized or device-mapped model stays where its
    loader put it."""
    placed = getattr(model, "is_loaded_in_4bit", False) or getattr(model, "hf_device_map", None)
    if torch.cuda.is_available() and not placed and next(model.parameters()).device.type == "cpu":
        return model.to("cuda")
    return model


def with_warmup_defaults(agent: Any, explicit: set[str]) -> Any:
    """train.py's settings for the warm-up: its own question count where none was set (--max_questions, or
    embedded mode's)."""
    if "max_questions" in explicit or agent.max_questions is not None:
        return agent
    return replace(agent, max_questions=SFT_MAX_QUESTIONS)


def warmup_rows(agent: Any) -> list[dict[str, Any]]:
    """The rows the warm-up plays, from train.py's settings (``agent``): the training questions of
    ``--sft_hardness`` as GRPO's phases pick theirs (fewshot.training_questions; the examples' own questions
    included), with their prompts."""
    questions, fewshot, _ = training_questions(agent, agent.sft_hardness, agent.fewshot_examples,
                                               hold_out_examples=False)
    return rows_with_both_prompts(questions, fewshot)


def warmup_conversations(agent: Any, *, seed: int, rows: Sequence[dict[str, Any]] | None = None,
                         ) -> list[list[dict[str, Any]]]:
    """The oracle's episodes the warm-up trains on (of ``rows``, default ``warmup_rows(agent)``), under
    ``--step_budget``, as GRPO's will be."""
    return oracle_conversations(warmup_rows(agent) if rows is None else rows, step_budget=agent.step_budget,
                                never_stop_share=agent.sft_never_stop_share, retry_share=agent.sft_retry_share,
                                seed=seed)


def run(agent: Any, grpo: Any, model: Any, tokenizer: Any, explicit: set[str]) -> Path:
    """train.py's ``--phase sft``: oracle episodes of the train split, generated-token loss; saves the
    adapter (or, with --sft_full_finetune, the model) and returns its folder."""
    out_dir = phase_dir(grpo, PHASE_NAME)
    saved_dir = out_dir / (MODEL_DIRNAME if agent.sft_full_finetune else ADAPTER_DIRNAME)
    rows = warmup_rows(agent)
    conversations = warmup_conversations(agent, seed=grpo.seed, rows=rows)
    template = masked_chat_template(tokenizer)
    data = [encode_conversation(tokenizer, messages, template) for messages in conversations]
    settings = SFTSettings(
        epochs=agent.sft_epochs,
        learning_rate=grpo.learning_rate if "learning_rate" in explicit else SFT_LEARNING_RATE,
        batch_size=agent.sft_batch_size,
        micro_batch_size=grpo.per_device_train_batch_size,
        warmup_steps=grpo.warmup_steps,
        seed=grpo.seed,
    )
    tokens = sum(len(item.input_ids) for item in data)
    trained = sum(item.trained_tokens for item in data)
    print(f"[sft] {len(data)} oracle episodes of {agent.data_dir} ({tokens} tokens, {trained} of them the "
          f"assistant's), {settings.epochs:g} epoch(s), learning rate {settings.learning_rate:g}, "
          f"{settings.batch_size} episodes per step", flush=True)
    if agent.sft_retry_share:
        retried = sum(any(message["role"] == "tool" and "no such column" in str(message["content"])
                          for message in messages) for messages in conversations)
        print(f"[sft] {retried} of the episodes run a query with a wrong column first (shown, not trained), then "
              f"the gold query (--sft_retry_share {agent.sft_retry_share:g})", flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_run_config(out_dir, agent, grpo, phase=None, sft=asdict(settings))
    metrics_path = out_dir / "metrics.jsonl"
    metrics_path.write_text("")

    def log(entry: dict[str, float]) -> None:
        with metrics_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
        if entry["step"] == 1 or entry["step"] % max(1, grpo.logging_steps * 10) == 0:
            tag = f" tool-tag loss {entry['tool_tag_loss']:.4f}" if "tool_tag_loss" in entry else ""
            print(f"[sft] step {entry['step']} epoch {entry['epoch']:.2f} loss {entry['loss']:.4f}{tag}", flush=True)

    torch.manual_seed(grpo.seed)
    model = onto_gpu(model)
    tag_ids = tool_token_ids(tokenizer)
    # A full fine-tune trains every row already; a LoRA needs the tags' rows trained beside it.
    tag_rows = (ToolTagRows(model, tag_ids) if agent.train_tool_tokens and tag_ids and not agent.sft_full_finetune
                else None)
    history = train_sft(model, data, settings, tokenizer.pad_token_id, log, tag_ids=tag_ids, tag_rows=tag_rows)
    model.save_pretrained(saved_dir)
    tokenizer.save_pretrained(saved_dir)
    if tag_rows is not None:
        save_tool_token_rows(saved_dir, tag_rows.saved_rows())
    save_warmup_questions(saved_dir, {question_key(row["db_id"], row["question"]) for row in rows})
    tag_losses = [entry["tool_tag_loss"] for entry in history if "tool_tag_loss" in entry]
    if tag_losses:  # the probability of writing the tag where the oracle does, at the start and the end
        print(f"[sft] tool-call tags: loss {tag_losses[0]:.3f} -> {tag_losses[-1]:.3f} (geometric-mean probability "
              f"{math.exp(-tag_losses[0]):.2f} -> {math.exp(-tag_losses[-1]):.2f})", flush=True)
        if tag_losses[-1] > TAG_LOSS_WARNING:
            print(f"[sft] WARNING: the model still writes a tool-call tag where the oracle does with probability "
                  f"{math.exp(-tag_losses[-1]):.2f}: greedy or sampled episodes will rarely call a tool, and GRPO "
                  "gets no reward to learn from. Train longer or with a higher --learning_rate, and keep "
                  "--train_tool_tokens on.", flush=True)
    print(f"[sft] loss {history[0]['loss']:.4f} -> {history[-1]['loss']:.4f} in {len(history)} steps "
          f"({history[-1]['elapsed_s']:.0f} s); saved {'model' if agent.sft_full_finetune else 'adapter'} to "
          f"{saved_dir}; next: python train.py --phase easy "
          f"{'--model' if agent.sft_full_finetune else '--start_adapter'} {saved_dir}", flush=True)
    return saved_dir
