// Package cluster owns one Corral server process, a Node: its configuration (a standard zoo.cfg
// plus corral.* keys), the dragonboat NodeHost and the replicas it runs (the meta shard holding
// the session table, and the data shards holding the znode tree), the wiring between router,
// session manager, watch hub and client port, the admin HTTP server, and orderly shutdown.
// (package server's Server is only the protocol front end on the client port.)
//
// Files by concern: config.go (zoo.cfg), server.go (Node, Start, Close), raft.go (NodeHost,
// replicas, proposals, catch-up rounds, leader listener), clientport.go, admin.go (admin HTTP and
// gauges), membership.go, addshard.go, balance.go (spreading leaderships), follow.go
// (leaderships following the writes, docs/design.md §15), move.go, backup.go and restore.go, tls.go,
// serverlog.go, logdb.go, logfile.go and logcache.go (the Raft log store: one log per server,
// group commit), syncdirty.go (early state syncs of data replicas), raftmem.go (the size of dragonboat's
// in-memory entry slices), loops.go (background loops).
//
// Shard ids: the meta shard is 1; the data shards of the first start are 2..N+1 and carry zxid
// tags 1..N; data shards added online (addshard.go, docs/design.md §12) take the next ids and
// tags, as recorded in the root data shard's replicated state. Every server of the ensemble runs
// a replica of every shard (replica id = the server's myid), so every server serves every read
// locally: it starts the replica of an added shard when its replica of the root shard applies
// (or opens with) the record, on the shard starter goroutine. Each data shard replica's
// listener (audit.go) hands views and watch events to the router and, with audit.enable, writes
// the audit lines of ephemerals removed at a session's close or expiry, so every server's audit
// log has them, as every ZooKeeper server's has.
//
// Start blocks until every shard it knows of — added ones included — has a leader, a published
// view and has caught up, so a server that accepts clients can serve them. Goroutines: the
// background loops (Node.every: replica freshness, membership, format level, transaction
// recovery, container expiry, leader balancing and following; a pull runs a goroutine per shard
// and waits for them), the shard starter, the sync requester, the
// client port and the admin server; each runs until the server's context ends and is in its wait group. Close stops the client port first, then the
// proposers and loops, then the NodeHost, and waits for every goroutine it started.
package cluster
