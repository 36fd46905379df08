#!/usr/bin/env bash
# docker/bench-cluster.sh runs the bench as workers in containers
# (compose/bench-workers.yaml, image locklab/bench:local) against the
# Redis Cluster stack (compose/cluster.yaml), and merges their segments
# into one report on the host.
#
#   docker/bench-cluster.sh [workers N]  N workers (1 to 3; default 3):
#                                        one merged report, checked
#   docker/bench-cluster.sh ratio [K]    K alternations (default 1) of one
#                                        worker with all the clients, then
#                                        three workers with a third each:
#                                        ops/s of each run and the ratio
#
# Each run brings the cluster up (docker/cluster.sh up) unless it is up
# already, starts workers w1..wN with -worker i/N, one run id and one
# -start, waits for them (LOCKLAB_BENCH_TIMEOUT seconds at most, 300 by
# default), fails on any worker's non-zero exit (the others stopped, its
# log shown), runs
# `go run ./bench merge -out DIR/merged DIR/w1 ...`, and checks that the
# merged summary.json has a row of each lock of the plan (-impls), made
# of N workers, with no violation. It takes down what it started: the worker
# containers always, the cluster if it was not up before.
#
# The results stay in LOCKLAB_BENCH_RESULTS (default
# bench/results/cluster-<UTC time>/): w<i>/ (segments), w<i>.log, merged/.
# LOCKLAB_BENCH_DURATION and LOCKLAB_BENCH_ROUNDS change the plan's
# -duration (2s) and -rounds (2); the rest of it is in the Compose file.
# Build the image first: docker/build.sh bench.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "docker/bench-cluster.sh: $*" >&2
	exit 1
}

usage() {
	echo "usage: docker/bench-cluster.sh [workers N] | ratio [K]" >&2
	exit 2
}

mode=workers n=3 k=1
case $# in
0) ;;
2)
	case "$1" in
	workers) n=$2 ;;
	ratio) mode=ratio k=$2 ;;
	*) usage ;;
	esac
	;;
1) [ "$1" = ratio ] && mode=ratio || usage ;;
*) usage ;;
esac
file=compose/bench-workers.yaml
project=locklab-benchworkers
# The workers are the file's services w1, w2, ...
most=0
while IFS= read -r line; do
	[[ "$line" =~ ^\ \ w[0-9]+:$ ]] && most=$((most + 1))
done <"$file"
[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le "$most" ] ||
	die "workers $n: want a number from 1 to $most (the workers of $file)"
[[ "$k" =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -le 10 ] ||
	die "ratio $k: want a number of alternations from 1 to 10"
[ "$mode" = ratio ] && n=$most
timeout_s=${LOCKLAB_BENCH_TIMEOUT:-300}
[[ "$timeout_s" =~ ^[0-9]+$ ]] && [ "$timeout_s" -gt 0 ] || die "LOCKLAB_BENCH_TIMEOUT=$timeout_s: want a number of seconds"
# The plan's clients, for the ratio's legend, and its locks, each of
# which the merged report must have.
clients=$(sed -nE 's/.*"-keys-clients", "([0-9]+)".*/\1/p' "$file" | sed -n 1p)
impls=$(sed -nE 's/.*"-impls", "([^"]+)".*/\1/p' "$file" | sed -n 1p)
[ -n "$clients" ] && [ -n "$impls" ] || die "$file: no -keys-clients or -impls in w1's command"

command -v docker >/dev/null 2>&1 || die "docker is not on PATH: install Docker (https://docs.docker.com/engine/install/) or Docker Desktop"
if docker compose version >/dev/null 2>&1; then
	compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
	compose=(docker-compose)
else
	die "Docker Compose is not installed: the compose plugin (apt-get install docker-compose-plugin, or Docker Desktop) or docker-compose (apt-get install docker-compose)"
fi
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed): start it (sudo systemctl start docker, or open Docker Desktop)"
GO=${GO:-go}
command -v "$GO" >/dev/null 2>&1 || die "go is not on PATH: the merge runs on the host (go run ./bench merge); install Go 1.26 (https://go.dev/dl/)"

export LOCKLAB_BENCH_IMAGE=${LOCKLAB_BENCH_IMAGE:-locklab/bench:local}
docker image inspect "$LOCKLAB_BENCH_IMAGE" >/dev/null 2>&1 ||
	die "$LOCKLAB_BENCH_IMAGE is not on this engine: build it with docker/build.sh bench"

results=${LOCKLAB_BENCH_RESULTS:-bench/results/cluster-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$results" || die "cannot make $results"
results=$(cd "$results" && pwd)
# The workers write as the caller, so the results are the caller's.
LOCKLAB_BENCH_USER="$(id -u):$(id -g)"
export LOCKLAB_BENCH_USER

# dc runs Compose on the workers' file. Compose interpolates the whole
# file for any command, so the variables a run sets have stand-ins here.
dc() {
	LOCKLAB_BENCH_OUT=${LOCKLAB_BENCH_OUT:-/nonexistent} LOCKLAB_BENCH_RUN=${LOCKLAB_BENCH_RUN:-none} \
		LOCKLAB_BENCH_START=${LOCKLAB_BENCH_START:-none} "${compose[@]}" -p "$project" -f "$file" "$@"
}

cluster_was_up=
[ -n "$(docker ps -q --filter label=com.docker.compose.project=locklab-cluster)" ] && cluster_was_up=1
workers_up=
cleanup() {
	local rc=$?
	if [ -n "$workers_up" ]; then
		dc down >/dev/null 2>&1 || echo "docker/bench-cluster.sh: could not take the workers down: docker-compose -p $project -f $file down" >&2
	fi
	if [ -z "$cluster_was_up" ]; then
		docker/cluster.sh down >/dev/null 2>&1 || echo "docker/bench-cluster.sh: could not take the cluster down: docker/cluster.sh down" >&2
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$SECONDS
docker/cluster.sh up
echo "bench-cluster: the cluster is up in $((SECONDS - t0)) s"

# rfc3339_in S prints the UTC time S seconds from now (GNU or BSD date).
rfc3339_in() {
	local at=$(($(date +%s) + $1))
	date -u -d "@$at" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$at" +%Y-%m-%dT%H:%M:%SZ
}

# ops_of SUMMARY prints "impl ops_per_sec" for each row of a summary.json
# (an array of rows, a field a line, each row's own fields indented four
# spaces, its rounds' deeper; a row with a hold is named impl/hold).
ops_of() {
	awk -F': *' '
		/^    "impl":/ { gsub(/[",]/, "", $2); impl = $2 }
		/^    "hold_us":/ { gsub(/,/, "", $2); hold = $2 + 0 }
		/^    "ops_per_sec":/ { gsub(/,/, "", $2); printf "%s %.0f\n", impl (hold ? "/hold" hold "us" : ""), $2 }' "$1"
}

# run_workers N DIR runs workers w1..wN into DIR, merges their segments
# into DIR/merged and checks it.
run_workers() {
	local n=$1 dir=$2 i svcs=() segs=() failed
	for i in $(seq 1 "$n"); do
		svcs+=("w$i")
		segs+=("$dir/w$i")
	done
	mkdir -p "$dir" || die "cannot make $dir"
	export LOCKLAB_BENCH_OUT=$dir LOCKLAB_BENCH_WORKERS=$n
	export LOCKLAB_BENCH_RUN="cluster$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
	# All start together, a few seconds on, whatever each container's own
	# start costs; the barriers keep them in step after that.
	export LOCKLAB_BENCH_START
	LOCKLAB_BENCH_START=$(rfc3339_in 5)
	echo "bench-cluster: $n worker(s), run $LOCKLAB_BENCH_RUN, start $LOCKLAB_BENCH_START, into $dir"
	local t0=$SECONDS
	workers_up=1
	dc up -d --no-color "${svcs[@]}" >/dev/null 2>"$dir/compose.log" || { cat "$dir/compose.log" >&2; die "docker-compose up ${svcs[*]} failed"; }
	local ids id status deadline=$((SECONDS + timeout_s)) pending stopped=
	ids=$(dc ps -q "${svcs[@]}")
	[ "$(echo "$ids" | wc -w)" -eq "$n" ] || die "$n workers started but $(echo "$ids" | wc -w) containers found"
	while :; do
		pending= failed=
		for id in $ids; do
			status=$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$id")
			case "$status" in
			"exited 0") ;;
			exited* | dead*) failed=1 ;;
			*) pending=1 ;;
			esac
		done
		[ -z "$pending" ] && break
		# A worker that failed leaves the others waiting at a barrier
		# until -barrier-timeout: stop them (SIGTERM; they clean up).
		if [ -n "$failed" ] && [ -z "$stopped" ]; then
			echo "bench-cluster: a worker failed; stopping the others" >&2
			dc stop -t 10 >/dev/null 2>&1 || true
			stopped=1
			continue
		fi
		if [ $SECONDS -ge $deadline ]; then
			dc logs --no-color --tail 20 >&2 || true
			die "the workers are not done after $timeout_s s (LOCKLAB_BENCH_TIMEOUT)"
		fi
		sleep 0.5
	done
	local code
	failed=
	for i in $(seq 1 "$n"); do
		id=$(dc ps -q "w$i")
		docker logs "$id" >"$dir/w$i.log" 2>&1 || true
		code=$(docker inspect -f '{{.State.ExitCode}}' "$id")
		if [ "$code" != 0 ]; then
			echo "worker w$i exited $code; its log ($dir/w$i.log) ends:" >&2
			tail -20 "$dir/w$i.log" >&2
			failed=1
		fi
	done
	dc down >/dev/null 2>&1 || die "docker-compose -p $project down failed"
	workers_up=
	[ -z "$failed" ] || die "a worker failed (above)"
	echo "bench-cluster: $n worker(s) done in $((SECONDS - t0)) s; merging"

	t0=$SECONDS
	"$GO" run ./bench merge -out "$dir/merged" "${segs[@]}" >"$dir/merge.log" 2>&1 ||
		{ cat "$dir/merge.log" >&2; die "go run ./bench merge failed"; }
	echo "bench-cluster: go run ./bench merge in $((SECONDS - t0)) s"
	check_merged "$n" "$dir/merged/summary.json"
}

# check_merged N SUMMARY checks a merged summary.json: a row of each lock
# the workers ran, every row made of N workers, no violation.
check_merged() {
	local n=$1 sum=$2 impl rows bad workers
	[ -s "$sum" ] || die "the merge wrote no $sum"
	for impl in ${impls//,/ }; do
		rows=$(grep -cE "^    \"impl\": *\"$impl\"" "$sum" || true)
		[ "$rows" -gt 0 ] || die "$sum has no row of $impl"
	done
	workers=$(grep -oE '"workers": *[0-9]+' "$sum" | grep -oE '[0-9]+$' | sort -u | tr '\n' ' ')
	[ "$workers" = "$n " ] || die "$sum: workers ${workers:-none}; want $n"
	bad=$(grep -oE '"violations": *[0-9]+' "$sum" | grep -vcE ': *0$' || true)
	[ "$bad" -eq 0 ] || die "$sum: $bad rows with violations"
	echo "bench-cluster: merged report of $n worker(s): $(dirname "$sum")/report.md; ops/s: $(ops_of "$sum" | tr '\n' ' ' | sed 's/ $//; s/\([0-9]\) /\1, /g')"
}

if [ "$mode" = workers ]; then
	run_workers "$n" "$results"
	exit 0
fi

# ratio: 1, N, 1, N, ... in one sitting, each run its own directory.
for a in $(seq 1 "$k"); do
	run_workers 1 "$results/a$a-1"
	run_workers "$n" "$results/a$a-$n"
done
echo "bench-cluster: ops/s, one worker ($clients clients) against $n workers (a share each), $k alternation(s):"
for a in $(seq 1 "$k"); do
	ops_of "$results/a$a-1/merged/summary.json" | sed "s/^/$a 1 /"
	ops_of "$results/a$a-$n/merged/summary.json" | sed "s/^/$a $n /"
done | awk -v n="$n" '
	{ ops[$3, $2] = ops[$3, $2] " " $4; impls[$3] = 1 }
	function median(s,    v, m, i, j, t) {
		m = split(s, v, " ")
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
		return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
	}
	END {
		for (im in impls) {
			one = median(ops[im, 1]); many = median(ops[im, n])
			ratio = one > 0 ? many / one : 0
			printf "  %-12s 1 worker:%s  %d workers:%s  median %.0f vs %.0f, ratio %.2f\n", im, ops[im, 1], n, ops[im, n], one, many, ratio
		}
	}'
