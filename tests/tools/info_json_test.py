#!/usr/bin/env python3
"""infiniccl-info --json, launched by icclrun, checked rank by rank.

usage: info_json_test.py ICCLRUN INFINICCL_INFO FLAVOR CASE
  FLAVOR  openmpi or mpich (the MPI the build uses)
  CASE    launcher   4 ranks: local ranks 0..3 from the launcher's variable
          sim        4 ranks, emulated device with 2 devices: ids local_rank % 2
          override   4 ranks, INFINICCL_LOCAL_RANK=1 for all: local rank 1
          singleton  no launcher: one rank, local rank from MPI_COMM_TYPE_SHARED
          escape     singleton with control and non-UTF-8 bytes in a value
          usage      --help and a bad argument

The device variables reach the ranks only through icclrun's -x (they are not
in icclrun's own environment), so the sim case also proves -x translation.
"""
import json
import os
import subprocess
import sys

LAUNCHER_VAR = {"openmpi": "OMPI_COMM_WORLD_LOCAL_RANK", "mpich": "MPI_LOCALRANKID"}
# Every variable the library may take a local rank from (core/binding.cpp):
# none of them may leak in from the environment ctest runs in.
LOCAL_RANK_VARS = ["INFINICCL_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                   "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK",
                   "PALS_LOCAL_RANKID", "FLUX_TASK_LOCAL_ID",
                   "JSM_NAMESPACE_LOCAL_RANK", "MPT_LRANK", "LOCAL_RANK",
                   "SLURM_LOCALID"]
NP = 4


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def base_env():
    """The caller's environment without any INFINICCL_* or local-rank variable."""
    env = {k: v for k, v in os.environb.items()
           if not k.startswith(b"INFINICCL_") and k.decode() not in LOCAL_RANK_VARS}
    return env


def run(argv, env):
    print("running: " + " ".join(argv))
    p = subprocess.run(argv, capture_output=True, env=env, timeout=300)
    out = p.stdout.decode("utf-8")  # must be valid UTF-8
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        fail("exit %d\nstdout:\n%s\nstderr:\n%s" % (p.returncode, out, err))
    reports = []
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                reports.append(json.loads(line))
            except ValueError as e:
                fail("not JSON (%s): %s" % (e, line))
        elif line.strip():
            print("(other output) " + line)
    if err.strip():
        print("stderr:\n" + err)
    return reports


def launch(icclrun, info, flavor, extra_args, env):
    return run([icclrun, "--mpi", flavor, "-np", str(NP)] + extra_args +
               ["--", info, "--json"], env)


def check_common(reports, flavor, nranks):
    expect(len(reports) == nranks,
           "expected %d JSON lines, got %d" % (nranks, len(reports)))
    for i, r in enumerate(reports):
        for key, kind in (("version", str), ("version_code", int), ("mpi_flavor", str),
                          ("mpi_version", str), ("mpi_gpu_aware", bool),
                          ("devices", list), ("rank", int), ("nranks", int),
                          ("local_rank", int), ("local_rank_source", str),
                          ("device_id", int), ("device_kind", str), ("settings", dict)):
            expect(isinstance(r.get(key), kind), "rank line %d: %s missing or not %s: %r"
                   % (i, key, kind.__name__, r.get(key)))
        expect(r["version"] == "0.1.0", "version %r" % r["version"])
        expect(r["version_code"] == 100, "version_code %r" % r["version_code"])
        expect(r["mpi_flavor"] == flavor, "mpi_flavor %r, the build uses %s"
               % (r["mpi_flavor"], flavor))
        expect(r["mpi_version"] != "", "mpi_version is empty")
        expect(r["nranks"] == nranks, "nranks %r" % r["nranks"])
        expect(r["rank"] == i, "line %d is rank %d: not in rank order" % (i, r["rank"]))
        expect("INFINICCL_DEBUG" in r["settings"], "settings lack INFINICCL_DEBUG")
        for d in r["devices"]:
            expect(isinstance(d.get("kind"), str) and isinstance(d.get("count"), int)
                   and isinstance(d.get("emulated"), bool), "bad device entry %r" % d)
        if r["device_id"] < 0:
            expect(r["device_kind"] == "cpu" and not r["devices"],
                   "device_id -1 but devices %r, kind %r" % (r["devices"], r["device_kind"]))
        else:
            # The first active runtime, the local rank wrapped to its count.
            first = r["devices"][0]
            expect(r["device_kind"] == first["kind"], "bound to %r, first runtime %r"
                   % (r["device_kind"], first["kind"]))
            expect(r["device_id"] == r["local_rank"] % first["count"],
                   "rank %d: device %d for local rank %d of %d devices"
                   % (i, r["device_id"], r["local_rank"], first["count"]))
    expect(sorted(r["rank"] for r in reports) == list(range(nranks)), "ranks not 0..n-1")
    expect(len({r["host"] for r in reports}) == 1, "expected one host")


def case_launcher(icclrun, info, flavor):
    reports = launch(icclrun, info, flavor, [], base_env())
    check_common(reports, flavor, NP)
    # One host: the local ranks are the world ranks, each from the launcher's
    # own variable (an MPICH rank reading only Open MPI's variable would fall
    # back and could all land on device 0).
    expect(sorted(r["local_rank"] for r in reports) == list(range(NP)),
           "local ranks %r, expected distinct 0..%d" % ([r["local_rank"] for r in reports],
                                                      NP - 1))
    for r in reports:
        expect(r["local_rank_source"] == LAUNCHER_VAR[flavor],
               "rank %d: local rank from %r, expected %s" %
               (r["rank"], r["local_rank_source"], LAUNCHER_VAR[flavor]))
        expect(r["settings"]["INFINICCL_DEBUG"] == "WARN", "INFINICCL_DEBUG default")


def case_sim(icclrun, info, flavor):
    reports = launch(icclrun, info, flavor,
                     ["-x", "INFINICCL_DEVICE=sim", "-x", "INFINICCL_SIM_DEVICE_COUNT=2"],
                     base_env())
    check_common(reports, flavor, NP)
    for r in reports:
        expect(r["settings"].get("INFINICCL_DEVICE") == "sim",
               "INFINICCL_DEVICE did not reach rank %d through -x" % r["rank"])
        sims = [d for d in r["devices"] if d["kind"] == "sim"]
        expect(len(sims) == 1 and sims[0]["emulated"] is True and sims[0]["count"] == 2,
               "rank %d: expected sim x2 labelled emulated, got %r" % (r["rank"],
                                                                      r["devices"]))
        if len(r["devices"]) == 1:  # no vendor device ahead of the emulated one
            expect(r["device_kind"] == "sim", "device_kind %r" % r["device_kind"])
            expect(r["device_id"] == r["local_rank"] % 2, "rank %d: device %d, local %d"
                   % (r["rank"], r["device_id"], r["local_rank"]))
    expect(sorted(r["local_rank"] for r in reports) == list(range(NP)), "local ranks")
    if all(len(r["devices"]) == 1 for r in reports):
        expect(sorted(r["device_id"] for r in reports) == [0, 0, 1, 1],
               "4 local ranks on 2 devices: two ranks each")


def case_override(icclrun, info, flavor):
    env = base_env()
    env[b"INFINICCL_LOCAL_RANK"] = b"1"
    reports = launch(icclrun, info, flavor, ["-x", "INFINICCL_LOCAL_RANK"], env)
    check_common(reports, flavor, NP)
    for r in reports:
        expect(r["local_rank"] == 1 and r["local_rank_source"] == "INFINICCL_LOCAL_RANK",
               "rank %d: local rank %d from %r" % (r["rank"], r["local_rank"],
                                                   r["local_rank_source"]))
        expect(r["settings"]["INFINICCL_LOCAL_RANK"] == "1", "setting not shown")


def case_singleton(_icclrun, info, flavor):
    reports = run([info, "--json"], base_env())
    check_common(reports, flavor, 1)
    r = reports[0]
    expect(r["local_rank"] == 0, "local rank %r" % r["local_rank"])
    # A singleton may still get its launcher variable from a singleton
    # server (Open MPI starts one).
    expect(r["local_rank_source"] in ("MPI_COMM_TYPE_SHARED", LAUNCHER_VAR[flavor]),
           "local rank source %r" % r["local_rank_source"])


def case_escape(_icclrun, info, flavor):
    env = base_env()
    # Not a valid INFINICCL_DEVICE: the raw value is quoted in a warning.
    raw = b'a"b\\c\nd\te\x01\xc3\xa9\xff/'
    env[b"INFINICCL_DEVICE"] = raw
    env[b"INFINICCL_DEBUG"] = b"NONE"
    reports = run([info, "--json"], env)
    check_common(reports, flavor, 1)
    warnings = reports[0].get("warnings", [])
    text = 'a"b\\c\nd\te\x01\u00e9\ufffd/'
    expect(any(text in w for w in warnings), "warning should carry %r: %r"
           % (text, warnings))
    expect(reports[0]["settings"]["INFINICCL_DEVICE"] == "auto", "fell back to auto")


def case_usage(_icclrun, info, _flavor):
    p = subprocess.run([info, "--help"], capture_output=True, text=True, timeout=60)
    expect(p.returncode == 0 and "--json" in p.stdout, "--help: %d %s"
           % (p.returncode, p.stdout))
    p = subprocess.run([info, "--no-such-option"], capture_output=True, text=True,
                       timeout=60)
    expect(p.returncode == 2 and "--no-such-option" in p.stderr,
           "bad argument: exit %d, %s" % (p.returncode, p.stderr))
    p = subprocess.run([info], capture_output=True, text=True, timeout=60,
                       env={k.decode(): v.decode("utf-8", "replace")
                            for k, v in base_env().items()})
    expect(p.returncode == 0, "human output: exit %d %s" % (p.returncode, p.stderr))
    for word in ("InfiniCCL 0.1.0", "Rank 0 of 1", "local rank:", "binds to:",
                 "GPU-aware MPI", "INFINICCL_DEBUG=WARN", "default 'WARN'"):
        expect(word in p.stdout, "human output lacks %r:\n%s" % (word, p.stdout))


CASES = {"launcher": case_launcher, "sim": case_sim, "override": case_override,
         "singleton": case_singleton, "escape": case_escape, "usage": case_usage}


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in LAUNCHER_VAR or sys.argv[4] not in CASES:
        print(__doc__.strip())
        return 2
    icclrun, info, flavor, case = sys.argv[1:]
    CASES[case](os.path.abspath(icclrun), os.path.abspath(info), flavor)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
