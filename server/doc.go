// Package server owns the client port: ZooKeeper connections from the accepted socket to the
// last reply. It performs the handshake (creating, validating or refusing sessions), reads
// requests, answers four-letter words, routes writes to the shard proposers and reads to the
// shards' published views, and writes replies and watch events on each connection in the order
// ZooKeeper clients require.
//
// Ordering on one connection (the guarantees clients depend on):
//   - Replies leave in request order. Writes are pipelined: each takes a slot in the
//     connection's reply queue when it is read and fills it when its shard applied it; filled
//     slots are flushed strictly in order. A read (or any request that looks at state) waits until
//     every earlier request of the connection has its reply, then runs against the current view,
//     so a session always reads its own writes; a watchless read behind single-shard writes to
//     its own shard parks instead (park.go): it is answered from a view taken right after the
//     connection's latest write (docs/design.md §8).
//   - A watch event is queued before any reply that reflects the change: the shard's apply
//     listener hands events to the watch hub (which queues them on connections) before it
//     publishes the view that reads and write completions come from.
//   - An event never precedes the reply that registered its watch: registration, the read and
//     queueing of the reply happen under the shard's registration lock, which the apply listener
//     holds exclusively while it triggers watches.
//   - Every reply header carries a zxid no smaller than any the connection has seen: the zxid of
//     the state the reply reflects (a write's zxid, the view a read used).
//   - Across shards: a write to another shard than the connection's previous write, sent while
//     earlier writes are unanswered, joins a group that runs once their replies are queued, as
//     one transaction over its shards (group.go; FIFO order across shards); a read first makes the local view of its shard
//     reflect everything the connection depends on, and a connection holding watches also
//     catches up the other shards to the view it read, so events precede replies (router.Read,
//     given the connection's readBound).
//     Writes spanning shards run as cross-shard transactions (route.go).
//   - closeSession on the connection that created the session ends it on the data shards the
//     session wrote to, which the connection notes before it submits each write (written.go).
//
// Dispatch: handle.go's table (handlers) maps each opcode to one handler. Writes, sync, ping,
// auth, sasl, closeSession and the opcodes only servers send get the raw body and order
// themselves behind the connection's earlier requests; every other request is decoded, waits
// for those requests, and then runs.
//
// Bad input: a frame larger than jute.maxbuffer or with a negative length closes the connection;
// an undecodable record gets MARSHALLINGERROR; an unknown opcode gets UNIMPLEMENTED and the
// connection is closed, as ZooKeeper does. Each case is logged with the remote address. A slow
// reader whose queued output exceeds a bound is disconnected; no other connection is affected.
//
// Goroutines: Server.Serve runs the accept loop; each connection has a frame reader (which
// reports the session's activity as each frame arrives and reads ahead, bounded, inbound.go), a
// request goroutine (which handles requests in order and executes reads; it ends the frame
// reader before it returns) and a writer goroutine. Server.Close closes the listener and every
// connection and waits for all of them.
package server
