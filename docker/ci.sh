#!/usr/bin/env bash
# docker/ci.sh is the Docker stage of .ci/run: everything locklab does with
# Docker, for real, on a machine with an engine and no registry.
#
#   1. images    locklab/redis:local from this machine's redis-server
#                (docker/build.sh redis)
#   2. provider  the rig's Docker provider tests, then labs 07 and 08
#                (servers killed, restarted, promoted) on containers
#                (make test-docker, LOCKLAB_PROVIDER=docker)
#   3. redlock   make up; labs 00, 01 and 12 against the five nodes through
#                LOCKLAB_REDIS_ADDRS, each test on emptied servers
#                (docker/labs-on-servers.sh); a bench smoke run with -addrs;
#                the stack test; make down
#   4. sentinel  make up STACK=sentinel; lab 04 against the primary; the
#                stack test (a Sentinel client, the primary paused, a real
#                failover); make down
#   5. cluster   the Redis Cluster stack (compose/cluster.yaml: three
#                primaries, a replica each), brought up, served locks
#                through a ClusterClient and its AutoPipeliner on every
#                primary, and taken down, by its test
#                (internal/composetest, TestClusterStackServesLocks);
#                then locklab/bench:local (docker/build.sh bench) and a
#                bench split across three worker containers on the
#                cluster's network, merged into one report on the host
#                (docker/bench-cluster.sh workers 3, by
#                TestClusterBenchWorkersMerge)
#   6. dev       the dev container built offline (docker/build.sh dev
#                --offline), then labs 00, 07, 08, 13 and 14 run in it with
#                -race (docker/dev.sh): Redis, Sentinel and replication,
#                Redlock's kills and restarts, etcd and ZooKeeper,
#                PostgreSQL; with LOCKLAB_LONG=1, so lab 07's Sentinel
#                variants run too. No lab test may skip there but the
#                WrongFixes, which make test proves on the host.
#   7. leftovers no container of the rig's or the stacks' is left
#
# The budget: all of .ci/run on a fresh clone must stay under 20 minutes on
# 2 cores, and make test alone takes 10 to 12 of them, so this stage runs
# a sample of the labs, not all of them at every step: make test has run
# every lab already. Every lab against the redlock stack costs about 8
# minutes (one test at a time: the labs share a key); every lab in the dev
# container about 2. The samples are settings, for a wider run by hand:
#
#   LOCKLAB_CI_REDLOCK_LABS   labs against the redlock stack ("00 01 12")
#   LOCKLAB_CI_SENTINEL_LABS  labs against the sentinel primary ("04")
#   LOCKLAB_CI_DEV_LABS       labs in the dev container ("00 07 08 13 14");
#                             "all" is every lab, 00 to 14
#
# Each step prints its cost in seconds; the stage fails on the first error
# and leaves no container behind. docker/ci.sh STEP... runs only those
# steps (images, provider, redlock, sentinel, cluster, dev, leftovers).
set -euo pipefail
cd "$(dirname "$0")/.."

# No registry here: the local build stands in for redis:7.4.
export LOCKLAB_REDIS_IMAGE=${LOCKLAB_REDIS_IMAGE:-locklab/redis:local}
GO=${GO:-go}
REDLOCK_ADDRS=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103,127.0.0.1:7104,127.0.0.1:7105
REDLOCK_LABS=${LOCKLAB_CI_REDLOCK_LABS-00 01 12}
SENTINEL_LABS=${LOCKLAB_CI_SENTINEL_LABS-04}
DEV_LABS=${LOCKLAB_CI_DEV_LABS-00 07 08 13 14}
tmp=$(mktemp -d)
costs=()

# The stacks this run brought up, for cleanup to bring down: no other's.
up_stacks=()

cleanup() {
	local rc=$? s left
	# Bench workers a killed docker/bench-cluster.sh left on the
	# cluster's network, before the cluster (and its network) goes.
	left=$(docker ps -aq --filter label=com.docker.compose.project=locklab-benchworkers 2>/dev/null || true)
	# shellcheck disable=SC2086
	[ -z "$left" ] || docker rm -f $left >/dev/null 2>&1 || true
	for s in "${up_stacks[@]}"; do
		docker/compose.sh down "$s" >/dev/null 2>&1 || true
	done
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

# lab_dirs prints the directory of each lab numbered in $@ ("all": every lab).
lab_dirs() {
	local n d
	if [ "$*" = all ]; then
		printf '%s\n' labs/[0-9][0-9]-*
		return
	fi
	for n in "$@"; do
		d=$(printf '%s\n' labs/"$n"-* | sed -n 1p)
		[ -d "$d" ] || { echo "docker/ci.sh: no lab $n in labs/" >&2; return 1; }
		echo "$d"
	done
}

# The labs of each sample, checked before anything starts: a misspelt
# number must not widen a run to every lab, nor an empty list to none.
labs_of() {
	local name=$1
	shift
	[ $# -gt 0 ] || { echo "docker/ci.sh: $name is empty: name labs (\"00 01\") or all" >&2; exit 2; }
	lab_dirs "$@" || exit 2
}
# shellcheck disable=SC2086
REDLOCK_DIRS=$(labs_of LOCKLAB_CI_REDLOCK_LABS $REDLOCK_LABS)
# shellcheck disable=SC2086
SENTINEL_DIRS=$(labs_of LOCKLAB_CI_SENTINEL_LABS $SENTINEL_LABS)
# shellcheck disable=SC2086
DEV_DIRS=$(labs_of LOCKLAB_CI_DEV_LABS $DEV_LABS)

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
	up_stacks+=(redlock)
	make --no-print-directory up STACK=redlock
	# shellcheck disable=SC2086
	GOTESTFLAGS=-race docker/labs-on-servers.sh "$REDLOCK_ADDRS" $REDLOCK_DIRS
	bench_smoke
	$GO test -tags compose -count=1 -run 'Redlock' ./internal/composetest/
	make --no-print-directory down STACK=redlock
}

sentinel_stack() {
	up_stacks+=(sentinel)
	make --no-print-directory up STACK=sentinel
	# shellcheck disable=SC2086
	GOTESTFLAGS=-race docker/labs-on-servers.sh 127.0.0.1:7201 $SENTINEL_DIRS
	$GO test -tags compose -count=1 -v -run 'Sentinel' ./internal/composetest/ | grep -E '^(---|ok|FAIL|PASS)|stack_test'
	make --no-print-directory down STACK=sentinel
}

cluster_stack() {
	up_stacks+=(cluster)
	docker/build.sh bench
	# Formed once for both tests: the workers' test (first) leaves a
	# cluster it found up, the stack test takes it down when done.
	local out
	out=$(docker/cluster.sh up 2>&1) || { echo "$out"; return 1; }
	$GO test -tags compose -count=1 -v -run 'Cluster' ./internal/composetest/ | grep -E '^(---|ok|FAIL|PASS)|stack_test|cluster'
}

dev_container() {
	docker/build.sh dev --offline
	local pkgs=() d
	# shellcheck disable=SC2086
	for d in $DEV_DIRS; do pkgs+=("./$d/"); done
	# Offline (GOPROXY=off), on this machine's module and build caches and
	# with the checkout at its own path, so that what make test compiled
	# (with -race, as here) is reused.
	local log=$tmp/dev.log
	if ! GOPROXY=off LOCKLAB_DEV_GOMODCACHE="$($GO env GOMODCACHE)" LOCKLAB_DEV_GOCACHE="$($GO env GOCACHE)" LOCKLAB_DEV_WORKDIR="$PWD" \
		LOCKLAB_LONG=1 docker/dev.sh sh -c 'locklab-dev-check && go test -race -count=1 -v "$@"' sh "${pkgs[@]}" >"$log" 2>&1; then
		grep -v -e '^=== ' "$log" | tail -150
		echo "labs in the dev container failed"
		return 1
	fi
	sed -n '1,7p' "$log"
	grep -E '^(ok|FAIL)' "$log" || true
	dev_no_skips "$log" "${pkgs[@]}"
}

# dev_no_skips checks that every lab test run in the dev container ran
# rather than skipped: the image has every server (etcd, ZooKeeper and
# PostgreSQL for labs 13 and 14, redis-sentinel for lab 07's Sentinel
# variants, on with LOCKLAB_LONG=1) and the rig controls its processes.
# Only the WrongFixes tests skip (make test proves those on the host), and
# the exercise contracts, which run with -tags exercise alone (make
# exercise) and skip on the shipped exercise by design.
dev_no_skips() {
	local log=$1 skipped d n passed
	shift
	skipped=$(grep -E -- '^--- SKIP: TestLab[0-9]+_' "$log" | grep -v -E '_(WrongFixes|ExerciseContract) ' || true)
	if [ -n "$skipped" ]; then
		echo "$skipped"
		echo "lab tests skipped in the dev container; the image lacks what they need (docker/dev-check.sh)?"
		return 1
	fi
	local summary=()
	for d in "$@"; do
		n=${d#./labs/}
		n=${n%%-*}
		passed=$(grep -cE -- "^--- PASS: TestLab${n}_" "$log" || true)
		[ "$passed" -gt 0 ] || { echo "lab $n in the dev container: no test passed"; return 1; }
		summary+=("lab $n $passed")
	done
	echo "tests passed in the dev container, none skipped but WrongFixes: $(IFS=,; echo "${summary[*]}" | sed 's/,/, /g')"
}

no_leftovers() {
	local left
	left=$(docker ps -aq --filter label=org.locklab.rig; docker ps -aq --filter label=com.docker.compose.project=locklab-redlock;
		docker ps -aq --filter label=com.docker.compose.project=locklab-sentinel;
		docker ps -aq --filter label=com.docker.compose.project=locklab-cluster;
		docker ps -aq --filter label=com.docker.compose.project=locklab-benchworkers)
	if [ -n "$left" ]; then
		docker ps -a --filter label=org.locklab.rig
		echo "containers left behind: $left"
		return 1
	fi
	echo "no container left behind"
}

# docker/ci.sh STEP... runs only those steps, in the order given: e.g.
# LOCKLAB_CI_DEV_LABS=all docker/ci.sh dev. provider, redlock and sentinel
# need locklab/redis:local (the images step, or make images).
all_steps=(images provider redlock sentinel cluster dev leftovers)
[ $# -gt 0 ] || set -- "${all_steps[@]}"
for s in "$@"; do
	[[ " ${all_steps[*]} " == *" $s "* ]] || { echo "docker/ci.sh: no step $s; the steps: ${all_steps[*]}" >&2; exit 2; }
done
t0=$SECONDS
for s in "$@"; do
	case $s in
	images) step images docker/build.sh redis ;;
	provider) step provider make --no-print-directory test-docker ;;
	redlock) step redlock redlock_stack ;;
	sentinel) step sentinel sentinel_stack ;;
	cluster) step cluster cluster_stack ;;
	dev) step dev dev_container ;;
	leftovers) step leftovers no_leftovers ;;
	esac
done
echo "== docker stage: $((SECONDS - t0)) s ($(IFS=,; echo "${costs[*]}" | sed 's/,/, /g'))"
