// Package raftnet owns the network between Corral servers: the transport dragonboat sends Raft
// messages and snapshot chunks over (config.ExpertConfig.TransportFactory).
//
// It speaks dragonboat's own TCP framing byte for byte (frame.go), so a server with this
// transport and one with dragonboat's built-in transport talk to each other, and a rolling
// upgrade across the change needs nothing. What it changes is how a sending connection treats
// its peer (conn.go):
//
//   - A sending connection checks, before each batch, that its peer has not ended it: the
//     receiver never writes on a message link, so anything to read (end of file, a reset)
//     means the peer is gone; one non-blocking peek finds out (linkOpen).
//   - A batch that finds its link ended, or whose write fails because the peer reset it, is
//     written on a fresh link before the call returns. Only when the peer cannot be dialled,
//     or does not take a batch in time, does the send fail.
//
// Why it matters: dragonboat keeps up to four idle sending connections per peer for a minute
// and trips a per-peer circuit breaker on the first failed send, dropping every message to
// that peer for 0.25 to 0.75 s, up to 1.5 s after consecutive failures. Its own transport finds out
// that a peer restarted only by writing to each stale connection in turn, so a restart costs a
// burst of such blackouts (each longer than an election timeout), and with CheckQuorum the
// leaders that need that peer step down again and again (docs/design.md §15, §16).
//
// Connections also carry TCP keepalives and a TCP_USER_TIMEOUT, so a connection through a
// partition is abandoned within seconds instead of sitting in retransmission back-off after
// the partition heals, and dials time out after dialTimeout.
//
// With Factory.TLS (sslQuorum) every link is TLS with mutual authentication from the quorum
// stores: accepted links pass a tlsconf.Listener, which refuses and logs a peer without a
// certificate the trust store verifies (or, with ssl.quorum.hostnameVerification, one that
// does not name the peer's address).
//
// Goroutines: the accept loop and one reader per accepted link, owned by the Transport and
// ended by Close. Sending links have no goroutine of their own; dragonboat closes them, and
// Close closes any it left open.
package raftnet
