"""Known-harmless library messages, silenced where a command starts (train.py, python -m eval, models.py).

    import library_noise
    library_noise.silence()                    # first, before torch, transformers or unsloth are imported
    with library_noise.quiet_import():         # Unsloth prints its CPU notice with print(), not a logger
        import unsloth

Each message is matched by the logger that emits it and by its text, never by silencing a library or a warning
category as a whole: any other warning, and every line of this project's own, still shows. Each entry says why
a user cannot act on it; when a library changes its wording, the message shows again. (All of them are logged or
printed; none of the noisy lines is a Python warning, so no warnings filter is installed.)
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
from collections.abc import Iterator

# (logger, start of the message, why it is harmless here)
LOGGED_NOISE: tuple[tuple[str, str, str], ...] = (
    ("torchao.kernel.intmm", "Warning: Detected no triton",
     "no Triton on a CPU machine: torchao's Triton kernels are not used by this project"),
    ("torchao", "Skipping import of cpp extensions",
     "torchao's compiled extensions (quantization kernels) are not used by this project"),
    ("torchao", "Failed to load ",
     "torchao's compiled extensions (a missing or mismatched .so) are not used by this project"),
    ("torch.utils._pytree", "<enum ",
     "torchao registers its Enums with torch.compile in a way torch deprecates (it is torchao's to change)"),
    ("bitsandbytes.backends.cpu.ops", "Failed to load CPU gemm_4bit_forward",
     "an optional CPU kernel for 4-bit weights, which only GPU runs load here"),
    ("transformers.tokenization_utils_tokenizers", "Ignoring clean_up_tokenization_spaces=True for BPE tokenizer",
     "SmolLM2's tokenizer file asks for a clean-up that transformers rightly skips for its BPE tokenizer"),
)
# Lines a library prints to stdout while it is imported
PRINTED_NOISE: tuple[str, ...] = (
    # Unsloth on a machine without a GPU: the embedded mode's first line already says "no CUDA GPU", and the
    # notice's "supported: ... SFTTrainer" reads as if GRPO were not
    r"Unsloth [\w.]+: no GPU found, training on CPU",
)


class _DropMessages(logging.Filter):
    """Drops the records of one logger whose message starts with one of the given texts."""

    def __init__(self, starts: tuple[str, ...]) -> None:
        super().__init__()
        self.starts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.starts)


def silence() -> None:
    """Install the filters (once per process; a second call changes nothing)."""
    by_logger: dict[str, tuple[str, ...]] = {}
    for name, start, _why in LOGGED_NOISE:
        by_logger[name] = (*by_logger.get(name, ()), start)
    for name, starts in by_logger.items():
        logger = logging.getLogger(name)  # the library's own getLogger(__name__) returns this one
        if not any(isinstance(existing, _DropMessages) for existing in logger.filters):
            logger.addFilter(_DropMessages(starts))


@contextlib.contextmanager
def quiet_import() -> Iterator[None]:
    """Hold back what is printed inside the block and pass on every line but the known ones (also when the
    import fails, so its output is never lost)."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            yield
    finally:
        for line in printed.getvalue().splitlines(keepends=True):
            if not any(re.match(pattern, line) for pattern in PRINTED_NOISE):
                sys.stdout.write(line)
