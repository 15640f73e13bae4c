#!/usr/bin/env python3
"""The documentation's size limits and the data behind every performance table.

usage: check_docs.py SOURCE_DIR
       check_docs.py --style [--all] SOURCE_DIR   (only the user pages' sentence and
                      cell limits; --all adds PAGES_OVER_LIMITS)
       check_docs.py --self-test   (the sentence, cell and number parsers on samples)

Checks:
- README.md has at most 250 lines, docs/PERFORMANCE.md at most 400;
- docs/data holds at most 40 files, each one (or its folder) named in
  docs/data/README.md, and every path docs/data/README.md names exists;
- every table of docs/PERFORMANCE.md, between its heading and the next
  table or heading, names a data file (`data/...`, which must exist) and the
  command that produced it (a ```sh block, `icclrun`, `infiniccl-bench` or a
  script of scripts/). Tables whose header has a "section" or "where" column
  (the summary and the tuning table) point to those sections instead;
- every number in README.md's "Headline figures" table (outside code
  spans) appears in docs/PERFORMANCE.md, so each figure has one source;
- examples/README.md names every program of examples/ (.cpp, .py), and
  docs/MIGRATION.md maps at least 10 NCCL calls (`nccl...` names in its
  tables);
- every tracked Markdown file (`git ls-files '*.md'`; without git, every
  .md outside build*/ and dot folders) closes each code fence it opens: a
  line of three or more backquotes or tildes opens one, and only a line of
  at least as many of the same character, with nothing after them, closes
  it;
- docs/CONFIG.md names, in the first column of one of its tables, every
  `INFINICCL_` environment variable read outside the library: by python/
  (the package, its build, the torch backend's C++), tests/python (the
  tests and their build scripts), scripts/, tools/ and the CMake files
  (`$ENV{...}`); its table of the variables the tools read is the list
  src/core/config.cpp exempts from the unknown-variable warning
  (kToolVariables), both ways. The library's own variables are
  unit_config_doc's (Config::Table());
- docs/BUILD_OPTIONS.md names, in the first column of a table, every
  option of every CMake file (`option(NAME` or `set(NAME ... CACHE` not
  INTERNAL), and every `INFINICCL_` name of that column is one of them;
- the user pages (user_pages(): README.md, python/README.md,
  examples/README.md, docs/**/*.md but docs/TESTING.md and docs/data/) have
  no sentence of more than 40 words (prose outside code blocks and tables; a sentence ends at
  ". ", "? " or "! " before a capital, a digit, a backquote or a bracket, or at a
  blank line, a list item or a heading) and no table cell longer than
  400 characters.
Prints every failure; exits 1 on any.
"""
import os
import re
import subprocess
import sys
import tempfile

LIMITS = {"README.md": 250, os.path.join("docs", "PERFORMANCE.md"): 400}
# The user pages: README.md, python/README.md, examples/README.md and every
# Markdown page under docs/ (the guide, reliability/ and architecture/
# included) but docs/TESTING.md, the contributors' list of every test and
# stage, and docs/data/, the raw measurements the pages quote.
USER_PAGE_ROOTS = ["README.md", "python/README.md", "examples/README.md", "docs"]
NOT_USER_PAGES = ["docs/TESTING.md", "docs/data"]


def user_pages(src):
    """Every user page under `src`, sorted, as paths relative to it."""
    pages = []
    for root in USER_PAGE_ROOTS:
        path = os.path.join(src, root)
        if os.path.isfile(path):
            pages.append(root)
            continue
        for top, dirs, names in os.walk(path):
            dirs.sort()
            for n in sorted(names):
                if n.endswith(".md"):
                    pages.append(os.path.relpath(os.path.join(top, n), src).replace(os.sep, "/"))
    return [p for p in pages
            if not any(p == x or p.startswith(x + "/") for x in NOT_USER_PAGES)]


# Pages exempt from the limits (`check_docs.py --style --all` checks them
# too): none.
PAGES_OVER_LIMITS = []
MAX_LONG_SENTENCES = 0
LONG_SENTENCE_WORDS = 40
MAX_CELL_CHARS = 400
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?(?![\d.]\d)")
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


def check_headline(src, errors):
    """Every number of README's headline table appears in PERFORMANCE.md."""
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        readme = f.read().split("\n")
    with open(os.path.join(src, "docs", "PERFORMANCE.md"), encoding="utf-8") as f:
        perf = f.read()
    try:
        head = readme.index("## Headline figures")
    except ValueError:
        errors.append("README.md has no '## Headline figures' section")
        return
    rows = [i for i in range(head, len(readme)) if readme[i].startswith("|")]
    rows = [i for i in rows if i - rows[0] == rows.index(i)][2:]  # one table, no header
    if not rows:
        errors.append("README.md: the headline figures have no table")
    for i in rows:
        text = re.sub(r"`[^`]*`", "", readme[i])
        for m in NUMBER.finditer(text):
            num = m.group(0).rstrip(".")
            if not re.search(r"(?<![\w.])" + re.escape(num) + r"(?![\d]|\.\d)", perf):
                errors.append("README.md:%d: the headline figure %s is not in "
                              "docs/PERFORMANCE.md" % (i + 1, num))


FENCE = re.compile(r"^ *(`{3,}|~{3,})(.*)$")


def unclosed_fence(text):
    """The 1-based line of a code fence that `text` opens and never closes, or 0."""
    opened = None  # (character, length, line)
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if not m:
            continue
        mark, rest = m.group(1), m.group(2)
        if opened is None:
            if mark[0] == "`" and "`" in rest:
                continue  # an inline code span, not a fence
            opened = (mark[0], len(mark), n)
        elif mark[0] == opened[0] and len(mark) >= opened[1] and not rest.strip():
            opened = None
    return opened[2] if opened else 0


def markdown_files(src):
    """The tracked .md files of `src` (relative paths)."""
    return [p for p in tracked_files(src) if p.endswith(".md")]


def check_fences(src, errors):
    for rel in markdown_files(src):
        path = os.path.join(src, rel)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            line = unclosed_fence(f.read())
        if line:
            errors.append("%s:%d: a code fence opened here is never closed" % (rel, line))


ENV_READS = [
    # Python: os.environ.get("X"), os.getenv("X"), os.environ["X"] (not
    # assigned), "X" in os.environ
    re.compile(r"""os\.environ\.get\(\s*["'](INFINICCL_\w+)"""),
    re.compile(r"""os\.getenv\(\s*["'](INFINICCL_\w+)"""),
    re.compile(r"""os\.environ\[\s*["'](INFINICCL_\w+)["']\s*\](?!\s*=[^=])"""),
    re.compile(r"""["'](INFINICCL_\w+)["']\s+(?:not\s+)?in\s+os\.environ"""),
    # C and C++
    re.compile(r'getenv\(\s*"(INFINICCL_\w+)"'),
    # CMake
    re.compile(r"\$ENV\{(INFINICCL_\w+)\}"),
]
SHELL_READ = re.compile(r"\$\{?(INFINICCL_\w+)")
SHELL_ASSIGN = re.compile(r"^\s*(?:export\s+|local\s+|readonly\s+|declare\s+\S+\s+)?"
                          r"(INFINICCL_\w+)=", re.M)
ENV_FOLDERS = ("python/", "tests/python/", "scripts/", "tools/")
CMAKE_OPTION = re.compile(r"^\s*(?:option\(\s*(\w+)|set\(\s*(\w+)\s[^)]*?\bCACHE\s+"
                          r"(?!INTERNAL)\w+)", re.M | re.S)


def tracked_files(src):
    """Every tracked file of `src` (relative paths); without git, a walk."""
    try:
        out = subprocess.run(["git", "-C", src, "ls-files", "-z"], check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        return sorted(p for p in out.decode().split("\0") if p)
    except (OSError, subprocess.CalledProcessError):
        found = []
        for root, dirs, names in os.walk(src):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            found += [os.path.relpath(os.path.join(root, n), src) for n in names]
        return sorted(found)


def is_shell(rel, text):
    return rel.endswith(".sh") or text.startswith(("#!/bin/sh", "#!/bin/bash",
                                                   "#!/usr/bin/env bash", "#!/usr/bin/env sh"))


def env_reads(files):
    """{variable: first file reading it} for `files`, a list of (relative path,
    text): the reads ENV_READS and, in shell scripts, SHELL_READ find (a
    name a shell script assigns is a shell variable, not the environment's)."""
    assigned = set()
    for rel, text in files:
        if is_shell(rel, text):
            assigned |= set(SHELL_ASSIGN.findall(text))
    reads = {}
    for rel, text in files:
        names = [n for pattern in ENV_READS for n in pattern.findall(text)]
        if is_shell(rel, text):
            names += [n for n in SHELL_READ.findall(text) if n not in assigned]
        for n in names:
            reads.setdefault(n, rel)
    return reads


def first_column_names(text, prefix=r"[A-Z]"):
    """The `NAME`s in the first cell of the table rows of a Markdown page."""
    names = set()
    for line in text.split("\n"):
        if line.startswith("|") and not line.startswith("|---"):
            first = line.strip("|").split("|")[0]
            names |= set(re.findall(r"`(%s\w*)`" % prefix, first))
    return names


def tool_variables(config_cpp):
    """The names of src/core/config.cpp's kToolVariables."""
    m = re.search(r"kToolVariables\[\]\s*=\s*\{([^}]*)\}", config_cpp)
    return set(re.findall(r'"(\w+)"', m.group(1))) if m else set()


def cmake_options(files):
    """{option: file} of `files` ((relative path, text) of CMake files)."""
    out = {}
    for rel, text in files:
        for m in CMAKE_OPTION.finditer(text):
            out.setdefault(m.group(1) or m.group(2), rel)
    return out


def read(src, rel):
    with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
        return f.read()


def check_config_and_options(src, errors):
    files = tracked_files(src)
    cmake = [(rel, read(src, rel)) for rel in files
             if os.path.basename(rel) == "CMakeLists.txt" or rel.endswith(".cmake")]
    scanned = cmake + [(rel, read(src, rel)) for rel in files
                       if rel.startswith(ENV_FOLDERS) and not rel.endswith(".md") and
                       os.path.isfile(os.path.join(src, rel))]
    config = read(src, os.path.join("docs", "CONFIG.md"))
    documented = first_column_names(config, "INFINICCL_")
    for name, rel in sorted(env_reads(scanned).items()):
        if name not in documented:
            errors.append("docs/CONFIG.md: %s (read by %s) has no row" % (name, rel))
    # The tools' table: its rows are "| `A`, `B`: who reads them | ... |".
    tools = set()
    for line in config.split("\n"):
        first = line.strip("|").split("|")[0] if line.startswith("|") else ""
        if "`: " in first or first.rstrip().endswith(":"):
            tools |= set(re.findall(r"`(INFINICCL_\w+)`", first))
    exempt = tool_variables(read(src, os.path.join("src", "core", "config.cpp")))
    for name in sorted(tools - exempt):
        errors.append("docs/CONFIG.md names %s as read by a tool, but src/core/config.cpp's "
                      "kToolVariables lacks it (infinicclInit warns when it is set)" % name)
    for name in sorted(exempt - tools):
        errors.append("src/core/config.cpp's kToolVariables has %s, which docs/CONFIG.md's "
                      "table of the tools' variables lacks" % name)
    options = cmake_options(cmake)
    listed = first_column_names(read(src, os.path.join("docs", "BUILD_OPTIONS.md")))
    for name, rel in sorted(options.items()):
        if name not in listed:
            errors.append("docs/BUILD_OPTIONS.md: the option %s (%s) has no row" % (name, rel))
    every_cmake = "\n".join(text for _, text in cmake)
    for name in sorted(n for n in listed if n.startswith("INFINICCL_")):
        if name not in options and not re.search(r"find_program\(\s*%s\b" % name, every_cmake):
            errors.append("docs/BUILD_OPTIONS.md names %s, which no CMake file defines" % name)


def check_examples_and_migration(src, errors):
    with open(os.path.join(src, "examples", "README.md"), encoding="utf-8") as f:
        index = f.read()
    ex = os.path.join(src, "examples")
    for root, _, names in os.walk(ex):
        for n in sorted(names):
            if not n.endswith((".cpp", ".py")):
                continue
            rel = os.path.relpath(os.path.join(root, n), ex)
            if "`%s`" % rel not in index:
                errors.append("examples/README.md does not name examples/%s" % rel)
    with open(os.path.join(src, "docs", "MIGRATION.md"), encoding="utf-8") as f:
        rows = [line for line in f if line.startswith("| `nccl")]
    calls = {m for line in rows for m in re.findall(r"`(nccl[A-Z]\w*)`", line.split("|")[1])}
    if len(calls) < 10:
        errors.append("docs/MIGRATION.md maps %d NCCL calls (at least 10)" % len(calls))


SENTENCE_END = re.compile(r"(?<=[.?!])[)\"']?\s+(?=[A-Z0-9`(\[*])")


def prose_and_cells(text):
    """(paragraphs of prose, table cells) of a Markdown page."""
    paragraphs, cells, cur, fence = [], [], [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
            line = ""
        if fence:
            continue
        st = line.strip()
        if st.startswith("|"):
            cells += [c.strip() for c in st.strip("|").split("|")]
            st = ""
        if not st or st.startswith(("#", "- ", "* ", "<")) or re.match(r"\d+\. ", st):
            if cur:
                paragraphs.append(" ".join(cur))
            cur = [re.sub(r"^(?:[-*]|\d+\.) ", "", st)] if st and not st.startswith(("#", "<")) \
                else []
            continue
        cur.append(st)
    if cur:
        paragraphs.append(" ".join(cur))
    return paragraphs, cells


def long_sentences(text):
    paragraphs, _ = prose_and_cells(text)
    out = []
    for p in paragraphs:
        for sentence in SENTENCE_END.split(p):
            if len(sentence.split()) > LONG_SENTENCE_WORDS:
                out.append(sentence)
    return out


def check_user_pages(src, errors, pages=None):
    for rel in user_pages(src) if pages is None else pages:
        path = os.path.join(src, rel)
        if not os.path.exists(path):
            errors.append("%s: a user page that does not exist" % rel)
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        longs = long_sentences(text)
        if len(longs) > MAX_LONG_SENTENCES:
            for sentence in longs:
                errors.append("%s:%d: a sentence of %d words (at most %d): '%s...'" % (
                    rel, line_of(text, sentence), len(sentence.split()),
                    LONG_SENTENCE_WORDS, " ".join(sentence.split()[:12])))
        for cell in prose_and_cells(text)[1]:
            if len(cell) > MAX_CELL_CHARS:
                errors.append("%s:%d: a table cell of %d characters (at most %d): '%s...'" % (
                    rel, line_of(text, cell), len(cell), MAX_CELL_CHARS, cell[:60]))


def line_of(text, piece):
    """The line of `text` on which `piece` (a sentence or a cell) starts; 0 if not found."""
    words = piece.split()[:4]
    pattern = r"\s+".join(re.escape(w) for w in words)
    m = re.search(pattern, text) if words else None
    return text.count("\n", 0, m.start()) + 1 if m else 0


def page_errors(text):
    """The style errors check_user_pages reports for one page of `text`."""
    with tempfile.TemporaryDirectory() as src:
        with open(os.path.join(src, "page.md"), "w", encoding="utf-8") as f:
            f.write(text)
        errors = []
        check_user_pages(src, errors, ["page.md"])
    return errors


def self_test():
    """The limits' own checks on samples."""
    bad = 0
    long = "word " * 41 + "end."
    cases = [
        (long_sentences(long + " Short one."), 1),
        (long_sentences("Short. " * 30), 0),
        (long_sentences("```\n" + long + "\n```"), 0),
        (long_sentences("| " + long + " |"), 0),
        (long_sentences("- " + long + "\n- " + long), 2),
        (len([c for c in prose_and_cells("| a | " + "x" * 401 + " |")[1] if len(c) > 400]), 1),
        ([m.group(0) for m in NUMBER.finditer("**0.23-0.77** of 64 MiB, 3.4-5.7x")],
         ["0.23-0.77", "64", "3.4-5.7"]),
        (unclosed_fence("text\n```c\ncode\n```\nmore"), 0),
        (unclosed_fence("text\n```c\ncode\n\n## A heading\n"), 2),
        (unclosed_fence("````md\n```c\n```\n````\n"), 0),
        (unclosed_fence("````md\n```c\n```\n"), 1),
        (unclosed_fence("~~~\n```\n~~~\n```sh\nx\n"), 4),
        (unclosed_fence("- item\n\n  ```sh\n  make\n  ```\n"), 0),
        (unclosed_fence("```c\nx\n```c\n"), 1),
        (unclosed_fence("``` `code` ```\ntext\n"), 0),
        (sorted(env_reads([
            ("python/setup.py", 'a = os.environ.get("INFINICCL_A", "")\n'
                                'b = os.environ["INFINICCL_B"]\nenv["INFINICCL_C"] = "1"\n'
                                'os.environ["INFINICCL_D"] = "x"\nos.getenv("INFINICCL_E")\n'
                                'if "INFINICCL_F" in os.environ: pass\n'),
            ("x.cpp", 'const char *v = std::getenv("INFINICCL_G");\n'),
            ("CMakeLists.txt", 'if(DEFINED ENV{X})\nset(a $ENV{INFINICCL_H})\n'),
            ("scripts/t.sh", 'INFINICCL_I=1\necho "$INFINICCL_I ${INFINICCL_J:-x} $INFINICCL_K"\n'
                             'cmake -DINFINICCL_L=ON\n'),
            ("scripts/u.sh", 'echo $INFINICCL_I\n'),
        ])), ["INFINICCL_A", "INFINICCL_B", "INFINICCL_E", "INFINICCL_F", "INFINICCL_G",
              "INFINICCL_H", "INFINICCL_J", "INFINICCL_K"]),
        (sorted(cmake_options([("c.cmake", 'option(A_B "x" ON)\nset(C "" CACHE STRING\n  "d")\n'
                                           'set(E 1 CACHE INTERNAL "")\nset(F 1)\n'
                                           '  set(G AUTO CACHE STRING "x")\n')])),
         ["A_B", "C", "G"]),
        (sorted(first_column_names("| `A`, `B`: x | `C` |\n|---|---|\n| `D` | `E` |\n")),
         ["A", "B", "D"]),
        (sorted(tool_variables('constexpr const char *kToolVariables[] = {"A_B",\n "C"};')),
         ["A_B", "C"]),
    ]
    cases += [(page_errors(text), want) for text, want in [
        ("word " * 39 + "end.\n\n| " + "x" * 400 + " |", 0),  # at the limits: passes
        ("Short. " + "word " * 40 + "end.", 1),  # one sentence of 41 words fails
        ("| a | " + "x" * 401 + " |", 1),  # one cell of 401 characters fails
    ]]
    with tempfile.TemporaryDirectory() as src:
        for rel in ["README.md", "docs/guide/a.md", "docs/data/raw.md", "docs/TESTING.md"]:
            os.makedirs(os.path.dirname(os.path.join(src, rel)) or src, exist_ok=True)
            with open(os.path.join(src, rel), "w", encoding="utf-8") as f:
                f.write("Short.\n")
        cases.append((user_pages(src), ["README.md", "docs/guide/a.md"]))
    for k, (got, want) in enumerate(cases):
        if (len(got) if isinstance(got, list) and isinstance(want, int) else got) != want:
            print("self-test case %d: got %r, expected %r" % (k, got, want))
            bad += 1
    print("self-test: %d/%d cases as expected" % (len(cases) - bad, len(cases)))
    return 1 if bad else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if sys.argv[1] == "--style":
        errors = []
        every = sys.argv[2] == "--all"
        pages = [p for p in user_pages(sys.argv[-1]) if p not in PAGES_OVER_LIMITS]
        check_user_pages(sys.argv[-1], errors, pages + PAGES_OVER_LIMITS if every else pages)
        for e in errors:
            print(e)
        if not errors:
            print("docs: the user pages' sentences and table cells within their limits")
        return 1 if errors else 0
    src = sys.argv[1]
    errors = []
    for rel, most in LIMITS.items():
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > most:
            errors.append("%s has %d lines (at most %d)" % (rel, n, most))
    check_data_folder(src, errors)
    check_tables(src, errors)
    check_headline(src, errors)
    check_examples_and_migration(src, errors)
    check_fences(src, errors)
    check_config_and_options(src, errors)
    for e in errors:
        print(e)
    if not errors:
        print("docs: within their limits; every performance table names its command and data; "
              "every code fence closed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
