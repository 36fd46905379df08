// Package sysclient makes clients for the etcd, ZooKeeper and PostgreSQL
// servers that internal/rig starts, with the settings locklab's tests,
// labs and bench share: short dial timeouts, keep-alive probes that notice
// a frozen server, and no log noise. The lock packages take clients made
// any way the caller likes; this package is only for locklab's own use.
package sysclient
