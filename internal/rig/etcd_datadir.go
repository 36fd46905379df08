package rig

// DataDir returns the member's data directory. A test that restores a
// member from a backup stops it, replaces this directory's contents and
// restarts it; the rig itself never reads it.
func (m *EtcdMember) DataDir() string { return m.dataDir }
