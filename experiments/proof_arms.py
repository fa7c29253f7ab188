"""The learning proof's arms: which phase each one trains, from which arm's adapter, with which flags, and which
full setting each ablation is compared with. The runner (learning_proof.py) runs them; the report
(proof_report.py) orders its rows by them and pairs each ablation with its full setting. Nothing here imports
the trainer, so the report needs no training stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MIXED_ONLY_CURRICULUM = Path(__file__).resolve().parent / "mixed_only.yaml"
MIXED_ALL_CURRICULUM = Path(__file__).resolve().parent / "mixed_all.yaml"
# The mixed phase over all four classes on questions its warm-up did not train on, a group's signal in its answers
# (--group_signal answers --scale_rewards batch): the arms below that add guidance or change the warm-up share it.
ALL_CLASSES_ON_ANSWERS = ("--curriculum", str(MIXED_ALL_CURRICULUM), "--sampling", "informative", "--learning_rate",
                          "5e-5", "--group_signal", "answers", "--scale_rewards", "batch", "--skip_warmup_questions")
MAIN_LINE = ("base", "sft", "easy", "mixed")
# What train.py does without flags that the arms measured before those defaults must name to keep their meaning
# (learning_proof.train_argv adds --sampling plain and --guide_unsolved false to an arm that names neither).
TRAIN_PY_DEFAULTS = ("--sampling", "informative", "--guide_unsolved")
# The penalty needs something to act on: after the plain warm-up no model calls a tool once it has answered (0
# post-episode calls in every training episode of every GRPO arm, 2026-12-01..02), so no-penalty from it would
# train on exactly the rewards of the full setting. This line starts from a warm-up that learned the first run's
# habit on a share of its episodes (train.py --sft_never_stop_share), and asks whether the penalty removes it.
# More than half: the evals decode greedily, so a habit learned at under 50% would not show on held-out at all;
# sampled at temperature 1 in training, some of a group's completions stop and some go on, which is what gives the
# penalty an advantage to act on (a habit every completion has costs the whole group alike and teaches nothing).
HABIT_SHARE = 0.6
RETRY_SHARE = 0.25  # the warm-up episodes that show a failed query and its retry (sft.py --sft_retry_share)
# Rollouts through an in-process vLLM engine (Unsloth's), as benchmarks/gpu_backends.py's `vllm` variant: the stop
# rule is vLLM's, the per-turn cap (--max_turn_tokens, 256 since 2026-12-06e) is vLLM's max_tokens, and the cap at
# the episode's remaining budget does not apply there (docs/vllm.md, item 5).
VLLM_ROLLOUTS = ("--fast_inference", "true", "--cap_turns_at_budget", "false")


@dataclass(frozen=True)
class Arm:
    """One run: which phase, from which arm's adapter (None: the base model), with which extra flags."""

    name: str
    phase: str | None  # None: no training (the base model is evaluated as it is)
    start_from: str | None
    steps_of: str  # which Scale field gives the number of steps
    flags: tuple[str, ...] = ()
    # An ablation's full-setting arm: the one it is compared with, from the same warm-up (same seed and scale).
    ablates: str | None = None
    # A warm-up's questions, as a multiple of its scale's (Scale.sft_questions).
    warm_up_questions_times: int = 1
    # Optimizer steps each generation batch trains (batching.py): the scale's step of episodes split into this many,
    # so the arm trains on the same episodes in this many times the steps. Divides the group size.
    optimizer_steps_per_generation: int = 1
    # Passes over the phase's questions, as a multiple of its scale's steps (the scale's --mixed-steps 30 is one pass
    # of the epoch scale's 467 mixed questions; 2: the plan's two mixed epochs). More episodes than a one-pass arm,
    # so it ablates only an arm of as many steps; the report pairs it with its one-pass arm question by question.
    steps_times: int = 1
    # The phase's questions (--max_questions), as a multiple of its scale's: with steps_times 2, one pass over twice
    # the questions, the episodes of two passes over the scale's.
    questions_times: int = 1
    # Why its recorded runs cannot be run again from this tree (what its flags meant then, and at which commit);
    # the arm stays so that the report can show them. None: it runs.
    retired: str | None = None


# The default recipe's guided mixed phase (configs/mixed_guided.yaml) from the all-classes warm-up: half a pass over
# twice the scale's questions. Its levers are arms paired with it.
GUIDED_ALL_CLASSES = "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x"


def guided_all_classes_with(name: str, *flags: str, questions_times: int = 2) -> Arm:
    """The arm ``name``: GUIDED_ALL_CLASSES with ``flags`` added, from the same warm-up, paired with it (over
    ``questions_times`` the scale's questions: its own two unless the lever needs a larger pool)."""
    return Arm(name, "mixed", "sft-4x-all", "mixed_steps", (*ALL_CLASSES_ON_ANSWERS, "--guide_unsolved", *flags),
               ablates=GUIDED_ALL_CLASSES, steps_times=2, questions_times=questions_times)


ARMS = {
    "base": Arm("base", None, None, "easy_steps"),
    "sft": Arm("sft", "sft", None, "easy_steps"),
    "easy": Arm("easy", "easy", "sft", "easy_steps"),
    "mixed": Arm("mixed", "mixed", "easy", "mixed_steps"),
    "ng4": Arm("ng4", "easy", "sft", "easy_steps", ("--num_generations", "4"), ablates="easy"),
    "no-penalty": Arm("no-penalty", "easy", "sft", "easy_steps", ("--post_episode_penalty", "0"), ablates="easy"),
    "no-fewshot": Arm("no-fewshot", "easy", "sft", "easy_steps", ("--fewshot_examples", "0"), ablates="easy"),
    "no-sft": Arm("no-sft", "easy", None, "easy_steps", ablates="easy"),
    "mixed-only": Arm("mixed-only", "mixed", "sft", "mixed_only_steps",
                      ("--curriculum", str(MIXED_ONLY_CURRICULUM)), ablates="mixed"),
    # The sampler's comparison: a question whose last group scored alike waits (sampling.py); mixed carries the easy
    # phase's history, so questions the easy epoch settled are the first to wait.
    "mixed-informative": Arm("mixed-informative", "mixed", "easy", "mixed_steps", ("--sampling", "informative"),
                             ablates="mixed"),
    # Two mixed epochs with the sampler taught the model to end with "Done." after a query that returned no rows
    # (answered 93% -> 81% held-out, seed 23): unanswered earned what a wrong answer earns. This arm makes giving up
    # cost 0.1, as a tool call after the episode does.
    "mixed-informative-answer": Arm("mixed-informative-answer", "mixed", "easy", "mixed_steps",
                                    ("--sampling", "informative", "--no_answer_penalty", "0.1"),
                                    ablates="mixed-informative"),
    # DAPO's dynamic sampling (dynamic_sampling.py): 24 groups generated a step, the 16 with reward spread trained on
    # first. At the 41-44% of alike groups the mixed phase had, about 13 of 24 have spread: the trained share of
    # alike groups comes near the 20% target at 1.5x the generated rows.
    "mixed-oversample": Arm("mixed-oversample", "mixed", "easy", "mixed_steps", ("--oversample_groups", "8"),
                            ablates="mixed"),
    # The easy epoch without oversampling kept 28% alike groups (31% in its last tenth, seed 25): the same 8 extra
    # groups a step there.
    "easy-oversample": Arm("easy-oversample", "easy", "sft", "easy_steps", ("--oversample_groups", "8"),
                           ablates="easy"),
    # With oversampling's signal (8% alike groups trained on), a mixed epoch still moved held-out +0.6 over the easy
    # adapter (seed 25): does a larger step move the LoRA further? (1e-4 hurt the easy phase, seed 21.)
    "mixed-oversample-lr5e-5": Arm("mixed-oversample-lr5e-5", "mixed", "easy", "mixed_steps",
                                   ("--oversample_groups", "8", "--learning_rate", "5e-5"),
                                   ablates="mixed-oversample"),
    # Oversampling's signal did not buy held-out accuracy (+0.3 over plain, seed 26), and a mixed epoch from the easy
    # adapter adds 0.6-1.3 points at 2e-5: does a larger step on the default path move the LoRA further?
    "mixed-lr5e-5": Arm("mixed-lr5e-5", "mixed", "easy", "mixed_steps", ("--learning_rate", "5e-5"), ablates="mixed"),
    # Hard and extra questions are 29% of held-out and stay at 5-12% in every line, yet no phase trains on them. The
    # oracle's episodes fit the 512-token budget for 88-89% of them, as for medium (2026-12-04b): the mixed phase
    # on all four classes.
    "mixed-all": Arm("mixed-all", "mixed", "easy", "mixed_steps", ("--curriculum", str(MIXED_ALL_CURRICULUM)),
                     ablates="mixed"),
    # Issue 29's other settings, each against plain mixed from the same easy adapter. The loss: TRL's default "dapo"
    # averages over the tokens of the whole batch; Dr. GRPO divides by a constant (the completion budget), so an
    # episode's weight does not depend on the lengths beside it.
    "mixed-dr-grpo": Arm("mixed-dr-grpo", "mixed", "easy", "mixed_steps", ("--loss_type", "dr_grpo"),
                         ablates="mixed"),
    # The rollouts' temperature: 44-63% of the mixed phase's groups start with no right episode at all (seed 27); a
    # hotter sampler writes more different SQL per group, so more of those groups may hold one right episode.
    "mixed-temp1.2": Arm("mixed-temp1.2", "mixed", "easy", "mixed_steps", ("--temperature", "1.2"), ablates="mixed"),
    # And a cooler one. The eval decodes greedily, and at temperature 1 the 0.5B's sampled episodes are right far
    # less often than its greedy ones (epoch scale: 45% of the easy phase's first episodes, 59% greedy on the
    # train part's easy questions), so most of a group's spread is sampling noise, which teaches the sampled
    # policy what greedy decoding already does. Nearer the greedy path, a right episode in a group is more often
    # one the greedy answer would not have given.
    "mixed-temp0.7": Arm("mixed-temp0.7", "mixed", "easy", "mixed_steps", ("--temperature", "0.7"), ablates="mixed"),
    # Learning rate (issue 29's settings): the epoch scale's 16 groups a step give 28 optimizer steps an easy epoch, a
    # tenth of the warm-up's 1e-3; 1e-4 asks whether the default 2e-5 leaves the LoRA where the warm-up put it.
    "easy-lr1e-4": Arm("easy-lr1e-4", "easy", "sft", "easy_steps", ("--learning_rate", "1e-4"), ablates="easy"),
    "mixed-lr1e-4": Arm("mixed-lr1e-4", "mixed", "easy-lr1e-4", "mixed_steps", ("--learning_rate", "1e-4"),
                        ablates="mixed"),
    # The warm-up's size: every plan-scale line ended at 40.4-43.0% held-out from warm-ups of 36.3-39.4% (600
    # oracle episodes), and 83-92% of its wrong answers never ran a query that returned the gold result. Four times
    # the oracle's SQL (2,400 of the 3,678 usable easy+medium training questions at the epoch scale) asks whether
    # that plateau is the 0.5B's or its warm-up's. Each arm is compared with the line of the scale's own warm-up,
    # same seed; the warm-ups differ by design, so the two pair by seed and scale, not by warm-up.
    "sft-4x": Arm("sft-4x", "sft", None, "easy_steps", ablates="sft", warm_up_questions_times=4),
    "easy-sft4x": Arm("easy-sft4x", "easy", "sft-4x", "easy_steps", ablates="easy"),
    "mixed-sft4x": Arm("mixed-sft4x", "mixed", "easy-sft4x", "mixed_steps", ablates="mixed"),
    # The best mixed phase so far (the informative sampler: 42.3% held-out, +5.7 over its own warm-up, seeds 22-23)
    # on the larger warm-up: whether the two add up towards the 48% target.
    "mixed-informative-sft4x": Arm("mixed-informative-sft4x", "mixed", "easy-sft4x", "mixed_steps",
                                   ("--sampling", "informative"), ablates="mixed-informative"),
    # The recipe's mixed phase at 5e-5: from the 600 warm-up, plain mixed at 5e-5 read +2.0 over 2e-5 from one easy
    # adapter (seed 27); from the four-times warm-up GRPO added +3.4 at 2e-5 (seed 28), short of the +5 asked.
    "mixed-informative-sft4x-lr5e-5": Arm("mixed-informative-sft4x-lr5e-5", "mixed", "easy-sft4x", "mixed_steps",
                                          ("--sampling", "informative", "--learning_rate", "5e-5"),
                                          ablates="mixed-informative-sft4x"),
    # The same, with each group's advantages divided by the batch's reward spread instead of the group's own. Under
    # TRL's default a group whose episodes all answered alike but whose shaped rewards differ (by 0.01-0.15) gets
    # advantages as large as a group where some answered right: 15-20% of this phase's groups, about 30% of the
    # groups with any spread (seeds 28-30, derived from their logged shares). Divided by the batch's spread (PPO
    # Lite's group mean, batch std), the shaping stays the nudge it was meant as, and a group whose answers differ
    # keeps about its size (the batch's spread, ~0.5, is a mixed group's).
    "mixed-informative-sft4x-lr5e-5-batchstd": Arm("mixed-informative-sft4x-lr5e-5-batchstd", "mixed", "easy-sft4x",
                                                   "mixed_steps", ("--sampling", "informative", "--learning_rate",
                                                                   "5e-5", "--scale_rewards", "batch"),
                                                   ablates="mixed-informative-sft4x-lr5e-5"),
    # The recipe with cooler rollouts. From the four-times warm-up, the easy phase's sampled episodes (temperature 1)
    # start 3-12 points below the warm-up's greedy accuracy on the train part's easy questions and end near it, while
    # greedy accuracy there gains 3-5 and held-out -0.1 to +5.0 (seeds 28, 30, 31): much of the signal goes to making
    # sampling agree with greedy decoding. At 0.7 a group's right episode is more often one greedy would not give.
    "mixed-informative-sft4x-lr5e-5-temp0.7": Arm("mixed-informative-sft4x-lr5e-5-temp0.7", "mixed", "easy-sft4x",
                                                  "mixed_steps", ("--sampling", "informative", "--learning_rate",
                                                                  "5e-5", "--temperature", "0.7"),
                                                  ablates="mixed-informative-sft4x-lr5e-5"),
    # The recipe's mixed phase straight from the warm-up, no easy phase: on the 1.5B the easy phase left held-out at
    # 55.9% against its warm-up's 57.5% (its warm-up already answers 80-83% of easy questions) and the mixed phase
    # after it reached 59.1% (seed 30, 2026-12-06f). Whether the easy epoch adds anything there, for 500 s less a line.
    "mixed-informative-sft4x-lr5e-5-direct": Arm("mixed-informative-sft4x-lr5e-5-direct", "mixed", "sft-4x",
                                                 "mixed_steps", ("--sampling", "informative", "--learning_rate",
                                                                 "5e-5"),
                                                 ablates="mixed-informative-sft4x-lr5e-5"),
    # The plan's two mixed epochs, from the warm-up (the easy epoch added nothing on the 1.5B, 2026-12-06g): every
    # 1.5B phase so far ran one pass of its questions, so the informative sampler met most questions once and
    # deferred few (0.7-2.4 a step, mostly in the last steps, where 480 draws of 467 questions begin a second pass),
    # while 46-52% of the last tenth's groups had no reward spread; in a second pass it can. With --eval-at-step 30
    # its first epoch is evaluated as well (the one-pass arm again, run to run).
    "mixed-informative-sft4x-lr5e-5-direct-2epochs": Arm("mixed-informative-sft4x-lr5e-5-direct-2epochs", "mixed",
                                                         "sft-4x", "mixed_steps", ("--sampling", "informative",
                                                                                   "--learning_rate", "5e-5"),
                                                         steps_times=2),
    # The same two arms on questions the warm-up did not train on (train.py --skip_warmup_questions). 302 of the mixed
    # phase's 466 questions are among the four-times warm-up's 2,400. On the 1.5B (seed 30, 2026-12-06h) the second
    # pass over them changed nothing held-out (step 30 -> 60: 31 questions gained, 30 lost) while the phase's own
    # pass@1 climbed from 59% to 77% and 73% of its last tenth's groups had no reward spread: it fitted questions it
    # had mostly seen. `-fresh` makes the one pass on unseen questions; `-fresh-2x` the two passes' episodes as one
    # pass over 934 unseen ones (1,279 exist), against the two passes over the 467. Measured (seed 30, 2026-12-06i):
    # -fresh-2x 60.9% against the two passes' 61.2% (38 gained, 40 lost); its checkpoint of step 30 60.1% against the
    # one-pass arm's 59.3% (33 / 28): unseen questions of the training databases teach what seen ones do.
    "mixed-informative-sft4x-lr5e-5-direct-fresh": Arm("mixed-informative-sft4x-lr5e-5-direct-fresh", "mixed",
                                                       "sft-4x", "mixed_steps", ("--sampling", "informative",
                                                                                 "--learning_rate", "5e-5",
                                                                                 "--skip_warmup_questions"),
                                                       ablates="mixed-informative-sft4x-lr5e-5-direct"),
    "mixed-informative-sft4x-lr5e-5-direct-fresh-2x": Arm("mixed-informative-sft4x-lr5e-5-direct-fresh-2x", "mixed",
                                                          "sft-4x", "mixed_steps", ("--sampling", "informative",
                                                                                    "--learning_rate", "5e-5",
                                                                                    "--skip_warmup_questions"),
                                                          ablates="mixed-informative-sft4x-lr5e-5-direct-2epochs",
                                                          steps_times=2, questions_times=2),
    # The recipe's mixed phase on all four classes. On the 1.5B (seed 30) the recipe moved held-out medium, which it
    # trains on and the warm-up misses a third of (15 questions gained, 3 lost, p = 0.008), not easy (83%, saturated)
    # nor hard (5 gained, 9 lost), which it never trains on. The 1.5B answers a quarter of hard questions, so their
    # groups would have spread, where the 0.5B's (7%) had little (mixed-all: -0.2 against plain mixed, seed 27).
    "mixed-all-informative-sft4x-lr5e-5": Arm("mixed-all-informative-sft4x-lr5e-5", "mixed", "easy-sft4x",
                                              "mixed_steps", ("--curriculum", str(MIXED_ALL_CURRICULUM), "--sampling",
                                                              "informative", "--learning_rate", "5e-5"),
                                              ablates="mixed-informative-sft4x-lr5e-5"),
    # The same with its shaping kept a nudge: on the 1.5B (seed 30, 2026-12-06g) the phase above had the most reward
    # spread of any (31% of the last tenth's groups without), but a quarter of its groups were shaping only (every
    # episode wrong, shaped rewards apart: hard questions each missed its own way) and carried 42% of the
    # advantages' weight; it moved held-out from medium (10 gained, 29 lost against the recipe) to hard and extra.
    # Here the sampler counts a group as informative only where its answers differ, and each group's advantages are
    # divided by the batch's spread, so a shaping-only group's stay small.
    "mixed-all-answers-sft4x-lr5e-5": Arm("mixed-all-answers-sft4x-lr5e-5", "mixed", "easy-sft4x", "mixed_steps",
                                          ("--curriculum", str(MIXED_ALL_CURRICULUM), "--sampling", "informative",
                                           "--learning_rate", "5e-5", "--group_signal", "answers", "--scale_rewards",
                                           "batch"),
                                          ablates="mixed-all-informative-sft4x-lr5e-5"),
    # The phase above's episodes on all four classes: the two 60-step runs of easy+medium questions (seen or unseen)
    # both ended near +3.5 over the warm-up (seed 30), with 53% of their last tenth's groups all right; they gained
    # on the medium class they train on (26 / 14 and 19 / 8 questions against the warm-up). The two 30-step runs on
    # all four classes gained on hard and extra instead (11 / 7 and 9 / 3; with answers counted, 9 / 5 and 7 / 2).
    # Hard and extra questions keep groups with spread where the easy+medium pool is solved; counting only answers
    # (and the batch's spread) keeps their shaping-only groups a nudge, as in mixed-all-answers-sft4x-lr5e-5 (the same
    # settings after the easy phase, 30 steps: 59.3%).
    "mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x": Arm("mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x", "mixed",
                                                          "sft-4x", "mixed_steps",
                                                          ALL_CLASSES_ON_ANSWERS,
                                                          ablates="mixed-informative-sft4x-lr5e-5-direct-fresh-2x",
                                                          steps_times=2, questions_times=2),
    # The phase above with oracle guidance (train.py --guide_unsolved, oracle_guidance.py): in a group where no
    # episode answered right, the last episode is replaced by the oracle's, so the group pushes towards the right
    # episode instead of teaching nothing. About 20% of every 1.5B mixed phase's groups were all wrong from first step
    # to last (seed 30, 2026-12-06i), and more on all four classes, where the hard and extra questions are.
    "mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x": Arm(
        "mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x", "mixed", "sft-4x", "mixed_steps",
        (*ALL_CLASSES_ON_ANSWERS, "--guide_unsolved"),
        ablates="mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x", steps_times=2, questions_times=2),
    # The guided phase with DAPO's dynamic sampling: guidance gives the all-wrong groups spread, and 8 extra groups a
    # round (dynamic_sampling.py, which picks among guided groups) leave out the groups all right, about half of the
    # last tenth's groups in every 1.5B mixed phase. On the 0.5B, oversampling at 8 trained 8-15% of groups without
    # spread (against 36-38%), at 1.14-1.27x the step time (docs/gpu.md 2026-12-04).
    "mixed-all-answers-guided-oversampled-sft4x-lr5e-5-direct-fresh-2x": Arm(
        "mixed-all-answers-guided-oversampled-sft4x-lr5e-5-direct-fresh-2x", "mixed", "sft-4x", "mixed_steps",
        (*ALL_CLASSES_ON_ANSWERS, "--guide_unsolved", "--oversample_groups", "8"),
        ablates="mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x", steps_times=2, questions_times=2),
    # Is the guided phase's gain the oracle's episodes of hard and extra questions, which the warm-up never trained
    # on (--sft_hardness easy medium), rather than GRPO? The guided phase took the 1.5B from 54.2% to 67.3% held-out,
    # hard 15.6 -> 56.6% and extra 7.0 -> 36.8% (seed 30, 2026-12-07b). A warm-up of as many oracle episodes drawn
    # from all four classes, then the same mixed phase unguided and guided, answers it: GRPO's part is what each
    # adds over that warm-up.
    "sft-4x-all": Arm("sft-4x-all", "sft", None, "easy_steps", ("--sft_hardness", "easy", "medium", "hard", "extra"),
                      ablates="sft-4x", warm_up_questions_times=4),
    "mixed-all-answers-sft4xall-lr5e-5-direct-fresh-2x": Arm(
        "mixed-all-answers-sft4xall-lr5e-5-direct-fresh-2x", "mixed", "sft-4x-all", "mixed_steps",
        ALL_CLASSES_ON_ANSWERS,
        ablates="mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x", steps_times=2, questions_times=2),
    "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x": Arm(
        "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x", "mixed", "sft-4x-all", "mixed_steps",
        (*ALL_CLASSES_ON_ANSWERS, "--guide_unsolved"),
        ablates="mixed-all-answers-sft4xall-lr5e-5-direct-fresh-2x", steps_times=2, questions_times=2),
    # From the all-classes warm-up (71.3%) the guided phase reached 77.0%, but 39.6% of its last tenth's groups were
    # alike, mostly all right, and at half a pass a question is never visited twice, so the sampler cannot defer it
    # (seed 30, 2026-12-07c). 8 extra groups a step (the proof's step is one generation round) leave those out.
    "mixed-all-answers-guided-oversampled-sft4xall-lr5e-5-direct-fresh-2x": guided_all_classes_with(
        "mixed-all-answers-guided-oversampled-sft4xall-lr5e-5-direct-fresh-2x", "--oversample_groups", "8"),
    # The same groups' slots steered by class instead (no extra generation): a question not yet visited waits with
    # the probability that its class's recent groups taught nothing. From that warm-up 25-31% of the groups scored
    # alike, mostly all right (two seeds, 2026-12-07c, d). Seed 32: 74.9% held-out against its twin's 71.8% from the
    # same warm-up (31 gained, 12 lost), though no fewer groups scored alike (2026-12-07g).
    "mixed-all-answers-guided-byclass-sft4xall-lr5e-5-direct-fresh-2x": guided_all_classes_with(
        "mixed-all-answers-guided-byclass-sft4xall-lr5e-5-direct-fresh-2x", "--defer_by_class"),
    # Each question of the phase played once by the warm-up first (one greedy episode, python -m eval), the ones it
    # got wrong served first (train.py --screen_questions). Over the real held-out pass rates nothing known of a
    # question beforehand gets the share of all-right groups near issue 29's 20% (class, tables, database: 32-34%);
    # the screen does once the pool holds more wrong questions than the phase has groups: 11.5% from four times the
    # scale's questions (1,868), 24.5% from the default's 934, whose right ones then crowd the last tenth (46%)
    # (benchmarks/class_deferral.py --heldout-results, 2026-12-07h). The screen costs an eval of the 1,868.
    "mixed-all-answers-guided-screened-sft4xall-lr5e-5-direct-fresh-2x": guided_all_classes_with(
        "mixed-all-answers-guided-screened-sft4xall-lr5e-5-direct-fresh-2x", "--screen_questions", questions_times=4),
    # Hotter rollouts for the same phase: late in it 29-40% of the groups scored alike, nearly all of them all right
    # (three seeds; the class prior did not lower that, 2026-12-07g), and a group of six greedy-like copies of one
    # right episode teaches nothing. At 1.2 more of those groups may hold a wrong episode (issue 29's temperature).
    "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x-temp1.2": guided_all_classes_with(
        "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x-temp1.2", "--temperature", "1.2"),
    # Guidance that goes on from where the model went wrong: an unsolved group with a refused query trains on that
    # episode's own turns through the refusal (context) followed by the gold query and the answer (train.py
    # --guide_recovery). Held-out, the 1.5B's refused episodes never queried again and none ended right (50 of 614
    # questions after this phase, 24 of them answering with the SQL text; seed 32, 2026-12-07f). With it every refused
    # episode queried again, but only 4 of 56 then ended right: 72.3% against its twin's 71.8% (2026-12-07g).
    "mixed-all-answers-guided-recovery-sft4xall-lr5e-5-direct-fresh-2x": guided_all_classes_with(
        "mixed-all-answers-guided-recovery-sft4xall-lr5e-5-direct-fresh-2x", "--guide_recovery"),
    # The guided phase from the all-classes warm-up at the plan's scale: 4x the scale's mixed steps (under
    # --mixed-steps 15, 60 steps of 16 groups: 960 prompts, about the plan's two mixed epochs of 467), one pass over
    # its 934 questions, where the arm above makes half of one (issue 29: the plan's epochs, measured).
    "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x-plan": Arm(
        "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x-plan", "mixed", "sft-4x-all", "mixed_steps",
        (*ALL_CLASSES_ON_ANSWERS, "--guide_unsolved"), steps_times=4, questions_times=2),
    # The README's two commands under train.py's defaults (informative sampling, oracle guidance, the curriculum's
    # easy phase then easy+medium at curriculum.yaml's 5e-5, the warm-up's questions not skipped), from the
    # all-classes warm-up: what `python train.py --phase easy` then `--phase mixed` give, against the mixed phase of
    # configs/mixed_guided.yaml straight from the warm-up (under the old defaults the 1.5B's easy epoch moved
    # nothing: 59.1% after it, 59.3% without it, seed 30, 2026-12-06g). Run with --mixed-steps 30: one mixed epoch,
    # as many steps as the config's phase.
    "easy-sft4xall": Arm("easy-sft4xall", "easy", "sft-4x-all", "easy_steps", TRAIN_PY_DEFAULTS),
    "mixed-sft4xall": Arm("mixed-sft4xall", "mixed", "easy-sft4xall", "mixed_steps",
                          (*TRAIN_PY_DEFAULTS, "--learning_rate", "5e-5")),
    # The recipe's line with its rollouts generated by vLLM, against the native line of the same warm-up: on the
    # 1.5B's step (16 groups x 6 x 1,024 tokens) vLLM took 15.3 s against 39.6 s (2026-12-06d), which would bring the
    # plan's two mixed epochs into one session, if its rollouts teach what the native ones do. Each arm in its own
    # process (one `start` each on the GPU machine): an engine holds its share of the card until the process ends.
    "easy-sft4x-vllm": Arm("easy-sft4x-vllm", "easy", "sft-4x", "easy_steps", VLLM_ROLLOUTS, ablates="easy-sft4x"),
    "mixed-informative-sft4x-lr5e-5-vllm": Arm("mixed-informative-sft4x-lr5e-5-vllm", "mixed", "easy-sft4x-vllm",
                                               "mixed_steps", ("--sampling", "informative", "--learning_rate", "5e-5",
                                                               *VLLM_ROLLOUTS),
                                               ablates="mixed-informative-sft4x-lr5e-5"),
    # DAPO's dynamic sampling as DAPO filters: 8 extra groups a round, the groups whose answers differ (some right,
    # some not) trained first, on top of the batch-scaled arm. Oversampling by reward spread met the signal target
    # (8-15% of trained groups without spread) but kept groups whose answers were alike and whose shaping differed:
    # 64-66% of its generated groups answered alike, and it bought +0.3 held-out (seed 26).
    "mixed-dapo-sft4x-lr5e-5": Arm("mixed-dapo-sft4x-lr5e-5", "mixed", "easy-sft4x", "mixed_steps",
                                   ("--sampling", "informative", "--learning_rate", "5e-5", "--scale_rewards", "batch",
                                    "--oversample_groups", "8", "--group_signal", "answers"),
                                   ablates="mixed-informative-sft4x-lr5e-5-batchstd"),
    # More updates from the same rollouts: the recipe's generation batch of 96 episodes trained as three optimizer
    # steps of 32 (PPO's mini-batches; TRL's clipped ratio bounds the two later steps' drift), where the
    # 4x line moved +3.4 in 58 steps of 96 at 2e-5. Generation is most of a step's time, so three times the updates
    # cost one extra forward pass over the batch (the old log-probabilities TRL then keeps). Unlike a larger learning
    # rate, each update follows a fresh gradient at the weights the last one left.
    "mixed-informative-sft4x-3steps": Arm("mixed-informative-sft4x-3steps", "mixed", "easy-sft4x", "mixed_steps",
                                          ("--sampling", "informative"), ablates="mixed-informative-sft4x",
                                          optimizer_steps_per_generation=3),
    # GRPO on questions the warm-up did not train on: the four-times warm-up trains on 2,400 of the 3,681 usable
    # easy+medium training questions, and 300 of the easy epoch's 434 and 302 of the mixed epoch's 466 are among them
    # (seed-independent: the draws are evenly spaced). Unseen, there are 504 easy and 1,279 easy+medium: enough for
    # both phases (train.py --skip_warmup_questions).
    "easy-sft4x-fresh": Arm("easy-sft4x-fresh", "easy", "sft-4x", "easy_steps", ("--skip_warmup_questions",),
                            ablates="easy-sft4x"),
    "mixed-informative-sft4x-fresh": Arm("mixed-informative-sft4x-fresh", "mixed", "easy-sft4x-fresh", "mixed_steps",
                                         ("--sampling", "informative", "--skip_warmup_questions"),
                                         ablates="mixed-informative-sft4x"),
    # Recovery from a failed query: of the 50.2% adapter's wrong held-out answers (seed 28), 26% followed a query
    # SQLite refused ("no such column") with an answer, never a second query; the warm-up showed no failed query.
    # A quarter of this warm-up's episodes run a query with a wrong column first, read the error, then the gold query.
    # Measured once with the wrong query trained as well (44.0% held-out against 46.7%, seed 28): the model wrote
    # wrong columns more often and resent a refused query unchanged until its turns ran out.
    "sft-4x-retry": Arm("sft-4x-retry", "sft", None, "easy_steps", ("--sft_retry_share", str(RETRY_SHARE)),
                        ablates="sft-4x", warm_up_questions_times=4,
                        retired="recorded at bdf1a7c, whose warm-up also trained the deliberately wrong query; "
                                "the same flags now train only the recovery: that is sft-4x-recover"),
    # The same warm-up with the wrong query as context only (policies.UNTRAINED_TURN), and SQLEnv refusing a
    # refused query sent again unchanged with what to change.
    "sft-4x-recover": Arm("sft-4x-recover", "sft", None, "easy_steps", ("--sft_retry_share", str(RETRY_SHARE)),
                          ablates="sft-4x", warm_up_questions_times=4),
    "easy-sft4x-recover": Arm("easy-sft4x-recover", "easy", "sft-4x-recover", "easy_steps", ablates="easy-sft4x"),
    "mixed-informative-sft4x-recover": Arm("mixed-informative-sft4x-recover", "mixed", "easy-sft4x-recover",
                                           "mixed_steps", ("--sampling", "informative"),
                                           ablates="mixed-informative-sft4x"),
    # The two levers of seed 29 together: the recovering warm-up's line, its mixed batches trained as three steps
    # (against the 3-step arm of the plain 4x line, same seed)
    "mixed-informative-sft4x-recover-3steps": Arm("mixed-informative-sft4x-recover-3steps", "mixed",
                                                  "easy-sft4x-recover", "mixed_steps", ("--sampling", "informative"),
                                                  ablates="mixed-informative-sft4x-3steps",
                                                  optimizer_steps_per_generation=3),
    "sft-habit": Arm("sft-habit", "sft", None, "easy_steps", ("--sft_never_stop_share", str(HABIT_SHARE))),
    "easy-habit": Arm("easy-habit", "easy", "sft-habit", "easy_steps"),
    "no-penalty-habit": Arm("no-penalty-habit", "easy", "sft-habit", "easy_steps", ("--post_episode_penalty", "0"),
                            ablates="easy-habit"),
}


def start_chain(arm: Arm) -> list[str]:
    """The arms whose adapters this arm grows from, nearest first (empty for the base model and a warm-up)."""
    chain = []
    while arm.start_from is not None:
        chain.append(arm.start_from)
        arm = ARMS[arm.start_from]
    return chain


def warm_up_of(arm: Arm) -> str | None:
    """The warm-up arm (``--phase sft``) that the arm's chain of start adapters leads back to, the arm itself if it
    is one; None for the base model and GRPO from it."""
    return next((name for name in (arm.name, *start_chain(arm)) if ARMS[name].phase == "sft"), None)


def _all_but_passes(arm: Arm) -> tuple:
    """What two arms that differ only in their passes (``steps_times``) share: phase, start, flags, questions."""
    return (arm.phase, arm.start_from, arm.steps_of, arm.flags, arm.optimizer_steps_per_generation,
            arm.questions_times)


def one_pass_of(arm: Arm) -> str | None:
    """The arm that makes one pass where ``arm`` makes ``steps_times`` (the same phase, start, flags and questions);
    None for an arm of one pass or one without such a twin."""
    if arm.steps_times == 1:
        return None
    return next((name for name, other in ARMS.items()
                 if other.steps_times == 1 and _all_but_passes(other) == _all_but_passes(arm)), None)


def shorter_twin_of(arm: Arm) -> str | None:
    """The arm of the most passes that ``arm``'s own divide, fewer than its own, with everything else alike (phase,
    start, flags, questions): e.g. the plan-scale arm's half-length twin. None where there is none."""
    twins = [(other.steps_times, name) for name, other in ARMS.items()
             if other.steps_times < arm.steps_times and arm.steps_times % other.steps_times == 0
             and _all_but_passes(other) == _all_but_passes(arm)]
    return max(twins)[1] if twins else None


def trains_its_own_warm_up(ablation: Arm) -> bool:
    """Whether an ablation grows from another warm-up than the full setting it is compared with (the warm-up is what
    it changes): such a pair shares a seed and scale, never a warm-up."""
    return ablation.ablates is not None and warm_up_of(ablation) != warm_up_of(ARMS[ablation.ablates])


# The arms compared with a full setting, in the registry's order (the report's ablation table follows it).
ABLATIONS = tuple(name for name, arm in ARMS.items() if arm.ablates)

