# shellcheck shell=bash
# The verdict helpers of the cluster tests: `check WHAT COMMAND...` prints "ok   WHAT" or
# "FAIL WHAT" and counts failures in FAILS; `jqt FILE FILTER` is true if the jq filter holds.
#   source tests/cluster/checks.sh
#   check "the job completed" jqt "$out.json" '.complete == true'
#   ((FAILS == 0)) || exit 1
FAILS=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
jqt() { jq -e "$2" "$1" >/dev/null 2>&1; }
