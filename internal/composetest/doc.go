// Package composetest holds only tests: they check the Docker Compose files
// in compose/ without a Docker engine (CI has none). They parse the files
// and check that every port is published on or bound to loopback, that no
// two ports clash and none is Redis's default, that every image is Redis 7,
// that the Redlock nodes are independent, that the sentinels monitor the
// primary with a majority quorum, and that the addresses compose/README.md
// tells users to pass (LOCKLAB_REDIS_ADDRS, bench -addrs) are the Compose
// ports, in the format the rig reads.
package composetest
