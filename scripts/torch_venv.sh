# Sourced by test.sh: infiniccl_torch_venv DIR makes (when missing) a virtual
# environment in DIR with PyPI's newest torch, pytest, numpy and
# scikit-build-core, for the C++ torch backend's tests, and prints its python.
# PyPI's Linux torch is a CUDA build. On the CPU it imports with its own
# wheel, the pure-Python dependencies and the few CUDA libraries it links
# that a machine's CUDA toolkit may lack (cuSPARSELt, NVSHMEM, cuFile, its
# NCCL), all installed without their dependencies: a few hundred MB instead
# of the several GB of every CUDA wheel. Where that import still fails,
# torch is installed with all its dependencies.
infiniccl_torch_venv() {
  local venv=$1 py
  py=$venv/bin/python
  if [ -x "$py" ] && "$py" -c "import torch, pytest, numpy" >/dev/null 2>&1; then
    # scikit-build-core: python_torch2_wheel builds the root pyproject.toml.
    "$py" -c "import scikit_build_core" >/dev/null 2>&1 ||
      "$venv/bin/pip" install -q --disable-pip-version-check scikit-build-core >&2 || true
    echo "$py"
    return 0
  fi
  {
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps torch
    # The pins of the CUDA wheels torch names (Requires-Dist).
    local pins
    pins=$("$py" - <<'PY'
import importlib.metadata as m
want = ("nvidia-cusparselt", "nvidia-nvshmem", "nvidia-nccl")
out = []
for r in m.requires("torch") or []:
    spec = r.split(";")[0].strip().replace(" ", "")
    if spec.startswith(want):
        out.append(spec)
print(" ".join(out))
PY
)
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps $pins nvidia-cufile \
      filelock typing-extensions sympy mpmath networkx jinja2 markupsafe fsspec numpy \
      pytest iniconfig pluggy packaging pygments setuptools scikit-build-core pathspec
    if ! "$py" -c "import torch" >/dev/null 2>&1; then
      echo "torch does not import without its CUDA wheels; installing them" >&2
      "$venv/bin/pip" install -q --disable-pip-version-check torch
    fi
    "$py" -c "import torch; print('torch', torch.__version__, 'in', '$venv')"
  } >&2
  echo "$py"
}
