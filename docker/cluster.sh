#!/usr/bin/env bash
# docker/cluster.sh up|down|addrs: the Redis Cluster stack of
# compose/cluster.yaml (three primaries, a replica each, on the Docker
# network locklab-cluster_default). up starts the six nodes with
# docker/compose.sh (which picks the image, and waits until each answers
# PING), forms the cluster once (redis-cli --cluster create over the nodes'
# container addresses, --cluster-replicas 1), and waits until every node
# reports cluster_state:ok, knows all six and sees three shards. down
# removes it all. addrs prints the seed addresses for a client on the host.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "docker/cluster.sh: $*" >&2
	exit 1
}

[ $# -eq 1 ] || { echo "usage: docker/cluster.sh up|down|addrs" >&2; exit 2; }
ports=(7301 7302 7303 7304 7305 7306)
addrs=$(printf '127.0.0.1:%s,' "${ports[@]}")
addrs=${addrs%,}

case "$1" in
addrs)
	echo "$addrs"
	exit 0
	;;
down)
	exec docker/compose.sh down cluster
	;;
up) ;;
*) die "unknown action \"$1\"; want up, down or addrs" ;;
esac

docker/compose.sh up cluster

if docker compose version >/dev/null 2>&1; then
	compose=(docker compose)
else
	compose=(docker-compose)
fi
dc() { LOCKLAB_REDIS_IMAGE=${LOCKLAB_REDIS_IMAGE:-redis:7.4} "${compose[@]}" -p locklab-cluster -f compose/cluster.yaml "$@"; }

ids=() members=()
for i in 1 2 3 4 5 6; do
	id=$(dc ps -q "node-$i")
	[ -n "$id" ] || die "no container for node-$i after up: docker/compose.sh ps cluster says what there is"
	ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$id")
	[ -n "$ip" ] || die "node-$i has no IP address on the stack's network"
	ids+=("$id")
	members+=("$ip:${ports[$((i - 1))]}")
done

# cli N ARGS... runs redis-cli inside node N's container, against node N.
cli() {
	local n=$1
	shift
	docker exec "${ids[$((n - 1))]}" redis-cli -p "${ports[$((n - 1))]}" "$@"
}

# formed N reports whether node N sees the whole cluster.
formed() {
	local info
	info=$(cli "$1" cluster info 2>/dev/null | tr -d '\r') || return 1
	case "$info" in *cluster_state:ok*) ;; *) return 1 ;; esac
	case "$info" in *cluster_known_nodes:6*) ;; *) return 1 ;; esac
	case "$info" in *cluster_size:3*) ;; *) return 1 ;; esac
	# Three shards: each node's table lists three primaries and three
	# replicas, every link up. cluster_state:ok comes first: until gossip
	# has told a node of a replica's role, it lists that replica as a
	# primary of its own, and CLUSTER SHARDS counts it as a fourth shard
	# (seen in CI: "CLUSTER SHARDS lists 4 shards; want 3").
	cli "$1" cluster nodes 2>/dev/null | tr -d '\r' | awk '
		$3 ~ /master/ { m++ } $3 ~ /slave/ { s++ } $8 != "connected" || $3 ~ /fail|handshake|noaddr/ { bad++ }
		END { exit !(m == 3 && s == 3 && !bad) }'
}

if ! formed 1; then
	known=$(cli 1 cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')
	[ "$known" = 1 ] || die "node-1 knows $known nodes but the cluster is not ok: a half-formed stack; docker/cluster.sh down, then up"
	out=$(cli 1 --cluster create "${members[@]}" --cluster-replicas 1 --cluster-yes 2>&1) ||
		die "redis-cli --cluster create failed:
$out"
	case "$out" in *"All 16384 slots covered"*) ;; *) die "redis-cli --cluster create did not cover every slot:
$out" ;; esac
fi

deadline=$((SECONDS + 60))
for n in 1 2 3 4 5 6; do
	until formed "$n"; do
		[ $SECONDS -lt $deadline ] || die "node-$n does not see the whole cluster after 60 s: $(cli "$n" cluster info | tr -d '\r' | head -8 | tr '\n' ' ')"
		sleep 0.2
	done
done
echo "locklab-cluster is up: seeds $addrs (a client on the host maps each node's address to 127.0.0.1 on its port: compose/README.md)"
