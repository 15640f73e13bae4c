"""The environment of an interpreter that loads a sanitizer-built extension
(build_torch_ext.py --sanitize): AddressSanitizer's runtime must be the
first library of the process, so it is preloaded (LD_PRELOAD) from the
compiler that built the extension (CXX, else c++). Leak checks are off
(Python and torch do not free everything at exit); any other report ends
the process with exit code 1 (ASan) or an abort (UBSan)."""
import os
import subprocess


def runtime(name):
    """The path of the compiler's runtime library `name` (libasan.so), or
    None when the compiler has none."""
    cxx = os.environ.get("CXX", "c++")
    try:
        path = subprocess.run([cxx, "-print-file-name=" + name], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return os.path.realpath(path) if os.path.isabs(path) and os.path.exists(path) else None


def sanitized_env(env):
    """`env` with the sanitizers' runtimes preloaded and their options."""
    env = dict(env)
    libs = [p for p in (runtime("libasan.so"), runtime("libubsan.so")) if p]
    env["LD_PRELOAD"] = " ".join(libs + [env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else libs)
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0:detect_odr_violation=0"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    return env
