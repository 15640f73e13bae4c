"""`cmake --install` with the build's prefix (by default /usr/local) puts the
Python package where the interpreter the tests use (Debian's
/usr/bin/python3) imports it with no PYTHONPATH:
    install_prefix_check.py <cmake> <build dir> <install prefix>
The install goes under DESTDIR (a temporary folder, nothing is written to the
prefix itself); the folder holding infiniccl/ there must be, minus DESTDIR,
on the interpreter's sys.path (the prefix's purelib), and the package
imported from the DESTDIR copy loads the library installed with it.
A prefix that is not one of the interpreter's site prefixes (/opt/...):
only the import is checked, through PYTHONPATH.
"""
import os
import subprocess
import sys
import tempfile


def main():
    cmake, build, prefix = sys.argv[1:4]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "INFINICCL_LIBRARY", "DESTDIR")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    path = subprocess.run([sys.executable, "-c", "import sys; print('\\n'.join(sys.path))"],
                          env=env, capture_output=True, text=True, check=True).stdout.split("\n")
    path = [os.path.normpath(p) for p in path if p]
    print("%s (Python %s), prefix %s" % (sys.executable, sys.version.split()[0], prefix))
    with tempfile.TemporaryDirectory(prefix="infiniccl-prefix-") as dest:
        p = subprocess.run([cmake, "--install", build], env=dict(env, DESTDIR=dest),
                           capture_output=True, text=True)
        if p.returncode:
            print(p.stdout + p.stderr)
            print("FAILED: cmake --install with DESTDIR")
            return 1
        root = dest + os.path.normpath(prefix)
        found = [d for d, _, files in os.walk(root)
                 if os.path.basename(d) == "infiniccl" and "__init__.py" in files]
        if len(found) != 1:
            print("FAILED: expected one infiniccl/ package under %s, found %s" % (root, found))
            return 1
        folder = os.path.dirname(found[0])
        installed = os.path.normpath(folder[len(dest):])
        print("package installed in %s" % installed)
        site_prefix = any(p.startswith(os.path.normpath(prefix) + os.sep) for p in path)
        if site_prefix and installed not in path:
            print("FAILED: %s is not on %s's sys.path:\n  %s" %
                  (installed, sys.executable, "\n  ".join(path)))
            return 1
        if not site_prefix:
            print("%s is not one of %s's site prefixes: only the import is checked" %
                  (prefix, sys.executable))
        code = ("import infiniccl; print(infiniccl.library_path()); "
                "print(infiniccl.__file__)")
        p = subprocess.run([sys.executable, "-c", code], env=dict(env, PYTHONPATH=folder),
                           capture_output=True, text=True, cwd=dest)
        print(p.stdout + p.stderr)
        lib = p.stdout.split("\n")[0] if p.returncode == 0 else ""
        if not lib.startswith(dest):
            print("FAILED: the installed package did not load the library installed with it")
            return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
