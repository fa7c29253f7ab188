"""train.py on CPU: config checks, and real GRPO runs through SQLEnv with scripted generation.

The tiny random model cannot call tools, so these runs replace the trainer's
``_generate_single_turn`` (the one method TRL uses for the first turn and every tool-loop turn)
with a script that writes real Qwen3 tool calls. Everything else is the real pipeline: TRL's
tool loop, SQLEnv, the verifier, rewards, few-shot callback, checkpoints, adapters.
"""

from __future__ import annotations

import json
import os
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import generation  # noqa: E402
import train  # noqa: E402  (imports unsloth first, as train.py must)
import command_line  # noqa: E402  (after train: it loads trl)
import embedded  # noqa: E402, I001  (after train: it loads transformers)
import output_folders  # noqa: E402
import question_screen  # noqa: E402
import sft  # noqa: E402
from agent_env import POST_EPISODE_PENALTY, load_gold  # noqa: E402
from curriculum import load_curriculum, select_phase  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, load_split, question_key  # noqa: E402
from sql_structure import tables_used  # noqa: E402
from verifier import format_answer  # noqa: E402

ASSISTANT_HEADER = "<|im_start|>assistant"


def tool_call(name: str, **arguments: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call><|im_end|>"


class ScriptedAgent:
    """Plays every tool, answers right on even generations and wrong on odd ones, then calls once more."""

    def __init__(self) -> None:
        examples = load_split(BUILTIN_DATA_DIR, "train", progress=False).usable()
        self.gold = {example.question: example for example in examples}
        self.calls = 0

    def turn(self, text: str, generation: int) -> str:
        user_message = text.split("<|im_start|>user", 1)[1]  # the system prompt holds few-shot questions too
        question = next(q for q in self.gold if q in user_message)
        example = self.gold[question]
        table = tables_used(example.gold_sql)[0]
        answer = format_answer(load_gold(example.db_path, example.gold_sql).rows)
        script = [
            tool_call("describe", table=table),
            tool_call("sample", table=table),
            tool_call("query", sql=example.gold_sql),
            tool_call("answer", value=answer if generation % 2 == 0 else "certainly wrong"),
            tool_call("query", sql="SELECT 1"),  # after the episode: must cost the penalty
            "Done.<|im_end|>",
        ]
        turn = text.count(ASSISTANT_HEADER) - 1
        return script[min(turn, len(script) - 1)]

    def install(self, trainer: Any) -> None:
        tokenizer = trainer.processing_class

        def generate(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            completions = []
            for index, ids in enumerate(prompt_ids):
                self.calls += 1
                text = tokenizer.decode(ids)
                completions.append(tokenizer.encode(self.turn(text, index), add_special_tokens=False))
            return completions, None

        trainer._generate_single_turn = generate

    def install_capturing(self, trainer: Any, trained: list[dict[str, Any]]) -> None:
        """``install``, and append each scored batch TRL then trains on to ``trained``: what
        ``_generate_and_score_completions`` returns, after any wrapper already installed (oversampling, guidance)."""
        self.install(trainer)
        score = trainer._generate_and_score_completions

        def capture(inputs: Any) -> Any:
            output = score(inputs)
            trained.append(output)
            return output

        trainer._generate_and_score_completions = capture


@pytest.fixture(autouse=True)
def tiny_model(tiny_model_dir: Path) -> None:
    """Scripted runs train the tiny random Qwen3 (embedded mode would pick SmolLM2 where it is fetched)."""
    global TINY_MODEL
    TINY_MODEL = str(tiny_model_dir)


TINY_MODEL = ""


def run_phase(output_dir: Path, *extra: str, before_train: Any = None, learning_rate: str | None = "1e-3",
              ) -> Path | None:
    agent = ScriptedAgent()

    def hook(trainer: Any) -> None:
        agent.install(trainer)
        if before_train is not None:
            before_train(trainer)

    argv = ["--output_dir", str(output_dir), "--model", TINY_MODEL, "--max_questions", "2", "--num_generations", "2",
            "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "2", "--max_completion_length", "1536", "--save_steps", "1",
            "--report_to", "none", "--warmup_steps", "0",
            *(["--learning_rate", learning_rate] if learning_rate is not None else []), *extra]
    return train.main(argv, before_train=hook)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- config --------------------------------------------------------------------------------------


def test_generation_batch_not_a_multiple_of_num_generations_is_rejected_with_fixes() -> None:
    with pytest.raises(ValueError) as error:
        train.parse_config(["--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "8"])
    message = str(error.value)
    assert "8 completions per step" in message and "--num_generations 6" in message
    assert "--per_device_train_batch_size 1 --gradient_accumulation_steps 6" in message
    # A micro-batch changed alone: the accumulations around the default's 16 that hold whole groups of 6.
    with pytest.raises(ValueError) as error:
        train.parse_config(["--per_device_train_batch_size", "4"])
    assert "64 completions per step" in str(error.value)
    assert all(f"--per_device_train_batch_size 4 --gradient_accumulation_steps {accumulation}" in str(error.value)
               for accumulation in (15, 18))


def test_the_warm_up_takes_a_micro_batch_that_makes_no_whole_groups_and_grpo_still_refuses_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 4 x the default accumulation of 16 = 64 completions: no whole groups of 6, which the warm-up never forms.
    micro_batch = ["--per_device_train_batch_size", "4", "--output_dir", str(tmp_path), "--dry-run"]
    assert train.main(["--phase", "sft", "--model", TINY_MODEL, *micro_batch]) is None
    assert "oracle episodes" in capsys.readouterr().out
    config = tmp_path / "run.yaml"
    config.write_text("phase: sft\n")  # the phase may come from a --config file, or as --phase=sft
    for phase in (["--config", str(config)], ["--phase=sft"]):
        agent, grpo, _ = train.parse_config([*phase, *micro_batch])
        assert agent.phase == "sft" and type(grpo) is train.WarmupGRPOConfig and grpo.steps_per_generation is None
    with pytest.raises(train.SetupError, match="64 completions per step") as error:
        train.main(["--phase", "easy", *micro_batch])
    assert "Nearest valid settings:\n  --per_device_train_batch_size 4 --gradient_accumulation_steps 15" in str(error.value)
    # The command line's phase wins over the file's; a GRPO phase gets GRPO's settings.
    with pytest.raises(ValueError, match="64 completions per step"):
        train.parse_config(["--config", str(config), "--phase", "easy", *micro_batch])


def test_defaults_follow_the_plan() -> None:
    agent, grpo, _ = train.parse_config([])
    assert grpo.num_generations == 6 and grpo.max_completion_length == 512 and grpo.gradient_checkpointing
    # The learning proof's step: 16 prompt groups of 6 at 2e-5, generated 4 groups at a time (memory).
    assert grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps == 96 and grpo.learning_rate == 2e-5
    assert grpo.generation_batch_size == 24 and grpo.gradient_accumulation_steps % grpo.steps_per_generation == 0
    assert grpo.chat_template_kwargs == {"enable_thinking": False}
    phases = load_curriculum(agent.curriculum)
    assert [(p.name, p.hardness, p.epochs, p.start_from, p.learning_rate) for p in phases] == [
        ("easy", ("easy",), 1.0, None, None), ("mixed", ("easy", "medium"), 2.0, "easy", 5e-5)]
    assert sum(phase.epochs for phase in phases) == 3


def test_a_phase_learning_rate_replaces_the_default_not_the_users(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    curriculum = tmp_path / "c.yaml"  # as curriculum.yaml's, without a start adapter to train first
    curriculum.write_text("phases:\n  - {name: fast, hardness: [easy], epochs: 1, learning_rate: 5e-5}\n"
                          "  - {name: plain, hardness: [easy], epochs: 1}\n")
    common = ["--model", TINY_MODEL, "--curriculum", str(curriculum), "--output_dir", str(tmp_path / "out"),
              "--dry-run"]
    train.main(["--phase", "fast", *common])
    assert "phase fast: easy, 1 epoch(s), learning rate 5e-05," in capsys.readouterr().out
    train.main(["--phase", "plain", *common])
    assert "phase plain: easy, 1 epoch(s), learning rate 2e-05," in capsys.readouterr().out
    train.main(["--phase", "fast", "--learning_rate", "1e-5", *common])
    output = capsys.readouterr().out
    assert "--learning_rate 1e-05 replaces the phase's 5e-05" in output and "learning rate 1e-05," in output


@pytest.mark.parametrize(("argv", "generation_batch"), [
    ([], 24),  # 16 groups a step, generated in 4 rounds of 4
    (["--per_device_train_batch_size", "16", "--gradient_accumulation_steps", "6"], 96),  # no smaller round fits
    (["--per_device_train_batch_size", "6", "--gradient_accumulation_steps", "2"], 12),  # 2 groups: one round
    (["--gradient_accumulation_steps", "16", "--steps_per_generation", "16"], 96),  # asked for: the whole step
    (["--generation_batch_size", "48"], 48),
])
def test_a_large_step_generates_in_rounds_of_whole_groups_that_divide_it(argv: list[str],
                                                                          generation_batch: int) -> None:
    _, grpo, _ = train.parse_config(argv)
    assert grpo.generation_batch_size == generation_batch
    assert generation_batch % grpo.num_generations == 0
    assert grpo.gradient_accumulation_steps % grpo.steps_per_generation == 0  # rollouts stay on-policy


def test_a_generation_batch_may_train_several_optimizer_steps_but_must_end_at_one() -> None:
    # The learning proof's generation batch of 96 trained as three optimizer steps of 32 (PPO's mini-batches).
    _, grpo, _ = train.parse_config(["--per_device_train_batch_size", "16", "--gradient_accumulation_steps", "2",
                                     "--steps_per_generation", "6"])
    assert grpo.generation_batch_size == 96 and grpo.gradient_accumulation_steps == 2
    assert grpo.save_steps == 12  # the default 10, rounded up to whole generation batches of 3 steps
    with pytest.raises(ValueError, match=r"one must divide the other.*a multiple of 4 trains several optimizer steps"):
        train.parse_config(["--gradient_accumulation_steps", "4", "--steps_per_generation", "6"])


def test_the_warm_up_defaults_are_the_measured_ones_unless_given() -> None:
    agent, grpo, explicit = train.parse_config(["--phase", "sft"])
    assert sft.with_warmup_defaults(agent, explicit).max_questions == sft.SFT_MAX_QUESTIONS == 2400
    assert agent.sft_epochs == 1 and sft.SFT_LEARNING_RATE == 1e-3
    assert agent.sft_hardness == ["easy", "medium", "hard", "extra"]
    agent, _, explicit = train.parse_config(["--phase", "sft", "--max_questions", "50"])
    assert sft.with_warmup_defaults(agent, explicit).max_questions == 50
    agent.max_questions = 2  # set by embedded mode, not on the command line: kept
    assert sft.with_warmup_defaults(agent, set()).max_questions == 2


def test_push_to_hub_takes_a_repo_name() -> None:
    agent, grpo, _ = train.parse_config(["--push-to-hub", "me/sql-agent"])
    assert agent.hub_repo == "me/sql-agent" and not grpo.push_to_hub


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--phase", "hard"], "unknown --phase 'hard'; the curriculum has: easy, mixed"),
        (["--phase", "mixed"], "run `python train.py --phase easy` first"),
        (["--phase", "easy", "--resume"], "no checkpoint"),
        (["--backend", "jax"], "--backend must be"),
    ],
)
def test_setup_problems_are_reported_before_loading_a_model(tmp_path: Path, argv: list[str], message: str) -> None:
    with pytest.raises(train.SetupError, match=message):
        train.main(["--output_dir", str(tmp_path), "--dry-run", *argv])


def test_an_unknown_phase_is_refused_before_embedded_mode_fetches_a_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(train.SetupError, match="unknown --phase 'hard'"):
        train.main(["--output_dir", str(tmp_path), "--dry-run", "--phase", "hard"])
    assert "EMBEDDED MODE" not in capsys.readouterr().out


def test_a_warm_up_dry_run_builds_its_episodes_and_says_so(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert train.main(["--output_dir", str(tmp_path), "--phase", "sft", "--model", TINY_MODEL, "--dry-run"]) is None
    assert re.search(r"dry run: \d+ oracle episodes of .* for the warm-up", capsys.readouterr().out)
    assert not (tmp_path / "sft").exists()


def test_dry_run_checks_and_loads_no_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert train.main(["--output_dir", str(tmp_path), "--phase", "easy", "--dry-run"]) is None
    output = capsys.readouterr().out
    assert "EMBEDDED MODE" in output and "dry run" in output
    assert re.search(r"\n  about \d+ optimizer steps of \d+ episodes \(\d+ questions? x \d+\): \d+ episodes\n", output)
    # embedded mode's 160-token completions cannot hold the oracle's episode: guidance stays off unless asked
    assert "\n  oracle guidance off\n" in output
    assert not (tmp_path / "easy").exists()
    train.main(["--output_dir", str(tmp_path), "--phase", "easy", "--dry-run", "--guide_unsolved"])
    assert "\n  oracle guidance: a group with no right answer trains on the oracle's episode" in capsys.readouterr().out


def test_the_flag_needs_the_informative_sampler_and_the_phase_says_it_is_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(train.SetupError, match="--defer_by_class works through --sampling informative"):
        train.main(["--output_dir", str(tmp_path / "out"), "--defer_by_class", "--sampling", "plain"])
    assert not (tmp_path / "out").exists()
    train.main(["--output_dir", str(tmp_path / "out"), "--phase", "easy", "--dry-run", "--defer_by_class"])
    assert "\n  questions not yet visited wait by their class's recent groups (--defer_by_class)" in (
        capsys.readouterr().out)


def test_the_screen_needs_the_informative_sampler_and_a_model_folder(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(train.SetupError, match="--screen_questions orders the passes of --sampling informative"):
        train.main(["--output_dir", str(tmp_path / "out"), "--screen_questions", "--sampling", "plain"])
    train.main(["--output_dir", str(tmp_path / "out"), "--phase", "easy", "--dry-run", "--screen_questions"])
    assert "\n  screen: each question played once by the start model first" in capsys.readouterr().out
    assert not (tmp_path / "out" / "easy" / "screen").exists()  # a dry run plays nothing


@pytest.mark.slow
def test_the_screen_plays_each_question_once_before_the_phase_and_ranks_them_for_the_sampler(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The real eval in a child process, on the tiny random model, which answers nothing: every question is ranked
    wrong, so served first."""
    given: dict[str, Any] = {}
    sampler = train.question_sampler

    def capture(*args: Any, **kwargs: Any) -> Any:
        given.update(kwargs)
        return sampler(*args, **kwargs)

    monkeypatch.setattr(train, "question_sampler", capture)
    run_phase(tmp_path, "--phase", "easy", "--max_steps", "1", "--screen_questions")
    report = json.loads((tmp_path / "easy" / "screen" / "report.json").read_text())
    played = [question_key(record["db_id"], record["question"]) for record in report["questions"]]
    assert len(played) == 2
    assert given["ranks"] == dict.fromkeys(played, question_screen.RANK_WRONG)
    shown = capsys.readouterr().out
    assert "[train] screen: 2 of 2 questions played once by the start model in " in shown
    assert "\n[screen] | overall | 2 | 0.0% |" in shown  # the eval's own report, shown as it came


def test_a_custom_curriculum_needs_no_code_change(tmp_path: Path) -> None:
    curriculum = tmp_path / "c.yaml"
    curriculum.write_text("phases:\n  - {name: warm, hardness: [easy], epochs: 0.5}\n"
                          "  - {name: all, hardness: [easy, medium, hard, extra], epochs: 1, start_from: warm}\n")
    phases = load_curriculum(curriculum)
    assert select_phase(phases, "all") == (phases[1], 0.5)
    curriculum.write_text("phases:\n  - {name: x, hardness: [tricky], epochs: 1}\n")
    with pytest.raises(ValueError, match="unknown hardness"):
        load_curriculum(curriculum)


@pytest.mark.parametrize(("phases", "message"), [
    ("  - {name: x, hardness: easy, epochs: 1}", r"phase 1: hardness must be a list such as \[easy, medium\], got 'easy'"),
    ("  - {name: x, epochs: 1}", "phase 1: missing hardness"),
    ("  - easy", "phase 1: expected a mapping with name, hardness and epochs, got 'easy'"),
    ("  - {name: x, hardness: [easy], epochs: 0}", r"phase 1 \('x'\): epochs must be a number above 0, got 0"),
    ("  - {name: x, hardness: [easy], epochs: one}", "epochs must be a number above 0, got 'one'"),
    ("  - {name: x, hardness: [easy], epochs: 1, learning_rate: fast}",
     r"phase 1 \('x'\): learning_rate must be a number above 0 such as 5e-5, got 'fast'"),
    ("  - {name: x, hardness: [easy], epochs: 1, learning_rate: -1e-5}", "learning_rate must be a number above 0"),
    ("  - {name: x, hardness: [easy], epochs: 1, learning_rate: true}", "learning_rate must be a number above 0"),
    ("  - {name: x, hardness: [easy], epochs: 1}\n  - {name: x, hardness: [medium], epochs: 1}", "two phases are named 'x'"),
    ("  - {name: x, hardness: [Medium, EASY, easy], epochs: 1}\n  - {name: y, hardness: [easy], epochs: 1, start_from: z}",
     "phase 'y' starts from 'z', not an earlier phase"),
])
def test_a_malformed_curriculum_is_refused_in_one_line_naming_the_phase(tmp_path: Path, phases: str,
                                                                         message: str) -> None:
    curriculum = tmp_path / "c.yaml"
    curriculum.write_text("phases:\n" + phases + "\n")
    with pytest.raises(ValueError, match=message):
        load_curriculum(curriculum)


def test_curriculum_hardness_names_are_read_as_the_data_loader_reads_them(tmp_path: Path) -> None:
    curriculum = tmp_path / "c.yaml"
    curriculum.write_text("phases:\n  - {name: x, hardness: [Medium, EASY, easy], epochs: 1}\n")
    assert load_curriculum(curriculum)[0].hardness == ("easy", "medium")
    # YAML reads 5e-5 (no dot) as text, 5.0e-5 as a number: both are the same rate here
    curriculum.write_text("phases:\n  - {name: x, hardness: [easy], epochs: 1, learning_rate: 5e-5}\n"
                          "  - {name: y, hardness: [easy], epochs: 1, learning_rate: 5.0e-5}\n")
    assert [phase.learning_rate for phase in load_curriculum(curriculum)] == [5e-5, 5e-5]
    curriculum.write_text("phases: [\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_curriculum(curriculum)


# --- real GRPO runs ------------------------------------------------------------------------------


@pytest.mark.slow
def test_grpo_run_calls_every_tool_and_the_post_episode_penalty_shows(tmp_path: Path) -> None:
    adapter = run_phase(tmp_path, "--phase", "easy")
    assert adapter is not None and (adapter / "adapter_model.safetensors").is_file()
    rollouts = read_jsonl(tmp_path / "easy" / "rollouts.jsonl")
    tools = {step["tool"] for rollout in rollouts for step in rollout["steps"]}
    assert tools == {"describe", "sample", "query", "answer"}
    rewards = sorted(rollout["reward"] for rollout in rollouts)
    for rollout in rollouts:
        assert rollout["post_episode_calls"] == 1
        assert rollout["reward_parts"]["post_episode_penalty"] == pytest.approx(-POST_EPISODE_PENALTY)
    assert rewards[0] < 0.2 < 0.8 < rewards[-1] < 1.0 + 0.15  # a wrong and a right answer, both penalised
    metrics = read_jsonl(tmp_path / "easy" / "metrics.jsonl")
    step_logs = [entry for entry in metrics if "episode/post_episode_calls" in entry]
    assert step_logs and all(entry["episode/post_episode_calls"] == 1.0 for entry in step_logs)
    assert all(entry["frac_reward_zero_std"] == 0.0 for entry in step_logs)  # right and wrong in every group
    assert all(entry["episode/groups_all_correct"] == 0.0 == entry["episode/groups_none_correct"] for entry in step_logs)
    assert all(entry["episode/shaping_only_advantage"] == 0.0 for entry in step_logs)  # every group's spread: answers
    # right by the exact text asked for never exceeds right by the relaxed verifier
    assert all(0.0 <= entry["episode/accuracy_exact_text"] <= entry["episode/accuracy"] for entry in step_logs)
    assert (tmp_path / "easy" / "training_curves.png").stat().st_size > 0
    assert json.loads((tmp_path / "easy" / "train_config.json").read_text())["grpo"]["num_generations"] == 2
    # The card and the adapter name the base model the phase trained on (TRL's card said "[None]" for a folder).
    card = (tmp_path / "easy" / "README.md").read_text()
    assert "[None]" not in card and f"`{TINY_MODEL}` (a local folder)" in card
    assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"] == TINY_MODEL


def test_a_step_generated_in_rounds_trains_on_all_of_them(tmp_path: Path) -> None:
    """The default's shape, small: an optimizer step of 2 groups generated one group at a time (TRL's
    steps_per_generation), so the step's log must count both rounds' episodes and generation calls."""
    def run(name: str, steps_per_generation: str) -> tuple[dict[str, Any], list[int]]:
        call_sizes: list[int] = []

        def count_calls(trainer: Any) -> None:  # around the scripted generation: rows in each call
            scripted = trainer._generate_single_turn

            def counted(prompt_ids: list[Any], *args: Any, **kwargs: Any) -> Any:
                call_sizes.append(len(prompt_ids))
                return scripted(prompt_ids, *args, **kwargs)
            trainer._generate_single_turn = counted

        run_phase(tmp_path / name, "--phase", "easy", "--gradient_accumulation_steps", "4", "--steps_per_generation",
                  steps_per_generation, "--max_steps", "1", "--save_strategy", "no", before_train=count_calls)
        config = json.loads((tmp_path / name / "easy" / "train_config.json").read_text())["grpo"]
        assert config["generation_batch_size"] == int(steps_per_generation)  # micro-batches of one episode
        step = next(entry for entry in read_jsonl(tmp_path / name / "easy" / "metrics.jsonl") if "loss" in entry)
        return step, call_sizes

    (in_rounds, round_calls), (at_once, once_calls) = run("rounds", "2"), run("at-once", "4")
    for step in (in_rounds, at_once):
        assert step["rollout/episodes_per_s"] * step["step_time"] == pytest.approx(4)  # 2 groups of 2, both counted
        assert step["episode/post_episode_calls"] == 1.0
    assert round_calls[0] == 2 and once_calls[0] == 4  # each round starts with its own group only
    assert sum(round_calls) == sum(once_calls)  # the same turns generated, in two tool loops instead of one


def test_a_generation_batch_that_trains_two_steps_logs_each_step_and_times_the_batch_over_both(
        tmp_path: Path) -> None:
    """Two groups of 2 generated at once, trained as two optimizer steps of one group: both steps train (their
    losses are logged), the episodes are counted once, and episodes/s covers both steps' time."""
    calls: list[int] = []

    def count_calls(trainer: Any) -> None:
        scripted = trainer._generate_and_score_completions

        def counted(inputs: list[Any]) -> Any:
            calls.append(len(inputs))
            return scripted(inputs)
        trainer._generate_and_score_completions = counted

    run_phase(tmp_path, "--phase", "easy", "--gradient_accumulation_steps", "2", "--steps_per_generation", "4",
              "--max_steps", "2", "--save_strategy", "no", before_train=count_calls)
    assert calls == [4]  # one generation batch of 2 groups for the two steps
    steps = [entry for entry in read_jsonl(tmp_path / "easy" / "metrics.jsonl") if "loss" in entry]
    assert [entry["step"] for entry in steps] == [1, 2]
    assert "episode/accuracy" in steps[0] and "rollout/episodes_per_s" not in steps[0]  # its time is not all in yet
    speed = steps[1]["rollout/episodes_per_s"]
    assert speed * (steps[0]["step_time"] + steps[1]["step_time"]) == pytest.approx(4)  # 4 episodes in both steps
    config = json.loads((tmp_path / "easy" / "train_config.json").read_text())["grpo"]
    assert config["generation_batch_size"] == 4 and config["steps_per_generation"] == 4


class AlwaysRightAgent(ScriptedAgent):
    """Every completion of a group answers right: no group has reward spread, so none teaches anything."""

    def turn(self, text: str, generation: int) -> str:
        return super().turn(text, 0)


@pytest.mark.slow
def test_informative_sampling_defers_settled_questions_and_hands_their_history_on(tmp_path: Path) -> None:
    agent = AlwaysRightAgent()
    argv = ["--output_dir", str(tmp_path), "--model", TINY_MODEL, "--max_questions", "3", "--num_generations", "2",
            "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "2", "--max_completion_length", "1536",
            "--save_strategy", "no",
            "--report_to", "none", "--phase", "easy", "--num_train_epochs", "3", "--sampling", "informative"]
    adapter = train.main(argv, before_train=agent.install)
    steps = [entry for entry in read_jsonl(tmp_path / "easy" / "metrics.jsonl") if "sampler/served" in entry]
    assert len(steps) == 9  # 3 questions x 3 epochs, one group a step: the same number of episodes as plain
    assert sum(entry["sampler/deferred"] for entry in steps) > 0
    assert all(entry["frac_reward_zero_std"] == 1.0 for entry in steps)
    history = json.loads((adapter / "question_history.json").read_text())
    assert len(history) == 3 and all(spread == 0.0 for visits in history.values() for _, _, spread in visits)


@pytest.mark.slow
def test_fewshot_examples_are_in_prompts_before_the_switch_and_gone_after(tmp_path: Path) -> None:
    run_phase(tmp_path, "--phase", "easy", "--num_train_epochs", "2")
    rollouts = read_jsonl(tmp_path / "easy" / "rollouts.jsonl")
    first_epoch = [r["fewshot_in_prompt"] for r in rollouts if r["step"] < 2]
    second_epoch = [r["fewshot_in_prompt"] for r in rollouts if r["step"] >= 2]
    assert first_epoch and all(first_epoch)
    assert second_epoch and not any(second_epoch)


@pytest.mark.slow
def test_mixed_phase_starts_from_the_easy_adapter(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    easy_adapter = run_phase(tmp_path, "--phase", "easy")
    saved = load_file(easy_adapter / "adapter_model.safetensors")
    assert any(tensor.abs().sum() > 0 for name, tensor in saved.items() if "lora_B" in name)  # it learned something
    seen: dict[str, Any] = {}

    def capture_start(trainer: Any) -> None:
        from peft import get_peft_model_state_dict

        seen.update({name: tensor.detach().clone() for name, tensor in get_peft_model_state_dict(trainer.model).items()})

    run_phase(tmp_path, "--phase", "mixed", "--num_train_epochs", "1", before_train=capture_start)
    assert set(seen) == set(saved)
    assert all(seen[name].float().allclose(saved[name].float()) for name in saved)
    mixed_rollouts = read_jsonl(tmp_path / "mixed" / "rollouts.jsonl")
    assert not any(rollout["fewshot_in_prompt"] for rollout in mixed_rollouts)  # retired after epoch 1


@pytest.mark.slow
def test_a_phase_learning_rate_is_the_rate_the_optimizer_steps_with(tmp_path: Path) -> None:
    curriculum = tmp_path / "c.yaml"
    curriculum.write_text("phases:\n  - {name: fast, hardness: [easy], epochs: 1, learning_rate: 5e-5}\n")
    run_phase(tmp_path / "out", "--phase", "fast", "--curriculum", str(curriculum), learning_rate=None)
    rates = [entry["learning_rate"] for entry in read_jsonl(tmp_path / "out" / "fast" / "metrics.jsonl")
             if "learning_rate" in entry]
    assert rates and all(rate == pytest.approx(5e-5) for rate in rates)


@pytest.mark.slow
def test_the_advantage_scaling_reaches_trl_and_the_episode_logs(tmp_path: Path) -> None:
    from training_logs import RolloutLogger

    seen: dict[str, Any] = {}

    def record(trainer: Any) -> None:
        seen["trl"] = trainer.scale_rewards
        seen["logs"] = [callback.scale_rewards for callback in trainer.callback_handler.callbacks
                        if isinstance(callback, RolloutLogger)]

    run_phase(tmp_path, "--phase", "easy", "--scale_rewards", "batch", "--max_steps", "1", before_train=record)
    assert seen == {"trl": "batch", "logs": ["batch"]}
    (step,) = [entry for entry in read_jsonl(tmp_path / "easy" / "metrics.jsonl") if "episode/accuracy" in entry]
    assert step["episode/shaping_only_groups"] == 0.0 == step["episode/shaping_only_advantage"]  # answers differ


class Interrupt(Exception):
    pass


@pytest.mark.slow
def test_resume_continues_an_interrupted_phase(tmp_path: Path) -> None:
    def crash_after_two_steps(trainer: Any) -> None:
        from transformers import TrainerCallback

        class Crash(TrainerCallback):
            def on_save(self, args, state, control, **kwargs):
                if state.global_step == 2:
                    raise Interrupt

        trainer.add_callback(Crash())

    with pytest.raises(Interrupt):
        run_phase(tmp_path, "--phase", "easy", "--num_train_epochs", "2", before_train=crash_after_two_steps)
    assert output_folders.last_checkpoint(tmp_path / "easy").name == "checkpoint-2"
    with pytest.raises(train.SetupError, match="pass --resume"):
        run_phase(tmp_path, "--phase", "easy", "--num_train_epochs", "2")
    run_phase(tmp_path, "--phase", "easy", "--num_train_epochs", "2", "--resume")
    steps = [entry["step"] for entry in read_jsonl(tmp_path / "easy" / "metrics.jsonl") if "loss" in entry]
    assert steps == [1, 2, 3, 4]  # steps 1-2 before the crash, 3-4 after resuming; none repeated
    assert (tmp_path / "easy" / "adapter" / "adapter_model.safetensors").is_file()


def test_fast_inference_without_vllm_fails_clearly() -> None:
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="needs vLLM, which is not installed"):
            train.parse_config(["--fast_inference"])
    else:
        pytest.skip("vLLM is installed here")


def test_fast_inference_keeps_the_stop_rule_and_checks_its_memory_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))  # as where vLLM is installed
    agent, _, _ = train.parse_config(["--fast_inference", "--vllm_memory_share", "0.3"])
    assert agent.fast_inference and agent.stop_at_tool_call and agent.vllm_memory_share == 0.3
    with pytest.raises(ValueError, match="--vllm_memory_share is a share of GPU memory, between 0 and 1, got 1.5"):
        train.parse_config(["--fast_inference", "--vllm_memory_share", "1.5"])


def test_vllm_rollouts_get_the_stop_rule_the_turn_cap_and_under_plain_transformers_the_memory_share() -> None:
    agent = types.SimpleNamespace(backend="transformers", vllm_memory_share=0.3, max_turn_tokens=256)
    grpo = types.SimpleNamespace(use_vllm=False, vllm_mode="server", vllm_gpu_memory_utilization=0.9,
                                 generation_kwargs={"top_k": 5}, max_completion_length=512)
    train.use_vllm_rollouts(agent, grpo, [2, 49153])
    assert (grpo.use_vllm, grpo.vllm_mode, grpo.vllm_gpu_memory_utilization) == (True, "colocate", 0.3)
    assert grpo.generation_kwargs == {"top_k": 5, "stop_token_ids": [2, 49153], "max_tokens": 256}
    unsloth = types.SimpleNamespace(use_vllm=False, vllm_mode="server", vllm_gpu_memory_utilization=0.9,
                                    generation_kwargs=None, max_completion_length=128)
    train.use_vllm_rollouts(types.SimpleNamespace(backend="unsloth", vllm_memory_share=0.3, max_turn_tokens=0),
                            unsloth, [])
    # Unsloth sizes its own engine when the model loads; TRL's setting stays as it was; no cap asked, none given.
    assert (unsloth.use_vllm, unsloth.vllm_gpu_memory_utilization, unsloth.generation_kwargs) == (True, 0.9, None)
    train.use_vllm_rollouts(types.SimpleNamespace(backend="unsloth", vllm_memory_share=0.3, max_turn_tokens=256),
                            unsloth, [])
    assert unsloth.generation_kwargs == {"max_tokens": 128}  # never past the episode's own budget


def test_a_run_whose_vllm_rollouts_do_not_line_up_with_the_trainer_says_so() -> None:
    from training_logs import vllm_alignment_warning

    def steps(largest: float, ratio: float) -> list[dict[str, float]]:
        return [{"sampling/sampling_logp_difference/max": largest,
                 "sampling/importance_sampling_ratio/mean": ratio}] * 2

    # As measured on vLLM's CPU build (2026-12-04d): with the turn closing's added token, and without it.
    warning = vllm_alignment_warning(steps(19.9, 0.25))
    assert warning.startswith("WARNING: vLLM's sampling log-probabilities differ from the trainer's by up to 19.9")
    assert "ratio 0.25" in warning and "without --fast_inference" in warning
    assert vllm_alignment_warning(steps(0.47, 0.8)) is None
    assert vllm_alignment_warning([{"loss": 0.1}]) is None  # no vLLM


def test_a_runs_sampling_alignment_is_summarised_over_its_steps_and_absent_without_vllm() -> None:
    from training_logs import sampling_alignment

    history = [{"sampling/sampling_logp_difference/max": largest, "sampling/sampling_logp_difference/mean": mean,
                "sampling/importance_sampling_ratio/mean": ratio}
               for largest, mean, ratio in [(0.4, 0.01, 0.99), (0.9, 0.03, 1.01), (0.5, 0.02, 1.0)]]
    assert sampling_alignment([{"loss": 0.2}, *history]) == {
        "logp_difference_max": 0.5, "steps": 3, "logp_difference_mean": 0.02, "importance_sampling_ratio": 1.0}
    assert sampling_alignment([{"loss": 0.2, "reward": 0.5}]) is None


def test_push_to_hub_without_a_token_fails_before_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no stored token there
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(train.SetupError, match="no Hugging Face token"):
        train.main(["--output_dir", str(tmp_path), "--dry-run", "--push-to-hub", "me/sql-agent"])


class FakeTrainer:
    """Stands in for GRPOTrainer: the first one runs out of memory, later ones train."""

    made = 0

    def __init__(self, grpo: Any) -> None:
        FakeTrainer.made += 1
        self.completion_length = grpo.max_completion_length
        self.resumed_from: str | None = "unset"

    def train(self, resume_from_checkpoint: str | None = None) -> None:
        self.resumed_from = resume_from_checkpoint
        if FakeTrainer.made == 1:
            import torch

            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")


def test_out_of_memory_retries_once_with_shorter_completions(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    agent, grpo, _ = train.parse_config(["--output_dir", str(tmp_path)])
    (tmp_path / "checkpoint-3").mkdir()
    FakeTrainer.made = 0
    trainer = train.train_with_oom_fallback(lambda: FakeTrainer(grpo), grpo, agent, None, tmp_path)
    assert FakeTrainer.made == 2
    assert trainer.completion_length == agent.oom_fallback_completion_length == 384
    assert trainer.resumed_from == str(tmp_path / "checkpoint-3")
    assert "retrying once with 384" in capsys.readouterr().out


# --- the stop rule: what it changes and what it must not ----------------------------------------


class RunawayModel:
    """Stands in for model.generate under TRL's own generation path: writes the scripted agent's next call,
    then (``runaway``) keeps going the way untrained models do, inventing a tool response to the length cap."""

    def __init__(self, tokenizer: Any, runaway: bool) -> None:
        self.tokenizer, self.runaway, self.agent = tokenizer, runaway, ScriptedAgent()
        self.invented = tokenizer.encode("\n<tool_response>\n42\n</tool_response>\n" * 3, add_special_tokens=False)

    def generate(self, input_ids: Any, attention_mask: Any, **kwargs: Any) -> Any:
        completions = []
        for index, (ids, mask) in enumerate(zip(input_ids, attention_mask, strict=True)):
            turn = self.agent.turn(self.tokenizer.decode(ids[mask.bool()]), index)
            ids = self.tokenizer.encode(turn, add_special_tokens=False)
            if self.runaway and "</tool_call>" in turn:
                ids = ids[:-1] + self.invented + [self.tokenizer.eos_token_id]  # no end after </tool_call>
            completions.append(ids)
        return self.appended(input_ids, completions)

    def appended(self, input_ids: Any, completions: list[list[int]]) -> Any:
        """What generate returns: the prompts, then every row's new tokens, padded to the longest."""
        import torch

        width = max(map(len, completions))
        padded = [ids + [self.tokenizer.pad_token_id] * (width - len(ids)) for ids in completions]
        return torch.cat([input_ids, torch.tensor(padded, device=input_ids.device)], dim=1)


def scored_batches(output_dir: Path, *extra: str, runaway: bool, before_train: Any = None,
                   make_model: Any = None) -> list[dict[str, Any]]:
    """One GRPO step whose generation goes through TRL's own _generate_single_turn and a RunawayModel (or
    ``make_model(tokenizer)``); returns what TRL scored: completion ids and masks, tool masks, rewards."""
    batches: list[dict[str, Any]] = []

    def hook(trainer: Any) -> None:
        if before_train is not None:
            before_train(trainer)
        fake = make_model(trainer.processing_class) if make_model else RunawayModel(trainer.processing_class, runaway)
        trainer.model.generate = fake.generate  # what TRL's generation path calls on the unwrapped model
        score = trainer._generate_and_score_completions

        def capture(inputs: Any) -> Any:
            output = score(inputs)
            batches.append({"completion_ids": output["completion_ids"].tolist(),
                            "completion_mask": output["completion_mask"].tolist(),
                            "tool_mask": output["tool_mask"].tolist(),
                            "rewards": [environment.get_reward() for environment in trainer.environments]})
            return output

        trainer._generate_and_score_completions = capture

    argv = ["--output_dir", str(output_dir), "--model", TINY_MODEL, "--max_questions", "1", "--num_generations", "2",
            "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "2", "--max_completion_length", "1536",
            "--save_strategy", "no",
            "--report_to", "none", "--max_steps", "1", "--phase", "easy",
            "--max_turn_tokens", "0",  # each test names the turn cap it measures (a later flag wins)
            *extra]
    train.main(argv, before_train=hook)
    return batches


@pytest.mark.slow
def test_the_stop_rule_removes_runaway_text_and_changes_no_reward_or_mask(tmp_path: Path) -> None:
    import torch

    runaway = scored_batches(tmp_path / "runaway", runaway=True)
    disciplined = scored_batches(tmp_path / "disciplined", runaway=False)
    unstopped = scored_batches(tmp_path / "unstopped", "--stop_at_tool_call", "false", runaway=True)
    assert runaway == disciplined  # the same ids, masks and rewards as a model that ends its turns itself
    rollout = read_jsonl(tmp_path / "runaway" / "easy" / "rollouts.jsonl")[0]
    assert "<tool_response>\n42" not in json.dumps(rollout["completion"])
    assert len(rollout["steps"]) == 5  # all five scripted calls reached SQLEnv, one per turn
    # Without the rule the invented responses stay in the completion and are trained on (mask 1).
    trained = [sum(m * t for m, t in zip(mask, tools, strict=True))
               for mask, tools in zip(unstopped[0]["completion_mask"], unstopped[0]["tool_mask"], strict=True)]
    assert min(trained) > max(sum(m * t for m, t in zip(mask, tools, strict=True)) for mask, tools in
                              zip(runaway[0]["completion_mask"], runaway[0]["tool_mask"], strict=True))
    assert torch.tensor(runaway[0]["rewards"]).allclose(torch.tensor(unstopped[0]["rewards"]))


@pytest.mark.slow
def test_micro_batches_change_no_reward_mask_or_gradient(tmp_path: Path) -> None:
    """One step of two prompt groups generated together, trained as one micro-batch of 4, two of 2 or four of 1
    (the gpu_backends --micro-batch setting): the same episodes, masks, rewards and update."""
    from safetensors.torch import load_file

    runs = {}
    for per_device, accumulation in ((4, 1), (2, 2), (1, 4)):
        out = tmp_path / f"{per_device}x{accumulation}"
        torch.manual_seed(0)  # the LoRA's initial weights come from the global generator, which earlier runs moved
        batches = scored_batches(out, "--max_questions", "2", "--per_device_train_batch_size", str(per_device),
                                 "--gradient_accumulation_steps", str(accumulation), "--learning_rate", "1e-3",
                                 # plain SGD: the update is the gradient (Adam's first step is its sign, which
                                 # rounding flips where a gradient is near zero)
                                 "--warmup_steps", "0", "--optim", "sgd", runaway=False)
        weights = load_file(out / "easy" / "adapter" / "adapter_model.safetensors")
        grad_norm = next(entry["grad_norm"] for entry in read_jsonl(out / "easy" / "metrics.jsonl") if "grad_norm" in entry)
        runs[(per_device, accumulation)] = (batches, weights, grad_norm)
    (reference, reference_weights, reference_norm), *others = runs.values()
    assert len(reference) == 1 and len(reference[0]["rewards"]) == 4
    for batches, weights, grad_norm in others:
        assert batches == reference
        # A loss normalised per micro-batch instead of per step would change the update's size by the share of tokens
        # each micro-batch holds (tens of percents here). Measured: the norm agrees within 2e-4; per tensor the update
        # differs by 1-2% in direction between 4 x 1 and 1 x 4 (float32 logits of other padded widths; the same run
        # twice agrees exactly), so the per-tensor bound is loose and the norm's tight.
        assert grad_norm == pytest.approx(reference_norm, rel=1e-3)
        for name, tensor in weights.items():  # lora_B starts at 0: after one SGD step it is the update itself
            difference = (tensor - reference_weights[name]).norm() / reference_weights[name].norm()
            assert difference < 5e-2, (name, float(difference))


class LongWindedModel(RunawayModel):
    """On its third turn the first row writes on without closing its call, for as long as generate lets it
    (``generation_config.max_new_tokens``, recorded per call), as sampled models sometimes do."""

    def __init__(self, tokenizer: Any, preamble: str = "") -> None:
        super().__init__(tokenizer, runaway=False)
        self.filler = tokenizer.encode(" and then the next table", add_special_tokens=False)
        self.preamble = preamble  # written by the first row before its first call: its episode uses more
        self.caps: list[int] = []
        self.decoded = 0  # decoding steps of every call: the longest row's new tokens
        self.ran_on: list[tuple[int, int]] = []  # (max_new_tokens, decoding steps) of each call a row ran on in

    def generate(self, input_ids: Any, attention_mask: Any, **kwargs: Any) -> Any:
        cap = kwargs["generation_config"].max_new_tokens
        self.caps.append(cap)
        completions, runs_on = [], False
        for index, (ids, mask) in enumerate(zip(input_ids, attention_mask, strict=True)):
            text = self.tokenizer.decode(ids[mask.bool()])
            turn = text.count(ASSISTANT_HEADER) - 1
            if index == 0 and turn == 2:
                completions.append((self.filler * (cap // len(self.filler) + 1))[:cap])
                runs_on = True
            else:
                written = (self.preamble if index == 0 and turn == 0 else "") + self.agent.turn(text, index)
                completions.append(self.tokenizer.encode(written, add_special_tokens=False)[:cap])
        completions = self.stopped(input_ids, completions, kwargs.get("stopping_criteria"))
        self.decoded += max(map(len, completions))
        if runs_on:
            self.ran_on.append((cap, max(map(len, completions))))
        return self.appended(input_ids, completions)

    def stopped(self, input_ids: Any, completions: list[list[int]], criteria: Any) -> list[list[int]]:
        """What generate's loop keeps under ``criteria``: after each new token, a row they end writes no more."""
        if not criteria:
            return completions
        pad = self.tokenizer.pad_token_id
        kept: list[list[int]] = [[] for _ in completions]
        ended = [False] * len(completions)
        for step in range(max(map(len, completions))):
            for row, ids in enumerate(completions):
                if not ended[row] and step < len(ids):
                    kept[row].append(ids[step])
            written = self.appended(input_ids, [ids + [pad] * (step + 1 - len(ids)) for ids in kept])
            stop = criteria(written, None).tolist()
            ended = [done or stop[row] or len(kept[row]) == len(completions[row]) for row, done in enumerate(ended)]
            if all(ended):
                break
        return kept


def long_winded_models(models: dict[str, LongWindedModel], preamble: str = "") -> Any:
    """``model_for(name)``: a scored_batches ``make_model`` that keeps its LongWindedModel in ``models[name]``."""
    def model_for(name: str) -> Any:
        def make(tokenizer: Any) -> LongWindedModel:
            models[name] = LongWindedModel(tokenizer, preamble)
            return models[name]
        return make
    return model_for


@pytest.mark.slow
def test_turns_capped_at_the_episode_budget_keep_every_token_mask_and_reward(tmp_path: Path) -> None:
    models: dict[str, LongWindedModel] = {}
    model_for = long_winded_models(models)
    capped = scored_batches(tmp_path / "capped", runaway=False, make_model=model_for("capped"))
    uncapped = scored_batches(tmp_path / "uncapped", "--cap_turns_at_budget", "false", runaway=False,
                              make_model=model_for("uncapped"))
    assert capped == uncapped  # the same ids, masks and rewards
    limit = 1536  # scored_batches' --max_completion_length
    assert models["uncapped"].caps == [limit] * len(models["uncapped"].caps)
    first, *later = models["capped"].caps
    assert first == limit and later and all(cap < limit for cap in later)
    # The row that wrote on: cut by TRL to what its episode had left, so one row's completion reached the limit.
    assert max(len(ids) for ids in capped[0]["completion_ids"]) == limit
    # Its turn decoded only that much: 1536 less what the episode had used, where uncapped it decoded 1536.
    saved = models["uncapped"].decoded - models["capped"].decoded
    assert 0 < saved < limit


@pytest.mark.slow
def test_a_row_with_less_budget_than_its_call_stops_at_its_own_and_keeps_every_token(tmp_path: Path) -> None:
    """The row that runs on has written a preamble earlier, so it has less left than the other row of its call:
    the call's cap is the other row's budget, and the row itself stops at its own (RowBudgetStop)."""
    models: dict[str, LongWindedModel] = {}
    model_for = long_winded_models(models, preamble="Let me look at the table's columns before I query it. " * 8)
    capped = scored_batches(tmp_path / "capped", runaway=False, make_model=model_for("capped"))
    uncapped = scored_batches(tmp_path / "uncapped", "--cap_turns_at_budget", "false", runaway=False,
                              make_model=model_for("uncapped"))
    assert capped == uncapped  # the same ids, masks and rewards
    assert max(len(ids) for ids in capped[0]["completion_ids"]) == 1536  # the row that ran on reached the limit
    (call_cap, decoded), = models["capped"].ran_on
    assert decoded < call_cap < 1536  # its own budget ended the call before the call's cap did
    (uncapped_cap, uncapped_decoded), = models["uncapped"].ran_on
    assert uncapped_cap == uncapped_decoded == 1536


@pytest.mark.slow
def test_a_turn_cap_cuts_only_the_turn_that_runs_on_and_changes_no_reward(tmp_path: Path) -> None:
    models: dict[str, LongWindedModel] = {}
    model_for = long_winded_models(models)
    turn_cap = 128  # above every scripted call of the built-in questions, far below the runaway turn
    capped = scored_batches(tmp_path / "capped", "--max_turn_tokens", str(turn_cap), runaway=False,
                            make_model=model_for("capped"))
    free = scored_batches(tmp_path / "free", "--cap_turns_at_budget", "false", runaway=False,
                          make_model=model_for("free"))
    assert max(models["capped"].caps) == turn_cap and set(models["free"].caps) == {1536}
    assert capped[0]["rewards"] == free[0]["rewards"]

    def kept(batch: dict[str, Any]) -> list[list[int]]:
        return [[token for token, mask in zip(ids, masks, strict=True) if mask]
                for ids, masks in zip(batch["completion_ids"], batch["completion_mask"], strict=True)]

    cut, whole = kept(capped[0]), kept(free[0])
    longest = max(range(len(whole)), key=lambda row: len(whole[row]))
    for row, (ids, full) in enumerate(zip(cut, whole, strict=True)):
        if row == longest:  # the episode whose third turn ran on: the same start, that turn cut at the cap
            assert full[:len(ids)] == ids and len(ids) < len(full)
        else:
            assert ids == full


def test_a_negative_turn_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="--max_turn_tokens is a number of tokens"):
        train.parse_config(["--max_turn_tokens", "-1"])


class Checked(Exception):
    """Ends a run once its trainer has been checked."""


@pytest.mark.slow
def test_the_real_generate_call_decodes_no_more_than_the_rows_have_left(tmp_path: Path) -> None:
    """Through TRL's _generate_single_turn and the tiny model's own generate (no stand-in): a later turn whose
    row has used 10 of 16 tokens decodes at most 6, also beside a row that may write 14."""
    lengths: list[list[int]] = []
    rows: list[list[int]] = []
    pad_ids: list[int] = []

    def check(trainer: Any) -> None:
        prompt = list(range(5, 45))
        first, _ = trainer._generate_single_turn([prompt, prompt], None, {}, 2)
        later, _ = trainer._generate_single_turn([prompt + list(range(50, 60))], None, {}, num_generations=1)
        lengths.extend([[len(ids) for ids in first], [len(ids) for ids in later]])
        # Two rows in one call, 6 and 14 tokens left: the call decodes up to 14, the first row stops at its 6
        # (generate pads a row it has ended; TRL then cuts it to its budget).
        pair, _ = trainer._generate_single_turn([prompt + list(range(50, 60)), prompt + [50, 51]], None, {},
                                                num_generations=1)
        rows.extend(pair)
        pad_ids.append(trainer.processing_class.pad_token_id)
        raise Checked

    with pytest.raises(Checked):
        train.main(["--output_dir", str(tmp_path), "--model", TINY_MODEL, "--max_questions", "1", "--num_generations",
                    "2", "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "2",
                    "--max_completion_length", "16", "--save_strategy", "no",
                    "--report_to", "none", "--max_steps", "1", "--phase", "easy"], before_train=check)
    first, later = lengths
    assert max(later) <= 6 < max(first) <= 16  # random weights write to the cap, unless they hit a stop token
    short, long = rows
    assert set(short[6:]) <= set(pad_ids) and len(long) <= 14


def test_episode_budget_is_what_the_rows_left_of_their_prompt_may_still_keep() -> None:
    budget = generation.EpisodeBudget(10)
    assert budget.remaining([[1, 2, 3], [1, 2, 3], [7, 8]]) is None  # a first turn: its rows are the prompts
    assert budget.remaining([[1, 2, 3, 4, 5, 6], [7, 8, 9]]) == [7, 9]  # 3 and 1 used
    assert budget.remaining([[1, 2, 3], [7, 8]]) == [10, 10]  # the same prompts again, nothing used yet
    assert budget.remaining([[5, 5], [1, 2, 3]]) is None  # a new prompt: a new rollout
    assert budget.remaining([[1, 2, 3, 0] + [0] * 10]) == [-1]  # more than the budget used: nothing left


def test_a_capped_turn_gives_the_trainer_its_full_length_back_even_when_generation_fails() -> None:
    from types import SimpleNamespace

    seen: list[int] = []

    def generate(prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> Any:
        seen.append(trainer.generation_config.max_new_tokens)
        if len(prompt_ids[0]) == 9:
            raise RuntimeError("out of memory (simulated)")
        return [[0]] * len(prompt_ids), None

    trainer = SimpleNamespace(max_completion_length=8, generation_config=SimpleNamespace(max_new_tokens=8),
                              _generate_single_turn=generate)
    generation.cap_turns(trainer)
    trainer._generate_single_turn([[1, 2]], None, {}, 2)
    trainer._generate_single_turn([[1, 2, 3, 4]], None, {}, num_generations=1)  # 2 used: 6 left
    with pytest.raises(RuntimeError):
        trainer._generate_single_turn([[1, 2, 3, 4, 5, 6, 7, 8, 9]], None, {}, num_generations=1)  # 7 used
    trainer._generate_single_turn([[1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9]], None, {}, num_generations=1)  # all used
    assert seen == [8, 6, 1, 1] and trainer.generation_config.max_new_tokens == 8


@pytest.mark.slow
def test_one_generation_mode_per_rollout_enters_it_once_and_changes_no_token_mask_or_reward(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib

    entries: list[int] = []

    def count_generation_contexts(trainer: Any) -> None:
        namespace = type(trainer)._generate_single_turn.__globals__
        current = namespace["unwrap_model_for_generation"]
        scope = current.__self__ if isinstance(getattr(current, "__self__", None), generation.GenerationScope) else None
        per_turn = scope.per_turn if scope is not None else current
        if getattr(per_turn, "counts_entries", False):  # the first run's counter, which the scope took up
            return

        @contextlib.contextmanager
        def counted(*args: Any, **kwargs: Any) -> Any:
            entries.append(1)
            with per_turn(*args, **kwargs) as model:
                yield model

        counted.counts_entries = True  # type: ignore[attr-defined]
        if scope is not None:
            monkeypatch.setattr(scope, "per_turn", counted)
        else:
            monkeypatch.setitem(namespace, "unwrap_model_for_generation", counted)

    per_turn = scored_batches(tmp_path / "per-turn", runaway=True, before_train=count_generation_contexts)
    turns = len(entries)
    entries.clear()
    per_rollout = scored_batches(tmp_path / "per-rollout", "--generation_mode_per_rollout", "true", runaway=True,
                                 before_train=count_generation_contexts)
    assert per_rollout == per_turn  # the same ids, masks and rewards
    assert turns == 6 and len(entries) == 1  # six turns (five calls and the closing text), one rollout
    # Every step's log line says where its generation time went: six calls, their seconds and share.
    (step,) = [line for line in read_jsonl(tmp_path / "per-turn" / "easy" / "metrics.jsonl") if "loss" in line]
    assert step["rollout/generation_calls"] == 6 and 0 < step["rollout/generation_share"] <= 1
    assert 0 < step["rollout/generation_s"] < step["step_time"]
    generated = sum(mask * tool for masks, tools in zip(per_turn[0]["completion_mask"], per_turn[0]["tool_mask"],
                                                        strict=True) for mask, tool in zip(masks, tools, strict=True))
    assert step["rollout/generated_tokens"] == generated  # the model's own tokens TRL trained on, all timed
    assert 0 < step["rollout/longest_turn_tokens"] < generated


# --- settings that tell the truth, and bad input refused before any work -------------------------


def test_a_model_path_that_does_not_exist_is_an_error_not_embedded_mode(tmp_path: Path) -> None:
    with pytest.raises(train.SetupError, match=f"--model {tmp_path / 'qc'}: no such folder"):
        train.main(["--model", str(tmp_path / "qc"), "--output_dir", str(tmp_path / "out"), "--dry-run"])
    assert not (tmp_path / "out").exists()  # nothing built, fetched or written


def test_yaml_values_are_the_users_choices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("max_completion_length: 40\nnum_train_epochs: 3\nmax_questions: 3\n")
    agent, grpo, explicit = train.parse_config(["--config", str(config)])
    assert {"max_completion_length", "num_train_epochs", "max_questions"} <= explicit
    train.main(["--config", str(config), "--model", TINY_MODEL, "--output_dir", str(tmp_path / "out"), "--dry-run"])
    output = capsys.readouterr().out
    assert "completions of 40 tokens" in output and "3 questions" in output  # embedded mode kept them
    assert "--num_train_epochs 3 replaces the phase's 1" in output and "3 epoch(s)" in output


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num_generations", "0"], "--num_generations must be at least 2"),
        (["--num_generations", "1", "--gradient_accumulation_steps", "1"], "--num_generations must be at least 2"),
        (["--max_completion_length", "0"], "--max_completion_length must be at least 1"),
        (["--steps_per_generation", "0"], "--steps_per_generation must be at least 1"),
        (["--num_iterations", "0"], "--num_iterations must be at least 1"),
        (["--temperature", "0"], "--temperature must be above 0"),
        (["--phase", "sft", "--sft_hardness", "bogus"], "--sft_hardness takes one or more of easy, medium, hard, extra"),
        (["--num_train_epochs", "0"], "--num_train_epochs must be above 0"),
        (["--fewshot_retire_after_epochs", "-1"], "--fewshot_retire_after_epochs is a number of curriculum epochs"),
        (["--gradient_accumulation_steps", "4", "--steps_per_generation", "6"], "one must divide the other"),
        (["--post_episode_penalty", "-0.1"], "--post_episode_penalty is subtracted per call"),
        (["--no_answer_penalty", "-0.1"], "--no_answer_penalty is subtracted: give 0 or more"),
        (["--data_dir", "/nowhere/spider"], "no data folder at /nowhere/spider"),
        (["--data-dir", "/nowhere/spider"], "no data folder at /nowhere/spider"),
    ],
)
def test_bad_settings_are_refused_before_any_work(tmp_path: Path, argv: list[str], message: str) -> None:
    with pytest.raises(train.SetupError, match=message):
        train.main(["--output_dir", str(tmp_path / "out"), *argv])
    assert not (tmp_path / "out").exists()


def test_the_warm_up_reads_hardness_names_as_the_data_loader_does() -> None:
    agent, _, _ = train.parse_config(["--phase", "sft", "--sft_hardness", "Easy", "MEDIUM"])
    assert agent.sft_hardness == ["Easy", "MEDIUM"]  # any case, as spider_data.parse_hardness reads them


def test_bad_settings_exit_with_a_message_not_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "train.py", "--num_generations", "0", "--output_dir", str(tmp_path)],
                            capture_output=True, text=True, cwd=Path(train.__file__).parent, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    # The error is the first line, not under the libraries' import-time notices (library_noise).
    assert result.stderr.startswith("train.py: error: --num_generations must be at least 2"), result.stderr


@pytest.mark.slow
def test_train_config_json_is_the_config_that_ran_even_after_a_retry(tmp_path: Path) -> None:
    import torch

    made: list[Any] = []

    def first_runs_out_of_memory(trainer: Any) -> None:
        made.append(trainer)
        if len(made) == 1:
            def out_of_memory(**kwargs: Any) -> None:
                raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
            trainer.train = out_of_memory

    run_phase(tmp_path, "--phase", "easy", "--max_steps", "1", before_train=first_runs_out_of_memory)
    saved = json.loads((tmp_path / "easy" / "train_config.json").read_text())
    assert len(made) == 2 and saved["grpo"]["max_completion_length"] == 384  # the retry's length
    assert saved["grpo"]["max_tool_calling_iterations"] == 12 and saved["grpo"]["reward_weights"] == [0.0]
    assert saved["grpo"]["num_train_epochs"] == 1.0 and saved["phase"]["name"] == "easy"
    tool_call_end = 151658  # Qwen3's </tool_call>: the stop rule ends turns there
    assert tool_call_end in saved["generation_eos_token_ids"]


def test_generation_times_are_per_optimizer_step_whatever_the_logging_interval() -> None:
    from training_logs import GenerationTimes

    times = GenerationTimes()
    times.add_steps(1, 5.0)
    assert times.per_step() == {}  # no generation since the last log line: nothing claimed
    times = GenerationTimes()
    for seconds, lengths in ((1.0, [10, 30]), (0.5, [5, 5]), (2.5, [40, 1])):
        times.add(seconds, lengths)
    times.add_steps(2, 4.0)  # two optimizer steps in one log line
    metrics = times.per_step()
    assert metrics["rollout/generation_calls"] == 1.5 and metrics["rollout/generation_s"] == 2.0
    assert metrics["rollout/generated_tokens"] == 45.5 and metrics["rollout/longest_turn_tokens"] == 40
    assert metrics["rollout/generation_share"] == 0.5
    # rows x decode steps: 2 x 30 + 2 x 5 + 2 x 40 = 150 row-steps for 91 tokens kept
    assert metrics["rollout/ended_row_share"] == pytest.approx(1 - 91 / 150)
    assert "rollout/episodes_per_s" not in metrics  # no episode scored: no speed claimed
    times.episodes = 12
    assert times.per_step()["rollout/episodes_per_s"] == 1.5  # 12 episodes over two steps of 4 s


def test_a_generation_batch_that_trains_several_steps_is_timed_over_all_of_them() -> None:
    from training_logs import GenerationTimes

    times = GenerationTimes()
    times.add(6.0, [20] * 12)
    times.episodes = 12
    for step_time in (8.0, 2.0, 2.0):  # the step that generated, then two that train on its episodes
        times.add_steps(1, step_time)
    metrics = times.per_step()
    assert metrics["rollout/episodes_per_s"] == 1.0  # 12 episodes in 12 s, not 12 in the first step's 8
    assert metrics["rollout/generation_share"] == 0.5 and metrics["rollout/generation_s"] == 2.0
    times.add_steps(1, None)  # a step logged without its time: no speed claimed rather than a wrong one
    assert "rollout/episodes_per_s" not in times.per_step()


def test_the_run_summary_names_episodes_per_second_after_the_warm_up_step() -> None:
    from training_logs import run_summary

    history = [{"step_time": 30.0, "rollout/episodes_per_s": 0.2, "reward": 0.1},
               {"step_time": 3.0, "rollout/episodes_per_s": 2.0, "reward": 0.3},
               {"step_time": 2.0, "rollout/episodes_per_s": 3.0, "reward": 0.5}]
    summary = run_summary(history)
    assert "3 steps" in summary and "median step time 2.50 s" in summary and "2.50 episodes/s" in summary


def test_a_run_whose_episodes_end_on_unreadable_calls_says_so() -> None:
    from training_logs import unreadable_calls_note

    steps = [{"episode/unreadable_call_end": 0.0}] * 18 + [{"episode/unreadable_call_end": 0.0625}] * 2
    note = unreadable_calls_note(steps)
    assert note is not None and note.startswith("NOTE: 6% of the episodes in the last 2 of 20 steps ended on a tool "
                                                "call the parser could not read")
    assert unreadable_calls_note(steps[:9]) is None  # too short to say
    assert unreadable_calls_note([{"episode/unreadable_call_end": 0.02}] * 20) is None  # the usual few
    assert unreadable_calls_note([{"reward": 0.5}] * 20) is None  # logged before the metric existed


def test_a_run_that_trained_mostly_on_alike_groups_near_its_end_says_what_to_try() -> None:
    from training_logs import ZERO_ADVANTAGE as ZERO
    from training_logs import alike_groups_note

    plain = [{ZERO: 0.1}] * 18 + [{ZERO: 0.5}] * 2
    note = alike_groups_note(plain)
    assert note is not None and note.startswith("NOTE: 50% of the groups trained on in the last 2 of 20 steps")
    assert "--oversample_groups 8" in note
    assert alike_groups_note(plain[:9]) is None  # too short to say
    assert alike_groups_note([{ZERO: 0.2}] * 20) is None  # at the target
    # oversampled: what was trained on counts, not what was generated
    oversampled = [{ZERO: 0.5, "oversample/trained_zero_advantage_share": 0.1}] * 20
    assert alike_groups_note(oversampled) is None
    # TRL's own share tests the batch's spread under scale_rewards='batch' (0.0 there): each group's own is read
    assert alike_groups_note([{"frac_reward_zero_std": 0.0, ZERO: 0.5}] * 20) is not None
    oversampled[-1] = {ZERO: 0.9, "oversample/trained_zero_advantage_share": 0.7}
    assert "more extra groups (--oversample_groups)" in str(alike_groups_note(oversampled))
    # Mostly all right near the end: questions of that kind are fitted, and harder ones are what to try.
    assert "hard and extra" not in str(note)
    fitted = [{ZERO: 0.7, "episode/groups_all_correct": 0.6}] * 20
    assert "60% were all right: the model has fitted questions of this kind" in str(alike_groups_note(fitted))
    assert "hard and extra classes" in str(alike_groups_note(fitted))
    # A guided phase over hard and extra questions already is what that advice names: it is left out.
    guided_all = [{**step, "guide/guided_share": 0.1, "accuracy/hard": 0.7} for step in fitted]
    assert "were all right" in str(alike_groups_note(guided_all))
    assert "hard and extra classes" not in str(alike_groups_note(guided_all))
    assert "hard and extra classes" in str(alike_groups_note([{**step, "accuracy/hard": 0.7} for step in fitted]))
    assert "were all right" not in str(alike_groups_note([{ZERO: 0.7, "episode/groups_all_correct": 0.2}] * 20))
    # Many all wrong: oracle guidance is what to try, unless the run already had it.
    unsolved = [{ZERO: 0.5, "episode/groups_none_correct": 0.3}] * 20
    assert "30% were all wrong: --guide_unsolved" in str(alike_groups_note(unsolved))
    assert "--guide_unsolved" not in str(alike_groups_note([{**step, "guide/guided_share": 0.3} for step in unsolved]))
    assert "--guide_unsolved" not in str(alike_groups_note([{ZERO: 0.5, "episode/groups_none_correct": 0.05}] * 20))


def test_a_guided_run_says_how_many_groups_trained_on_the_oracles_episode() -> None:
    from training_logs import guidance_summary

    steps = [{"guide/guided_groups": 3.0, "guide/guided_share": 0.1875}, {"loss": 0.1},
             {"guide/guided_groups": 1.0, "guide/guided_share": 0.0625}]
    assert guidance_summary(steps) == ("oracle guidance: 4 all-wrong groups trained on the oracle's episode in one "
                                       "row, 12% of the groups of a step on average")
    assert guidance_summary([{"loss": 0.1}]) is None
    # Unsolved groups whose oracle episode does not fit the completion budget are counted, and a run that could
    # guide none of its unsolved groups for that reason is warned.
    cut = [{**step, "guide/too_long_groups": 2.0} for step in steps if "guide/guided_groups" in step]
    assert guidance_summary(cut).endswith("; 4 all-wrong groups left unguided, their oracle episode longer than "
                                          "--max_completion_length")
    none = [{"guide/guided_groups": 0.0, "guide/guided_share": 0.0, "guide/too_long_groups": 9.0}]
    assert str(guidance_summary(none)).startswith("WARNING: oracle guidance: 0 all-wrong groups")
    assert str(guidance_summary(none)).endswith("(raise it to guide them)")


def test_a_run_whose_advantages_went_mostly_to_shaping_differences_says_so() -> None:
    from training_logs import shaping_weight_note

    steps = [{"episode/shaping_only_advantage": 0.1}] * 18 + [{"episode/shaping_only_advantage": 0.4}] * 2
    note = shaping_weight_note(steps)
    assert note is not None and note.startswith("NOTE: 40% of the advantage weight in the last 2 of 20 steps")
    assert "--scale_rewards batch" in note
    assert shaping_weight_note(steps[:18] + steps[:2]) is None  # 10%: under the line
    assert shaping_weight_note([{"reward": 0.5}] * 20) is None  # logged before the share existed


def test_a_run_that_could_not_learn_says_so() -> None:
    from training_logs import ZERO_ADVANTAGE, RunTotals, learned_nothing_warnings

    silent = RunTotals(episodes=16)
    flat = [{"grad_norm": 0.0, "reward": 0.0}, {"grad_norm": 0.0, "reward": 0.0}]
    no_calls, zero_gradient = learned_nothing_warnings(flat, silent)
    assert "no tool call in any of 16 episodes" in no_calls and "--phase sft" in no_calls
    assert "gradient was 0 in all 2 steps, so the LoRA did not move" in zero_gradient  # no share logged: no cause
    flat_groups = [{**entry, ZERO_ADVANTAGE: 1.0} for entry in flat]
    assert "scored alike in every step" in learned_nothing_warnings(flat_groups, silent)[1]
    moving = [{"grad_norm": 0.0}, {"grad_norm": 0.31}]
    assert learned_nothing_warnings(moving, RunTotals(episodes=16, tool_calls=40)) == []



def test_gpu_memory_accounting_frees_the_cache_then_restarts_the_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    from training_logs import start_gpu_memory_accounting

    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("empty_cache"))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda *args: calls.append("reset_peak"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    start_gpu_memory_accounting()
    assert calls == []  # no GPU: nothing to do
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    start_gpu_memory_accounting()
    assert calls == ["empty_cache", "reset_peak"]  # the peak restarts from what stays reserved after the free


def test_a_phase_starts_its_own_gpu_memory_peak_before_loading(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The learning proof trains after evals in one process: a phase's logged peak must not be theirs.
    calls: list[str] = []
    load_model = train.load_model
    monkeypatch.setattr(train, "start_gpu_memory_accounting", lambda: calls.append("accounting"))

    def recorded_load_model(*args: Any, **kwargs: Any) -> Any:
        calls.append("load")
        return load_model(*args, **kwargs)

    monkeypatch.setattr(train, "load_model", recorded_load_model)
    run_phase(tmp_path, "--phase", "easy", "--max_steps", "1")
    assert calls == ["accounting", "load"]


def test_groups_without_variance_are_told_apart_by_whether_all_or_none_solved_it() -> None:
    from training_logs import solved_group_shares

    correct = [True, True, True, False, False, False, True, False, False]  # groups of 3: all, none, mixed
    assert solved_group_shares(correct, 3) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert solved_group_shares([], 3) == (0.0, 0.0)


def test_a_group_all_wrong_whose_shaping_differs_weighs_as_much_as_one_with_a_right_answer_under_group_scaling(
) -> None:
    from training_logs import shaping_only_shares

    # groups of 3: one right answer; all wrong, one of them saw the gold result; all right alike (no spread)
    correct = [True, False, False, False, False, False, True, True, True]
    rewards = [1.07, 0.02, 0.02, 0.07, 0.02, 0.02, 1.07, 1.07, 1.07]
    grouped = shaping_only_shares(rewards, correct, 3, "group")
    assert grouped.groups == pytest.approx(1 / 3)
    assert grouped.advantage == pytest.approx(1 / 2, rel=1e-2)  # the same shape of rewards over its own spread
    # divided by one number for the whole batch, the groups weigh as their reward differences: 0.05 against 1.05
    for scale in ("batch", "none"):
        assert shaping_only_shares(rewards, correct, 3, scale).advantage == pytest.approx(0.05 / 1.10, rel=1e-3)
    assert shaping_only_shares([1.07] * 3, [True] * 3, 3, "group") == shaping_only_shares([], [], 3, "group")


# --- the documented workflow: help, config files, a second run, a phase after the warm-up ---------------


def test_help_lists_the_config_file_and_the_hub_flag() -> None:
    parser = command_line.build_parser(train.AgentConfig, train.AgentGRPOConfig, train.GRPO_DEFAULTS)
    help_text = " ".join(parser.format_help().split())  # argparse wraps lines
    assert "--config RUN.YAML" in help_text and "--hub_repo REPO, --hub-repo REPO" in help_text
    (hub_repo,) = [action for action in parser._actions if action.dest == "hub_repo"]
    assert "--push-to-hub REPO means the same" in hub_repo.help
    # argparse reads '%' in a help text as a format: a bare "9% shorter" printed the flag's whole definition.
    assert "option_strings" not in help_text


def test_every_flag_in_the_readme_table_is_one_train_py_takes() -> None:
    import re

    readme = (Path(train.__file__).parent / "README.md").read_text(encoding="utf-8")
    parser = command_line.build_parser(train.AgentConfig, train.AgentGRPOConfig, train.GRPO_DEFAULTS)
    options = {option for action in parser._actions for option in action.option_strings}
    rows = [line for line in readme.splitlines() if line.startswith("| `--")]
    flags = [flag for row in rows for flag in re.findall(r"`(--[\w-]+)", row.split("|")[1])]
    assert len(flags) > 20 and not [flag for flag in flags if flag not in options]
    # The repo to push to has one name in the README, the help and the error messages; --push-to-hub is TRL's
    # yes/no flag, which train.py reads as --hub_repo only when a repo name follows it.
    assert "| `--hub_repo REPO`" in readme and "`--push-to-hub REPO`" not in readme.split("| `--hub_repo")[0]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("num_generation: 6\n", r"run.yaml: unknown key 'num_generation' \(did you mean num_generations\?\)"),
        ("num_generations: six\n", r"run.yaml: num_generations: 'six' is not a whole number"),
        ("num_generations: 6.5\n", r"run.yaml: num_generations: 6.5 is not a whole number"),
        ("learning_rate: fast\n", r"run.yaml: learning_rate: 'fast' is not a number"),
        ("stop_at_tool_call: maybe\n", r"run.yaml: stop_at_tool_call: 'maybe' is not true or false"),
        ("lr_scheduler_type: cosin\n", r"run.yaml: lr_scheduler_type: 'cosin' is not one of: linear, cosine,"),
        ("- phase: easy\n", r"run.yaml: expected `flag: value` lines \(a YAML mapping\), got a list"),
        ("phase: [easy\n", r"run.yaml: not valid YAML at line 2"),
    ],
    ids=["unknown key", "word for a number", "fraction for a whole number", "word for a float", "not a yes/no",
         "not a choice", "not a mapping", "not YAML"],
)
def test_config_file_mistakes_are_one_line_naming_the_file_and_the_key(tmp_path: Path, config: str,
                                                                        message: str) -> None:
    (tmp_path / "run.yaml").write_text(config)
    with pytest.raises(train.SetupError, match=message) as error:
        train.main(["--config", str(tmp_path / "run.yaml"), "--output_dir", str(tmp_path / "out"), "--dry-run"])
    assert "\n" not in str(error.value)  # one line, not a usage text


def test_a_config_file_of_right_values_is_taken_whole(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("num_generations: 2\nlearning_rate: 1e-4\nstop_at_tool_call: false\n"
                                       "lr_scheduler_type: cosine\nsft_hardness: [easy, medium]\nreport_to: none\n"
                                       "max_questions: null\nenv:\n  SPIDER_GRPO_TEST: 'yes'\n")
    agent, grpo, _ = train.parse_config(["--config", str(tmp_path / "run.yaml"), "--gradient_accumulation_steps", "2"])
    assert grpo.num_generations == 2 and grpo.learning_rate == 1e-4 and not agent.stop_at_tool_call
    assert agent.sft_hardness == ["easy", "medium"] and agent.max_questions is None


def test_a_command_line_flag_of_the_wrong_type_is_not_buried_under_the_usage(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        train.parse_config(["--num_generations", "six"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "invalid int value: 'six'" in lines[1], lines[:3]


def finished_run(directory: Path) -> Path:
    """A phase folder as a finished run leaves it: checkpoints, the final adapter, its records."""
    for name in ("checkpoint-2", "checkpoint-4", "adapter"):
        (directory / name).mkdir(parents=True)
    (directory / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    (directory / "metrics.jsonl").write_text('{"step": 4}\n')
    return directory


def test_a_second_run_starts_afresh_and_an_interrupted_one_must_be_resumed_or_moved(tmp_path: Path) -> None:
    agent, grpo, _ = train.parse_config(["--output_dir", str(tmp_path)])
    easy = select_phase(load_curriculum(agent.curriculum), "easy")[0]
    finished_run(tmp_path / "easy")
    assert output_folders.check_outputs(agent, grpo, easy) is None  # no checkpoint to resume from: a fresh run
    agent.resume = True
    assert output_folders.check_outputs(agent, grpo, easy) == tmp_path / "easy" / "checkpoint-4"
    agent.resume = False
    (tmp_path / "easy" / "adapter" / "adapter_model.safetensors").unlink()  # stopped before its end
    with pytest.raises(FileExistsError, match="holds an interrupted run .* pass --resume to continue it"):
        output_folders.check_outputs(agent, grpo, easy)


def test_an_earlier_run_is_moved_aside_whole_never_overwritten(tmp_path: Path) -> None:
    first = output_folders.move_earlier_run_aside(finished_run(tmp_path / "easy"))
    assert first is not None and first.parent == tmp_path and first.name.startswith("easy-")
    assert (first / "adapter" / "adapter_model.safetensors").read_bytes() == b"weights"
    assert not (tmp_path / "easy").exists()
    os.utime(finished_run(tmp_path / "easy") / "metrics.jsonl", (first.stat().st_mtime,) * 2)
    for path in (tmp_path / "easy").iterdir():
        os.utime(path, (first.stat().st_mtime,) * 2)
    os.utime(tmp_path / "easy", (first.stat().st_mtime,) * 2)
    second = output_folders.move_earlier_run_aside(tmp_path / "easy")  # the same time stamp: another name
    assert second is not None and second != first and second.exists() and first.exists()
    (tmp_path / "empty").mkdir()
    assert output_folders.move_earlier_run_aside(tmp_path / "empty") is None
    assert output_folders.move_earlier_run_aside(tmp_path / "missing") is None


def test_a_dry_run_says_it_would_move_an_earlier_run_and_moves_nothing(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    finished_run(tmp_path / "easy")
    train.main(["--output_dir", str(tmp_path), "--model", TINY_MODEL, "--dry-run"])
    assert "holds an earlier run: a real run would move it aside" in capsys.readouterr().out
    assert (tmp_path / "easy" / "adapter").is_dir()


@pytest.mark.slow
def test_the_first_command_run_twice_trains_twice_and_keeps_the_first(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    run_phase(tmp_path, "--phase", "easy", "--max_steps", "1")
    first_adapter = (tmp_path / "easy" / "adapter" / "adapter_model.safetensors").read_bytes()
    capsys.readouterr()
    run_phase(tmp_path, "--phase", "easy", "--max_steps", "1")
    output = capsys.readouterr().out
    (earlier,) = [path for path in tmp_path.iterdir() if path.name.startswith("easy-")]
    assert f"{tmp_path / 'easy'} held an earlier run: moved it to {earlier}; this run starts afresh" in output
    assert output.index("held an earlier run") < output.index("[train] phase easy")  # among the first lines
    assert (earlier / "adapter" / "adapter_model.safetensors").read_bytes() == first_adapter
    assert [entry["step"] for entry in read_jsonl(tmp_path / "easy" / "metrics.jsonl") if "loss" in entry] == [1]


def adapter_on(base: Path | str, directory: Path) -> Path:
    """An adapter folder whose config names its base model, as PEFT saves one (no weights needed to check)."""
    directory.mkdir(parents=True)
    (directory / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(base)}))
    return directory


def test_a_phase_from_an_adapter_loads_the_base_that_adapter_was_trained_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The embedded easy phase trains on the warm-up model: mixed must load that, not the raw SmolLM2 that
    embedded mode names (whichever model embedded mode picks here, the adapter's base wins)."""
    base = tmp_path / "warmed-up"
    import shutil

    shutil.copytree(TINY_MODEL, base)
    adapter_on(base, tmp_path / "out" / "easy" / "adapter")
    train.main(["--output_dir", str(tmp_path / "out"), "--phase", "mixed", "--dry-run"])
    log = capsys.readouterr().out
    assert f"start from the adapter {tmp_path / 'out' / 'easy' / 'adapter'} on {base}" in log
    assert f"the start adapter was trained on {base}: this phase loads that model, not " in log

    class Loaded(Exception):
        pass

    def load_model(agent: Any, *args: Any, **kwargs: Any) -> Any:
        raise Loaded(agent.model)

    monkeypatch.setattr(train, "load_model", load_model)
    with pytest.raises(Loaded, match=str(base)):
        train.main(["--output_dir", str(tmp_path / "out"), "--phase", "mixed"])


def test_a_model_that_is_not_the_adapters_base_is_refused_naming_both(tmp_path: Path) -> None:
    adapter = adapter_on(TINY_MODEL, tmp_path / "out" / "easy" / "adapter")
    other = tmp_path / "other-model"
    import shutil

    shutil.copytree(TINY_MODEL, other)
    with pytest.raises(train.SetupError, match=f"--model {other} is not the model the start adapter {adapter} was "
                                               f"trained on \\({TINY_MODEL}\\)"):
        train.main(["--output_dir", str(tmp_path / "out"), "--phase", "mixed", "--model", str(other), "--dry-run"])
    # The same folder, however it is written, is the same model.
    relative = os.path.relpath(TINY_MODEL)
    train.main(["--output_dir", str(tmp_path / "out"), "--phase", "mixed", "--model", relative, "--dry-run"])


def test_an_adapter_whose_base_is_gone_is_named_before_anything_loads(tmp_path: Path) -> None:
    adapter_on(tmp_path / "cleared-cache" / "sft" / "model", tmp_path / "out" / "easy" / "adapter")
    with pytest.raises(train.SetupError, match="was trained on .*cleared-cache/sft/model, which is no longer there"):
        train.main(["--output_dir", str(tmp_path / "out"), "--phase", "mixed", "--dry-run"])


@pytest.mark.parametrize("written", ["", '{"base_model_name_or_path": ', "[]"])
def test_a_damaged_adapter_config_is_named_before_anything_loads(tmp_path: Path, written: str) -> None:
    """An adapter cut short on its way between machines: the error names the file, not a bare JSON message."""
    adapter = adapter_on(TINY_MODEL, tmp_path / "out" / "easy" / "adapter")
    (adapter / "adapter_config.json").write_text(written, encoding="utf-8")
    with pytest.raises(train.SetupError, match=f"start adapter's {adapter / 'adapter_config.json'} "
                                               "(is not readable JSON|holds no settings)"):
        train.main(["--output_dir", str(tmp_path / "out"), "--phase", "mixed", "--dry-run"])


def test_the_log_names_the_warm_up_an_embedded_phase_starts_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(train.models, "fetched_source", lambda path: {"name": "tiny-fetched", "gguf_sha256": "0"})
    monkeypatch.setattr(train.models, "model_cache_dir", lambda: tmp_path / "cache" / "models")
    train.main(["--output_dir", str(tmp_path / "out"), "--model", TINY_MODEL, "--embedded", "--dry-run"])
    warmup = embedded.embedded_warmup_dir(train.parse_config(["--model", TINY_MODEL])[0])
    assert warmup.is_relative_to(tmp_path / "cache" / "warmups")
    assert f"start from the warm-up of {Path(TINY_MODEL).name} at {warmup} (trained first)" in capsys.readouterr().out


def test_the_curves_count_steps_in_whole_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    from training_logs import plot_training_curves

    saved: list[Figure] = []
    savefig = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: (saved.append(figure),
                                                                           savefig(figure, *args, **kwargs)))
    history = [{"step": 1, "reward": 0.1, "loss": 0.0}, {"step": 2, "reward": 0.3, "loss": 0.1}]  # an embedded run
    plot_training_curves(history, tmp_path / "curves.png")
    ticks = [tick for axis in saved[0].axes if axis.get_visible() for tick in axis.get_xticks()]
    assert ticks and all(float(tick).is_integer() for tick in ticks)


def test_the_model_card_names_a_local_base_model(tmp_path: Path) -> None:
    from training_logs import model_card

    card = model_card(TINY_MODEL, "mixed", ("easy", "medium"), tmp_path / "easy" / "adapter")
    assert "[None]" not in card and f"`{TINY_MODEL}` (a local folder)" in card
    assert f"base_model: {TINY_MODEL}" in card
    assert f"starting from the adapter `{tmp_path / 'easy' / 'adapter'}`" in card
    assert "[Qwen/Qwen3-1.7B](https://huggingface.co/Qwen/Qwen3-1.7B)" in model_card("Qwen/Qwen3-1.7B", "easy",
                                                                                       ("easy",), None)


def test_the_readme_says_embedded_runs_write_no_tensorboard_logs() -> None:
    readme = (Path(train.__file__).parent / "README.md").read_text(encoding="utf-8")
    assert embedded.EMBEDDED_OVERRIDES["report_to"] == "none" and "embedded mode writes none" in " ".join(readme.split())


def test_the_embedded_model_warms_up_every_weight_and_another_fetched_model_a_lora(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent, grpo, explicit = train.parse_config(["--model", TINY_MODEL, "--max_questions", "2", "--sft_epochs", "1",
                                                "--output_dir", str(tmp_path / "out")])
    monkeypatch.setattr(train.models, "model_cache_dir", lambda: tmp_path / "cache" / "models")
    settings, rate = embedded.warmup_recipe(embedded.EMBEDDED_MODEL)
    assert (settings["sft_full_finetune"], rate) == (True, embedded.EMBEDDED_WARMUP_LEARNING_RATE)
    settings, rate = embedded.warmup_recipe("qwen2.5-coder-0.5b-instruct")
    assert (settings["sft_full_finetune"], rate) == (False, sft.SFT_LEARNING_RATE)
    monkeypatch.setattr(train.models, "fetched_source", lambda path: {"name": "qwen2.5-coder-0.5b-instruct"})
    monkeypatch.setattr(embedded, "LORA_WARMUP", {**embedded.LORA_WARMUP, "max_questions": 2, "sft_epochs": 1.0})
    warmed = embedded.embedded_warmup_model(agent, grpo, explicit, train.load_model)
    assert (warmed / "config.json").is_file() and not (warmed / "adapter_config.json").exists()  # merged, whole
    assert (warmed.parent / output_folders.ADAPTER_DIRNAME / "adapter_config.json").is_file()  # the LoRA it came from


def test_the_curves_show_the_requery_share_and_speed_where_a_run_logged_them(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    from training_logs import PLOTTED_METRICS, plot_training_curves

    saved: list[Figure] = []
    savefig = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda figure, *args, **kwargs: (saved.append(figure),
                                                                           savefig(figure, *args, **kwargs)))
    history = [{"step": 1, "reward": 0.1, "episode/requery_after_refusal": 0.0},
               {"step": 2, "reward": 0.3, "rollout/episodes_per_s": 4.0},  # a step without a refused query
               {"step": 3, "reward": 0.4, "episode/requery_after_refusal": 0.5, "rollout/episodes_per_s": 5.0}]
    plot_training_curves(history, tmp_path / "curves.png")
    titles = {axis.get_title() for axis in saved[0].axes if axis.get_visible()}
    assert titles == {PLOTTED_METRICS[key] for key in ("reward", "episode/requery_after_refusal",
                                                       "rollout/episodes_per_s")}


def test_a_model_whose_lora_cannot_be_folded_stops_with_what_to_do(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import merged_generation

    def refuse(model: Any) -> None:
        raise merged_generation.MergedGenerationError("--merged_generation folds LoRA into whole 16- or 32-bit "
                                                      "weights; leave out --load_in_4bit")

    monkeypatch.setattr(merged_generation.MergedGeneration, "of", staticmethod(refuse))
    with pytest.raises(train.SetupError, match="leave out --load_in_4bit"):
        run_phase(tmp_path, "--phase", "easy", "--merged_generation", "true", "--max_steps", "1")


def test_by_default_every_turn_generates_folded_and_training_sees_the_lora_attached(
        tmp_path: Path) -> None:
    seen: dict[str, Any] = {"turns": []}

    def record(trainer: Any) -> None:
        model = trainer.accelerator.unwrap_model(trainer.model_wrapped)
        lora_layers = [module for module in model.modules() if isinstance(getattr(module, "merged_adapters", None), list)]
        seen["layers"], seen["pointers"] = lora_layers, [layer.base_layer.weight.data_ptr() for layer in lora_layers]
        generate_turn = trainer._generate_single_turn

        def watched(*args: Any, **kwargs: Any) -> Any:
            seen["turns"].append(all(layer.merged_adapters for layer in lora_layers))
            return generate_turn(*args, **kwargs)

        trainer._generate_single_turn = watched

    run_phase(tmp_path, "--phase", "easy", "--max_steps", "1", before_train=record)  # the default folds
    assert seen["layers"] and seen["turns"] and all(seen["turns"])  # every turn of the rollout, folded
    assert not any(layer.merged_adapters for layer in seen["layers"])  # and training saw the adapters attached
    assert [layer.base_layer.weight.data_ptr() for layer in seen["layers"]] == seen["pointers"]


def test_an_embedded_warm_up_phase_trains_as_the_phases_cached_warm_up_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`--phase sft` in embedded mode takes the embedded warm-up's recipe (not the embedded run's 2 questions at a
    GPU warm-up's settings, which taught SmolLM2 nothing); what the user sets wins."""
    monkeypatch.setattr(train.models, "fetched_source", lambda path: {"name": embedded.EMBEDDED_MODEL})
    argv = ["--phase", "sft", "--model", TINY_MODEL, "--embedded", "--dry-run", "--output_dir", str(tmp_path / "out")]
    train.main(argv)
    assert f"[train] dry run: {embedded.EMBEDDED_WARMUP['max_questions']} oracle episodes" in capsys.readouterr().out
    train.main([*argv, "--max_questions", "5"])
    assert "[train] dry run: 5 oracle episodes" in capsys.readouterr().out
    agent, grpo, explicit = train.parse_config([*argv, "--sft_hardness", "medium"])
    warm_up, warm_up_grpo, given = embedded.embedded_phase_sft(agent, grpo, explicit)
    assert (warm_up.sft_full_finetune, warm_up.max_questions, warm_up.sft_hardness) == (True, 16, ["medium"])
    assert warm_up_grpo.learning_rate == embedded.EMBEDDED_WARMUP_LEARNING_RATE and "learning_rate" in given
