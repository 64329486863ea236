// Package client is Corral's own asynchronous, pipelined ZooKeeper client. It speaks the
// ZooKeeper 3.8 client protocol (package wire), so it drives Apache ZooKeeper and Corral alike; the
// benchmark tool (package bench) uses it to keep thousands of requests outstanding per session
// without the generator becoming the bottleneck.
//
// # Model
//
// [Dial] opens one TCP connection and one session (ConnectRequest, with the optional trailing
// readOnly byte when [Options.SendReadOnly] is set). A [Conn] then owns four goroutines, all
// stopped and waited for by [Conn.Close]:
//
//   - the writer: callers encode their request frame straight into a shared output buffer under
//     the connection's lock and wake the writer only when that buffer was empty; the writer swaps
//     it with its own buffer and writes everything queued in one write call. A burst of requests
//     therefore costs one syscall, and the hot path allocates nothing (the buffers are reused).
//   - the reader: reads reply frames through a large bufio.Reader (a frame that fits is decoded in
//     place, without copying), matches each reply to the oldest outstanding request and runs its
//     callback. ZooKeeper answers a session's requests in the order it sent them, so a reply whose
//     xid is not the oldest outstanding one is a protocol error: the connection is closed
//     ([ErrProtocol]), as the Java client does.
//   - the pinger: sends a ping (xid -2) whenever nothing was written for a third of the negotiated
//     session timeout, and closes the connection if nothing was received for two thirds of it.
//   - the event pump: watch notifications (xid -1) are queued in the order they arrive and handed
//     to the [Conn.Events] channel (unbounded queue, so a slow consumer never stalls replies), or
//     to [Options.OnEvent], which runs on the reader goroutine in wire order relative to replies.
//
// # Asynchronous calls
//
// Every operation has an Async form that queues the request and returns at once; its callback runs
// later on the reader goroutine, exactly once, in request order. Callbacks must not block (they
// hold up every later reply on the connection); they may issue further Async calls but must not
// call Close or a blocking method of the same Conn (those wait for the reader, which is running
// the callback). Byte slices passed to a callback (getData's data) alias the connection's read
// buffer and are valid only until the callback returns: copy them to keep them. Passing the same callback value to many
// calls (a method value created once) keeps the hot path free of allocations.
//
// The blocking forms (Get, Set, Create, Delete, Exists, Children, Multi, Sync, AddWatch) wrap the
// Async ones. When their ctx ends first they return ctx.Err(), but the request stays queued and may
// still be applied by the server: the outcome of a write abandoned this way is unknown.
//
// # Errors
//
// A reply with a non-zero error code yields that code as a [wire.Err], so callers test with
// errors.Is(err, wire.ErrNoNode). multi reports the first failing op's code (see [Conn.Multi]).
//
// # Disconnects
//
// There is no reconnect logic: when the connection breaks (EOF, read or write error, read timeout,
// protocol error, or Close) every outstanding and every later call fails with an error that
// matches wire.ErrConnectionLoss (and, after Close, also [ErrClosed]); the events channel gets a
// final Disconnected (or Closed) state event and is closed. The session itself is not closed by a
// disconnect; it expires on the server after its timeout. Callers that need to carry on (the
// benchmark's failover experiment) Dial a new session, possibly on another server.
package client
