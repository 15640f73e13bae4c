#!/usr/bin/env python3
"""The Python package and the README carry CMake's project version.

usage: check_version.py VERSION SOURCE_DIR
Checks `version = "..."` in pyproject.toml and python/pyproject.toml, `__version__ = "..."` in
python/infiniccl/__init__.py (read as text: importing the package would
need the library) and the README's "Version X.Y.Z" line.
"""
import os
import re
import sys


def find(path, pattern):
    with open(path, encoding="utf-8") as f:
        m = re.search(pattern, f.read(), re.MULTILINE)
    return m.group(1) if m else None


def main():
    want, src = sys.argv[1], sys.argv[2]
    checks = [
        (os.path.join(src, "pyproject.toml"), r'^version\s*=\s*"([^"]+)"'),
        (os.path.join(src, "python", "pyproject.toml"), r'^version\s*=\s*"([^"]+)"'),
        (os.path.join(src, "python", "infiniccl", "__init__.py"),
         r'^__version__\s*=\s*"([^"]+)"'),
        (os.path.join(src, "README.md"), r'^Version (\d+\.\d+\.\d+)\b'),
    ]
    bad = 0
    for path, pattern in checks:
        got = find(path, pattern)
        ok = got == want
        print(f"{'ok' if ok else 'MISMATCH'}: {os.path.basename(path)}: {got!r} "
              f"(CMake project version {want!r})")
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
