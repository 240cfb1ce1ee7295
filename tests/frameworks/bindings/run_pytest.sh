#!/bin/sh
# Runs one pytest file with the given interpreter; exit status 77 (CTest: skipped) when that
# interpreter has no pytest. Usage: run_pytest.sh PYTHON FILE [pytest args]
python=$1
shift
if ! "$python" -c "import pytest" >/dev/null 2>&1; then
  echo "SKIPPED: $python has no pytest (tools/setup-frameworks installs it)"
  exit 77
fi
exec "$python" -m pytest -q -p no:cacheprovider "$@"
