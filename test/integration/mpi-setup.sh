# Sourced by the tests that run mpirun: skips the test when mpirun is
# missing, lets Open MPI run as root (containers often run as root; it
# refuses unless told), and makes a scratch folder $dir removed on exit.
if ! command -v mpirun >/dev/null 2>&1; then
  echo "skipped: mpirun is not installed"
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# A sanitized build runs several times slower (docs/building.md#sanitizers):
# PARPLAN_TIME_SCALE (a whole number, set by ctest where the build was
# configured with PARPLAN_TEST_TIME_SCALE) stretches every `timeout` limit
# of the test by that factor.
if [ "${PARPLAN_TIME_SCALE:-1}" -gt 1 ] 2>/dev/null; then
  timeout() {
    limit=$1
    shift
    command timeout "$((limit * PARPLAN_TIME_SCALE))" "$@"
  }
fi
