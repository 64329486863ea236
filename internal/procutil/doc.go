// Package procutil holds the process plumbing shared by the test harnesses
// internal/apachezk (Apache ZooKeeper JVMs) and internal/corralproc (Corral
// server processes): starting a child with its output in a log file and one
// reaper goroutine ([Start], [Process]), stopping it with a signal and a
// grace period ([Process.Terminate], [TerminateAll]), reserving loopback
// ports ([FreePorts]), writing zoo.cfg text ([MergeConfig], [FormatConfig]),
// the four-letter-word client ([FourLetterWord], [ParseMode]), log tails
// ([Tail]), and the core of both harnesses' Ensemble ([Group]: the servers'
// processes, directories and client ports, running state, stop and kill,
// `srvr` mode and leader, Close); each harness keeps only its configuration,
// command line and readiness check.
//
// Invariants: a Process has exactly one goroutine that waits for it; it is
// the only writer of the exit error and closes the done channel after
// cmd.Wait returns. On Linux children get SIGKILL when the process that
// started them dies (parent-death signal), and every child has its own
// process group, so a terminal's Ctrl-C reaches only the test binary, which
// then cleans up in order.
//
// Callers: internal/apachezk and internal/corralproc only; each Ensemble
// embeds a *Group, so their exported APIs are this package's methods plus
// their own.
package procutil
