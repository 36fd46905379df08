// Package deploytest holds only tests: they run locklab's lock packages the
// way a deployment reaches Redis, not the way the unit tests do.
//
//   - ACL and password: every package against rig-started servers that
//     require a password, through a redis:// URL (redis.ParseURL) as an ACL
//     user allowed only the commands and keys that package needs. The lists,
//     one per package, are in kinds_test.go; TestACLCoversEveryScriptCommand
//     checks them against the packages' Lua scripts, and TestACLDiscover
//     (LOCKLAB_ACL_DISCOVER=1) re-derives them from a user allowed nothing.
//   - TLS: the same through rediss:// against a server with a TLS port and
//     a throwaway CA made in the test.
//   - Redis Cluster: every single-key package on a rig-started 3-primary
//     cluster through a *redis.ClusterClient, on keys spread over the slots,
//     with the multi-key scripts (fencing's counter, correct's wait queue)
//     kept in one slot by hash tags.
package deploytest
