"""The source reads as text (STYLE.md, "Formatting serves reading"): a message made of adjacent
string literals is cut only between words, and is one literal where one fits in 100 columns.

A formatter cuts a long literal wherever the line ends, mid-phrase or mid-word; these tests name
each place (file:line) so that it can be mended. Docstrings and triple-quoted strings are not
checked. A piece that ends with "\\n" (or with ";", "{" or "}", as a line of code does) ends a line
of its text, and a cut at punctuation (between ")" and ".map(") is code's: those may stay.
"""

import functools
import io
import re
import subprocess
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("minigrad", "nn", "examples", "benchmarks", "tests")
EXCLUDED = ("examples/lab/static/",)
LIMIT = 100  # pyproject.toml's line-length
PREFIX = re.compile(r"[rRbBfFuU]*")
# the units a literal's body is read in: an escape, a doubled brace, or one character
UNITS = re.compile(r"\\N\{[^}]*\}|\\x..|\\u.{4}|\\U.{8}|\\[0-7]{1,3}|\\.|\{\{|\}\}|.", re.S)
RAW_UNITS = re.compile(r"\{\{|\}\}|.", re.S)
FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12 splits f-strings up
FSTRING_END = getattr(tokenize, "FSTRING_END", None)
# a piece that ends with one of these ends a line of its text (a message's, generated code's)
LINE_ENDS = ("\\n", ";", "{", "}")
BETWEEN = (tokenize.NL, tokenize.COMMENT)
STATEMENT_START = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)


def tracked_files():
    """The git-tracked .py files of FOLDERS (every .py file there when git is not at hand)."""
    command = ["git", "ls-files", "-z", "--", *(f"{folder}/*.py" for folder in FOLDERS)]
    try:
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
        listed = run.stdout.split("\0")
    except (OSError, subprocess.CalledProcessError):
        listed = [str(p.relative_to(ROOT)) for f in FOLDERS for p in (ROOT / f).rglob("*.py")]
    return sorted(p for p in listed if p and not p.startswith(EXCLUDED) and (ROOT / p).exists())


def string_tokens(text):
    """tokenize's tokens with each f-string as one STRING token, as before Python 3.12."""
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    tokens, depth, first = [], 0, None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if FSTRING_START is not None and token.type == FSTRING_START:
            depth, first = depth + 1, first if depth else token
        elif depth:
            if token.type == FSTRING_END:
                depth -= 1
                if not depth:
                    (row, col), (end_row, end_col) = first.start, token.end
                    whole = text[offsets[row - 1] + col : offsets[end_row - 1] + end_col]
                    merged = dict(type=tokenize.STRING, string=whole, start=first.start)
                    tokens.append(token._replace(**merged, line=first.line))
        else:
            tokens.append(token)
    return tokens


@functools.lru_cache(maxsize=None)
def concatenations():
    """[(path, row, pieces, columns after the last piece)] for every run of two or more adjacent
    single-quoted string literals that is not a statement of its own (a docstring)."""
    found = []
    for path in tracked_files():
        text = (ROOT / path).read_text(encoding="utf-8")
        tokens = string_tokens(text)
        lines = text.splitlines()
        i = 0
        while i < len(tokens):
            if tokens[i].type != tokenize.STRING:
                i += 1
                continue
            last = j = i
            while j + 1 < len(tokens) and tokens[j + 1].type in (tokenize.STRING, *BETWEEN):
                j += 1
                last = j if tokens[j].type == tokenize.STRING else last
            before = i - 1
            while before >= 0 and tokens[before].type in BETWEEN:
                before -= 1
            after = last + 1
            while tokens[after].type in BETWEEN:
                after += 1
            opens = before < 0 or tokens[before].type in STATEMENT_START
            bare = opens and tokens[after].type in (tokenize.NEWLINE, tokenize.ENDMARKER)
            pieces = [t for t in tokens[i : last + 1] if t.type == tokenize.STRING]
            if len(pieces) > 1 and not bare and not any(map(is_triple_quoted, pieces)):
                end_row, end_col = pieces[-1].end
                suffix = len(lines[end_row - 1][end_col:].rstrip())
                found.append((path, pieces[0].start[0], pieces, suffix))
            i = last + 1
    return found


def is_triple_quoted(token):
    body = token.string[len(PREFIX.match(token.string).group()) :]
    return body[:3] in ('"""', "'''")


def parts(token):
    """(prefix in lower case, quote, body units) of one string literal."""
    prefix = PREFIX.match(token.string).group()
    body = token.string[len(prefix) + 1 : -1]
    units = (RAW_UNITS if "r" in prefix.lower() else UNITS).findall(body)
    return prefix.lower(), token.string[len(prefix)], units


def is_word_character(unit):
    return len(unit) == 1 and unit.isalnum()


def is_code_cut(left, right):
    """True for a boundary a person made at a token of code ("...trim())" | ".map(...)"): not
    after a space or a line end, not before a placeholder, not inside a word."""
    if left == " " or left in LINE_ENDS or right == "{":
        return False
    return not (is_word_character(left) and is_word_character(right))


def test_no_message_is_cut_inside_a_word():
    cuts = []
    for path, row, pieces, _ in concatenations():
        for left, right in zip(pieces, pieces[1:]):
            left_units, right_units = parts(left)[2], parts(right)[2]
            if left_units and right_units:
                if is_word_character(left_units[-1]) and is_word_character(right_units[0]):
                    cuts.append(f"{path}:{left.end[0]}: {left.string[-12:]} {right.string[:12]}")
    assert not cuts, "a string cut inside a word:\n" + "\n".join(cuts)


def one_literal_width(pieces):
    """The columns one literal holding all pieces would take at most, or None when the pieces
    cannot be one literal (raw with plain, bytes with str, different quotes) or are lines of a
    text (a piece but the last ends with one of LINE_ENDS) or of code."""
    read = [parts(token) for token in pieces]
    kinds = {("r" in prefix, "b" in prefix) for prefix, _, _ in read}
    if len(kinds) > 1 or len({quote for _, quote, _ in read}) > 1:
        return None
    for (_, _, left), (_, _, right) in zip(read, read[1:]):
        if left and (left[-1] in LINE_ENDS or right and is_code_cut(left[-1], right[0])):
            return None
    fstring = any("f" in prefix for prefix, _, _ in read)
    width = len(read[0][0].replace("f", "").replace("u", "")) + fstring + 2
    for prefix, _, units in read:
        width += len("".join(units))
        if fstring and "f" not in prefix:  # its braces doubled in an f-string
            width += sum(unit in "{}" for unit in units)
    return width


def fits(pieces, suffix):
    """True when pieces fit as one literal where the first one starts (suffix: the columns of
    what follows the last piece on its line, when the last piece is the run's last)."""
    width = one_literal_width(pieces)
    return width is not None and pieces[0].start[1] + width + suffix <= LIMIT


def test_a_message_that_fits_in_one_literal_is_one():
    joinable = [
        f"{path}:{row}: {len(pieces)} literals fit as one in {LIMIT} columns"
        for path, row, pieces, suffix in concatenations()
        if fits(pieces, suffix)
    ]
    assert not joinable, "adjacent string literals that fit as one:\n" + "\n".join(joinable)


def test_a_message_has_no_more_pieces_than_it_needs():
    """Two neighbouring pieces that fit on one line as one literal: a cut a formatter made where
    its line happened to end ("... deprecated and " / "will " / "result in ...")."""
    joinable = []
    for path, _, pieces, suffix in concatenations():
        if fits(pieces, suffix):
            continue  # the test above names it
        for i in range(len(pieces) - 1):
            if fits(pieces[i : i + 2], suffix if i + 2 == len(pieces) else 0):
                joinable.append(f"{path}:{pieces[i].start[0]}: {pieces[i].string[:40]} ...")
    assert not joinable, "neighbouring string literals that fit as one:\n" + "\n".join(joinable)
