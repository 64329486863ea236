// Package faulttest holds Corral's fault tests: an in-process ensemble (internal/testcluster)
// under a recorded client load while servers fail, with the history checked afterwards by
// internal/linearize — porcupine for linearizability of writes and synced reads, and the named
// validators for lost acknowledged writes and sessions reading back in time.
//
// Reads are checked as ZooKeeper specifies them: a plain getData is only sequentially
// consistent, so the load reads "sync, then getData" on the same session when a read is to be
// checked for linearizability, and also issues plain reads that are checked only for the
// per-session guarantee (see internal/linearize's package comment). Operations whose outcome the
// client cannot know (connection loss with the request in flight, a server-side timeout) are
// recorded as maybe applied; requests go-zookeeper never sent are recorded as failed. Any other
// error from the client fails the test.
//
// The tests assert nothing about timing: the fault schedule uses wall-clock pauses, but the
// assertions are about the recorded history, plus a liveness bound (every client completes
// operations again after the fault) that is generous enough to fail only on a stuck cluster.
package faulttest
