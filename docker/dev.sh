#!/usr/bin/env bash
# docker/dev.sh [command...] runs a command (a shell when none) in the dev
# container, locklab/dev:local, with this checkout mounted at /src: the
# labs, tests and bench then need nothing on this machine but Docker.
#
#   docker/dev.sh                         a shell: make lab LAB=03, go test ./labs/...
#   docker/dev.sh make test               the whole suite, as CI runs it
#   docker/dev.sh make lab LAB=07         one lab
#
# The image is built on first use (docker/build.sh dev: the official Go
# image, so a registry is needed; offline, build it first with
# `make dev-image OFFLINE=1`). Go's module and build caches live in the
# Docker volumes locklab-gomod and locklab-gocache, so later runs start
# warm; LOCKLAB_DEV_GOMODCACHE and LOCKLAB_DEV_GOCACHE name host
# directories to use instead, and LOCKLAB_DEV_WORKDIR mounts the checkout
# at another path than /src (CI passes its own caches and path, so that
# the container reuses what the host compiled).
#
# The container runs as root with docker-init as PID 1 (it reaps the
# orphans the labs' crash tests leave, as an init does). On a Linux host,
# files it writes into the checkout (bench/results/, go test -update) are
# root's.
set -euo pipefail
cd "$(dirname "$0")/.."

image=${DEV_IMAGE:-locklab/dev:local}

command -v docker >/dev/null 2>&1 || { echo "docker/dev.sh: docker is not on PATH: install Docker (https://docs.docker.com/engine/install/) or Docker Desktop" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "docker/dev.sh: the Docker engine does not answer (docker info failed): start it (sudo systemctl start docker, or open Docker Desktop)" >&2; exit 1; }
if ! docker image inspect "$image" >/dev/null 2>&1; then
	echo "docker/dev.sh: $image is not built yet; building it (offline: make dev-image OFFLINE=1)" >&2
	docker/build.sh dev
fi

tty=()
[ -t 0 ] && [ -t 1 ] && tty=(-it)
[ $# -gt 0 ] || set -- bash

workdir=${LOCKLAB_DEV_WORKDIR:-/src}

exec docker run --rm "${tty[@]}" --init \
	-v "$PWD:$workdir" -w "$workdir" \
	-v "${LOCKLAB_DEV_GOMODCACHE:-locklab-gomod}:/root/go/pkg/mod" \
	-v "${LOCKLAB_DEV_GOCACHE:-locklab-gocache}:/root/.cache/go-build" \
	-e CI -e GOPROXY -e LOCKLAB_LONG -e LOCKLAB_RED \
	"$image" "$@"
