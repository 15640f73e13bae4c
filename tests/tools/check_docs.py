#!/usr/bin/env python3
"""The documentation's size limits and the data behind every performance table.

usage: check_docs.py SOURCE_DIR

Checks:
- README.md has at most 250 lines, docs/PERFORMANCE.md at most 400;
- docs/data holds at most 40 files, each one (or its folder) named in
  docs/data/README.md, and every path docs/data/README.md names exists;
- every table of docs/PERFORMANCE.md, between its heading and the next
  table or heading, names a data file (`data/...`, which must exist) and the
  command that produced it (a ```sh block, `icclrun`, `infiniccl-bench` or a
  script of scripts/). Tables whose header has a "section" or "where" column
  (the summary and the tuning table) point to those sections instead.
Prints every failure; exits 1 on any.
"""
import os
import re
import sys

LIMITS = {"README.md": 250, os.path.join("docs", "PERFORMANCE.md"): 400}
MAX_DATA_FILES = 40
COMMAND = re.compile(r"```sh|icclrun|infiniccl-bench|scripts/\w+")
DATA_REF = re.compile(r"data/([\w./<>,*-]+)")


def blocks(lines):
    """Yields (start, end) line indices of each table (lines starting with '|')."""
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            yield i, j
            i = j
        else:
            i += 1


def data_paths_exist(src, text):
    """The data paths named in `text` that do not exist (globs and <...> skipped)."""
    missing = []
    for m in DATA_REF.finditer(text):
        ref = m.group(1).rstrip(".,)")
        if any(c in ref for c in "<>*,") or ref.endswith("README.md"):
            continue
        if not os.path.exists(os.path.join(src, "docs", "data", ref)):
            missing.append("data/" + ref)
    return missing


def check_tables(src, errors):
    path = os.path.join(src, "docs", "PERFORMANCE.md")
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    tables = list(blocks(lines))
    for k, (start, end) in enumerate(tables):
        header = lines[start].lower()
        if "| section |" in header or "| where |" in header:
            continue
        # The table's block: from its bold title (or heading) to the next
        # bold title, heading or table.
        lo = start
        while lo > 0 and not lines[lo].startswith(("#", "**")) and \
                (k == 0 or lo > tables[k - 1][1]):
            lo -= 1
        hi = end
        nxt = tables[k + 1][0] if k + 1 < len(tables) else len(lines)
        while hi < nxt and not lines[hi].startswith(("## ", "**")):
            hi += 1
        around = "\n".join(lines[lo:start] + lines[end:hi])
        where = "docs/PERFORMANCE.md:%d" % (start + 1)
        if not DATA_REF.search(around):
            errors.append("%s: the table names no data file (data/...)" % where)
        if not COMMAND.search(around):
            errors.append("%s: the table names no command" % where)
        for m in data_paths_exist(src, around):
            errors.append("%s: %s does not exist" % (where, m))


def check_data_folder(src, errors):
    data = os.path.join(src, "docs", "data")
    files = []
    for root, _, names in os.walk(data):
        files += [os.path.relpath(os.path.join(root, n), data) for n in names]
    if len(files) > MAX_DATA_FILES:
        errors.append("docs/data holds %d files (at most %d)" % (len(files), MAX_DATA_FILES))
    with open(os.path.join(data, "README.md"), encoding="utf-8") as f:
        index = f.read()
    for rel in sorted(files):
        if rel == "README.md":
            continue
        top = rel.split(os.sep)[0]
        if "`%s`" % rel not in index and "`%s/`" % top not in index and \
                os.path.basename(rel) not in index and top not in index:
            errors.append("docs/data/%s is not named in docs/data/README.md" % rel)
    names = {os.path.basename(rel) for rel in files}
    for m in re.finditer(r"`([\w./-]+\.(?:md|json|log))`", index):
        ref = m.group(1)
        if os.path.exists(os.path.join(data, ref)) or os.path.basename(ref) in names:
            continue
        errors.append("docs/data/README.md names %s, which does not exist" % ref)


def main():
    src = sys.argv[1]
    errors = []
    for rel, most in LIMITS.items():
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > most:
            errors.append("%s has %d lines (at most %d)" % (rel, n, most))
    check_data_folder(src, errors)
    check_tables(src, errors)
    for e in errors:
        print(e)
    if not errors:
        print("docs: within their limits; every performance table names its command and data")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
