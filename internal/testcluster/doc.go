// Package testcluster runs an ensemble of Corral servers inside one test process: each server a
// full cluster.Node with its own data directory, Raft port and client port on loopback. Tests
// stop, restart and kill (close without flushing) servers to exercise failover and recovery.
package testcluster
