#!/bin/sh
# Runs one pytest file with the given interpreter, after checking that the interpreter imports
# the modules the file needs; exit status 77 (CTest: skipped) with the reason when one is missing,
# 1 when it is the project's own bindings (braid), which the build makes.
# Usage: run_pytest.sh PYTHON "MODULE..." FILE [pytest args]
python=$1
modules=$2
shift 2
for module in pytest $modules; do
  if ! out=$("$python" -c "import $module" 2>&1); then
    echo "SKIPPED: $python cannot import $module: $(echo "$out" | tail -1)"
    case $module in
      # The project builds the bindings: one that does not load is broken, not absent.
      braid) echo "  FAILED: the bindings do not load (build them: python3-dev and pybind11-dev, then cmake; see docs/python.md)"
             exit 1 ;;
      *) echo "  (tools/setup-frameworks installs it)" ;;
    esac
    exit 77
  fi
done
exec "$python" -m pytest -q -p no:cacheprovider "$@"
