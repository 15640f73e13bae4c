#!/usr/bin/env python3
"""icclrun --dry-run: the launcher line it builds for Open MPI and MPICH.

usage: icclrun_dryrun_test.py ICCLRUN CASE   (CASE 'list' prints the cases)

Each case runs icclrun with --dry-run, splits its one output line as a shell
would, and checks the flags. Nothing is launched, so these pass on a machine
with either MPI (or none: icclrun then names the plain launcher).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from checks import expect, fail

ICCLRUN = ""
PROGRAM = sys.executable  # a program that exists on this host
IS_ROOT = os.geteuid() == 0
HUGE_NP = "100000"  # more processes than any test machine has cores


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("INFINICCL_MPI", "INFINICCL_MPIRUN", "OMPI_MCA_btl")}
    env.update(extra)
    return env


def run(args, env=None):
    p = subprocess.run([ICCLRUN] + args, capture_output=True, text=True,
                       env=env if env is not None else clean_env(), timeout=120)
    return p.returncode, p.stdout, p.stderr


def dry(args, env=None):
    """The dry-run command line, as an argv list."""
    rc, out, err = run(["--dry-run"] + args, env)
    if rc != 0:
        fail("icclrun %s: exit %d\nstdout: %s\nstderr: %s" % (args, rc, out, err))
    lines = out.splitlines()
    if len(lines) != 1:
        fail("expected one line from --dry-run, got %r" % out)
    argv = shlex.split(lines[0])
    print("icclrun %s\n  -> %s" % (" ".join(args), lines[0]))
    return argv


def dry_hostfile(mpi, hosts):
    """The dry-run line for 4 ranks with --hostfile, a file holding `hosts`;
    and the file's name (gone once this returns: only the line is checked)."""
    with tempfile.NamedTemporaryFile("w", suffix=".hosts") as f:
        f.write(hosts)
        f.flush()
        return dry(["--mpi", mpi, "-np", "4", "--hostfile", f.name, PROGRAM]), f.name


def has_seq(argv, seq):
    """True when `seq` appears in argv as consecutive items."""
    n = len(seq)
    return any(argv[i:i + n] == seq for i in range(len(argv) - n + 1))


def expect_seq(argv, seq):
    expect(has_seq(argv, seq), "expected %s in %s" % (seq, argv))


def expect_no(argv, flag):
    expect(flag not in argv, "did not expect %s in %s" % (flag, argv))


def launcher_name(argv):
    return os.path.basename(argv[0])


def expect_btl_shared_memory(argv):
    expect(has_seq(argv, ["--mca", "btl", "self,vader"]) or
           has_seq(argv, ["--mca", "btl", "self,sm"]),
           "expected --mca btl self,vader (or self,sm) in %s" % argv)


# ---- Open MPI ---------------------------------------------------------------

def case_openmpi_root():
    argv = dry(["--mpi", "openmpi", "-np", "1", PROGRAM])
    expect("mpirun" in launcher_name(argv) or "mpiexec" in launcher_name(argv)
           or "orterun" in launcher_name(argv), "not an Open MPI launcher: %s" % argv)
    if IS_ROOT:
        expect("--allow-run-as-root" in argv, "root needs --allow-run-as-root: %s" % argv)
    else:
        expect_no(argv, "--allow-run-as-root")
    expect_btl_shared_memory(argv)
    expect_no(argv, "--oversubscribe")
    expect_seq(argv, ["-np", "1", PROGRAM])
    expect(argv[-1] == PROGRAM, "program must come last: %s" % argv)


def case_openmpi_oversubscribe():
    argv = dry(["--mpi", "openmpi", "-np", HUGE_NP, PROGRAM])
    expect("--oversubscribe" in argv, "-np above nproc needs --oversubscribe: %s" % argv)
    expect_seq(argv, ["-np", HUGE_NP])
    argv = dry(["--mpi", "openmpi", "-n", "1", PROGRAM])
    expect_no(argv, "--oversubscribe")
    argv = dry(["--mpi", "openmpi", PROGRAM])  # no -np: the launcher decides
    expect_no(argv, "--oversubscribe")
    expect_no(argv, "-np")


def case_openmpi_hosts():
    argv = dry(["--mpi", "openmpi", "-np", HUGE_NP, "-H", "node1,node2", PROGRAM])
    expect_seq(argv, ["-H", "node1,node2"])
    # Several hosts: slots come from the host list, and the network is needed.
    expect_no(argv, "--oversubscribe")
    expect_no(argv, "--mca")
    argv, path = dry_hostfile("openmpi", "node1 slots=2\nnode2 slots=2\n")
    expect_seq(argv, ["--hostfile", path])
    expect_no(argv, "--mca")


def case_openmpi_env():
    argv = dry(["--mpi", "openmpi", "-np", "2", "-x", "A=1", "-x", "B", "-x",
                "C=two words", PROGRAM])
    expect_seq(argv, ["-x", "A=1"])
    expect_seq(argv, ["-x", "B"])
    expect_seq(argv, ["-x", "C=two words"])
    expect_no(argv, "-genv")


def case_openmpi_btl_from_env():
    argv = dry(["--mpi", "openmpi", "-np", "1", PROGRAM],
               env=clean_env(OMPI_MCA_btl="self,tcp"))
    expect_no(argv, "--mca")


# ---- MPICH ------------------------------------------------------------------

def case_mpich_flags():
    argv = dry(["--mpi", "mpich", "-np", HUGE_NP, PROGRAM])
    expect("mpiexec" in launcher_name(argv) or "mpirun" in launcher_name(argv),
           "not a Hydra launcher: %s" % argv)
    # Hydra runs as root and oversubscribes without being asked.
    for flag in ("--allow-run-as-root", "--oversubscribe", "--mca", "-np", "-x"):
        expect_no(argv, flag)
    expect_seq(argv, ["-n", HUGE_NP, PROGRAM])


def case_mpich_env():
    argv = dry(["--mpi", "mpich", "-n", "2", "-x", "A=1", "-x", "B", "-x",
                "C=two words", "-x", "D", "-x", "E=", PROGRAM])
    expect_seq(argv, ["-genv", "A", "1"])
    expect_seq(argv, ["-genv", "C", "two words"])
    expect_seq(argv, ["-genv", "E", ""])
    expect_seq(argv, ["-genvlist", "B,D"])
    expect_no(argv, "-x")
    # Global options before the local -n.
    expect(argv.index("-genvlist") < argv.index("-n"), "-genv* must precede -n: %s" % argv)


def case_mpich_hosts():
    argv = dry(["--mpi", "mpich", "-np", "4", "-H", "node1,node2", PROGRAM])
    expect_seq(argv, ["-hosts", "node1,node2"])
    expect_no(argv, "-H")
    argv, path = dry_hostfile("mpich", "node1:2\nnode2:2\n")
    expect_seq(argv, ["-f", path])
    expect_no(argv, "--hostfile")


def case_flavor_from_env():
    argv = dry(["-np", "2", PROGRAM], env=clean_env(INFINICCL_MPI="mpich"))
    expect_seq(argv, ["-n", "2"])
    argv = dry(["-np", "2", PROGRAM], env=clean_env(INFINICCL_MPI="openmpi"))
    expect_seq(argv, ["-np", "2"])
    # --mpi wins over the environment.
    argv = dry(["--mpi", "openmpi", "-np", "2", PROGRAM],
               env=clean_env(INFINICCL_MPI="mpich"))
    expect_seq(argv, ["-np", "2"])


def case_detect():
    rc, out, err = run(["--dry-run", "-np", "2", PROGRAM])
    if rc != 0 and "no MPI launcher found" in err:
        print("no MPI launcher installed: detection has nothing to find")
        return
    expect(rc == 0, "detection failed: %s" % err)
    argv = shlex.split(out)
    expect(has_seq(argv, ["-np", "2"]) or has_seq(argv, ["-n", "2"]), str(argv))


def case_launcher():
    ompi = shutil.which("mpirun.openmpi")
    mpich = shutil.which("mpiexec.mpich")
    if not ompi and not mpich:
        print("neither mpirun.openmpi nor mpiexec.mpich installed: nothing to check")
        return
    if mpich:  # flavour detected from the launcher named
        argv = dry(["--launcher", mpich, "-np", "2", PROGRAM])
        expect(argv[0] == mpich and has_seq(argv, ["-n", "2"]), str(argv))
        argv = dry(["-np", "2", PROGRAM], env=clean_env(INFINICCL_MPIRUN=mpich))
        expect(argv[0] == mpich, str(argv))
    if ompi:
        argv = dry(["--launcher", ompi, "-np", "2", PROGRAM])
        expect(argv[0] == ompi and has_seq(argv, ["-np", "2"]), str(argv))
        rc, _, err = run(["--dry-run", "--mpi", "mpich", "--launcher", ompi, PROGRAM])
        expect(rc == 2 and "openmpi" in err, "flavour mismatch: %d %s" % (rc, err))


def fake_launcher(directory, version_text):
    """An executable `mpirun` in `directory` that only answers --version."""
    path = os.path.join(directory, "mpirun")
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho '%s'\n" % version_text)
    os.chmod(path, 0o755)
    return path


def case_with_ft():
    with tempfile.TemporaryDirectory() as d:
        ompi5 = fake_launcher(d, "mpirun (Open MPI) 5.0.11")
        for spelling in (["--with-ft", "ulfm"], ["--with-ft=ulfm"]):
            argv = dry(["--launcher", ompi5, "--allow-mismatch", "-np", "4"] + spelling +
                       [PROGRAM])
            expect_seq(argv, ["--with-ft", "ulfm"])
            # Processes CommGrow starts are another job: TCP beside shared memory.
            expect_seq(argv, ["--mca", "btl", "self,sm,tcp"])
            expect(argv[-1] == PROGRAM, str(argv))
        argv = dry(["--launcher", ompi5, "--allow-mismatch", "-np", "4", PROGRAM])
        expect_no(argv, "--with-ft")
        expect_seq(argv, ["--mca", "btl", "self,sm"])
    with tempfile.TemporaryDirectory() as d:
        ompi4 = fake_launcher(d, "mpirun (Open MPI) 4.1.4")
        rc, _, err = run(["--dry-run", "--launcher", ompi4, "--allow-mismatch", "--with-ft",
                          "ulfm", PROGRAM])
        expect(rc == 2 and "Open MPI 5" in err and "4.1.4" in err,
               "Open MPI 4.1 with --with-ft: %d %s" % (rc, err))
    rc, _, err = run(["--dry-run", "--mpi", "mpich", "--allow-mismatch", "--with-ft", "ulfm",
                      PROGRAM])
    expect(rc == 2 and "MPICH" in err, "MPICH with --with-ft: %d %s" % (rc, err))
    rc, _, err = run(["--dry-run", "--with-ft", "mpi", PROGRAM])
    expect(rc == 2 and "ulfm" in err, "--with-ft mpi: %d %s" % (rc, err))


# ---- arguments and errors ---------------------------------------------------

def case_program_args():
    # Everything after the program is the program's, even icclrun's options.
    tail = [PROGRAM, "-x", "Y", "--dry-run", "two words", "it's", "$HOME", ""]
    for sep in ([], ["--"]):
        for flavor in ("openmpi", "mpich"):
            argv = dry(["--mpi", flavor, "-np", "2"] + sep + tail)
            expect(argv[-len(tail):] == tail, "program and args must be kept verbatim: %s"
                   % argv)


def case_torchrun_spellings():
    # torchrun's options, both spellings and --opt=value; a .py program runs
    # under python3 (ICCLRUN_PYTHON when set); rendezvous flags are named as
    # ignored on stderr.
    for args in (["--nproc-per-node", "3"], ["--nproc_per_node=3"],
                 ["--nnodes", "1", "--nproc-per-node", "3", "--standalone"],
                 ["--nnodes=1:1", "--node_rank", "0", "--nproc_per_node", "3"]):
        argv = dry(["--mpi", "openmpi"] + args + ["train.py", "--lr", "1"])
        expect_seq(argv, ["-np", "3"])
        expect(argv[-4:] == ["python3", "train.py", "--lr", "1"], "python3 train.py: %s" % argv)
    argv = dry(["--mpi", "mpich", "--nproc-per-node", "2", "--master-addr", "10.0.0.1",
                "--master_port=29511", "train.py"],
               env=clean_env(ICCLRUN_PYTHON="/opt/py/bin/python"))
    expect_seq(argv, ["-genv", "MASTER_ADDR", "10.0.0.1"])
    expect_seq(argv, ["-genv", "MASTER_PORT", "29511"])
    expect(argv[-2:] == ["/opt/py/bin/python", "train.py"], "ICCLRUN_PYTHON: %s" % argv)
    argv = dry(["--mpi", "openmpi", "--nnodes", "2", "--nproc-per-node", "4", "-H",
                "a:4,b:4", PROGRAM])
    expect_seq(argv, ["-np", "8"])
    rc, out, err = run(["--dry-run", "--mpi", "openmpi", "--nproc-per-node", "2",
                        "--rdzv-backend", "c10d", "--rdzv-endpoint=h:29400",
                        "--max_restarts", "3", "train.py"])
    expect(rc == 0 and "ignored" in err and "--rdzv-backend c10d" in err and
           "--rdzv-endpoint h:29400" in err and "--max-restarts 3" in err,
           "rendezvous flags named as ignored: rc %d, %r" % (rc, err))
    rc, out, err = run(["--dry-run", "--mpi", "openmpi", "--nnodes", "2",
                        "--nproc-per-node", "2", "train.py"])
    expect(rc == 2 and "--hostfile" in err, "--nnodes 2 without hosts: rc %d, %r" % (rc, err))
    rc, out, err = run(["--dry-run", "--mpi", "openmpi", "-np", "3", "--nproc-per-node", "2",
                        "train.py"])
    expect(rc == 2 and "disagrees" in err, "-np against --nproc-per-node: rc %d, %r" % (rc, err))
    # Without torchrun's options a .py program is run as given.
    argv = dry(["--mpi", "openmpi", "-np", "2", "train.py"])
    expect(argv[-1] == "train.py" and "python3" not in argv, "plain -np: %s" % argv)


def case_torchrun_module():
    # -m MODULE / --module MODULE / --module=MODULE: python3 -m MODULE args.
    for args in (["--nproc-per-node", "2", "-m", "pkg.train"],
                 ["--nproc_per_node=2", "--module", "pkg.train"],
                 ["--nproc-per-node", "2", "--module=pkg.train"]):
        argv = dry(["--mpi", "openmpi"] + args + ["--lr", "1"])
        expect_seq(argv, ["-np", "2"])
        expect(argv[-5:] == ["python3", "-m", "pkg.train", "--lr", "1"],
               "python3 -m pkg.train: %s" % argv)
    argv = dry(["--mpi", "mpich", "-n", "3", "-m", "pkg.train"],
               env=clean_env(ICCLRUN_PYTHON="/opt/py/bin/python"))
    expect(argv[-5:] == ["-n", "3", "/opt/py/bin/python", "-m", "pkg.train"],
           "-m with -n and ICCLRUN_PYTHON: %s" % argv)
    rc, out, err = run(["--dry-run", "--mpi", "openmpi", "-np", "2", "-m"])
    expect(rc == 2 and "no program" in err, "-m without a module: rc %d, %r" % (rc, err))


def case_torchrun_no_python():
    # --no-python / --no_python: a .py program runs as given; not with -m.
    for flag in ("--no-python", "--no_python"):
        argv = dry(["--mpi", "openmpi", "--nproc-per-node", "2", flag, "train.py", "--lr", "1"])
        expect(argv[-3:] == ["train.py", "--lr", "1"] and "python3" not in argv,
               "%s: %s" % (flag, argv))
        expect_seq(argv, ["-np", "2"])
    rc, out, err = run(["--dry-run", "--mpi", "openmpi", "--no-python", "-m", "pkg.train"])
    expect(rc == 2 and "--no-python or -m" in err, "--no-python with -m: rc %d, %r" % (rc, err))


def case_torchrun_nproc_auto():
    # --nproc-per-node gpu|cpu|auto: GPUs from CUDA_VISIBLE_DEVICES or
    # nvidia-smi -L (a stand-in listing 3), CPUs as os.cpu_count().
    cpus = str(os.cpu_count())
    with tempfile.TemporaryDirectory() as d:
        smi = os.path.join(d, "nvidia-smi")
        with open(smi, "w") as f:
            f.write("#!/bin/sh\n"
                    "for i in 0 1 2; do echo \"GPU $i: Stand-in (UUID: GPU-$i)\"; done\n")
        os.chmod(smi, 0o755)
        base = {k: v for k, v in clean_env().items() if k != "CUDA_VISIBLE_DEVICES"}
        three = dict(base, PATH=d + os.pathsep + base.get("PATH", ""))
        for value, env, want in (("gpu", three, "3"), ("auto", three, "3"),
                                 ("cpu", three, cpus),
                                 ("gpu", dict(three, CUDA_VISIBLE_DEVICES="0,1"), "2"),
                                 ("auto", dict(three, CUDA_VISIBLE_DEVICES=""), cpus),
                                 ("auto", dict(base, CUDA_VISIBLE_DEVICES="-1"), cpus)):
            argv = dry(["--mpi", "openmpi", "--nproc-per-node", value, "train.py"], env=env)
            expect_seq(argv, ["-np", want])
        argv = dry(["--mpi", "openmpi", "--nnodes", "2", "--nproc_per_node=gpu", "-H",
                    "a:3,b:3", "train.py"], env=three)
        expect_seq(argv, ["-np", "6"])
        rc, out, err = run(["--dry-run", "--mpi", "openmpi", "--nproc-per-node", "gpu",
                            "train.py"], env=dict(base, CUDA_VISIBLE_DEVICES=""))
        expect(rc == 2 and "no GPU" in err, "gpu without GPUs: rc %d, %r" % (rc, err))
        rc, out, err = run(["--dry-run", "--mpi", "openmpi", "--nproc-per-node", "tpu",
                            "train.py"])
        expect(rc == 2 and "auto, cpu or gpu" in err, "tpu refused: rc %d, %r" % (rc, err))


def case_errors():
    with tempfile.TemporaryDirectory() as d:
        missing = os.path.join(d, "no-such-hostfile")
        bad = [
            (["--bogus", PROGRAM], "--bogus"),
            (["-np", "2"], "no program"),
            (["-np", "2", "--"], "no program"),
            (["-np"], "needs a value"),
            (["-np", "zero", PROGRAM], "positive integer"),
            (["-np", "0", PROGRAM], "positive integer"),
            (["--mpi", "lam", PROGRAM], "lam"),
            (["-x", "1BAD", PROGRAM], "-x"),
            (["--hostfile", missing, PROGRAM], missing),
            (["-H", "a", "--hostfile", "/dev/null", PROGRAM], "not both"),
        ]
        # Without --dry-run: a missing program is refused before any launch.
        missing_program = [
            (["-np", "2", os.path.join(d, "no-such-program")], "not found"),
            (["-np", "2", "no-such-program-icclrun-test"], "not found"),
        ]
        for args, words in [(["--dry-run"] + a, w) for a, w in bad] + missing_program:
            rc, out, err = run(args)
            print("icclrun --dry-run %s -> exit %d: %s" % (args, rc, err.strip()))
            expect(rc == 2, "expected exit 2 for %s, got %d" % (args, rc))
            expect(out == "", "nothing on stdout for an error: %r" % out)
            expect(words in err, "message for %s should mention %r: %s" % (args, words, err))
    rc, _, err = run(["--dry-run", "-np", "2", PROGRAM],
                     env=clean_env(INFINICCL_MPI="lam"))
    expect(rc == 2 and "INFINICCL_MPI" in err, "bad INFINICCL_MPI: %d %s" % (rc, err))


def case_dry_run_missing_program():
    # A dry run prints the line even when the program does not exist (yet).
    for flavor in ("openmpi", "mpich"):
        argv = dry(["--mpi", flavor, "-np", "4", "./no-such-app-icclrun-test", "--x"])
        expect(argv[-2:] == ["./no-such-app-icclrun-test", "--x"], str(argv))


def built_flavor():
    """The flavour `icclrun --version` says the library was built with."""
    rc, out, err = run(["--version"])
    expect(rc == 0 and out.startswith("icclrun (InfiniCCL) "), "--version: %d %s %s"
           % (rc, out, err))
    m = re.search(r"^library MPI: (openmpi|mpich|unknown)", out, re.M)
    expect(m is not None, "--version names no library MPI: %r" % out)
    return m.group(1)


def case_mismatch():
    """Run on the configured copy (build tree): it knows the library's MPI."""
    built = built_flavor()
    expect(built != "unknown", "the configured icclrun must know the library's MPI")
    other = "mpich" if built == "openmpi" else "openmpi"
    np_flag = ["-np", "2"] if built == "openmpi" else ["-n", "2"]
    # Default: the library's flavour, whatever launcher comes first in PATH.
    argv = dry(["-np", "2", PROGRAM])
    expect_seq(argv, np_flag)
    # Another flavour is refused, from --mpi or from INFINICCL_MPI, naming both.
    for args, env in ((["--mpi", other], None), ([], clean_env(INFINICCL_MPI=other))):
        rc, out, err = run(["--dry-run"] + args + ["-np", "2", PROGRAM], env)
        print("icclrun --dry-run %s (INFINICCL_MPI=%s) -> exit %d: %s"
              % (args, (env or {}).get("INFINICCL_MPI"), rc, err.strip()))
        expect(rc == 2 and out == "", "mismatch must be refused: %d %r" % (rc, out))
        expect("built with " + built in err and other in err and "rank 0 of 1" in err,
               "message should name both flavours and the consequence: %s" % err)
    # --allow-mismatch runs it, with a loud warning.
    rc, out, err = run(["--dry-run", "--allow-mismatch", "--mpi", other, "-np", "2",
                        PROGRAM])
    expect(rc == 0 and "WARNING" in err and out.strip(), "--allow-mismatch: %d %s"
           % (rc, err))
    # A launcher of the other flavour, named explicitly, is refused too.
    path = shutil.which("mpiexec.mpich" if other == "mpich" else "mpirun.openmpi")
    if path:
        rc, _, err = run(["--dry-run", "--launcher", path, "--mpi", other, "-np", "2",
                          PROGRAM])
        expect(rc == 2 and "built with " + built in err, "launcher mismatch: %d %s"
               % (rc, err))


def case_version():
    rc, out, _ = run(["--version"])
    expect(rc == 0 and out.startswith("icclrun (InfiniCCL) ") and "launcher:" in out,
           "--version: %d %r" % (rc, out))


def case_help():
    for flag in ("--help", "-h"):
        rc, out, _ = run([flag])
        expect(rc == 0, "%s exits 0" % flag)
        for word in ("usage: icclrun", "-np", "--hostfile", "-x VAR=value", "--mpi",
                     "--dry-run", "--version", "--allow-mismatch",
                     "mpirun.openmpi mpiexec.openmpi mpirun", "mpiexec.mpich mpirun.mpich"):
            expect(word in out, "%s should mention %r" % (flag, word))


CASES = {name[len("case_"):]: fn for name, fn in globals().items()
         if name.startswith("case_")}


def main():
    global ICCLRUN
    if len(sys.argv) == 2 and sys.argv[1] == "list":
        print("\n".join(sorted(CASES)))
        return 0
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(__doc__.strip() + "\ncases: " + " ".join(sorted(CASES)))
        return 2
    ICCLRUN = os.path.abspath(sys.argv[1])
    CASES[sys.argv[2]]()
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
