package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDoctorWarnsForTheSystemLabs: with no etcd, ZooKeeper or PostgreSQL
// where the rig looks for them, doctor says so with the fix and the lab
// that needs each, and still reports the room ready for the other labs.
func TestDoctorWarnsForTheSystemLabs(t *testing.T) {
	missing := t.TempDir()
	t.Setenv("LOCKLAB_ETCD", missing+"/etcd")
	t.Setenv("LOCKLAB_ZOOKEEPER_CLASSPATH", missing+"/*")
	t.Setenv("LOCKLAB_POSTGRES_BIN", missing)
	var systems []check
	for _, c := range checks {
		if c.needs != "" {
			systems = append(systems, c)
		}
	}
	if len(systems) != 3 {
		t.Fatalf("checks with labs that need them: %d; want 3 (etcd, ZooKeeper, PostgreSQL)", len(systems))
	}
	var out bytes.Buffer
	if !doctor(t.TempDir(), &out, systems) {
		t.Errorf("doctor with only etcd, ZooKeeper and PostgreSQL missing = not ready; want ready for the other labs\n%s", &out)
	}
	got := out.String()
	for _, want := range []string{
		"WARN etcd",
		"WARN ZooKeeper",
		"WARN PostgreSQL",
		"Only lab 13 needs it",
		"Only lab 14 needs it",
		"brew install etcd",
		"brew install zookeeper",
		"brew install postgresql",
		"Ready, but for lab 13 and lab 14",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("doctor's output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "FIX") {
		t.Errorf("doctor asks to fix what only labs 13 and 14 need; want warnings:\n%s", got)
	}
}
