#!/usr/bin/env bash
# The systemd unit (daemon/gappaced.service.in, as CMake configured it) passes
# `systemd-analyze verify` with this build's gappaced in place of the installed one, and says what
# the daemon needs: Type=notify (it sends READY=1), SIGHUP for reload, and a runtime directory that
# outlives a crash (the stock backend's state file, read by the restarted daemon).
#
# usage: service_unit.sh BUILD_DIR          (exit 77 without systemd-analyze)
set -euo pipefail
BUILD=$(cd "${1:?usage: service_unit.sh BUILD_DIR}" && pwd)
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
unit=$BUILD/daemon/gappaced.service
[[ -f $unit ]] || { echo "FAIL $unit was not configured"; exit 1; }
TMP=$(mktemp -d /tmp/gappace-unit.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; FAILS=$((FAILS + 1)); fi; }

installed=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
check "ExecStart names the installed gappaced ($installed)" test "$(basename "$installed")" = gappaced
sed "s|$installed|$BUILD/daemon/gappaced|g" "$unit" >"$TMP/gappaced.service"
check "systemd-analyze verify accepts the unit" systemd-analyze verify "$TMP/gappaced.service"
for line in 'Type=notify' 'ExecReload=/bin/kill -HUP $MAINPID' 'RuntimeDirectory=gappace' 'RuntimeDirectoryPreserve=yes' \
	'WantedBy=multi-user.target'; do
	check "the unit says $line" grep -qxF "$line" "$unit"
done
# The check can fail: a unit with a bad type and a missing program is refused.
printf '[Service]\nType=bogus\nExecStart=%s/nonexistent\n' "$TMP" >"$TMP/bad.service"
check "systemd-analyze verify refuses a broken unit" bash -c "! systemd-analyze verify '$TMP/bad.service' 2>/dev/null"
((FAILS == 0)) || { echo "service_unit: $FAILS failed"; exit 1; }
echo "service_unit: all passed"
