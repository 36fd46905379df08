# locklab/dev:local: everything the labs, tests and bench need (Go, a C
# compiler for -race, Redis 7 with redis-sentinel, make), for a laptop that
# has only Docker. `make dev` builds it and runs a shell in it with this
# checkout mounted at /src; .devcontainer/ uses the same file.
#
# BASE is the official Go image by default, and Redis comes from Debian's
# packages. Offline (no registry), `make dev-image OFFLINE=1` builds BASE
# itself from this machine's Go and Debian packages (docker/build.sh
# dev-base), which already hold Redis; then nothing is downloaded here.
ARG BASE=golang:1.26-bookworm
FROM ${BASE}

RUN need=""; \
	for c in redis-server redis-sentinel redis-cli make ps gcc; do command -v "$c" >/dev/null || need=1; done; \
	if [ -n "$need" ]; then \
		apt-get update && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			redis-server redis-sentinel redis-tools make procps gcc libc6-dev && \
		rm -rf /var/lib/apt/lists/*; \
	fi; \
	redis-server --version && go version

# One GOPATH whatever the base (the Go image's is /go); make dev keeps the
# module and build caches in Docker volumes mounted here.
ENV GOPATH=/root/go \
	GOFLAGS=-buildvcs=false \
	PATH=/root/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /src
CMD ["bash"]
