"""torch.nn.utils.rnn's pad_sequence: sequences of different lengths as one padded batch.

minigrad's LSTM takes the padded batch and the lengths themselves (`lstm(x, lengths)`), so
there is no PackedSequence here: pad the sequences, keep their lengths, pass both.
"""

import minigrad as mg

from .. import functional as F

__all__ = ["pad_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Tensors (L_i, *) of one trailing shape -> (max L, B, *), or (B, max L, *) with batch_first,
    each padded with padding_value after its end (padding_side="left": before its start), as
    torch's. Gradients flow back to the sequences."""
    sequences = list(sequences)
    if not sequences:
        raise ValueError("pad_sequence: got no sequences")
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left'; got {padding_side!r}")
    for position, sequence in enumerate(sequences):
        if not isinstance(sequence, mg.Tensor):
            raise TypeError(f"pad_sequence: sequence {position} must be a Tensor; got {type(sequence).__name__}")
        if sequence.ndim == 0:
            raise ValueError(f"pad_sequence: sequence {position} is 0-d; each needs a first axis of steps")
        if sequence.shape[1:] != sequences[0].shape[1:]:
            raise ValueError(f"pad_sequence: every sequence must have the trailing shape {sequences[0].shape[1:]} "
                             f"(the first's); sequence {position} has shape {sequence.shape}")
    longest = max(sequence.shape[0] for sequence in sequences)
    trailing = (0, 0) * (sequences[0].ndim - 1)

    def padded(sequence):
        missing = longest - sequence.shape[0]
        steps = (0, missing) if padding_side == "right" else (missing, 0)
        return F.pad(sequence, trailing + steps, value=padding_value) if missing else sequence
    return mg.stack([padded(sequence) for sequence in sequences], dim=0 if batch_first else 1)
