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
