// Package procutil holds the process plumbing shared by the test harnesses
// internal/apachezk (Apache ZooKeeper JVMs) and internal/corralproc (Corral
// server processes): starting a child with its output in a log file and one
// reaper goroutine ([Start], [Process]), stopping it with a signal and a
// grace period ([Process.Terminate], [TerminateAll]), reserving loopback
// ports ([FreePorts]), writing zoo.cfg text ([MergeConfig], [FormatConfig]),
// the four-letter-word client ([FourLetterWord], [ParseMode]) and log tails
// ([Tail]).
//
// Invariants: a Process has exactly one goroutine that waits for it; it is
// the only writer of the exit error and closes the done channel after
// cmd.Wait returns. On Linux children get SIGKILL when the process that
// started them dies (parent-death signal), and every child has its own
// process group, so a terminal's Ctrl-C reaches only the test binary, which
// then cleans up in order.
//
// Callers: internal/apachezk and internal/corralproc only; their exported
// APIs are unchanged wrappers around this package.
package procutil
