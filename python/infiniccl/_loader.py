"""Finding and loading libinfiniccl, and the ctypes signatures of its C API.

Only ctypes from the standard library: nothing is compiled at install time.
"""
import ctypes
import importlib.util
import ctypes.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    """(description, path) pairs in the order they are tried."""
    env = os.environ.get("INFINICCL_LIBRARY")
    if env:
        # An explicit choice is the only one tried: silently loading another
        # library than the one asked for would hide the mistake.
        if os.path.isdir(env):
            env = os.path.join(env, "libinfiniccl.so")
        return [("INFINICCL_LIBRARY", env)]
    out = []
    for name in ("libinfiniccl.so", "libinfiniccl.so.0"):
        out.append(("next to the package", os.path.join(_HERE, name)))
    try:  # written by `cmake --install`: where the library went, from here
        from . import _install  # noqa: PLC0415

        out.append(("cmake --install location",
                    os.path.normpath(os.path.join(_HERE, _install.LIBRARY))))
    except ImportError:
        pass
    found = ctypes.util.find_library("infiniccl")
    for name in ([found] if found else []) + ["libinfiniccl.so.0", "libinfiniccl.so"]:
        out.append(("loader path", name))
    return out


def _preload_pip_nccl():
    """Loads the NCCL of PyPI's nvidia-nccl wheel (torch's pin), when it is
    installed, before libinfiniccl. Both need libnccl.so.2, and the process
    keeps the first one loaded: were it the system's NCCL that libinfiniccl
    was linked against, torch's libtorch_cuda would then fail to import on a
    symbol that only its newer NCCL has (ncclCommResume, say). libinfiniccl
    works with either (it needs NCCL 2.13 or later)."""
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except (ImportError, ValueError):
        return
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, "lib", "libnccl.so.2")
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
            return


def load():
    tried = []
    _preload_pip_nccl()
    for where, path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (%s): no such file" % (path, where))
            continue
        try:
            # RTLD_GLOBAL: Open MPI's plugins, loaded later with dlopen, must
            # see libmpi's symbols (the same reason mpi4py loads it so).
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append("%s (%s): %s" % (path, where, e))
            continue
        _declare(lib)
        return lib, path
    raise OSError("infiniccl: libinfiniccl could not be loaded. Tried:\n  " +
                  "\n  ".join(tried) +
                  "\nSet INFINICCL_LIBRARY to the library's path (or its folder), or "
                  "add its folder to LD_LIBRARY_PATH.")


class StagingStats(ctypes.Structure):
    _fields_ = [
        ("allocations", ctypes.c_ulonglong),
        ("frees", ctypes.c_ulonglong),
        ("bytes_held", ctypes.c_ulonglong),
        ("peak_bytes_held", ctypes.c_ulonglong),
        ("pinned", ctypes.c_int),
        ("d2h_copies", ctypes.c_ulonglong),
        ("d2h_bytes", ctypes.c_ulonglong),
        ("h2d_copies", ctypes.c_ulonglong),
        ("h2d_bytes", ctypes.c_ulonglong),
        ("staged_calls", ctypes.c_ulonglong),
        ("pipelined_calls", ctypes.c_ulonglong),
        ("direct_calls", ctypes.c_ulonglong),
    ]


def _declare(lib):
    R = ctypes.c_int
    P = ctypes.c_void_p
    S = ctypes.c_size_t
    I = ctypes.c_int
    PP = ctypes.POINTER(ctypes.c_void_p)
    sig = {
        "infinicclInit": (R, [P, P]),
        "infinicclFinalize": (R, []),
        "infinicclCommInitAll": (R, [PP, I, P]),
        "infinicclCommInitMpi": (R, [PP, ctypes.c_long]),
        "infinicclCommInitRanks": (R, [P, I, ctypes.POINTER(I), PP]),
        "infinicclCommDestroy": (R, [P]),
        "infinicclCommSplit": (R, [P, I, I, PP]),
        "infinicclCommAbort": (R, [P]),
        "infinicclCommRevoke": (R, [P, I]),
        "infinicclCommGetFailedRanks": (R, [P, ctypes.POINTER(I), ctypes.POINTER(I)]),
        "infinicclCommShrink": (R, [P, ctypes.POINTER(I), I, PP, I]),
        "infinicclCommGrow": (R, [P, I, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), PP]),
        "infinicclCommCount": (R, [P, ctypes.POINTER(I)]),
        "infinicclCommUserRank": (R, [P, ctypes.POINTER(I)]),
        "infinicclAllReduce": (R, [P, P, S, I, I, P, P]),
        "infinicclBroadcast": (R, [P, P, S, I, I, P, P]),
        "infinicclReduce": (R, [P, P, S, I, I, I, P, P]),
        "infinicclAllGather": (R, [P, P, S, I, P, P]),
        "infinicclGather": (R, [P, P, S, I, I, P, P]),
        "infinicclScatter": (R, [P, P, S, I, I, P, P]),
        "infinicclReduceScatter": (R, [P, P, S, I, I, P, P]),
        "infinicclAllToAll": (R, [P, P, S, I, P, P]),
        "infinicclSend": (R, [P, S, I, I, P, P]),
        "infinicclRecv": (R, [P, S, I, I, P, P]),
        "infinicclSendTagged": (R, [P, S, I, I, I, P, P]),
        "infinicclRecvTagged": (R, [P, S, I, I, I, ctypes.POINTER(I), P, P]),
        "infinicclGroupStart": (R, []),
        "infinicclGroupEnd": (R, []),
        "infinicclGetErrorString": (ctypes.c_char_p, [I]),
        "infinicclGetLastError": (ctypes.c_char_p, [P]),
        "infinicclGetVersion": (R, [ctypes.POINTER(I)]),
        "infinicclGetDeviceRuntimes": (R, [ctypes.c_char_p, S]),
        "infinicclGetStagingStats": (R, [ctypes.POINTER(StagingStats)]),
        "infinicclMemTrim": (R, []),
    }
    for name, (res, args) in sig.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            continue  # an older library: the call raises when used
        f.restype = res
        f.argtypes = args


# ---- the C++ torch backend (infiniccl._c10d) --------------------------------
# The oldest torch it compiles against (c10d::Backend::shutdown() is
# overridden); older ones use the Python backend.
TORCH_CPP_MIN = (2, 7)


def torch_version_tuple(version):
    """(major, minor) of a torch version string such as "2.15.0+cu132"."""
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return (0, 0)


def _build_info():
    """(torch version the extension was built against or None, source folder
    to rebuild from or None), from the _build_info.py the build wrote."""
    try:
        from . import _build_info  # noqa: PLC0415
    except ImportError:
        _build_info = None
    torch_version = getattr(_build_info, "TORCH_VERSION", None)
    source = getattr(_build_info, "SOURCE", None)
    if source is None and os.path.exists(os.path.join(_HERE, "..", "setup.py")):
        source = os.path.normpath(os.path.join(_HERE, ".."))  # a source tree's python/
    return torch_version, source


def rebuild_command(source=None):
    """The pip command that builds the package with the C++ backend against
    the torch of this interpreter."""
    import sys  # noqa: PLC0415

    if source is None:
        source = _build_info()[1]
    if source is None or not os.path.isdir(source):
        source = "<InfiniCCL source>/python"
    cmd = "%s -m pip install --no-build-isolation --force-reinstall --no-deps %s" % (
        sys.executable, source)
    if os.path.exists(os.path.join(source, "pyproject.toml")) and \
            not os.path.exists(os.path.join(source, "setup.py")):
        # The repository root: scikit-build-core builds it.
        cmd = "%s -m pip install scikit-build-core && %s" % (sys.executable, cmd)
    return cmd


def load_torch_backend(torch_version, choice="auto"):
    """infiniccl._c10d for the torch whose version is torch_version, or None
    for the Python backend. choice is INFINICCL_TORCH_BACKEND: "python"
    (always None), "cpp" (the C++ one or ImportError) or "auto" (the C++ one
    on torch 2.7 and later, the Python one below). ImportError, naming the
    pip command that builds it, when the extension is missing on torch 2.7+
    or was built against another torch than torch_version."""
    if choice == "python":
        return None
    built, source = _build_info()
    how = ("Build it against this torch with: %s\n(INFINICCL_TORCH_BACKEND=python "
           "uses the Python backend instead)" % rebuild_command(source))
    if built is None:
        if choice != "cpp" and torch_version_tuple(torch_version) < TORCH_CPP_MIN:
            return None
        raise ImportError(
            "infiniccl: torch %s is installed but this infiniccl has no C++ torch backend "
            "(infiniccl._c10d): it was built where torch did not import (pip's default build "
            "isolation) or did not compile%s. %s" %
            (torch_version, "" if torch_version_tuple(torch_version) >= TORCH_CPP_MIN else
             "; the C++ backend needs torch %d.%d or later" % TORCH_CPP_MIN, how))
    if built != torch_version:
        raise ImportError(
            "infiniccl: the C++ torch backend (infiniccl._c10d) was built against torch %s, "
            "but torch %s is imported; an extension built against another torch does not "
            "load safely. %s" % (built, torch_version, how))
    try:
        from . import _c10d  # noqa: PLC0415
    except ImportError as e:
        raise ImportError("infiniccl: the C++ torch backend (infiniccl._c10d, built against "
                          "torch %s) cannot be imported: %s. %s" % (built, e, how)) from e
    return _c10d
