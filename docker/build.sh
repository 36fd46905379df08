#!/usr/bin/env bash
# docker/build.sh builds locklab's Docker images from parts already on this
# machine, with no registry: nothing is pulled.
#
#   docker/build.sh redis      locklab/redis:local, FROM scratch: this machine's
#                              redis-server, redis-sentinel and redis-cli and
#                              the libraries they link (about 20 MB)
#   docker/build.sh dev-base   locklab/dev-base:local: a root filesystem made of
#                              this machine's Go and the Debian packages the
#                              labs need (gcc for -race, Redis, etcd,
#                              ZooKeeper with Java, PostgreSQL, make, procps)
#   docker/build.sh dev        locklab/dev:local from docker/dev.Dockerfile on
#                              the official Go image (needs a registry)
#   docker/build.sh dev --offline
#                              the same Dockerfile on locklab/dev-base:local
#                              (built first): no registry at all
#   docker/build.sh bench      locklab/bench:local, FROM scratch: the bench as
#                              one static binary (CGO_ENABLED=0, for the
#                              engine's OS and CPU), a worker for
#                              compose/bench-workers.yaml (about 50 MB)
#
# redis and dev-base need Linux (the binaries are copied as they are, so
# they must match the engine's architecture); dev-base needs Debian or
# Ubuntu (dpkg) with Go installed. With a registry none of this is needed:
# the rig and the compose stacks use redis:7.4 unless LOCKLAB_REDIS_IMAGE
# names another image, and `make dev` builds on golang:1.26-bookworm.
set -euo pipefail
cd "$(dirname "$0")/.."

REDIS_IMAGE=${REDIS_IMAGE:-locklab/redis:local}
DEV_BASE_IMAGE=${DEV_BASE_IMAGE:-locklab/dev-base:local}
DEV_IMAGE=${DEV_IMAGE:-locklab/dev:local}
BENCH_IMAGE=${BENCH_IMAGE:-locklab/bench:local}

die() {
	echo "docker/build.sh: $*" >&2
	exit 1
}

need_docker() {
	command -v docker >/dev/null 2>&1 || die "docker is not on PATH: install Docker (https://docs.docker.com/engine/install/) or Docker Desktop"
	docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed): start it (sudo systemctl start docker, or open Docker Desktop), and check you may use it (the docker group)"
}

need_linux() {
	[ "$(uname -s)" = Linux ] ||
		die "$1 copies this machine's Linux binaries into the image, so it runs on Linux only; elsewhere use the official images (the default: redis:7.4, golang:1.26-bookworm)"
}

need_ldd() {
	command -v ldd >/dev/null 2>&1 || die "ldd is not installed (it lists the libraries to copy): apt-get install -y libc-bin"
}

# docker_build runs docker build quietly, showing the builder's output only
# when it fails. The legacy builder's deprecation notice is not an error.
docker_build() {
	local log
	log=$(mktemp)
	if ! docker build "$@" >"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		die "docker build $* failed"
	fi
	rm -f "$log"
}

# image_id prints the id of image ref, or nothing.
image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }

# drop_old removes the image a rebuild of ref replaced (left untagged),
# if no container uses it.
drop_old() {
	local ref=$1 old=$2
	[ -n "$old" ] && [ "$old" != "$(image_id "$ref")" ] && docker rmi "$old" >/dev/null 2>&1 || true
}

# libs prints the shared libraries (and the dynamic loader) binaries link.
libs() {
	local f
	for f in "$@"; do ldd "$f"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && NF == 2 {print $1}' | sort -u
}

build_redis() {
	need_linux "docker/build.sh redis"
	need_docker
	need_ldd
	local server cli sentinel
	server=${LOCKLAB_REDIS_SERVER:-$(command -v redis-server || true)}
	[ -n "$server" ] || die "redis-server is not installed: apt-get install -y redis-server redis-sentinel (or set LOCKLAB_REDIS_SERVER)"
	server=$(readlink -f "$server")
	cli=$(command -v redis-cli || true)
	[ -n "$cli" ] || die "redis-cli is not installed: apt-get install -y redis-tools (the compose stacks' health checks use it)"
	cli=$(readlink -f "$cli")
	# redis-sentinel is redis-server under another name: Debian links both
	# to one binary, which picks its mode from argv[0]. The package must be
	# there all the same, so that this image has what Debian's has.
	sentinel=$(command -v redis-sentinel || true)
	[ -n "$sentinel" ] || die "redis-sentinel is not installed: apt-get install -y redis-sentinel"
	[ "$(readlink -f "$sentinel")" = "$server" ] ||
		die "redis-sentinel ($sentinel) is not the same binary as redis-server ($server); this script expects Debian's layout"
	local sh cp
	sh=$(readlink -f /bin/sh)
	cp=$(readlink -f "$(command -v cp)")

	local ctx
	ctx=$(mktemp -d)
	trap 'rm -rf "$ctx"; trap - RETURN' RETURN
	mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/bin" "$ctx/rootfs/tmp" "$ctx/rootfs/etc" "$ctx/data"
	chmod 1777 "$ctx/rootfs/tmp"
	local l
	for l in $(libs "$server" "$cli" "$sh" "$cp"); do
		cp -L --parents "$l" "$ctx/rootfs/"
	done
	cp "$server" "$ctx/rootfs/usr/local/bin/redis-server"
	ln -s redis-server "$ctx/rootfs/usr/local/bin/redis-sentinel"
	ln -s redis-server "$ctx/rootfs/usr/local/bin/redis-check-aof"
	ln -s redis-server "$ctx/rootfs/usr/local/bin/redis-check-rdb"
	cp "$cli" "$ctx/rootfs/usr/local/bin/redis-cli"
	cp "$sh" "$ctx/rootfs/bin/sh"
	cp "$cp" "$ctx/rootfs/bin/cp"
	install -m 0755 docker/redis-entrypoint.sh "$ctx/rootfs/usr/local/bin/docker-entrypoint.sh"
	printf 'root:x:0:0:root:/root:/bin/sh\nredis:x:999:999:redis:/data:/bin/sh\n' >"$ctx/rootfs/etc/passwd"
	printf 'root:x:0:\nredis:x:999:\n' >"$ctx/rootfs/etc/group"
	cp docker/redis.Dockerfile "$ctx/Dockerfile"

	local version old
	version=$("$server" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
	old=$(image_id "$REDIS_IMAGE")
	docker_build -t "$REDIS_IMAGE" --label "org.locklab.redis-version=$version" --label "org.locklab.built-from=$server" "$ctx"
	# A check that the image runs: the server's version, from inside.
	drop_old "$REDIS_IMAGE" "$old"
	local got
	got=$(docker run --rm "$REDIS_IMAGE" redis-server --version) || die "$REDIS_IMAGE was built but does not run"
	echo "built $REDIS_IMAGE ($(docker image inspect -f '{{.Size}}' "$REDIS_IMAGE" | awk '{printf "%.1f MB", $1/1e6}')): ${got%% sha=*}"
	echo "the rig's Docker provider and make up use it where the engine has no redis:7.4 (LOCKLAB_REDIS_IMAGE=$REDIS_IMAGE forces it)"
}

# The Debian packages of the dev base; their dependencies come too. Past
# Redis, they are what internal/rig looks for: etcd on PATH (etcd-server),
# java on PATH and /usr/share/java/zookeeper.jar with slf4j-simple.jar
# (default-jre-headless, libzookeeper-java: the server without the
# zookeeper package's desktop Java), postgres and initdb in
# /usr/lib/postgresql/*/bin (postgresql). .ci/deps and make deps install
# them all.
DEV_PACKAGES=(bash coreutils dash grep sed mawk findutils diffutils tar gzip make procps
	gcc libc6-dev redis-server redis-sentinel redis-tools ca-certificates
	etcd-server default-jre-headless libzookeeper-java postgresql)

# closure prints the installed packages DEV_PACKAGES need, dependencies
# included (of alternatives, the first one installed; a virtual package,
# through the first installed package that provides it). One dpkg-query
# and one awk: a query per package took half a minute.
closure() {
	dpkg-query -W -f='${db:Status-Status}\t${Package}\t${Provides}\t${Pre-Depends}, ${Depends}\n' |
		awk -F'\t' -v roots="$*" '
		function bare(x) { sub(/\(.*\)/, "", x); sub(/:any$/, "", x); gsub(/[[:space:]]/, "", x); return x }
		$1 == "installed" {
			inst[$2] = 1
			deps[$2] = $4
			n = split($3, pv, ",")
			for (i = 1; i <= n; i++) if ((x = bare(pv[i])) != "" && !(x in prov)) prov[x] = $2
		}
		END {
			nq = split(roots, q, " ")
			for (h = 1; h <= nq; h++) {
				p = q[h]
				if (!(p in inst)) {
					if (!(p in prov)) { print p > "/dev/stderr"; exit 3 }
					q[++nq] = prov[p]
					continue
				}
				if (p in seen) continue
				seen[p] = 1
				ng = split(deps[p], groups, ",")
				for (g = 1; g <= ng; g++) {
					na = split(groups[g], alts, "|")
					for (a = 1; a <= na; a++) {
						if ((x = bare(alts[a])) != "" && (x in inst || x in prov)) { q[++nq] = x; break }
					}
				}
			}
			for (p in seen) print p
		}' | sort
}

# canonical maps a path under the merged-/usr symlinks (/bin, /lib, ...)
# to the path it really has, so the archive holds each file once, under
# /usr.
canonical() {
	sed -E 's#^/(bin|sbin|lib|lib32|lib64|libx32)/#/usr/\1/#; s#^/(bin|sbin|lib|lib32|lib64|libx32)$#/usr/\1#'
}

build_dev_base() {
	need_linux "docker/build.sh dev-base"
	command -v dpkg-query >/dev/null 2>&1 || die "dev-base is made of this machine's Debian packages (dpkg); elsewhere use docker/build.sh dev (the official Go image)"
	# Go where the Makefile and .ci/run look: GO, go on PATH, /usr/local/go.
	local go=${GO:-go}
	command -v "$go" >/dev/null 2>&1 || { [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go; } ||
		die "the offline dev image copies this machine's Go, and go is not on PATH (nor in /usr/local/go/bin): install Go 1.26 (https://go.dev/dl/), or build the image from the official Go image where a registry is reachable (make dev-image)"
	need_docker
	local goroot
	goroot=$("$go" env GOROOT)
	local work
	work=$(mktemp -d)
	trap 'rm -rf "$work"; trap - RETURN' RETURN

	echo "dev-base: packages ${DEV_PACKAGES[*]} and their dependencies, Go $("$go" env GOVERSION) from $goroot"
	local missing
	missing=$(closure "${DEV_PACKAGES[@]}" 2>&1 >"$work/packages") ||
		die "package $missing is not installed: apt-get install -y $missing (make deps installs what the labs need)"
	# What the base is made of: the packages at their versions, Go, and
	# this script. An image made of the same is kept, not imported again
	# (LOCKLAB_REBUILD=1 imports it all the same).
	local inputs
	# shellcheck disable=SC2046
	inputs=$({ dpkg-query -W -f='${Package}=${Version}\n' $(cat "$work/packages"); "$go" env GOVERSION GOROOT; cat docker/build.sh; } | sha256sum | cut -c1-16)
	if [ -z "${LOCKLAB_REBUILD:-}" ] &&
		[ "$(docker image inspect -f '{{index .Config.Labels "org.locklab.inputs"}}' "$DEV_BASE_IMAGE" 2>/dev/null)" = "$inputs" ]; then
		echo "dev-base: $DEV_BASE_IMAGE is made of these packages, this Go and this script already (inputs $inputs): kept; LOCKLAB_REBUILD=1 imports it again"
		return
	fi
	# Files of those packages, but no docs, manuals or translations, and
	# only paths that exist (conffiles may have been removed).
	# shellcheck disable=SC2046
	dpkg-query -L $(cat "$work/packages") 2>/dev/null |
		grep -E '^/.' | grep -vE '^/usr/share/(doc|man|info|locale|lintian|bug)(/|$)' |
		canonical | sort -u |
		while IFS= read -r f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\n' "${f#/}"; done >"$work/files"
	# Alternatives (awk, cc, ...) are links made at install time, in no
	# package's file list: keep those whose target is in the image.
	local link target
	for link in /usr/bin/* /usr/sbin/*; do
		[ -L "$link" ] || continue
		case "$(readlink "$link")" in /etc/alternatives/*) ;; *) continue ;; esac
		target=$(readlink -f "$link")
		if grep -qxF "${target#/}" "$work/files"; then
			printf '%s\n%s\n' "${link#/}" "etc/alternatives/$(basename "$(readlink "$link")")" >>"$work/files"
		fi
	done

	# Files of the image's own, and the merged-/usr links.
	local extra="$work/extra"
	mkdir -p "$extra/etc/ssl/certs" "$extra/tmp" "$extra/root" "$extra/src" "$extra/var/tmp"
	chmod 1777 "$extra/tmp" "$extra/var/tmp"
	# No package's scripts run, so the users they would add are written
	# here: the rig runs PostgreSQL as postgres when it runs as root.
	printf '%s\n' 'root:x:0:0:root:/root:/bin/bash' 'redis:x:999:999:redis:/var/lib/redis:/usr/sbin/nologin' \
		'postgres:x:998:998:PostgreSQL administrator:/var/lib/postgresql:/bin/bash' \
		'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' >"$extra/etc/passwd"
	printf '%s\n' 'root:x:0:' 'redis:x:999:' 'postgres:x:998:' 'nogroup:x:65534:' >"$extra/etc/group"
	[ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$extra/etc/ssl/certs/"
	printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$extra/etc/nsswitch.conf"
	local d
	for d in bin sbin lib lib64; do ln -s "usr/$d" "$extra/$d"; done

	# The image's own files, but no directory the packages already have:
	# an archive must not name a path twice.
	sort -u -o "$work/files" "$work/files"
	(cd "$extra" && find . -mindepth 1 | sed 's#^\./##' | sort) | comm -23 - "$work/files" >"$work/extra-files"

	# Global: build_dev drops it once the dev image built on it is gone.
	OLD_DEV_BASE=$(image_id "$DEV_BASE_IMAGE")
	echo "dev-base: $(wc -l <"$work/packages") packages, $(wc -l <"$work/files") paths; importing (a minute or so)"
	tar -cf - --no-recursion -C / -T "$work/files" -C "$extra" -T "$work/extra-files" \
		--recursion --exclude="${goroot#/}/test" --exclude="${goroot#/}/pkg/obj" \
		--transform="s#^${goroot#/}#usr/local/go#" -C / "${goroot#/}" |
		docker import \
			--change 'ENV PATH=/root/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			--change 'ENV GOPATH=/root/go' \
			--change 'WORKDIR /src' \
			--change 'CMD ["bash"]' \
			--change "LABEL org.locklab.inputs=$inputs" \
			--message "locklab dev base: $("$go" env GOVERSION) and $(wc -l <"$work/packages") Debian packages from $(hostname)" \
			- "$DEV_BASE_IMAGE" >/dev/null
	drop_old "$DEV_BASE_IMAGE" "$OLD_DEV_BASE"
	docker run --rm -i "$DEV_BASE_IMAGE" sh -s -- -q <docker/dev-check.sh ||
		die "$DEV_BASE_IMAGE was imported but lacks what the labs need (docker/dev-check.sh, above)"
	echo "built $DEV_BASE_IMAGE ($(docker image inspect -f '{{.Size}}' "$DEV_BASE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

# The dev image's base where a registry is reachable (dev.Dockerfile's
# default BASE); DEV_REGISTRY_BASE names another, such as a mirror's copy.
DEV_REGISTRY_BASE=${DEV_REGISTRY_BASE:-golang:1.26-bookworm}

build_dev() {
	need_docker
	local base=$DEV_REGISTRY_BASE
	if [ "${1:-}" = --offline ]; then
		build_dev_base
		base=$DEV_BASE_IMAGE
	elif ! docker image inspect "$base" >/dev/null 2>&1 && ! docker pull -q "$base" >/dev/null 2>&1; then
		die "$base cannot be pulled (no registry?): where Go and the Debian packages the labs need are installed (make deps), build the dev image from them instead: make dev-image OFFLINE=1 (docker/build.sh dev --offline)"
	fi
	local old
	old=$(image_id "$DEV_IMAGE")
	docker_build -t "$DEV_IMAGE" -f docker/dev.Dockerfile --build-arg "BASE=$base" docker/
	drop_old "$DEV_IMAGE" "$old"
	# Earlier bases, untagged by a new import, once no image is built on
	# them any more.
	docker image prune -f --filter label=org.locklab.inputs >/dev/null 2>&1 || true
	echo "built $DEV_IMAGE; run it: make dev (a shell), make dev CMD='go test ./labs/...'"
}

# build_bench builds the bench worker image: go build with CGO_ENABLED=0
# (net's pure-Go resolver, no libc), for the engine's architecture, so it
# runs FROM scratch anywhere the engine runs Linux containers. The check
# runs the image: a binary that needed a loader or libc would not start.
build_bench() {
	need_docker
	local go=${GO:-go}
	command -v "$go" >/dev/null 2>&1 || { [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go; } ||
		die "the bench image is built from this checkout with Go, and go is not on PATH (nor in /usr/local/go/bin): install Go 1.26 (https://go.dev/dl/)"
	local os arch
	os=$(docker version -f '{{.Server.Os}}') || die "docker version failed"
	arch=$(docker version -f '{{.Server.Arch}}') || die "docker version failed"
	[ "$os" = linux ] || die "the engine runs $os containers; the bench image is a Linux one"

	local ctx
	ctx=$(mktemp -d)
	trap 'rm -rf "$ctx"; trap - RETURN' RETURN
	mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/tmp" "$ctx/rootfs/etc"
	chmod 1777 "$ctx/rootfs/tmp"
	local t0=$SECONDS
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch "$go" build -ldflags='-s -w' -o "$ctx/rootfs/usr/local/bin/bench" ./bench ||
		die "CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build ./bench failed"
	echo "bench: CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build ./bench in $((SECONDS - t0)) s"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$ctx/rootfs/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$ctx/rootfs/etc/group"
	cp docker/bench.Dockerfile "$ctx/Dockerfile"

	local old
	old=$(image_id "$BENCH_IMAGE")
	docker_build -t "$BENCH_IMAGE" --label "org.locklab.bench-commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$ctx"
	drop_old "$BENCH_IMAGE" "$old"
	# A check that it runs with nothing beside it: -h prints the usage.
	local got
	got=$(docker run --rm "$BENCH_IMAGE" -h 2>&1) || true
	case "$got" in
	*"usage: go run ./bench"*) ;;
	*) die "$BENCH_IMAGE was built but does not run: $got" ;;
	esac
	echo "built $BENCH_IMAGE ($(docker image inspect -f '{{.Size}}' "$BENCH_IMAGE" | awk '{printf "%.1f MB", $1/1e6}')): a static bench for $os/$arch; compose/bench-workers.yaml runs it (docker/bench-cluster.sh)"
}

case "${1:-}" in
redis) build_redis ;;
bench) build_bench ;;
dev-base) build_dev_base ;;
dev) build_dev "${2:-}" ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
