"""The attention lab: a local web page where self-attention is computed live by minigrad.

    python examples/attention_lab.py          # then open the URL it prints

by_hand.py   panel 1: three words, every step of (multi-head) self-attention
training.py  panels 2 and 3: train W_Q, W_K, W_V, W_O on a toy task; draw the graph
trained.py   panel 4: a trained IMDB model reads a review
inputs.py    checking what the page sends
api.py       the JSON endpoints as plain functions (tested without a browser)
server.py    the standard-library HTTP server around them
static/      the page: HTML, CSS, JavaScript (no build step, nothing from the network)
"""
