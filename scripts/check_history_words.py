#!/usr/bin/env python3
"""Fails when a page or a comment refers to how the project was developed.

Docs and comments say what the code does and how fast, never when or in
which work session something was done: the history is in git. This script
scans every file git tracks (docs in full; in source files, only the
comments) for the patterns below and prints each hit as FILE:LINE: text.

    scripts/check_history_words.py [ROOT]      exit 0: clean, 1: hits
    scripts/check_history_words.py --self-test  checks the patterns themselves

The word list (Python regular expressions, case-insensitive; docs/TESTING.md
explains each):
"""

import os
import re
import subprocess
import sys

# --- the word list ---------------------------------------------------------
# Each entry: (name, pattern). A line that must quote one of them (this
# script's own test, an error message under test) carries the marker
# ALLOW_MARKER anywhere on the line.
PATTERNS = [
    # Work-session ordinals: "run 17", "session 12", "run #3", "s13".
    # "run" followed by a count of things ("run 4 ranks", "run 2 tests") is
    # ordinary English and passes.
    ("ordinal", r"\b(?:run|session)s?\s*#?\s*\d+\b"
                r"(?!\s*(?:x\b|ranks?|processes|procs|times|tests?|jobs?|threads?|nodes?"
                r"|gpus?|calls?|loops?|rounds?|iterations?|copies|programs?|cases?"
                r"|steps?|stages?|cores?|ms\b|us\b|s\b|seconds?|minutes?|%))"),
    # "s13": two digits, so that a stream or variable named s1, s2 passes.
    ("ordinal", r"(?<![\w./-])s\d{2}\b(?![\w.-])"),
    # Phrases that only make sense in a diary.
    ("diary", r"\b(?:last|this|previous|next|earlier|later|current|same|prior)\s+session\b"),
    ("diary", r"\blast\s+time\b"),
    ("diary", r"\b(?:yesterday|today)'?s?\s+(?:run|session|work)\b"),
    # Our own issue numbers: "issue 39", "issues 26 and 27", "PR 12", "(#39)",
    # "see #39". A reference to someone else's tracker names it and passes
    # (EXTERNAL below): "NVIDIA/nccl issue 1950", "pmodels/mpich#6893",
    # "upstream's issue #32", "DeepSpeed's issue 5391", "pytorch #147596";
    # so does a sequence number after a name ("AllReduce #10").
    ("issue", r"\b(?:issues?|PRs?|pull\s+requests?|tickets?)\s*#?\s*\d+\b"),
    ("issue", r"(?:^|[(\[]|\b(?:see|in|by|fixes|fixed|closes|closed|and|per)\s+)#\d+\b"),
    # A run's date in a heading ("## 2026-11-30: ...", "### Results (2026-12-01)").
    ("dated heading", r"^\s{0,3}#{1,6}\s.*\b20\d\d-\d\d-\d\d\b"),
    # What the code did once: a page or comment says what it does. "used
    # to" after a form of "be" or "get" is the passive ("is used to stage")
    # and passes.
    ("then and now", r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bbeing )"
                     r"(?<!\bwas )(?<!\bwere )(?<!\bget )(?<!\bgets )\bused to\b"),
    ("then and now", r"\bpreviously\b|\bpredat(?:e|es|ed|ing)\b|\bsupersed(?:e|es|ed|ing)\b"),
    # In pages only (DOCS_ONLY; a comment's "operations not yet started" or
    # "ranks no longer agree" is the program's state): "no longer", and "not
    # yet" as a roadmap ("not yet run on a GPU", "several GPUs not yet").
    ("then and now", r"\bno longer\b"),
    ("roadmap", r"\bnot yet(?:\s+(?:run|built|verified|tested|measured|supported|implemented"
                r"|available|written|ported|compiled|done|on)\b|\s*(?:[.;,)|]|$))"),
    # Before/after narratives of a change: "as before the engine", "before
    # this change", "after the fix", "c65b227 against e57f8bf" (a figure of
    # one commit against another).
    ("before/after", r"\bas (?:it was )?before\b|\b(?:before|after|since) (?:the|this|that|"
                     r"our) (?:change|fix|rewrite|refactor(?:ing)?|patch|commit|engine)\b(?!')"),
    ("before/after", r"\b[0-9a-f]{7,40} (?:against|vs\.?|versus|->) [0-9a-f]{7,40}\b"),
]
# An "issue" hit passes when the text just before it names whose tracker it
# is: owner/repo, or a possessive ("upstream's", "DeepSpeed's").
EXTERNAL = r"(?:[\w.-]+/[\w.-]+|\w+'s|upstream)\s*$"
ALLOW_MARKER = "history-words: allow"
# Checked in Markdown pages only.
DOCS_ONLY = {"dated heading", "roadmap", "before/after"}
DOCS_ONLY_PATTERNS = {r"\bno longer\b"}
# ---------------------------------------------------------------------------

# Text files read in full; everything else with a known comment syntax is
# read for its comments only. docs/data's pages (.md) are read as docs; its
# raw benchmark output (.log, .json) is data, not prose.
DOC_EXTENSIONS = {".md", ".txt", ".rst"}
SKIP_PREFIXES = ()
SKIP_FILES = {"LICENSE", "scripts/check_history_words.py"}
C_LIKE = {".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".in"}
HASH_LIKE = {".py", ".sh", ".cmake", ".toml", ".supp", ".yml", ".yaml", ".cfg"}
HASH_NAMES = {"CMakeLists.txt", "Doxyfile", "icclrun", "run", ".gitignore"}

COMPILED = [(name, re.compile(p, re.IGNORECASE), name in DOCS_ONLY or p in DOCS_ONLY_PATTERNS)
            for name, p in PATTERNS]
EXTERNAL_RX = re.compile(EXTERNAL, re.IGNORECASE)


def c_comments(text):
    """(line number, comment text) for every // and /* */ comment."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in "\"'":
            q, i = c, i + 1
            while i < n and text[i] != q and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text[i:j].count("\n")
            i = j + 2
        else:
            i += 1
    return out


def markdown_prose(text):
    """(line number, text) of a page's prose: fenced blocks (commands, a
    program's output) and double-quoted spans (quoted messages) left out."""
    out, fence = [], False
    for no, raw in enumerate(text.split("\n"), 1):
        if raw.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            out.append((no, QUOTED.sub('""', raw)))
    return out


QUOTED = re.compile(r'"[^"]*"')


def hash_comments(text):
    """(line number, text after the first # outside quotes)."""
    out = []
    for no, raw in enumerate(text.split("\n"), 1):
        quote = None
        for k, c in enumerate(raw):
            if quote:
                if c == quote:
                    quote = None
            elif c in "\"'" and (k == 0 or raw[k - 1] != "\\"):
                # An apostrophe inside words ("rank's") is not a quote.
                if c == "'" and k > 0 and raw[k - 1].isalnum():
                    continue
                quote = c
            elif c == "#" and (k == 0 or raw[k - 1] in " \t"):
                out.append((no, raw[k + 1:]))
                break
    return out


def scan_lines(lines, is_markdown):
    for no, text in lines:
        if ALLOW_MARKER in text:
            continue
        for name, rx, docs_only in COMPILED:
            if docs_only and not is_markdown:
                continue
            m = next((m for m in rx.finditer(text)
                      if not (name == "issue" and EXTERNAL_RX.search(text[:m.start()]))),
                     None)
            if m:
                yield no, name, text.strip()
                break


def lines_of(path, text):
    base = os.path.basename(path)
    ext = os.path.splitext(base)[1]
    if base in HASH_NAMES:
        return hash_comments(text), False
    if ext in DOC_EXTENSIONS:
        return markdown_prose(text) if ext == ".md" else \
            list(enumerate(text.split("\n"), 1)), ext == ".md"
    if ext in C_LIKE:
        return c_comments(text), False
    if ext in HASH_LIKE or text.startswith("#!"):
        return hash_comments(text), False
    return [], False


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                         check=True).stdout.decode()
    return [f for f in out.split("\0") if f]


def check_tree(root):
    hits = 0
    for rel in tracked_files(root):
        if rel in SKIP_FILES or (SKIP_PREFIXES and rel.startswith(SKIP_PREFIXES)):
            continue
        path = os.path.join(root, rel)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        lines, md = lines_of(rel, text)
        for no, name, line in scan_lines(lines, md):
            print(f"{rel}:{no}: {name}: {line}")
            hits += 1
    return hits


# (text, must it be flagged?) for --self-test.
SAMPLES = [
    ("measured in run 17 on the quiet machine", True),
    ("Session 12 added the engine", True),
    ("see s13's table", True),
    ("the copy on s2 waits for s1", False),
    ("as last time", True),
    ("in this session", True),
    ("the previous session's numbers", True),
    ("fixed by issue 39", True),
    ("issues 26 and 27", True),
    ("(#39)", True),
    ("see #39", True),
    ("## 2026-11-30: one H200", True),
    ("### Results (2026-12-01)", True),
    ("NVIDIA/nccl issue 1950, fixed in 2.29.7", False),
    ("pmodels/mpich#6893", False),
    ("upstream's issue #32", False),
    ("DeepSpeed's issue 5391", False),
    ("pytorch #147596", False),
    ("DeepSpeed #5391", False),
    ("rank 0 in AllReduce #1002", False),
    ("queued AllReduce 1024 x float32 #7 on comm T", False),
    ("the tests run 4 ranks", False),
    ("mpirun -np 4 ./app", False),
    ("runs 2 ranks per node", False),
    ("a 5 s timeout, -O3, sm_90, x86_64", False),
    ("the run ends with nccl-tests' footers", False),
    ("Measured on 2026-11-30 (table row)", False),
    ("infiniccl-bench --iters 20", False),
    ("what a small queued call used to add", True),
    ("the buffer is used to stage the copy", False),
    ("these are used to pick a path", False),
    ("the flag is no longer needed", True),
    ("previously measured", True),
    ("tests that predate the engine", True),
    ("superseded; older runs are in git's history", True),
    ("| several GPUs not yet |", True),
    ("not yet run on a GPU", True),
    ("only if not yet initialised", False),
    ("the ranks no longer agree", True),
    ("as before the engine", True),
    ("2.4 ms after the fix", True),
    ("10.1 -> 4.4 us (c65b227 against e57f8bf)", True),
    ("ranks before the call returns", False),
    ("before the first collective", False),
    ("after the engine's thread starts", False),
    ("as before a Broadcast", True),
    ('at once ("the ranks of this communicator no longer agree")', False),
]


def self_test():
    bad = 0
    for text, want in SAMPLES:
        got = any(True for _ in scan_lines(markdown_prose(text), True))
        if got != want:
            print(f"self-test: {'missed' if want else 'false hit'}: {text!r}")
            bad += 1
    print(f"self-test: {len(SAMPLES) - bad}/{len(SAMPLES)} samples as expected")
    return bad


def main():
    args = sys.argv[1:]
    if args[:1] == ["--self-test"]:
        return 1 if self_test() else 0
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    hits = check_tree(root)
    if hits:
        print(f"{hits} line(s) refer to how the project was developed; say what the code "
              "does instead (the history is in git). Word list: the top of "
              "scripts/check_history_words.py; docs/TESTING.md.")
        return 1
    print("no development-history words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
