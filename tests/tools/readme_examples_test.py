#!/usr/bin/env python3
"""README.md's examples, run exactly as printed against an installed build.

usage: readme_examples_test.py BUILD_DIR SOURCE_DIR PYTHON c|python|torch

Installs BUILD_DIR into a scratch prefix (cmake --install --prefix), puts
its bin/ first on PATH, its pkg-config folder on PKG_CONFIG_PATH, its
library folder on LD_LIBRARY_PATH (what `ldconfig` gives after the README's
install) and its Python package on PYTHONPATH; `python3` on PATH is PYTHON
(the interpreter with NumPy and torch). Then, in an empty folder:

- c: the ```c block is written to the file its first comment names and
  built with the command in that comment; the ```sh block after it is run
  as printed (`icclrun -np N ./hello`). Every rank r of N must print
  "rank r of N: sum of ranks = N(N-1)/2".
- python: the first ```python block, written to the file its first line's
  command names and run with that command (`icclrun -np N python3 app.py`).
  Each rank prints its rank, x after the AllReduce (4 values) and the
  AllGather's output (4N values): N arrays of each size must appear, every
  value N(N-1)/2.
- torch: the ```python block that imports infiniccl.torch, run the same
  way. DDP averages the gradients, so the N norms printed must be equal,
  finite and positive. Exit 77 (skipped) when PYTHON cannot import torch.
"""
import glob
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def blocks(text, lang):
    return re.findall(r"^```" + lang + r"\n(.*?)^```", text, re.S | re.M)


def run(cmd, cwd, env, timeout=240):
    print("$ " + cmd, flush=True)
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    print(p.stdout, end="", flush=True)
    if p.returncode != 0:
        fail("'%s' exited with %d" % (cmd, p.returncode))
    return p.stdout


def ranks_of(cmd):
    m = re.search(r"-np\s+(\d+)", cmd)
    if not m:
        fail("no -np N in '%s'" % cmd)
    return int(m.group(1))


def install(build, work, python):
    prefix = os.path.join(work, "prefix")
    subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    libdir = os.path.dirname(glob.glob(os.path.join(prefix, "lib*", "libinfiniccl.so*"))[0])
    bindir = os.path.join(work, "pybin")
    os.mkdir(bindir)
    os.symlink(python, os.path.join(bindir, "python3"))
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.join(prefix, "bin"), bindir, env.get("PATH", "")])
    env["PKG_CONFIG_PATH"] = os.path.join(libdir, "pkgconfig")
    env["LD_LIBRARY_PATH"] = libdir
    pkgs = glob.glob(os.path.join(prefix, "lib*", "python3*", "*-packages", "infiniccl"))
    if pkgs:
        env["PYTHONPATH"] = os.path.dirname(pkgs[0])
    for var in ("INFINICCL_LIBRARY",):
        env.pop(var, None)
    return env


def check_c(readme, work, env):
    src = blocks(readme, "c")
    if len(src) != 1:
        fail("README.md has %d ```c blocks, expected 1" % len(src))
    m = re.match(r"/\*\s*(\S+):\s*(.*?)\s*\*/", src[0])
    if not m:
        fail("the C example's first line is not /* FILE: BUILD COMMAND */")
    name, build_cmd = m.groups()
    after = readme[readme.index(src[0]) + len(src[0]):]
    runs = [line.split("#")[0].strip() for b in blocks(after, "sh")[:1]
            for line in b.splitlines() if line.startswith("icclrun")]
    if not runs:
        fail("no ```sh block with an icclrun line after the C example")
    with open(os.path.join(work, name), "w") as f:
        f.write(src[0])
    run(build_cmd, work, env)
    n = ranks_of(runs[0])
    out = run(runs[0], work, env)
    want = n * (n - 1) // 2
    for r in range(n):
        line = "rank %d of %d: sum of ranks = %d" % (r, n, want)
        if line not in out.splitlines():
            fail("no line '%s'" % line)
    print("README C example: %d ranks, sum %d on every rank" % (n, want))


def python_block(readme, torch):
    for b in blocks(readme, "python"):
        if ("infiniccl.torch" in b) == torch:
            m = re.match(r"#\s*(icclrun .*?(\S+\.py))\s*$", b.splitlines()[0])
            if not m:
                fail("the Python example's first line is not '# icclrun ... FILE.py'")
            return b, m.group(1), m.group(2)
    fail("README.md has no %s example" % ("torch" if torch else "Python"))


def check_python(readme, work, env):
    src, cmd, name = python_block(readme, torch=False)
    with open(os.path.join(work, name), "w") as f:
        f.write(src)
    n = ranks_of(cmd)
    out = run(cmd, work, env)
    want = n * (n - 1) // 2
    # The ranks' lines may interleave (print writes each argument apart), so
    # the arrays are counted over the whole output: n of 4 values (x) and n
    # of 4n values (out), every value N(N-1)/2.
    arrays = [[float(v) for v in a.split()] for a in re.findall(r"\[([-\d.e+\s]*)\]", out)]
    sizes = sorted(len(a) for a in arrays)
    if sizes != sorted([4] * n + [4 * n] * n):
        fail("printed arrays of sizes %s, expected %d of 4 and %d of %d" % (sizes, n, n, 4 * n))
    for a in arrays:
        if any(v != want for v in a):
            fail("printed %s, expected every value %d" % (a, want))
    print("README Python example: %d ranks, every value %d" % (n, want))


def check_torch(readme, work, env, python):
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode:
        print("SKIPPED: %s cannot import torch" % python)
        sys.exit(77)
    src, cmd, name = python_block(readme, torch=True)
    with open(os.path.join(work, name), "w") as f:
        f.write(src)
    n = ranks_of(cmd)
    out = run(cmd, work, env)
    # Lines of the ranks may interleave: the norms are counted over the output.
    norms = [float(v) for v in re.findall(r"tensor\(([-\d.e+]+)\)", out)]
    if len(norms) != n:
        fail("%d gradient norms printed, expected %d" % (len(norms), n))
    if len(set(norms)) != 1 or not math.isfinite(norms[0]) or norms[0] <= 0:
        fail("the ranks' gradient norms differ or are not positive: %s" % norms)
    print("README torch example: %d ranks, the same gradient norm %g" % (n, norms[0]))


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in ("c", "python", "torch"):
        print(__doc__)
        return 2
    build, src, python, which = sys.argv[1:]
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    work = tempfile.mkdtemp(prefix="iccl-readme-")
    try:
        env = install(build, work, shutil.which(python) or python)
        if which == "c":
            check_c(readme, work, env)
        elif which == "python":
            check_python(readme, work, env)
        else:
            check_torch(readme, work, env, python)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
