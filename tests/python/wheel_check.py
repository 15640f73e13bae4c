"""`pip install --no-build-isolation .` at the repository root (pyproject.toml,
scikit-build-core) in a fresh virtual environment that sees the torch of the
interpreter running this script (a .pth file: nothing is downloaded):
    wheel_check.py <source dir> <mpi flavour>
then, with no INFINICCL_LIBRARY, PYTHONPATH or LD_LIBRARY_PATH and outside
the source tree:
  1. `import infiniccl.torch` gives the C++ backend, the library is the
     wheel's own and _build_info.py records the torch imported;
  2. the environment's icclrun starts 2 ranks that all_reduce through
     init_process_group("infiniccl") in int32, int64 and float64 (exact
     sums 1 + 2 = 3 per element);
  3. torch.__version__ changed before the import: refused naming both
     versions.
Exits 77 (ctest's skip) without torch 2.7+ or scikit-build-core.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

from torch_needs import torch_or_skip

SNIPPET = r"""
import torch, torch.distributed as dist, infiniccl.torch as t
assert t.backend_kind() == "cpp", t.backend_kind()
dist.init_process_group("infiniccl")
r = dist.get_rank()
for dt in (torch.int32, torch.int64, torch.float64):
    x = torch.full((5,), r + 1, dtype=dt)
    dist.all_reduce(x)
    assert x.tolist() == [3] * 5, (dt, x.tolist())
print("rank", r, "of", dist.get_world_size(), "all_reduce OK")
dist.destroy_process_group()
"""


def run(cmd, env, cwd, timeout=600):
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    print(p.stdout[-4000:], end="")
    print("  exit %d, %.0f s" % (p.returncode, time.monotonic() - t0), flush=True)
    return p.returncode, p.stdout


def main():
    src, flavour = os.path.abspath(sys.argv[1]), sys.argv[2]
    torch = torch_or_skip()
    if torch is None:
        return 77
    version = str(torch.__version__)
    try:
        import scikit_build_core  # noqa: F401
    except ImportError:
        print("SKIPPED: %s has no scikit-build-core (pip install scikit-build-core)" %
              sys.executable)
        return 77
    env = {k: v for k, v in os.environ.items()
           if k not in ("INFINICCL_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH", "CMAKE_ARGS",
                        "INFINICCL_TORCH_BACKEND", "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory(prefix="infiniccl-wheel-") as tmp:
        venv = os.path.join(tmp, "venv")
        rc, _ = run([sys.executable, "-m", "venv", "--without-pip", venv], env, tmp)
        if rc:
            return 1
        py = os.path.join(venv, "bin", "python")
        purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()"
                                  "['purelib'])"], capture_output=True, text=True,
                                 check=True).stdout.strip()
        # torch, pip and scikit-build-core from this interpreter's environment
        # (its site folders, and those its own .pth files add).
        outer = [sysconfig.get_paths()["purelib"]] + [
            p for p in sys.path if p.endswith("-packages") and os.path.isdir(p)]
        with open(os.path.join(purelib, "outer.pth"), "w") as f:
            f.write("".join(p + "\n" for p in dict.fromkeys(outer)))
        build_env = dict(env, CMAKE_ARGS="-DINFINICCL_MPI=%s" % flavour,
                         CMAKE_BUILD_PARALLEL_LEVEL=env.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"))
        rc, _ = run([py, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                     "--no-index", "--no-cache-dir", "--disable-pip-version-check",
                     "--ignore-installed", "--prefix", venv, src], build_env, tmp)
        if rc:
            print("FAILED: pip install --no-build-isolation of the repository root")
            return 1
        check = ("import torch, infiniccl, infiniccl.torch as t, infiniccl._build_info as b; "
                 "print(t.backend_kind(), b.TORCH_VERSION == str(torch.__version__), "
                 "infiniccl.library_path())")
        rc, out = run([py, "-W", "ignore", "-c", check], env, tmp)
        words = out.split()
        if rc or words[-3:-1] != ["cpp", "True"] or not words[-1].startswith(venv):
            print("FAILED: the wheel did not give the C++ backend with its own library and "
                  "the imported torch recorded")
            return 1
        icclrun = os.path.join(venv, "bin", "icclrun")
        rc, out = run([icclrun, "-np", "2", py, "-W", "ignore", "-c", SNIPPET], env, tmp,
                      timeout=300)
        if rc or out.count("all_reduce OK") != 2:
            print("FAILED: 2 ranks through the wheel's icclrun and backend")
            return 1
        rc, out = run([py, "-W", "ignore", "-c",
                       "import torch; torch.__version__ = '2.99.0'; import infiniccl.torch"],
                      env, tmp)
        if rc == 0 or version not in out or "2.99.0" not in out:
            print("FAILED: another torch was not refused naming both versions")
            return 1
        shutil.rmtree(venv, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
