#!/bin/sh
# Runs one pytest file with the given interpreter, after checking that the interpreter imports
# the modules the file needs; exit status 77 (CTest: skipped) with the reason when one is missing.
# Usage: run_pytest.sh PYTHON "MODULE..." FILE [pytest args]
python=$1
modules=$2
shift 2
for module in pytest $modules; do
  if ! out=$("$python" -c "import $module" 2>&1); then
    echo "SKIPPED: $python cannot import $module: $(echo "$out" | tail -1)"
    case $module in
      braid) echo "  (build the bindings: python3-dev and pybind11-dev, then cmake; see docs/python.md)" ;;
      *) echo "  (tools/setup-frameworks installs it)" ;;
    esac
    exit 77
  fi
done
exec "$python" -m pytest -q -p no:cacheprovider "$@"
