#!/usr/bin/env python3
"""scripts/check_layers.py: passes on src/, and fails (naming the file, the
line and both layers) on a tree where an include points up or across."""
import os
import subprocess
import sys
import tempfile

checker, src = sys.argv[1], sys.argv[2]


def run(tree):
    p = subprocess.run([sys.executable, checker, tree], capture_output=True, text=True)
    return p.returncode, p.stdout


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


rc, out = run(src)
assert rc == 0, f"src/ breaks the layering:\n{out}"

with tempfile.TemporaryDirectory() as t:
    write(t, "core/a.h", '#include "core/b.h"\n#include <infiniccl/infiniccl.h>\n')
    write(t, "comm/c.cpp", '#include "core/a.h"\n#include "staging/d.h"\n')
    write(t, "staging/d.h", "\n")
    rc, out = run(t)
    assert rc == 0, out
    write(t, "staging/e.cpp", '\n#include "comm/c.h"\n')      # up
    write(t, "device/f.cpp", '#  include "mpi/g.h"\n')      # across
    write(t, "extra/h.cpp", "\n")                              # no layer
    rc, out = run(t)
    assert rc == 1, out
    assert "staging/e.cpp:2: staging/ (layer 3) includes comm/c.h (layer 6)" in out, out
    assert "device/f.cpp:1:" in out and "mpi/g.h" in out, out
    assert "extra/h.cpp: folder 'extra' is on no layer" in out, out
print("ok")
