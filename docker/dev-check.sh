#!/bin/sh
# docker/dev-check.sh [-q] checks that this machine has what every lab,
# 00 to 14, needs, found where internal/rig looks: go, gcc (for -race),
# make and ps; redis-server, redis-sentinel and redis-cli; etcd on PATH;
# java on PATH and /usr/share/java/zookeeper.jar (ZooKeeper); postgres and
# initdb in /usr/lib/postgresql/*/bin. It names what is missing and fails;
# otherwise it prints each one's version (nothing with -q).
#
# The dev image runs it when it is built (docker/dev.Dockerfile: on the
# official Go image it installs what is missing first), and docker/build.sh
# on the offline base it imports.
missing=
for c in go gcc make ps redis-server redis-sentinel redis-cli etcd java; do
	command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
[ -f /usr/share/java/zookeeper.jar ] || missing="$missing /usr/share/java/zookeeper.jar"
pg=
for d in /usr/lib/postgresql/*/bin; do
	[ -x "$d/postgres" ] && [ -x "$d/initdb" ] && pg=$d
done
[ -n "$pg" ] || missing="$missing /usr/lib/postgresql/*/bin/postgres,initdb"
if [ -n "$missing" ]; then
	echo "dev-check: missing:$missing (Go comes with the base image; the rest from the Debian packages redis-server redis-sentinel redis-tools etcd-server default-jre-headless libzookeeper-java postgresql gcc libc6-dev make procps)" >&2
	exit 1
fi
[ "${1:-}" = -q ] && exit 0
go version
redis-server --version
etcd --version | sed -n 1p
java -version 2>&1 | sed -n 1p
zk=$(ls /usr/share/java/zookeeper-[0-9]*.jar 2>/dev/null | sed -n 's#.*/zookeeper-\(.*\)\.jar$#\1#p' | sed -n 1p)
echo "ZooKeeper ${zk:-(version unknown)}: /usr/share/java/zookeeper.jar"
"$pg/postgres" --version
gcc --version | sed -n 1p
