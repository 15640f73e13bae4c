#!/usr/bin/env python3
"""infiniccl-info --json, launched by icclrun, checked rank by rank.

usage: info_json_test.py ICCLRUN INFINICCL_INFO FLAVOR CASE [BACKENDS]
  FLAVOR  openmpi or mpich (the MPI the build uses)
  BACKENDS  the backends this build has, comma-separated (default mpi)
  CASE    launcher   4 ranks: local ranks 0..3 from the launcher's variable
          sim        4 ranks, emulated device with 2 devices: ids local_rank % 2
          override   4 ranks, INFINICCL_LOCAL_RANK=1 for all: local rank 1
          singleton  no launcher: one rank, local rank from MPI_COMM_TYPE_SHARED
          escape     singleton with control and non-UTF-8 bytes in a value
          usage      --help and a bad argument
          backends   every backend built with its version (JSON and text), and
                     per rank whether a CCL communicator is formed, or why not;
                     when no device is found, why
          unknown_var  INFINICCL_DEBG=INFO: warned about (nearest name) by the
                     library at Init and listed in the report
          version    --version

The device variables reach the ranks only through icclrun's -x (they are not
in icclrun's own environment), so the sim case also proves -x translation.
"""
import json
import os
import re
import subprocess
import sys

from checks import expect, fail

LAUNCHER_VAR = {"openmpi": "OMPI_COMM_WORLD_LOCAL_RANK", "mpich": "MPI_LOCALRANKID"}
# Every variable the library may take a local rank from (comm/binding.cpp):
# none of them may leak in from the environment ctest runs in.
LOCAL_RANK_VARS = ["INFINICCL_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                   "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK",
                   "PALS_LOCAL_RANKID", "FLUX_TASK_LOCAL_ID",
                   "JSM_NAMESPACE_LOCAL_RANK", "MPT_LRANK", "LOCAL_RANK",
                   "SLURM_LOCALID"]
NP = 4


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
        expect(r["settings"]["INFINICCL_DEBUG"] == "", "INFINICCL_DEBUG unset")
        # Four ranks on one node share memory at the default: the limits.
        expect(r.get("shm", "").startswith("AllReduce to ") and "MPI above" in r["shm"],
               "rank %d: shared memory %r" % (r["rank"], r.get("shm")))
        expect(r.get("reduce_simd", "").split(" ")[0] in ("baseline", "avx2", "avx512"),
               "rank %d: host reductions %r" % (r["rank"], r.get("reduce_simd")))


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
                 "GPU-aware MPI", "INFINICCL_DEBUG=   (default '')",
                 "INFINICCL_DEBUG_SUBSYS=ALL", "backends built:", "CCL communicator:"):
        expect(word in p.stdout, "human output lacks %r:\n%s" % (word, p.stdout))


BACKENDS = ["mpi"]


def case_backends(_icclrun, info, flavor):
    reports = run([info, "--json"], base_env())
    check_common(reports, flavor, 1)
    r = reports[0]
    expect(r["backends"] == BACKENDS, "backends %r, this build has %r"
           % (r["backends"], BACKENDS))
    versions = r["backend_versions"]
    expect(sorted(versions) == sorted(BACKENDS) and all(versions.values()),
           "a version for each backend: %r" % versions)
    expect(versions["mpi"].startswith({"openmpi": "Open MPI ", "mpich": "MPICH "}[flavor]),
           "MPI's version names the flavour: %r" % versions["mpi"])
    expect(isinstance(r["ccl_formed"], bool), "ccl_formed: %r" % r.get("ccl_formed"))
    if not r["ccl_formed"]:
        expect(r["ccl_why_not"], "no CCL communicator, but no reason")
        if BACKENDS == ["mpi"]:
            expect("no native CCL is built in" in r["ccl_why_not"], r["ccl_why_not"])
        elif r["device_id"] < 0:
            expect("bound to no device" in r["ccl_why_not"], r["ccl_why_not"])
    if not r["devices"]:
        # Why no device: the runtime's own words, or that none is built.
        expect(r["no_device_reasons"], "no devices and no reason")
    # Human form: one line naming every backend, and the reasons.
    p = subprocess.run([info], capture_output=True, text=True, timeout=120,
                       env={k.decode(): v.decode("utf-8", "replace")
                            for k, v in base_env().items()})
    expect(p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr))
    line = [l for l in p.stdout.splitlines() if "backends built:" in l]
    expect(len(line) == 1, "one backends line:\n" + p.stdout)
    for b in BACKENDS:
        expect(b.upper() + " (" in line[0], "%s missing from %r" % (b, line[0]))
    expect("CCL communicator:" in p.stdout, "no CCL line:\n" + p.stdout)
    if not r["devices"]:
        expect("why:" in p.stdout, "no reason for 'no devices':\n" + p.stdout)


def case_unknown_var(_icclrun, info, flavor):
    env = base_env()
    env[b"INFINICCL_DEBG"] = b"INFO"
    env[b"INFINICCL_MPI"] = flavor.encode()  # icclrun's: never reported
    p = subprocess.run([info, "--json"], capture_output=True, env=env, timeout=120)
    out, err = p.stdout.decode(), p.stderr.decode("utf-8", "replace")
    expect(p.returncode == 0, "exit %d: %s" % (p.returncode, err))
    r = json.loads([l for l in out.splitlines() if l.startswith("{")][0])
    unknown = r["unknown_variables"]
    expect(len(unknown) == 1 and "INFINICCL_DEBG" in unknown[0] and
           "did you mean INFINICCL_DEBUG?" in unknown[0], "report: %r" % unknown)
    # The library itself warns at Init, whatever program it runs in.
    expect(re.search(r"INFINICCL WARN INFINICCL_DEBG is set but InfiniCCL reads no such "
                     r"variable \(did you mean INFINICCL_DEBUG\?\)", err),
           "no WARN from infinicclInit:\n" + err)
    expect("INFINICCL_MPI " not in err, "INFINICCL_MPI is icclrun's:\n" + err)


def case_version(_icclrun, info, _flavor):
    p = subprocess.run([info, "--version"], capture_output=True, text=True, timeout=120)
    lines = p.stdout.splitlines()
    expect(p.returncode == 0 and lines and lines[0] == "infiniccl-info (InfiniCCL) 0.1.0",
           "--version: %d %r" % (p.returncode, p.stdout))
    expect([l.split()[1] for l in lines[1:]] == BACKENDS, "backends: %r" % lines[1:])


CASES = {"launcher": case_launcher, "sim": case_sim, "override": case_override,
         "singleton": case_singleton, "escape": case_escape, "usage": case_usage,
         "backends": case_backends, "unknown_var": case_unknown_var,
         "version": case_version}


def main():
    global BACKENDS
    if len(sys.argv) not in (5, 6) or sys.argv[3] not in LAUNCHER_VAR or \
            sys.argv[4] not in CASES:
        print(__doc__.strip())
        return 2
    icclrun, info, flavor, case = sys.argv[1:5]
    if len(sys.argv) == 6:
        BACKENDS = sys.argv[5].split(",")
    CASES[case](os.path.abspath(icclrun), os.path.abspath(info), flavor)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
