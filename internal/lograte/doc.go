// Package lograte keeps the log lines about bad clients to a bounded rate: at most a few lines
// (a burst) per key (a reason and the client's address, say) per interval, the next one allowed
// carrying how many were left out in between. A client that sends garbage, fails its password
// or abandons TLS handshakes in a loop costs a few log lines per interval instead of one per
// connection, and other clients' lines (other keys) still appear at once. It owns no goroutine: keys are
// forgotten lazily, and the number kept is bounded (past it, every further key shares one).
package lograte
