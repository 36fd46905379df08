#!/usr/bin/env bash
# docker/labs-on-servers.sh ADDRS [LAB_DIR...] runs every test of the given
# labs (all of them when none is given) against the servers ADDRS
# ("host:port,...", as LOCKLAB_REDIS_ADDRS takes), one test at a time, each
# on servers emptied first (FLUSHALL): point it only at servers of your own,
# such as the Compose stacks (make up).
#
#   docker/labs-on-servers.sh 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103,127.0.0.1:7104,127.0.0.1:7105
#   docker/labs-on-servers.sh 127.0.0.1:7201 labs/03-blind-delete
#
# Why one at a time: the labs' scenes share one key (lock:order:1001) and
# do not clear it first, and a broken lock leaves it behind on purpose (lab
# 01's has no TTL at all, which is the lesson): on long-lived servers the
# next scene would wait for it until its deadline. The rig's own servers
# are fresh for every scene, so plain go test needs none of this.
#
# Tests that kill, pause or restart servers skip, saying why. It fails if a
# test fails, or if none ran. GOTESTFLAGS adds go test flags (CI: -race).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
addrs=$1
shift
[ $# -gt 0 ] || set -- labs/[0-9][0-9]-*
command -v redis-cli >/dev/null 2>&1 || { echo "docker/labs-on-servers.sh: redis-cli is needed to empty the servers (apt-get install -y redis-tools)" >&2; exit 1; }
GO=${GO:-go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

flush() {
	local a
	for a in ${addrs//,/ }; do
		redis-cli -h "${a%:*}" -p "${a##*:}" FLUSHALL >/dev/null ||
			{ echo "docker/labs-on-servers.sh: $a does not answer (is the stack up? make up)" >&2; exit 1; }
	done
}

passed=0 skipped=0
for lab in "$@"; do
	lab=${lab%/}
	lab_t0=$SECONDS lab_passed=$passed lab_skipped=$skipped
	[ -d "$lab" ] || { echo "docker/labs-on-servers.sh: no lab $lab" >&2; exit 2; }
	bin=$tmp/$(basename "$lab").test
	# shellcheck disable=SC2086
	$GO test ${GOTESTFLAGS:-} -c -o "$bin" "./$lab"
	for t in $("$bin" -test.list '^Test'); do
		flush
		if ! out=$(cd "$lab" && LOCKLAB_REDIS_ADDRS=$addrs "$bin" -test.run "^$t\$" -test.count=1 -test.v 2>&1); then
			echo "$out" | tail -40
			echo "FAIL: $lab $t against $addrs"
			exit 1
		fi
		if grep -q -- "^--- SKIP: $t " <<<"$out"; then
			skipped=$((skipped + 1))
		else
			passed=$((passed + 1))
		fi
	done
	echo "$lab: $((passed - lab_passed)) passed, $((skipped - lab_skipped)) skipped, $((SECONDS - lab_t0)) s"
done
flush
echo "labs against $addrs: $passed tests passed, $skipped skipped (they need process control)"
[ "$passed" -gt 0 ]
