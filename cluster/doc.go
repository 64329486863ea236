// Package cluster owns one Corral server process: its configuration (a standard zoo.cfg plus
// corral.* keys), the dragonboat NodeHost and the replicas it runs (the meta shard holding the
// session table, and the data shards holding the znode tree), the wiring between router,
// session manager, watch hub and client port, the admin HTTP server, and orderly shutdown.
//
// Shard ids: the meta shard is 1; data shards are 2..N+1 and carry zxid tags 1..N. Every server
// of the ensemble runs a replica of every shard (replica id = the server's myid), so every server
// serves every read locally.
//
// Start blocks until every shard has a leader and a published view, so a server that accepts
// clients can serve them. Close stops the client port first, then the background loops, then
// the NodeHost, and waits for every goroutine it started.
package cluster
