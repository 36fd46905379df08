// Package composetest holds only tests of the Docker files: the Compose
// stacks in compose/ and the dev container.
//
// Without a build tag they need no engine. They parse the Compose files
// and check that every port is published on or bound to loopback, that no
// two ports clash and none is Redis's default, that every image is Redis 7
// (or LOCKLAB_REDIS_IMAGE), that the Redlock nodes are independent, that
// the sentinels monitor the primary with a majority quorum, that the
// addresses compose/README.md tells users to pass (LOCKLAB_REDIS_ADDRS,
// bench -addrs) are the Compose ports, in the format the rig reads, and
// that .devcontainer/devcontainer.json is the container make dev runs.
// They also run docker/'s scripts with no docker command and with an
// engine that does not answer, and, where an engine answers, with images
// it lacks and cannot pull: each must fail at once, naming the fix
// (scripts_test.go).
//
// With the tag "compose" and the stacks up (make up), they test the stacks
// for real: Redlock over the five nodes, and a Sentinel failover (see
// stack_test.go). CI runs both (docker/ci.sh).
package composetest
