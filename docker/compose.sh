#!/usr/bin/env bash
# docker/compose.sh up|down|ps STACK starts, stops or lists one of the
# Compose stacks in compose/ (STACK is redlock or sentinel), as `make up`,
# `make down` do; docker/compose.sh pause|unpause STACK SERVICE freezes or
# thaws one server (docker pause: the cgroup freezer, as SIGSTOP). It works with Docker Compose v2 (docker compose) and v1
# (docker-compose, Debian 12's package), waits until every server passes
# its health check, and names the project locklab-STACK so that the two
# stacks never touch each other's containers.
#
# The image is LOCKLAB_REDIS_IMAGE, else redis:7.4 when the engine has it
# or can pull it, else locklab/redis:local when the engine has that (built
# by `make images` from this machine's redis-server, for machines without
# a registry).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "docker/compose.sh: $*" >&2
	exit 1
}

usage() {
	echo "usage: docker/compose.sh up|down|ps redlock|sentinel, or docker/compose.sh pause|unpause redlock|sentinel SERVICE" >&2
	exit 2
}

[ $# -ge 2 ] || usage
action=$1 stack=$2 service=${3:-}
case "$action" in
up | down | ps) [ $# -eq 2 ] || usage ;;
pause | unpause) [ $# -eq 3 ] || usage ;;
*) usage ;;
esac
file=compose/$stack.yaml
[ -f "$file" ] || die "no stack \"$stack\": STACK is one of $(ls compose/*.yaml | sed 's#compose/##; s#\.yaml##' | tr '\n' ' ')"
project=locklab-$stack

command -v docker >/dev/null 2>&1 || die "docker is not on PATH: install Docker (https://docs.docker.com/engine/install/) or Docker Desktop"
if docker compose version >/dev/null 2>&1; then
	compose=(docker compose)
	v2=1
elif command -v docker-compose >/dev/null 2>&1; then
	compose=(docker-compose)
	v2=
else
	die "Docker Compose is not installed: the compose plugin (apt-get install docker-compose-plugin, or Docker Desktop) or docker-compose (apt-get install docker-compose)"
fi
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed): start it (sudo systemctl start docker, or open Docker Desktop)"

has_image() { docker image inspect "$1" >/dev/null 2>&1; }

choose_image() {
	if [ -n "${LOCKLAB_REDIS_IMAGE:-}" ]; then
		has_image "$LOCKLAB_REDIS_IMAGE" && return
		[ "$LOCKLAB_REDIS_IMAGE" = locklab/redis:local ] &&
			die "LOCKLAB_REDIS_IMAGE=locklab/redis:local is not on this engine: build it with make images (docker/build.sh redis)"
		docker pull -q "$LOCKLAB_REDIS_IMAGE" >/dev/null 2>&1 ||
			die "LOCKLAB_REDIS_IMAGE=$LOCKLAB_REDIS_IMAGE is not on this engine and cannot be pulled; with no registry, make images builds locklab/redis:local from this machine's redis-server"
		return
	fi
	if has_image redis:7.4; then
		export LOCKLAB_REDIS_IMAGE=redis:7.4
	elif has_image locklab/redis:local; then
		export LOCKLAB_REDIS_IMAGE=locklab/redis:local
	elif docker pull -q redis:7.4 >/dev/null 2>&1; then
		export LOCKLAB_REDIS_IMAGE=redis:7.4
	else
		die "redis:7.4 is not on this engine and cannot be pulled (no registry?): make images builds locklab/redis:local from this machine's redis-server, and this script then uses it"
	fi
}

dc() { "${compose[@]}" -p "$project" -f "$file" "$@"; }

# wait_healthy waits until every container of the project is healthy (what
# v2's up --wait does), for at most 60 s.
wait_healthy() {
	local deadline=$((SECONDS + 60)) ids id status pending
	ids=$(dc ps -q)
	[ -n "$ids" ] || die "$project: no containers after up"
	while :; do
		pending=
		for id in $ids; do
			status=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$id")
			case "$status" in
			healthy) ;;
			unhealthy | exited | dead) dc logs --tail 20 >&2 || true; die "$project: container $(docker inspect -f '{{.Name}}' "$id") is $status" ;;
			*) pending=1 ;;
			esac
		done
		[ -z "$pending" ] && return
		[ $SECONDS -lt $deadline ] || { dc logs --tail 20 >&2 || true; die "$project: not healthy after 60 s"; }
		sleep 0.2
	done
}

case "$action" in
up)
	choose_image
	if [ -n "$v2" ]; then
		dc up -d --wait
	else
		dc up -d
		wait_healthy
	fi
	echo "$project is up ($LOCKLAB_REDIS_IMAGE):"
	case "$stack" in
	redlock) echo "  LOCKLAB_REDIS_ADDRS=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103,127.0.0.1:7104,127.0.0.1:7105" ;;
	sentinel) echo "  primary 127.0.0.1:7201, replica 127.0.0.1:7202, sentinels 127.0.0.1:7211-7213 (master name locklab)" ;;
	esac
	;;
down)
	# down needs no image, but Compose interpolates the file all the same.
	LOCKLAB_REDIS_IMAGE=${LOCKLAB_REDIS_IMAGE:-redis:7.4} dc down -v
	;;
ps)
	LOCKLAB_REDIS_IMAGE=${LOCKLAB_REDIS_IMAGE:-redis:7.4} dc ps
	;;
pause | unpause)
	LOCKLAB_REDIS_IMAGE=${LOCKLAB_REDIS_IMAGE:-redis:7.4} dc "$action" "$service"
	;;
esac
