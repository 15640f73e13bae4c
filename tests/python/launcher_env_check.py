"""import infiniccl.torch sets RANK, WORLD_SIZE, LOCAL_RANK and
LOCAL_WORLD_SIZE under launchers other than mpirun's own variables:
    launcher_env_check.py <mpiexec> [flags...]
starts 2 ranks (one host) per case, each rank rewriting its environment
before the import as that launcher would leave it:
  mpirun  the MPI's own variables (Open MPI's OMPI_COMM_WORLD_LOCAL_*,
          MPICH's MPI_LOCALRANKID/MPI_LOCALNRANKS): local rank = rank;
  slurm   srun's: those removed, SLURM_LOCALID given in reverse rank order
          (so it must be read, not derived) and SLURM_STEP_TASKS_PER_NODE
          "2(x1),5" with SLURM_NODEID 0 (2 tasks here);
  pmix    a PMIx launcher's: no local variable at all, the local rank and
          size come from the ranks' host names.
Plus the SLURM_TASKS_PER_NODE parser on "2(x3),1". Exits 77 (ctest's skip)
when this python cannot import torch.
"""
import json
import os
import subprocess
import sys

LOCAL = ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALRANKID",
         "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK", "SLURM_LOCALID")
OUT = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


def rank_main(case):
    env = os.environ
    rank = int(env.get("OMPI_COMM_WORLD_RANK") or env.get("PMI_RANK") or env["PMIX_RANK"])
    if case in ("slurm", "pmix"):
        for v in LOCAL:
            env.pop(v, None)
    if case == "slurm":
        env["SLURM_LOCALID"] = str(1 - rank)
        env["SLURM_STEP_TASKS_PER_NODE"] = "2(x1),5"
        env["SLURM_NODEID"] = "0"
        env["SLURM_PROCID"] = str(rank)
    import infiniccl.torch as t
    got = {v: env.get(v) for v in OUT}
    got["launcher_rank"] = rank
    if rank == 0:
        got["parsed"] = [t._slurm_tasks_here({"SLURM_TASKS_PER_NODE": "2(x3),1",
                                              "SLURM_NODEID": str(n)}) for n in range(4)]
    print("ENV " + json.dumps(got), flush=True)


def _rows(out):
    """Every rank's "ENV {...}" object: the launcher may join two ranks'
    lines into one, so each is decoded where it starts."""
    rows, dec = [], json.JSONDecoder()
    at = out.find("ENV {")
    while at >= 0:
        obj, end = dec.raw_decode(out, at + 4)
        rows.append(obj)
        at = out.find("ENV {", end)
    return rows


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2])
        return 0
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("SKIPPED: %s cannot import torch (%s)" % (sys.executable, e))
        return 77
    mpiexec = sys.argv[1:]
    bad = 0
    for case in ("mpirun", "slurm", "pmix"):
        cmd = mpiexec[:1] + ["-n", "2"] + mpiexec[1:] + [sys.executable, "-W", "ignore",
                                                         __file__, "--rank", case]
        env = {k: v for k, v in os.environ.items() if k not in OUT}
        env["PYTHONPATH"] = os.path.normpath(os.path.join(os.path.dirname(
            os.path.abspath(__file__)), "..", "..", "python"))
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
        rows = _rows(p.stdout)
        print("%s: exit %d %s" % (case, p.returncode, rows))
        if p.returncode or len(rows) != 2:
            print(p.stdout + p.stderr)
            bad += 1
            continue
        for row in rows:
            r = row["launcher_rank"]
            local = 1 - r if case == "slurm" else r
            want = {"RANK": str(r), "WORLD_SIZE": "2", "LOCAL_RANK": str(local),
                    "LOCAL_WORLD_SIZE": "2"}
            have = {v: row[v] for v in OUT}
            if have != want:
                print("FAILED %s rank %d: %s, expected %s" % (case, r, have, want))
                bad += 1
            if "parsed" in row and row["parsed"] != ["2", "2", "2", "1"]:
                print("FAILED: SLURM_TASKS_PER_NODE 2(x3),1 parsed as %s" % row["parsed"])
                bad += 1
    print("FAILED" if bad else "PASS")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
