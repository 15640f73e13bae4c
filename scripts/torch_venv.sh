# Sourced by test.sh: infiniccl_torch_venv DIR [VERSION] makes (when missing)
# a virtual environment in DIR with PyPI's torch (the newest, or VERSION),
# pytest, numpy and scikit-build-core, for the C++ torch backend's tests, and
# prints its python. It returns non-zero, printing nothing on stdout, when
# any step fails.
# PyPI's Linux torch is a CUDA build. On the CPU it imports with its own
# wheel, the pure-Python dependencies and the few CUDA libraries it links
# that a machine's CUDA toolkit may lack (cuSPARSELt, NVSHMEM, cuFile, its
# NCCL), all installed without their dependencies: a few hundred MB instead
# of the several GB of every CUDA wheel. Where that import still fails (a
# torch built for another CUDA than the machine's, as the oldest torch the
# backend supports), every CUDA wheel torch names is installed, still
# without Triton (torch.compile's, which the tests do not use).
INFINICCL_TORCH_OLDEST=2.7.1

infiniccl_torch_venv() {
  local venv=$1 version=${2:-} py spec=torch pins
  py=$venv/bin/python
  [ -z "$version" ] || spec="torch==$version"
  if [ -x "$py" ] && "$py" -c "import torch, pytest, numpy, sys
sys.exit(bool('$version') and torch.__version__.split('+')[0] != '$version')" >/dev/null 2>&1; then
    # scikit-build-core: python_torch2_wheel builds the root pyproject.toml.
    if ! "$py" -c "import scikit_build_core" >/dev/null 2>&1; then
      "$venv/bin/pip" install -q --disable-pip-version-check scikit-build-core >&2 ||
        { echo "torch environment $venv: pip install scikit-build-core failed" >&2; return 1; }
    fi
    echo "$py"
    return 0
  fi
  # Every step is checked: this runs in a command substitution, where set -e
  # does not hold, and a half-made environment must not pass for a whole one.
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv" >&2 ||
    { echo "torch environment $venv: python3 -m venv failed (Debian: python3-venv)" >&2; return 1; }
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$spec" >&2 ||
    { echo "torch environment $venv: pip install $spec failed" >&2; return 1; }
  # The pins of the CUDA wheels torch names (Requires-Dist): the few a
  # machine's CUDA lacks, or (all) every nvidia-* one.
  pins=$(infiniccl_torch_pins "$py" few) ||
    { echo "torch environment $venv: cannot read torch's requirements" >&2; return 1; }
  # shellcheck disable=SC2086
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps $pins nvidia-cufile \
    filelock typing-extensions sympy mpmath networkx jinja2 markupsafe fsspec numpy \
    pytest iniconfig pluggy packaging pygments setuptools scikit-build-core pathspec >&2 ||
    { echo "torch environment $venv: pip install of torch's dependencies failed" >&2; return 1; }
  if ! "$py" -c "import torch" >/dev/null 2>&1; then
    echo "torch does not import without its CUDA wheels; installing them" >&2
    pins=$(infiniccl_torch_pins "$py" all) ||
      { echo "torch environment $venv: cannot read torch's requirements" >&2; return 1; }
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps $pins >&2 ||
      { echo "torch environment $venv: pip install of torch's CUDA wheels failed" >&2; return 1; }
  fi
  "$py" -c "import torch, pytest, numpy, scikit_build_core
print('torch', torch.__version__, 'in', '$venv')" >&2 ||
    { echo "torch environment $venv: torch, pytest, numpy or scikit-build-core does not import" >&2
      return 1; }
  echo "$py"
}

# infiniccl_torch_pins PYTHON few|all: the Requires-Dist pins of the nvidia-*
# wheels of the torch PYTHON has (few: cuSPARSELt, NVSHMEM, NCCL).
infiniccl_torch_pins() {
  "$1" - "$2" <<'PY'
import importlib.metadata as m
import sys
few = ("nvidia-cusparselt", "nvidia-nvshmem", "nvidia-nccl")
out = []
for r in m.requires("torch") or []:
    spec = r.split(";")[0].strip().replace(" ", "")
    if spec.startswith(few if sys.argv[1] == "few" else ("nvidia-",)):
        out.append(spec)
print(" ".join(out))
PY
}
