# locklab/redis:local: Redis built FROM scratch out of this machine's own
# redis-server, redis-sentinel and redis-cli and the libraries they link,
# for machines that cannot pull redis:7.4 (no registry). docker/build.sh
# fills the context (rootfs/, data/) and builds it; see docker/README.md.
#
# It behaves as the official image does: ENTRYPOINT docker-entrypoint.sh
# (arguments starting with "-" go to redis-server), CMD redis-server, run
# as uid 999 in /data, with /bin/sh and cp for the compose stacks'
# sentinels.
FROM scratch
COPY rootfs/ /
COPY --chown=999:999 data/ /data/
WORKDIR /data
USER 999:999
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
