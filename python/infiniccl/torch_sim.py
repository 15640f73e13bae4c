"""The library's EMULATED device as a torch device, "sim".

    import torch, infiniccl.torch_sim as sim
    x = torch.ones(4, device="sim")      # in emulated device memory
    s = torch.Stream(device="sim")       # an emulated stream
    with s:
        sim.kernel(100_000)              # a 100 ms emulated kernel on s
        y = x * 2                        # runs after it, on s

Importing it registers the emulated device (infiniccl/infiniccl_sim.h) as
torch's privateuse1 backend, renamed "sim":
  - tensors live in emulated device memory, through a caching allocator
    that honours Tensor.record_stream;
  - torch.Stream and torch.Event on "sim" are emulated streams and events
    (torch.accelerator sees the device);
  - copies between "cpu" and "sim" run on the current stream; every other
    op runs the CPU kernel once the current stream has reached it.
It is EMULATED: host memory and host threads, for testing stream
semantics without an accelerator. It is no faster than the CPU.

The torch backend "infiniccl" takes "sim" tensors as device tensors: each
call is ordered on the current sim stream.

Needs torch 2.15 or later and the C++ torch backend (infiniccl._c10d).
The emulated device must be enabled: INFINICCL_DEVICE=sim in the
environment when the program starts (the library reads it once). The
import raises ImportError without either, or when privateuse1 is taken by
another device plugin.
"""
import contextlib as _contextlib
import os
import types

import torch

__all__ = ["kernel", "synchronize", "empty_cache", "memory_stats", "is_available",
           "device_count", "current_device", "set_device", "Stream", "Event",
           "current_stream", "stream", "NAME", "MIN_TORCH"]

NAME = "sim"
MIN_TORCH = (2, 15)


def _fail(msg):
    raise ImportError("infiniccl.torch_sim: " + msg)


def _version():
    return tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])


if _version() < MIN_TORCH:
    _fail("the EMULATED torch device needs torch %d.%d or later, not %s" %
          (MIN_TORCH + (torch.__version__,)))

_device = os.environ.get("INFINICCL_DEVICE", "")
if _device == "":
    os.environ["INFINICCL_DEVICE"] = "sim"
elif _device != "sim":
    _fail("INFINICCL_DEVICE=%s: the EMULATED torch device needs INFINICCL_DEVICE=sim" % _device)

_name = torch._C._get_privateuse1_backend_name()
if _name not in ("privateuseone", NAME):
    _fail("torch's privateuse1 backend is taken by another device (%s)" % _name)
if _name == "privateuseone":
    # Before infiniccl.torch registers its backend: it lists "sim" then.
    torch.utils.rename_privateuse1_backend(NAME)

from . import torch as _itorch  # noqa: E402 - the library and infiniccl._c10d

if _itorch._cpp is None:
    _fail("the EMULATED torch device is part of the C++ torch backend (infiniccl._c10d), "
          "which this torch does not use")
_sim = _itorch._cpp.sim
if not _sim.supported():
    _fail("infiniccl._c10d was built without the EMULATED torch device (torch %s)" %
          torch.__version__)
try:
    _sim.register()
except RuntimeError as e:
    raise ImportError("infiniccl.torch_sim: %s" % e) from e

# infiniccl.torch imported before the rename registered its backend without
# "sim".
_caps = torch.distributed.Backend.backend_capability.get(_itorch.BACKEND.lower())
if _caps is not None and NAME not in _caps:
    _caps.append(NAME)


def kernel(us):
    """Queues an EMULATED kernel of `us` microseconds on the current sim
    stream: work queued after it there runs once it ends."""
    _sim.kernel(int(us))


def synchronize(device=None):
    """Returns when every sim stream has run what was queued on it."""
    if device is None:
        torch.accelerator.synchronize()
    else:
        torch.accelerator.synchronize(device)


def empty_cache():
    """Frees the emulated memory the caching allocator keeps for reuse."""
    _sim.empty_cache()


def memory_stats():
    """The caching allocator's counts: blocks in use, blocks cached, blocks
    waiting for streams named by record_stream, infinicclSimMalloc calls."""
    used, cached, waiting, mallocs = _sim.memory_stats()
    return {"blocks_in_use": used, "blocks_cached": cached, "blocks_waiting": waiting,
            "sim_malloc_calls": mallocs}


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return 0


def _is_in_bad_fork():
    return False


def is_initialized():
    return True


def manual_seed_all(seed):
    """Nothing to seed: random ops on sim tensors run as CPU kernels on
    torch's CPU generator, which torch.manual_seed seeds."""
    del seed


def set_device(device):
    """One device: sim:0."""
    index = torch.device(NAME, device).index if isinstance(device, int) else \
        torch.device(device).index
    if index not in (None, 0):
        raise RuntimeError("infiniccl EMULATED device: one device (sim:0), not %s" % device)


def Stream(device=None, priority=0):  # noqa: N802 - torch.cuda.Stream's name
    """A new emulated stream (torch.Stream on sim)."""
    del device
    return torch.Stream(device=NAME, priority=priority)


def Event(enable_timing=False, blocking=False, interprocess=False):  # noqa: N802
    """A new emulated event (torch.Event on sim)."""
    return torch.Event(device=NAME, enable_timing=enable_timing, blocking=blocking,
                       interprocess=interprocess)


def current_stream(device=None):
    """The current sim stream of this thread."""
    del device
    return torch.accelerator.current_stream(torch.device(NAME, 0))


@_contextlib.contextmanager
def stream(s):
    """Makes `s` the current sim stream inside the block (None: no change)."""
    if s is None:
        yield
        return
    with s:
        yield


_module = types.ModuleType("torch." + NAME)
for _f in (kernel, synchronize, empty_cache, memory_stats, is_available, device_count,
           current_device, _is_in_bad_fork, is_initialized, manual_seed_all, set_device, Stream, Event,
           current_stream, stream):
    setattr(_module, _f.__name__, _f)
if not hasattr(torch, NAME):
    torch._register_device_module(NAME, _module)
    torch.utils.generate_methods_for_privateuse1_backend()
