# locklab/bench:local: the bench as a worker image, FROM scratch: one
# static Go binary (CGO_ENABLED=0, so no libc and no loader), /tmp, and an
# /etc/passwd naming nobody. docker/build.sh bench fills the context
# (rootfs/) and builds it; see docker/README.md.
#
# It holds no server: run it with -addrs (compose/bench-workers.yaml hands
# it the Cluster stack's nodes). It runs as nobody unless told otherwise
# (the worker file runs it as the caller, so that what it writes into the
# bind-mounted /out belongs to them).
FROM scratch
COPY rootfs/ /
WORKDIR /tmp
USER 65534:65534
ENTRYPOINT ["/usr/local/bin/bench"]
CMD ["-h"]
