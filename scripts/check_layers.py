#!/usr/bin/env python3
"""Fails when an include in src/ points up a layer (docs/ARCHITECTURE.md).

Layers, bottom to top; a file may include its own folder and any folder of a
lower layer. Folders on one layer (mpi, device, bootstrap) may not include each other.
usage: scripts/check_layers.py [SRC_DIR]
"""
import os
import re
import sys

LAYERS = [
    ["core"],
    ["mpi", "device", "bootstrap"],
    ["backend"],
    ["staging"],
    ["hier"],
    ["progress"],
    ["comm"],
    ["route"],
    ["api"],
]
LEVEL = {folder: i for i, names in enumerate(LAYERS) for folder in names}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "src")
    bad, files = [], 0
    for root, _, names in os.walk(src):
        for name in sorted(names):
            if not name.endswith((".h", ".cpp", ".c")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            top = rel.split(os.sep)[0]
            if top not in LEVEL:
                bad.append(f"{rel}: folder '{top}' is on no layer (add it to "
                           "scripts/check_layers.py and docs/ARCHITECTURE.md)")
                continue
            files += 1
            with open(path, encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(1).split("/")[0]
                    if target not in LEVEL or target == top:
                        continue  # the public header, a system header, its own folder
                    if LEVEL[target] >= LEVEL[top]:
                        bad.append(f"{rel}:{lineno}: {top}/ (layer {LEVEL[top]}) includes "
                                   f"{m.group(1)} (layer {LEVEL[target]})")
    for line in bad:
        print(line)
    if bad:
        print(f"{len(bad)} include(s) point up or across a layer; see docs/ARCHITECTURE.md")
        return 1
    print(f"layers ok: {files} files, no include points up a layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
