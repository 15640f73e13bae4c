# Sourced by test.sh: infiniccl_torch_venv DIR [VERSION] makes (when missing)
# a virtual environment in DIR with PyPI's torch (the newest, or VERSION),
# pytest, numpy and scikit-build-core, for the C++ torch backend's tests, and
# prints its python.
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
  local venv=$1 version=${2:-} py spec=torch
  py=$venv/bin/python
  [ -z "$version" ] || spec="torch==$version"
  if [ -x "$py" ] && "$py" -c "import torch, pytest, numpy, sys
sys.exit(bool('$version') and torch.__version__.split('+')[0] != '$version')" >/dev/null 2>&1; then
    # scikit-build-core: python_torch2_wheel builds the root pyproject.toml.
    "$py" -c "import scikit_build_core" >/dev/null 2>&1 ||
      "$venv/bin/pip" install -q --disable-pip-version-check scikit-build-core >&2 || true
    echo "$py"
    return 0
  fi
  {
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$spec"
    # The pins of the CUDA wheels torch names (Requires-Dist): the few a
    # machine's CUDA lacks, or (all) every nvidia-* one.
    local pins
    pins=$(infiniccl_torch_pins "$py" few)
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps $pins nvidia-cufile \
      filelock typing-extensions sympy mpmath networkx jinja2 markupsafe fsspec numpy \
      pytest iniconfig pluggy packaging pygments setuptools scikit-build-core pathspec
    if ! "$py" -c "import torch" >/dev/null 2>&1; then
      echo "torch does not import without its CUDA wheels; installing them" >&2
      pins=$(infiniccl_torch_pins "$py" all)
      # shellcheck disable=SC2086
      "$venv/bin/pip" install -q --disable-pip-version-check --no-deps $pins
    fi
    "$py" -c "import torch; print('torch', torch.__version__, 'in', '$venv')"
  } >&2
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
