#!/usr/bin/env bash
# Proves on a GPU host that `pip install .` builds and installs the flashscope package:
# scikit-build-core (pyproject.toml) drives the project's CMake, the package lands in a fresh
# environment's site-packages with its stubs, it imports from there (not from a build tree),
# reports the project's version, and runs a kernel on the GPU against PyTorch's SDPA when PyTorch
# is importable (else the Python tests that need no framework).
#   scripts/test_pip_install.sh [LOG_DIR] [-- PIP_ARGUMENTS...]
# e.g. scripts/test_pip_install.sh /tmp/pip-log -- -C cmake.define.FLASHSCOPE_STEPS=16,25
# Needs: python3 with pip, scikit-build-core and pybind11 importable (the GPU hosts have them, and
# no network: the build runs with --no-build-isolation from what is installed), the CUDA 13
# toolkit under /usr/local/cuda, CMake >= 3.25. The environment is a virtualenv with the system's
# site-packages visible (for scikit-build-core, pybind11, PyTorch, pytest), or `pip install
# --target` where venv is missing; either is removed at the end. Exit 0 only when every step
# passed; the log of each step is in LOG_DIR (default: a temporary folder, printed).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOG_DIR=""
if [[ $# -gt 0 && $1 != -- ]]; then
  LOG_DIR=$1
  shift
fi
[[ $# -gt 0 && $1 == -- ]] && shift
PIP_ARGUMENTS=("$@")
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
LOG_DIR=$(cd "$LOG_DIR" && pwd)
PYTHON=${PYTHON:-python3}
export PATH="$PATH:/usr/local/cuda/bin"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
log() { echo "[test_pip_install] $*" | tee -a "$LOG_DIR/summary.txt"; }
fail() {
  log "FAILED: $*"
  exit 1
}

log "source $ROOT (commit ${FLASHSCOPE_GIT_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown)}), logs in $LOG_DIR"
prerequisites_ok=1
"$PYTHON" - > "$LOG_DIR/prerequisites.txt" 2>&1 << 'EOF' || prerequisites_ok=0
import sys, importlib.metadata as metadata
print("python", sys.version.split()[0], sys.executable)
missing = []
for name in ("pip", "scikit-build-core", "pybind11"):
    try:
        print(name, metadata.version(name))
    except metadata.PackageNotFoundError:
        if name == "pybind11":  # CMake may still find Debian's pybind11-dev
            print(name, "not pip-installed (CMake looks for pybind11-dev's config instead)")
            continue
        print(name, "NOT INSTALLED")
        missing.append(name)
if missing:
    print("missing from this Python's environment:", ", ".join(missing), "(the build runs without "
          "network, from what is installed; PYTHON=... names another interpreter)")
    sys.exit(1)
EOF
((prerequisites_ok)) || fail "prerequisites: $(tr '\n' ';' < "$LOG_DIR/prerequisites.txt")"
log "prerequisites: $(tr '\n' ';' < "$LOG_DIR/prerequisites.txt")"
command -v nvcc > /dev/null || fail "no nvcc on PATH (expected /usr/local/cuda/bin)"

# The environment: a virtualenv seeing the system's packages, else a --target folder.
if "$PYTHON" -m venv --system-site-packages "$WORK/venv" > "$LOG_DIR/venv.log" 2>&1; then
  ENV_PYTHON="$WORK/venv/bin/python"
  TARGET=()
  IMPORT_PATH=""
  # When PYTHON is itself a virtualenv (the GPU hosts' python3 is /opt/torch/.venv's),
  # --system-site-packages shows its base interpreter's packages, not that environment's
  # (scikit-build-core, pybind11, PyTorch): a .pth file adds those after the new environment's own.
  VENV_SITE=$("$ENV_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$PYTHON" -c 'import sysconfig; p = sysconfig.get_paths(); print("\n".join(dict.fromkeys([p["purelib"], p["platlib"]])))' \
    > "$VENV_SITE/flashscope-test-parent-env.pth"
  log "environment: virtualenv $WORK/venv (system site-packages and $PYTHON's visible)"
else
  ENV_PYTHON=$PYTHON
  TARGET=(--target "$WORK/site")
  IMPORT_PATH="$WORK/site"
  log "environment: no venv here ($(tail -1 "$LOG_DIR/venv.log")); pip install --target $WORK/site"
fi
run_python() { (cd "$WORK" && PYTHONPATH="$IMPORT_PATH" "$ENV_PYTHON" "$@"); }

# The install itself, as a user runs it (from a copy of the tree, so no build folder of the
# checkout and nothing it holds takes part).
mkdir "$WORK/src"
git -C "$ROOT" ls-files -z --cached --others --exclude-standard |
  (cd "$ROOT" && xargs -0 cp --parents -t "$WORK/src" 2> /dev/null) ||
  cp -r "$ROOT/." "$WORK/src"
start=$SECONDS
if ! (cd "$WORK" && "$ENV_PYTHON" -m pip install --no-build-isolation --no-deps -v \
  "${TARGET[@]}" "${PIP_ARGUMENTS[@]}" "$WORK/src") > "$LOG_DIR/pip_install.log" 2>&1; then
  tail -30 "$LOG_DIR/pip_install.log"
  fail "pip install . (see $LOG_DIR/pip_install.log)"
fi
log "pip install . took $((SECONDS - start)) s"

# Imported from the environment, with the project's version and the stubs beside it.
run_python - > "$LOG_DIR/import.txt" 2>&1 << EOF || { cat "$LOG_DIR/import.txt"; fail "import"; }
import pathlib, re, flashscope
package = pathlib.Path(flashscope.__file__).resolve().parent
assert not str(package).startswith("$ROOT"), f"imported from the checkout: {package}"
assert not str(package).startswith("$WORK/src"), f"imported from the source copy: {package}"
for stub in ("__init__.pyi", "_core.pyi", "py.typed"):
    assert (package / stub).is_file(), f"{stub} is not installed in {package}"
cmake = pathlib.Path("$ROOT/CMakeLists.txt").read_text()
version = re.search(r"project\(flashscope\s+VERSION\s+([0-9.]+)", cmake).group(1)
assert flashscope.__version__ == version, (flashscope.__version__, version)
print("flashscope", flashscope.__version__, "from", package)
print("kernels", len(flashscope.kernels()), flashscope.build_info())
print("gpu", flashscope._core.describe_gpu(0))
EOF
log "$(tr '\n' ' ' < "$LOG_DIR/import.txt")"

# A kernel on the GPU: PyTorch's SDPA as the reference when PyTorch is there.
run_python - > "$LOG_DIR/forward.txt" 2>&1 << 'EOF' || { cat "$LOG_DIR/forward.txt"; fail "forward on the GPU"; }
import flashscope
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("PyTorch is not importable: forward not compared (the pytest run below checks the rest)")
    raise SystemExit(0)
q, k, v = (torch.randn(2, 1024, 16, 128, device="cuda", dtype=torch.float16) for _ in range(3))
o = flashscope.forward(q, k, v)
step, config = flashscope.resolve_kernel(q, k, v)
reference = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v))).transpose(1, 2)
error = (o - reference).abs().max().item()
print(f"forward: step {step} {config}: max |O - SDPA| = {error:.3g}")
assert error < 2e-2, error
EOF
log "$(tr '\n' ' ' < "$LOG_DIR/forward.txt")"

# The Python suite against the installed package, from the source copy (its tests/python; no
# build tree on the path, and the copy's explorer/python is not on it either).
if run_python -c "import pytest" 2> /dev/null; then
  if (cd "$WORK/src/tests/python" && PYTHONPATH="$IMPORT_PATH" \
    FLASHSCOPE_REQUIRE_GPU=${FLASHSCOPE_REQUIRE_GPU:-1} \
    "$ENV_PYTHON" -m pytest -q -rs -p no:cacheprovider .) > "$LOG_DIR/pytest.log" 2>&1; then
    log "pytest on the installed package: $(tail -1 "$LOG_DIR/pytest.log")"
  else
    tail -30 "$LOG_DIR/pytest.log"
    fail "pytest on the installed package (see $LOG_DIR/pytest.log)"
  fi
else
  log "pytest is not importable: the test suite was not run on the installed package"
fi
log "passed: pip install . built and installed flashscope $(sed -n 's/^flashscope \([^ ]*\).*/\1/p' "$LOG_DIR/import.txt") and it runs"
