"""DDP over the "infiniccl" backend against gloo (examples/python/ddp.py):
    ddp_check.py [--device=cuda] <np>[,<np>...] <mpiexec> [flags...]
    ddp_check.py <np>[,<np>...] torchrun|env|spawn tcp|spawn file
The second form starts the ranks without MPI (against_gloo.launch): the
communicator is then the node's shared memory, made through the library's
bootstrap with its id passed through torch's store.
For each rank count, the example trains 20 steps under each backend (a model
of 141 KiB of gradients: one DDP bucket above the backend's 64 KiB inline
limit, so it is reduced on the process group's background thread) and
writes every rank's final weights. Checks: identical on every rank for each
backend; bit-identical to gloo's at 2 ranks (a sum of two is order-free);
within 1e-5 of gloo's otherwise, relative to the largest weight
(max |a - b| / max |b|; an elementwise relative bound fails on weights
near zero). Exits 77 (ctest's skip) without
PyTorch.
--device=cuda (the GPU script, tests/device/cuda_checks.sh): the
"infiniccl" run trains on each rank's GPU (NCCL at one rank per GPU, staged
through MPI when ranks share one), gloo on the CPU; the weights must agree
within 1e-4 of the largest (GPU and CPU arithmetic differ in rounding), and
the ranks' own weights exactly.
--pythonpath DIR (before the rank counts) puts DIR before the source tree's
python/ (a built copy of the package with its C++ backend).
"""
import os
import sys
import tempfile

from against_gloo import environment, launch, parse, report

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "examples", "python", "ddp.py")


def main():
    try:
        import torch
    except ImportError:
        print("SKIPPED: %s cannot import torch (Debian: python3-torch)" % sys.executable)
        return 77
    options, first, nps, mpiexec = parse(sys.argv[1:])
    device = options["device"]
    env = environment(first)
    failures = []
    for np_ in nps:
        with tempfile.TemporaryDirectory() as out:
            w = {}
            for backend in ("infiniccl", "gloo"):
                rc = launch(mpiexec, np_, [SCRIPT, "--backend", backend, "--steps", "20",
                                           "--out", out, "--grad-kib", "256"] + (
                    ["--device", device] if backend == "infiniccl" else []), env)
                if rc != 0:
                    failures.append("%d ranks, %s: exit %d" % (np_, backend, rc))
                    continue
                w[backend] = [torch.load(os.path.join(out, "weights_%s_%d.pt" % (backend, r)))
                              for r in range(np_)]
                if not all(torch.equal(w[backend][0], x) for x in w[backend]):
                    failures.append("%d ranks, %s: the ranks' weights differ" % (np_, backend))
            if len(w) < 2:
                continue
            a, b = w["infiniccl"][0], w["gloo"][0]
            diff = ((a - b).abs().max() / b.abs().max()).item()
            print("%d ranks: %d weights, max |infiniccl - gloo| / max |gloo| = %.3g" %
                  (np_, a.numel(), diff))
            bound = 1e-5 if device == "cpu" else 1e-4
            if np_ == 2 and device == "cpu" and not torch.equal(a, b):
                failures.append("2 ranks: weights differ from gloo's (%.3g)" % diff)
            elif not diff <= bound:
                failures.append("%d ranks: weights beyond %g of gloo's (%.3g)" %
                                (np_, bound, diff))
    return report("ddp_check", failures)


if __name__ == "__main__":
    sys.exit(main())
