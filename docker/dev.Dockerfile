# locklab/dev:local: everything every lab (00-14), test and the bench need:
# Go, a C compiler for -race, Redis 7 with redis-sentinel, etcd, ZooKeeper
# (with a Java runtime), PostgreSQL, make. For a laptop that has only
# Docker: `make dev` builds it and runs a shell in it with this checkout
# mounted at /src; .devcontainer/ uses the same file.
#
# BASE is the official Go image by default, and the servers come from
# Debian's packages, found where internal/rig looks for them (dev-check.sh).
# Offline (no registry), `make dev-image OFFLINE=1` builds BASE itself from
# this machine's Go and Debian packages (docker/build.sh dev-base), which
# already hold them all; then nothing is downloaded here.
ARG BASE=golang:1.26-bookworm
FROM ${BASE}

COPY dev-check.sh /usr/local/bin/locklab-dev-check
RUN if ! locklab-dev-check -q 2>/dev/null; then \
		apt-get update && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			redis-server redis-sentinel redis-tools make procps gcc libc6-dev \
			etcd-server default-jre-headless libzookeeper-java postgresql && \
		rm -rf /var/lib/apt/lists/*; \
	fi; \
	locklab-dev-check

# One GOPATH whatever the base (the Go image's is /go); make dev keeps the
# module and build caches in Docker volumes mounted here.
ENV GOPATH=/root/go \
	GOFLAGS=-buildvcs=false \
	PATH=/root/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /src
CMD ["bash"]
