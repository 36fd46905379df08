#!/bin/sh
# The entrypoint of locklab/redis:local. It behaves as the official redis
# image's does, so the two are interchangeable: arguments that start with
# "-" (or a .conf file) go to redis-server; anything else (redis-server,
# redis-sentinel, sh -c ...) runs as given.
set -e
case "$1" in
-* | *.conf) set -- redis-server "$@" ;;
esac
exec "$@"
