#!/usr/bin/env bash
# Installs what is missing, builds the `ci` kernel set (every step once per dtype; configured by
# scripts/ci_build.sh, which scripts/run.sh shares on a machine without a GPU) and runs
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
# ccache shares the kernels' objects between this build, the sanitizer build and
# tests/docs/check_adding_a_step.sh's copy: see scripts/ci_build.sh.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# Configure and build (scripts/ci_build.sh, which scripts/run.sh shares on a machine without a
# GPU); its last line names the interpreter the Python module was built for.
PYTHON=$("$ROOT/scripts/ci_build.sh" "$BUILD" | sed -n 's/^python: //p' | tail -1)
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
