// Package lab09 holds the code of lab 09 (fencing tokens).
//
// The order table the workers write to comes in two versions here:
// [UncheckedStore], as first written, which stores each write's fencing
// token and never compares it (the broken store), and [Exercise], the same
// table for the learner to fix. The fixed store is package fencing's Store.
//
// The locks are shown to the lab harness with their fencing tokens:
// [Mutex] is package fencing's Mutex with a Fence method, and [Redlock] is
// a Redlock (package redlock) that takes its token from a counter on one
// Redis server beside the lock, since Redlock has none of its own.
package lab09
