"""Training data, read as mixccl-train reads it (docs/training.md "Data"): sequence i of the run
(step k holds sequences k*G .. k*G+G-1) is window (i mod W) of the tokens, T+1 tokens from
i*T, inputs and the same tokens shifted by one as targets. In micro-batch slot s the replica
numbered r takes its micro_batch sequences after those of replicas 0..r-1, so the global batch
is the same set of sequences whatever the plan."""
import struct

import numpy as np
import torch

from .spec import InputError

MAGIC = b"MIXTOKS1"


class TokenData:
    def __init__(self, tokens, vocab_size, origin):
        self.tokens = torch.as_tensor(np.asarray(tokens, dtype=np.int64))
        self.vocab_size = vocab_size
        self.origin = origin

    @staticmethod
    def open(path):
        """A MIXTOKS1 token file (the format WriteTokenFile writes)."""
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise InputError(f"{path}: cannot read the token file: {e.strerror}") from None
        if len(raw) < 32 or raw[:8] != MAGIC:
            raise InputError(f"{path}: not a token file (no MIXTOKS1 header)")
        version, width, vocab, _, count = struct.unpack_from("<IIIIQ", raw, 8)
        if version != 1 or width not in (1, 2) or len(raw) != 32 + count * width:
            raise InputError(f"{path}: the header (version {version}, {width} bytes per token, "
                             f"{count} tokens) does not match the file's {len(raw)} bytes")
        tokens = np.frombuffer(raw, dtype=np.uint8 if width == 1 else "<u2", offset=32)
        return TokenData(tokens, vocab, path)

    @staticmethod
    def generated(vocab_size, num_tokens=1 << 17, seed=1):
        """Nothing to download: a Markov chain over min(vocab, 256) symbols in which every
        symbol has four likely successors, so a model can learn it (the loss falls)."""
        symbols = min(vocab_size, 256)
        rng = np.random.default_rng(seed)
        successors = rng.integers(0, symbols, size=(symbols, 4))
        choice = rng.integers(0, 4, size=num_tokens)
        noise = rng.random(num_tokens) < 0.1
        random_symbols = rng.integers(0, symbols, size=num_tokens)
        out = np.empty(num_tokens, dtype=np.int64)
        t = 0
        for i in range(num_tokens):
            t = random_symbols[i] if noise[i] else successors[t, choice[i]]
            out[i] = t
        return TokenData(out, symbols, f"generated ({num_tokens} tokens, seed {seed})")

    def check(self, spec):
        if self.vocab_size > spec.vocab_size:
            raise InputError(f"{self.origin}: vocabulary {self.vocab_size} is larger than the "
                             f"model's vocab_size {spec.vocab_size}")
        if len(self.tokens) < spec.seq_length + 1:
            raise InputError(f"{self.origin}: {len(self.tokens)} tokens are fewer than one "
                             f"sequence of seq_length {spec.seq_length} + 1")

    def sequences(self, first, count, seq_len):
        """Inputs and targets (count, T) of sequences first .. first+count-1."""
        windows = (len(self.tokens) - 1) // seq_len
        starts = [((first + i) % windows) * seq_len for i in range(count)]
        rows = torch.stack([self.tokens[s:s + seq_len + 1] for s in starts])
        return rows[:, :-1].contiguous(), rows[:, 1:].contiguous()
