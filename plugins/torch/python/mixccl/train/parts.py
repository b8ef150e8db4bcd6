"""What a pipeline stage is cut from, for the spec's model and for a user's own module alike:
an embedding (tokens -> hidden states), an ordered list of blocks (hidden -> hidden, same
shape) and a head (hidden -> logits). mixccl.train computes the loss (token cross-entropy)
itself, so that the token weighting across replicas is the same for every model."""
import torch.nn as nn

from .spec import InputError


class ModelParts(nn.Module):
    """The parts one rank holds: `blocks` maps the global layer index to its module, so that
    parameter names ("blocks.3. ...") are the same on every split.

    tied_input / tied_output name the parameters of an input embedding and an output
    projection that are one tensor in the single-process model (tied embeddings) but may sit
    on different ranks: their gradients are summed over the ranks holding either."""

    def __init__(self, embedding, blocks, head, tied_input=None, tied_output=None):
        super().__init__()
        self.embedding = embedding
        self.blocks = nn.ModuleDict({str(i): b for i, b in sorted(blocks.items())})
        self.head = head
        self.tied_input = tied_input
        self.tied_output = tied_output

    @property
    def layers(self):
        return sorted(int(k) for k in self.blocks.keys())

    def tied_parameter_name(self):
        """The name of this rank's copy of a tied embedding, or None."""
        names = dict(self.named_parameters())
        for n in (self.tied_input, self.tied_output):
            if n is not None and n in names:
                return n
        return None

    def parameter_layer(self, name):
        """Where a parameter belongs for the gradient sums: -1 the embedding, the block's
        layer index, or None for the head (it goes with the last layer's interval)."""
        if name.startswith("embedding."):
            return -1
        if name.startswith("blocks."):
            return int(name.split(".")[1])
        return None


def user_model_parts(embedding, blocks, head):
    """The adapter for a user's own module: its embedding (token ids (B, T) -> (B, T, C)), its
    blocks in order (each (B, T, C) -> (B, T, C)) and its head ((B, T, C) -> logits (B, T, V),
    final norm included). Every rank builds the whole module from the same seed and keeps its
    stage's parts (restrict_parts), so the split starts from the single-process weights."""
    for name, module in (("embedding", embedding), ("head", head)):
        if not isinstance(module, nn.Module):
            raise TypeError(f"mixccl.train: the {name} must be a torch.nn.Module, "
                            f"got {type(module).__name__}")
    blocks = list(blocks)
    shared = {id(p) for p in embedding.parameters()} & {id(p) for p in head.parameters()}
    parts = ModelParts(embedding, dict(enumerate(blocks)), head)
    parts.user_tied = bool(shared)
    return parts


def restrict_parts(parts, first_layer, last_layer, embedding, head):
    """Drops what the stage does not hold (the modules are freed with their last reference)."""
    if getattr(parts, "user_tied", False) and not (embedding and head):
        raise InputError("a user module whose head shares the embedding's weight runs in "
                         "one-stage replicas only (the stage must hold both)")
    kept = {i: parts.blocks[str(i)] for i in range(first_layer, last_layer)}
    return ModelParts(parts.embedding if embedding else None, kept,
                      parts.head if head else None)
