"""Two calls the torch tests make that the Python front end of torch 2.7 (the
oldest the C++ backend supports) refuses for a backend it does not know:
monitored_barrier ("only implemented for GLOO") and the group's sequence
number ("does not yet support sequence numbers"). On a torch that refuses
them they go straight to the process group and to its backend, which are
this library's either way; a torch that takes them takes its own path."""
import datetime
import inspect

import torch
import torch.distributed as dist

_GLOO_ONLY_BARRIER = "only implemented for GLOO" in inspect.getsource(dist.monitored_barrier)


def monitored_barrier(group=None, timeout=datetime.timedelta(seconds=30),
                      wait_all_ranks=False):
    if not _GLOO_ONLY_BARRIER:
        return dist.monitored_barrier(group=group, timeout=timeout,
                                      wait_all_ranks=wait_all_ranks)
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    return pg.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


def sequence_number(group):
    try:
        return group._get_sequence_number_for_group()
    except RuntimeError as e:
        if "does not yet support sequence numbers" not in str(e):
            raise
        return group._get_backend(torch.device("cpu"))._get_sequence_number_for_group()
