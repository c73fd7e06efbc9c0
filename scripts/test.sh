#!/usr/bin/env bash
# Installs what is missing, builds the `ci` kernel set (every step once per dtype) and runs
# every test: ctest, then the Python module's pytest suite (tests/python) with the interpreter the
# module was built for. GPU tests run where a GPU is present and are reported as skipped
# elsewhere. Then the
# hardening checks (docs/hardening.md): the host tests again under ASan + UBSan
# (scripts/sanitize.sh, in BUILD_DIR-asan) and every fuzz target for FLASHSCOPE_FUZZ_SECONDS
# (default 60) each (scripts/fuzz.sh, in BUILD_DIR-fuzz). FLASHSCOPE_HARDENING=0 skips those.
#   scripts/test.sh [BUILD_DIR]          (default build-ci)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-"$ROOT/build-ci"}
"$ROOT/scripts/install_deps.sh"
export PATH="$PATH:/usr/local/cuda/bin"
# ccache keys on paths relative to the repository, so the sanitizer build below reuses this
# build's CUDA objects (generated sources live in each build folder).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
# The Python module is built for the first python3 that can run its tests (has pytest): the one
# on PATH, else Debian's, which install_deps.sh gave python3-pytest.
PYTHON=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" > /dev/null && "$candidate" -c "import pytest" 2> /dev/null; then
    PYTHON=$(command -v "$candidate")
    break
  fi
done
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHSCOPE_KERNEL_SET=ci \
  ${FLASHSCOPE_CUDA_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$FLASHSCOPE_CUDA_ARCHITECTURES} \
  ${PYTHON:+-DPython3_EXECUTABLE=$PYTHON}
cmake --build "$BUILD" -j "$(nproc)"
# The GUI screenshot tests need a display: give them a virtual one when none is set.
status=0
# The JUnit file records which tests were skipped and what they printed (the reasons, listed at
# the end).
JUNIT="$BUILD/Testing/ctest-junit.xml"
rm -f "$JUNIT"
if [[ -z ${DISPLAY:-} ]] && command -v xvfb-run > /dev/null; then
  xvfb-run -a -s "-screen 0 1600x1000x24" ctest --test-dir "$BUILD" --output-on-failure \
    --output-junit "$JUNIT" || status=$?
else
  ctest --test-dir "$BUILD" --output-on-failure --output-junit "$JUNIT" || status=$?
fi
# The Python module's tests. Any non-zero pytest exit fails the run, 5 (no tests collected)
# included: the suite always has tests, so collecting none means it is broken.
if ! compgen -G "$BUILD/python/flashscope/_core*.so" > /dev/null; then
  echo "test.sh: the Python module was not built (its configure message says why); tests/python did not run" >&2
  status=1
elif [[ -z $PYTHON ]]; then
  echo "test.sh: no python3 with pytest (install python3-pytest); tests/python did not run" >&2
  status=1
else
  PYTHONPATH="$BUILD/python" "$PYTHON" -m pytest "$ROOT/tests/python" -q -rs \
    -p no:cacheprovider || status=1
fi
if [[ ${FLASHSCOPE_HARDENING:-1} != 0 ]]; then
  "$ROOT/scripts/sanitize.sh" "$BUILD-asan" || status=1
  "$ROOT/scripts/fuzz.sh" --build-dir "$BUILD-fuzz" "${FLASHSCOPE_FUZZ_SECONDS:-60}" || status=1
fi
# At the end, since ctest's console says only "(Skipped)": every skipped test with its reason.
if [[ -f $JUNIT ]]; then
  skipped=$("$ROOT/scripts/list_skipped_tests.sh" "$JUNIT") || status=1
  if [[ -n $skipped ]]; then
    echo "Skipped tests, and why:"
    echo "$skipped" | sed 's/^/  /'
  else
    echo "No test was skipped."
  fi
fi
exit "$status"
