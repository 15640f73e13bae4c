"""FSDP2 and DTensor tensor parallelism on torch 2.x, "infiniccl" against
gloo (tests/python/torch2_train.py, 20 steps each):
    torch2_train_check.py --pythonpath DIR <np>[,<np>...] <mpiexec> [flags...]
For each rank count and mode (fsdp, tp) the script trains under each
backend; the final weights must match gloo's within 1e-6 relative to the
largest weight (max |a - b| / max |b|), and bit for bit at 2 ranks.
DIR (a built copy of the package with its C++ backend) comes before the
source tree's python/. Exits 77 (ctest's skip) without torch 2.7+.
"""
import os
import sys
import tempfile

from against_gloo import environment, launch, parse, report

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "torch2_train.py")


def main():
    try:
        import torch
    except ImportError:
        print("SKIPPED: %s cannot import torch" % sys.executable)
        return 77
    if tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) < (2, 1):
        print("SKIPPED: torch %s (FSDP2 and DTensor need torch 2.x)" % torch.__version__)
        return 77
    _, first, nps, mpiexec = parse(sys.argv[1:])
    env = environment(first)
    failures = []
    with tempfile.TemporaryDirectory() as out:
        for np_ in nps:
            for mode in ("fsdp", "tp"):
                res = {}
                for backend in ("infiniccl", "gloo"):
                    path = os.path.join(out, "%s_%s_%d.pt" % (mode, backend, np_))
                    rc = launch(mpiexec, np_, [SCRIPT, backend, mode, path], env)
                    if rc or not os.path.exists(path):
                        failures.append("%s %s at %d ranks: exit %d" % (mode, backend, np_, rc))
                        break
                    res[backend] = torch.load(path)
                if len(res) < 2:
                    continue
                a, b = res["infiniccl"]["weights"], res["gloo"]["weights"]
                top = max(float(w.abs().max()) for w in b)
                diff = max(float((x - y).abs().max()) for x, y in zip(a, b))
                print("%s, %d ranks: loss %.6f (gloo %.6f), max |infiniccl - gloo| / max |gloo| "
                      "= %.2e" % (mode, np_, res["infiniccl"]["loss"], res["gloo"]["loss"],
                                  diff / top), flush=True)
                if diff / top > 1e-6 or (np_ == 2 and diff != 0):
                    failures.append("%s at %d ranks: weights differ from gloo's by %.2e" %
                                    (mode, np_, diff / top))
    return report("torch2_train_check", failures)


if __name__ == "__main__":
    sys.exit(main())
