"""scripts/gpu_session.sh's pieces: an adapter leaves the GPU machine in checksummed pieces over as many
device calls as it needs, and a later session's machine unpacks the very same files (or refuses damaged ones); the
vLLM wheels come in the same way and install only once every piece is there and matches."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_session.sh"

pytestmark = pytest.mark.skipif(not all(shutil.which(tool) for tool in ("bash", "tar", "split", "sha256sum")),
                                reason="needs bash, tar, split and sha256sum")


def stage(*args: str, cwd: Path, out: Path, keep_dir: Path,
          extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One stage as a device call runs it, with pieces of 1 KB, 2 a call (a real call: 15 MiB, 4)."""
    out.mkdir(parents=True, exist_ok=True)
    env = os.environ | {"OUT": str(out), "KEEP_DIR": str(keep_dir), "PIECE_SIZE": "1K", "PIECES_PER_CALL": "2"}
    env |= extra_env or {}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def kept_pieces(adapter: Path, name: str, tmp_path: Path) -> tuple[list[Path], int]:
    """Every file the keep calls return, following the `next:` line from call to call; and the number of calls."""
    returned: dict[str, Path] = {}
    first, calls = "0", 0
    while True:
        out = tmp_path / f"out{calls}"
        done = stage("keep", str(adapter), name, first, cwd=tmp_path, out=out, keep_dir=tmp_path / "gpu-keep")
        assert done.returncode == 0, done.stderr
        calls += 1
        returned |= {path.name: path for path in out.iterdir()}
        following = [line.split()[-1] for line in done.stdout.splitlines() if line.startswith("next: keep")]
        if not following:
            return list(returned.values()), calls
        first = following[0]


def carried(pieces: list[Path], checkout: Path, name: str) -> None:
    folder = checkout / ".adapters" / name
    if folder.exists():
        shutil.rmtree(folder)  # a call carries only what it names
    folder.mkdir(parents=True)
    for piece in pieces:
        shutil.copy(piece, folder / piece.name)


@pytest.fixture
def adapter(tmp_path: Path) -> Path:
    folder = tmp_path / "sft-seed6" / "sft" / "adapter"
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text('{"r": 32}', encoding="utf-8")
    (folder / "adapter_model.safetensors").write_bytes(os.urandom(3000))  # random bytes stay ~3 KB in the tar.gz
    return folder


def test_an_adapter_leaves_over_several_calls_and_comes_back_the_same(adapter: Path, tmp_path: Path) -> None:
    pieces, calls = kept_pieces(adapter, "sft-seed6", tmp_path)
    data_pieces = sorted(piece for piece in pieces if ".tgz." in piece.name)
    assert calls >= 2 and len(data_pieces) >= 3
    checkout, machine_keep = tmp_path / "checkout", tmp_path / "next-machine-keep"
    dest = tmp_path / "lp" / "sft-seed6" / "sft" / "adapter"
    checksums = [piece for piece in pieces if piece.name == "sft-seed6.sha256"]

    carried(checksums + data_pieces[:1], checkout, "sft-seed6")  # the next session's first call: one piece
    waiting = stage("restore", "sft-seed6", str(dest), cwd=checkout, out=tmp_path / "o1", keep_dir=machine_keep)
    assert waiting.returncode == 0 and "waiting for" in waiting.stdout and data_pieces[1].name in waiting.stdout
    assert not dest.exists()

    carried(data_pieces[1:], checkout, "sft-seed6")  # the second call: the rest
    done = stage("restore", "sft-seed6", str(dest), cwd=checkout, out=tmp_path / "o2", keep_dir=machine_keep)
    assert done.returncode == 0, done.stderr
    for original in adapter.iterdir():
        assert (dest / original.name).read_bytes() == original.read_bytes()


def test_a_damaged_piece_is_refused_and_nothing_is_unpacked(adapter: Path, tmp_path: Path) -> None:
    pieces, _ = kept_pieces(adapter, "sft-seed6", tmp_path)
    damaged = sorted(piece for piece in pieces if ".tgz." in piece.name)[1]
    data = damaged.read_bytes()
    damaged.write_bytes(bytes([data[0] ^ 0xFF]) + data[1:])  # a changed byte, whatever the byte was
    checkout, dest = tmp_path / "checkout", tmp_path / "dest"
    carried(pieces, checkout, "sft-seed6")
    done = stage("restore", "sft-seed6", str(dest), cwd=checkout, out=tmp_path / "o", keep_dir=tmp_path / "k")
    assert done.returncode == 1 and "damaged" in done.stderr and not dest.exists()


def test_keep_refuses_a_folder_that_is_no_adapter(tmp_path: Path) -> None:
    done = stage("keep", str(tmp_path), "nothing", cwd=tmp_path, out=tmp_path / "o", keep_dir=tmp_path / "k")
    assert done.returncode == 2 and "no adapter_config.json" in done.stderr


def test_keep_waits_for_an_adapter_still_being_trained(tmp_path: Path) -> None:
    # KEEP_WAIT: the arm's trainer writes its adapter a few seconds into the call; keep packs it once it is whole.
    folder = tmp_path / "arm" / "mixed" / "adapter"
    env = {"KEEP_WAIT": "30", "KEEP_QUIET": "1"}

    def train_then_save() -> None:
        time.sleep(2)
        folder.mkdir(parents=True)
        (folder / "adapter_model.safetensors").write_bytes(os.urandom(1500))
        (folder / "adapter_config.json").write_text('{"r": 32}', encoding="utf-8")

    trainer = threading.Thread(target=train_then_save)
    trainer.start()
    done = stage("keep", str(folder), "arm", cwd=tmp_path, out=tmp_path / "o", keep_dir=tmp_path / "k", extra_env=env)
    trainer.join()
    assert done.returncode == 0, done.stderr
    assert "keep arm: pieces 0-" in done.stdout and (tmp_path / "o" / "arm.sha256").is_file()
    # Without the wait (or past it) a missing adapter is refused at once, and says how long it waited.
    done = stage("keep", str(tmp_path / "none"), "none", cwd=tmp_path, out=tmp_path / "o2", keep_dir=tmp_path / "k",
                 extra_env={"KEEP_WAIT": "1"})
    assert done.returncode == 2 and "waited 1 s" in done.stderr


def test_vllm_wheels_arrive_in_pieces_and_install_only_once_all_match(tmp_path: Path) -> None:
    # A checkout with the pieces fetch_vllm_wheels.sh writes: a tar of wheels/ and requirements.txt, cut in two.
    checkout, bundle = tmp_path / "checkout", tmp_path / "bundle"
    (bundle / "wheels").mkdir(parents=True)
    (bundle / "wheels" / "vllm-0.26.0-py3-none-any.whl").write_bytes(os.urandom(3000))
    (bundle / "requirements.txt").write_text("vllm==0.26.0\n", encoding="utf-8")
    pieces = checkout / ".vllm"
    pieces.mkdir(parents=True)
    subprocess.run(f"tar cf - -C {bundle} wheels requirements.txt | split -b 6K -d - {pieces}/part.", shell=True,
                   check=True)
    subprocess.run("sha256sum part.* > parts.sha256", shell=True, cwd=pieces, check=True)
    assert sorted(path.name for path in pieces.glob("part.*")) == ["part.00", "part.01"]
    vdir = tmp_path / "gpu-v"
    env = os.environ | {"OUT": str(tmp_path / "out"), "VLLM_DIR": str(vdir),
                        "PIP": "echo pip", "PYTHON": "echo python"}  # the install itself needs the GPU image

    def stage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(SCRIPT), *args], cwd=checkout, env=env, capture_output=True, text=True,
                              check=False)

    assert stage("vinstall").returncode == 2  # nothing carried yet
    assert stage("vchunk", "00").returncode == 0
    waiting = stage("vinstall")
    assert waiting.returncode == 0 and "vinstall: waiting for part.01" in waiting.stdout
    assert stage("vchunk", "01").returncode == 0
    done = stage("vinstall")
    assert done.returncode == 0, done.stderr
    assert "installed in" in done.stdout and (vdir / "wheels" / "vllm-0.26.0-py3-none-any.whl").is_file()
    assert f"--find-links {vdir}/wheels -r {vdir}/requirements.txt" in (tmp_path / "out" / "vinstall.log").read_text()
    (vdir / "part.01").write_bytes(b"damaged")
    damaged = stage("vinstall")
    assert damaged.returncode == 1 and "a piece is damaged" in damaged.stderr


def test_an_unknown_model_is_refused_before_any_stage_runs(tmp_path: Path) -> None:
    env = os.environ | {"OUT": str(tmp_path / "out"), "MODEL": "7b"}
    done = subprocess.run(["bash", str(SCRIPT), "start", "line", "--arms", "sft"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "MODEL must be 0.5b (Qwen2.5-Coder-0.5B, the default), 1.5b (Qwen2.5-Coder-1.5B) or random1.7b, not '7b'" in done.stderr
    assert list((tmp_path / "out").iterdir()) == []  # nothing converted, started or written


@pytest.mark.parametrize("with_1_5b", [False, True])
def test_watch_brings_back_every_phase_s_per_step_rows_rollouts_history_and_held_out_episodes(
        tmp_path: Path, with_1_5b: bool) -> None:
    """A session of the 0.5B alone (no q15 folder) lost its per-step rows once: the pattern for the 1.5B's phases
    matched nothing and the whole archive was skipped."""
    runs = tmp_path / "lp"
    phases = ["mixed-seed27/mixed", "easy-seed27/easy"] + (["q15/sft-seed27/sft"] if with_1_5b else [])
    for phase in phases:
        (runs / phase).mkdir(parents=True)
        (runs / phase / "metrics.jsonl").write_text('{"step": 1}\n', encoding="utf-8")
    (runs / "mixed-seed27/mixed/rollouts.jsonl").write_text('{"step": 1}\n', encoding="utf-8")
    (runs / "mixed-seed27/mixed/adapter").mkdir()
    (runs / "mixed-seed27/mixed/adapter/question_history.json").write_text("{}", encoding="utf-8")
    (runs / "mixed-seed27/mixed/screen").mkdir()  # --screen_questions' eval of the phase's questions
    (runs / "mixed-seed27/mixed/screen/report.json").write_text("{}", encoding="utf-8")
    for held_out in ("eval-heldout", "eval-heldout_step30"):  # the final adapter's eval and --eval-at-step's
        (runs / "mixed-seed27" / held_out).mkdir()
        (runs / "mixed-seed27" / held_out / "report.json").write_text("{}", encoding="utf-8")
    out = tmp_path / "out"
    env = os.environ | {"OUT": str(out), "RUNS_DIR": str(runs)}
    done = subprocess.run(["bash", str(SCRIPT), "watch", "0"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(["tar", "tzf", str(out / "metrics.tgz")], capture_output=True, text=True, check=True)
    rows = [f"./{phase}/metrics.jsonl" for phase in phases]
    assert sorted(listed.stdout.split()) == sorted([*rows, "./mixed-seed27/mixed/rollouts.jsonl",
                                                    "./mixed-seed27/mixed/adapter/question_history.json",
                                                    "./mixed-seed27/mixed/screen/report.json",
                                                    "./mixed-seed27/eval-heldout/report.json",
                                                    "./mixed-seed27/eval-heldout_step30/report.json"])
    # An archive too large to come back from the device keeps the per-step rows alone, and says so.
    done = subprocess.run(["bash", str(SCRIPT), "watch", "0"], cwd=tmp_path, env=env | {"METRICS_MAX_BYTES": "10"},
                          capture_output=True, text=True, check=False)
    assert "the per-step rows alone" in done.stdout
    listed = subprocess.run(["tar", "tzf", str(out / "metrics.tgz")], capture_output=True, text=True, check=True)
    assert sorted(listed.stdout.split()) == sorted(rows)


def test_two_evals_of_adapters_keep_their_own_figures(tmp_path: Path) -> None:
    """Two eval-modes queued into one extras folder: each adapter's figures are named after its run."""
    out = tmp_path / "out"
    env = os.environ | {"OUT": str(out), "RUNS_DIR": str(tmp_path / "lp")}
    for seed in (28, 29):  # no eval_generation.py in this folder: the stage says so, and its log keeps the reason
        done = subprocess.run(["bash", str(SCRIPT), "eval-modes", f"/tmp/lp/sft-seed{seed}/sft/adapter"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, check=False)
        assert "eval_generation.py exited with 2" in done.stdout
    assert sorted(path.name for path in out.iterdir()) == ["eval-generation-sft-seed28.log",
                                                            "eval-generation-sft-seed29.log"]


def test_the_carry_is_prepared_in_one_command_and_a_wrong_model_or_missing_spider_is_refused(tmp_path: Path) -> None:
    """scripts/prepare_gpu_carry.sh in a checkout that has its wheels and the GGUF already: it packs Spider and cuts
    the pieces, downloading nothing."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    for script in ("prepare_gpu_carry.sh", "carry_pieces.sh"):
        shutil.copy(SCRIPT.parent / script, checkout / "scripts" / script)
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    (checkout / ".gitignore").write_text("/.whl/\n/.m/\n/.spider.tgz\n")
    (checkout / ".whl").mkdir()
    (checkout / ".whl" / "install.sh").write_text("")  # the wheels are here: not fetched again
    spider = tmp_path / "shared" / "spider"
    spider.mkdir(parents=True)
    (spider / "train_spider.json").write_text("[]")
    (tmp_path / "qwen2.5-coder-0.5b-instruct.gguf").write_bytes(os.urandom(3000))
    env = os.environ | {"SPIDER_DIR": str(spider), "GGUF_DIR": str(tmp_path)}

    def prepare(*args: str, **changed: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "scripts/prepare_gpu_carry.sh", *args], cwd=checkout, env=env | changed,
                              capture_output=True, text=True, check=False)

    done = prepare()
    assert done.returncode == 0, done.stderr
    assert "1 pieces" in done.stdout and "on the device, setup, then chunk 00 .. chunk 00" in done.stdout
    assert (checkout / ".m" / "part.00").read_bytes() == (tmp_path / "qwen2.5-coder-0.5b-instruct.gguf").read_bytes()
    assert subprocess.run(["tar", "tzf", ".spider.tgz"], cwd=checkout, capture_output=True, text=True,
                          check=True).stdout.split() == ["spider/", "spider/train_spider.json"]
    wrong = prepare("7b")
    assert wrong.returncode == 2 and "usage:" in wrong.stderr
    missing = prepare(SPIDER_DIR=str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no Spider data at" in missing.stderr


def test_eval_cores_runs_the_held_out_eval_once_with_each_attention_core(tmp_path: Path) -> None:
    """eval-cores: two processes, the grouped core then Unsloth's own call (its flag), each report brought back under
    the core's name. A stand-in python3 records each command line and writes the report eval would."""
    bin_dir, out = tmp_path / "bin", tmp_path / "out"
    bin_dir.mkdir()
    stand_in = bin_dir / "python3"
    stand_in.write_text('#!/usr/bin/env bash\necho "$*" >> "$CALLS"\n'
                        'while [ $# -gt 0 ]; do [ "$1" = --out ] && folder=$2; shift; done\n'
                        'mkdir -p "$folder" && echo "{}" > "$folder/report.json"\n'
                        'echo "1.5 s; report in $folder/report.md"\necho "| overall | 614 | 40.0% |"\n')
    stand_in.chmod(0o755)
    calls = tmp_path / "calls.txt"
    env = os.environ | {"OUT": str(out), "RUNS_DIR": str(tmp_path / "lp"), "CALLS": str(calls),
                        "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(SCRIPT), "eval-cores", "/tmp/lp/sft-4x-seed29/sft/adapter"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    grouped, unsloth = calls.read_text().splitlines()
    assert "--no-grouped-decode-attention" not in grouped and "--no-grouped-decode-attention" in unsloth
    assert "grouped: 1.5 s; report in" in done.stdout and "unsloth: 1.5 s; report in" in done.stdout
    assert sorted(path.name for path in out.glob("*.json")) == ["ecore-sft-4x-seed29-grouped.json",
                                                                 "ecore-sft-4x-seed29-unsloth.json"]


def test_veval_runs_each_backend_asked_for_and_says_the_process_seconds_beside_the_evals(tmp_path: Path) -> None:
    """veval: vLLM then Unsloth by default, vLLM alone with VEVAL_BACKENDS=vllm; each line gives the eval's seconds
    and its process's (where vLLM's engine start shows)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "python3"
    stand_in.write_text('#!/usr/bin/env bash\necho "$*" >> "$CALLS"\n'
                        'while [ $# -gt 0 ]; do [ "$1" = --out ] && folder=$2; shift; done\n'
                        'mkdir -p "$folder" && echo "{}" > "$folder/report.json"\n'
                        'echo "2.5 s; report in $folder/report.md"\n')
    stand_in.chmod(0o755)
    for backends, expected in ((None, ["vllm", "unsloth"]), ("vllm", ["vllm"])):
        calls, out = tmp_path / f"calls-{backends}.txt", tmp_path / f"out-{backends}"
        env = os.environ | {"OUT": str(out), "RUNS_DIR": str(tmp_path / "lp"), "CALLS": str(calls),
                            "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        if backends:
            env["VEVAL_BACKENDS"] = backends
        done = subprocess.run(["bash", str(SCRIPT), "veval", "/tmp/lp/q15/sft-4x-seed30/sft/adapter"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert [line.split("--backend ")[1].split()[0] for line in calls.read_text().splitlines()] == expected
        for backend in expected:
            assert f"{backend}: 2.5 s; report in" in done.stdout
        assert done.stdout.count(" s process)") == len(expected)
        assert sorted(path.name for path in out.glob("*.json")) == sorted(
            f"veval-sft-4x-seed30-{backend}.json" for backend in expected)
