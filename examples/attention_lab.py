"""The attention lab: drive self-attention in the browser and watch the four matrices learn.

    python examples/attention_lab.py [--port 8000] [--host 127.0.0.1] [--runs runs]

Starts a local web server and prints its URL; open it in a browser. Ctrl-C stops it. Four panels:
1. By hand: the chapter's "cat sleeps it"; edit the vectors and W_Q, W_K, W_V, W_O, pick the query
   word, drag the temperature, tick the causal mask, split into two heads; every step's numbers.
2. Train the four matrices on a toy sentiment task, one step or a hundred at a time: the loss,
   W_Q, W_K, W_V, W_O with their gradients and updates, and the attention weights moving.
3. The graph of one forward and backward, with the gradient paths to the four matrices in red.
4. A trained IMDB model (from examples/sentiment/train.py, in --runs) reads your review.
Every number on the page is computed by minigrad in this process.
"""

import argparse
import signal
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `examples.lab` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.lab.server import make_server  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--port", type=int, default=8000, help="port to listen on (0: any free port)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind; the default serves this computer only "
        "(0.0.0.0 opens it to the network)",
    )
    parser.add_argument(
        "--runs", default="runs", help="where examples/sentiment/train.py wrote its checkpoints"
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port: expected 0 to 65535; got {args.port}")
    try:
        server = make_server(args.host, args.port, runs=args.runs, verbose=args.verbose)
    except OSError as error:
        sys.exit(
            f"attention lab: cannot listen on {args.host}:{args.port}: {error.strerror or error}"
        )
    print(f"attention lab: open {server.url}  (Ctrl-C stops it)", flush=True)
    # A shell that starts a program in the background (`... &`, nohup, some CI runners) hands it
    # SIGINT ignored, and Python then keeps it ignored: `kill -INT` would not stop the lab.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print("attention lab: stopped", flush=True)


if __name__ == "__main__":
    main()
