"""Weight initialisers (in place, like torch.nn.init). Draws come from minigrad's generator."""
