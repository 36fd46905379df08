#!/usr/bin/env bash
# docker/ci.sh is the Docker stage of .ci/run: everything locklab does with
# Docker, for real, on a machine with an engine and no registry.
#
#   1. images    locklab/redis:local from this machine's redis-server
#                (docker/build.sh redis)
#   2. provider  the rig's Docker provider tests, then labs 07 and 08
#                (servers killed, restarted, promoted) on containers
#                (make test-docker, LOCKLAB_PROVIDER=docker)
#   3. redlock   make up; every lab test that needs no process control
#                against the five nodes through LOCKLAB_REDIS_ADDRS, each on
#                emptied servers (docker/labs-on-servers.sh); a bench smoke
#                run with -addrs; the stack test; make down
#   4. sentinel  make up STACK=sentinel; labs 02 and 04 against the
#                primary; the stack test (a Sentinel client, the primary
#                paused, a real failover); make down
#   5. dev       the dev container built offline (docker/build.sh dev
#                --offline) and every lab run in it with -race (docker/dev.sh)
#
# Each step prints its cost in seconds; the stage fails on the first error
# and leaves no container behind.
set -euo pipefail
cd "$(dirname "$0")/.."

# No registry here: the local build stands in for redis:7.4.
export LOCKLAB_REDIS_IMAGE=${LOCKLAB_REDIS_IMAGE:-locklab/redis:local}
GO=${GO:-go}
REDLOCK_ADDRS=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103,127.0.0.1:7104,127.0.0.1:7105
tmp=$(mktemp -d)
costs=()

cleanup() {
	local rc=$?
	docker/compose.sh down redlock >/dev/null 2>&1 || true
	docker/compose.sh down sentinel >/dev/null 2>&1 || true
	rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT

step() {
	local name=$1 t0=$SECONDS
	shift
	echo "== docker: $name"
	"$@"
	costs+=("$name $((SECONDS - t0)) s")
	echo "== docker: $name done in $((SECONDS - t0)) s"
}

bench_smoke() {
	$GO run ./bench -addrs "$REDLOCK_ADDRS" -scenarios uncontended,contended -impls correct,redlock-5,redsync-1,redsync-5 \
		-clients 8 -hold 1ms -duration 300ms -rounds 1 -plots=false -out "$tmp/bench" >"$tmp/bench.log" 2>&1 ||
		{ cat "$tmp/bench.log"; return 1; }
	local rows bad
	rows=$(grep -c '"impl"' "$tmp/bench/summary.json")
	bad=$(grep -o '"violations": *[0-9]*' "$tmp/bench/summary.json" | grep -vc ': *0$' || true)
	echo "bench against the redlock stack: $rows rows, $bad with violations"
	[ "$rows" -gt 0 ] && [ "$bad" -eq 0 ]
}

redlock_stack() {
	make --no-print-directory up STACK=redlock
	GOTESTFLAGS=-race docker/labs-on-servers.sh "$REDLOCK_ADDRS"
	bench_smoke
	$GO test -tags compose -count=1 -run 'Redlock' ./internal/composetest/
	make --no-print-directory down STACK=redlock
}

sentinel_stack() {
	make --no-print-directory up STACK=sentinel
	GOTESTFLAGS=-race docker/labs-on-servers.sh 127.0.0.1:7201 labs/02-check-then-set labs/04-get-then-del
	$GO test -tags compose -count=1 -v -run 'Sentinel' ./internal/composetest/ | grep -E '^(---|ok|FAIL|PASS)|stack_test'
	make --no-print-directory down STACK=sentinel
}

dev_container() {
	docker/build.sh dev --offline
	# Offline (GOPROXY=off), on this machine's module and build caches and
	# with the checkout at its own path, so that what make test compiled
	# (with -race, as here) is reused: every lab runs as make test runs it.
	GOPROXY=off LOCKLAB_DEV_GOMODCACHE="$($GO env GOMODCACHE)" LOCKLAB_DEV_GOCACHE="$($GO env GOCACHE)" LOCKLAB_DEV_WORKDIR="$PWD" \
		docker/dev.sh sh -c 'redis-server --version && go version && go test -race -count=1 ./labs/...'
}

no_leftovers() {
	local left
	left=$(docker ps -aq --filter label=org.locklab.rig; docker ps -aq --filter label=com.docker.compose.project=locklab-redlock;
		docker ps -aq --filter label=com.docker.compose.project=locklab-sentinel)
	if [ -n "$left" ]; then
		docker ps -a --filter label=org.locklab.rig
		echo "containers left behind: $left"
		return 1
	fi
	echo "no container left behind"
}

t0=$SECONDS
step images docker/build.sh redis
step provider make --no-print-directory test-docker
step redlock redlock_stack
step sentinel sentinel_stack
step dev dev_container
step leftovers no_leftovers
echo "== docker stage: $((SECONDS - t0)) s ($(IFS=,; echo "${costs[*]}" | sed 's/,/, /g'))"
