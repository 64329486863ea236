// Package watchhub is a server's watch registry: it records the watches its client connections
// set, matches them against the changes the shards apply, and hands the resulting notifications
// to the connections. It reproduces the watch semantics of Apache ZooKeeper 3.8
// (server/DataTree.java and server/watch/WatchManager.java at release-3.8.6) and is sized for
// 10^7 watches per server. Watches are not replicated: they live in the memory of the server the
// connection is attached to, and a reconnecting client re-registers them with SetWatches.
//
// # Model
//
// Like ZooKeeper the hub keeps two tables, the data table (dataWatches) and the child table
// (childWatches). An entry is a (watcher, path, table) triple with one mode: standard (one-shot),
// persistent or persistent-recursive.
//
//	registration                           data table     child table
//	getData(watch), exists(watch) AddData  standard       -
//	getChildren(watch)            AddChild -              standard
//	addWatch PERSISTENT     AddPersistent  persistent     persistent
//	addWatch PERSISTENT_RECURSIVE          recursive      recursive
//	  AddPersistentRecursive
//
// As in 3.8's WatcherModeManager, registering again replaces the mode of the triple: a getData
// watch on a path where the connection holds a persistent watch turns the data half of that
// persistent watch into a one-shot one (ZOOKEEPER-4466, fixed only in 3.9), and addWatch turns a
// pending one-shot watch into a persistent one.
//
// # Guarantees
//
//  1. One event per watcher per change: a change that matches a watcher through several entries
//     (its data and child entries on a deleted node, a standard watch on the node and a recursive
//     one on an ancestor) delivers one event.
//  2. A standard watch fires at most once and is gone once it fired, even if the ACL filter
//     withheld the event; persistent and recursive watches stay until removed or the connection
//     closes.
//  3. Matching rules (Trigger): NodeCreated and NodeDataChanged fire data-table entries on the
//     path and recursive entries on it and its ancestors; NodeDeleted fires data- and child-table
//     entries on the path and recursive entries on it and its ancestors; NodeChildrenChanged fires
//     the standard and persistent child-table entries of the path and never a recursive entry.
//     The event's path is always the changed node, never the watch root.
//  4. An event reaches a watcher only if its AuthIDs hold READ on the changed node's ACL (the
//     parent's for NodeChildrenChanged). SetWatches' catch-up events are not filtered (nor are
//     they in ZooKeeper).
//  5. Events of one Trigger call are delivered in the order of the events, and every event is
//     delivered before Trigger returns; SetWatches' catch-up events are delivered before
//     SetWatches returns.
//  6. After RemoveWatcher(w) returns, the hub holds nothing of w and never delivers to it again
//     (a Trigger running concurrently may still deliver to it once).
//
// # What the caller must do
//
// ZooKeeper gets its ordering guarantees by triggering watches and registering them on the single
// thread that applies transactions and sends replies. Corral applies shards concurrently, so the
// server package must provide the ordering itself:
//
//   - "No event before the reply that registered the watch": register the watch and enqueue the
//     reply on the connection while holding the shard's lock, the same lock the shard's apply path
//     holds while it calls Trigger. An event for the watch can then only be enqueued after the
//     reply. (Equivalently, reserve the reply's place in the ordered outbound queue before
//     registering.)
//   - "An event before any reply that reflects the change": the apply path calls Trigger for a
//     batch's events before it publishes the view that contains the batch, holding the same lock.
//     DeliverEvent has enqueued every event when Trigger returns, so any later read reply goes
//     after it.
//   - The read that registers a watch must read the view under that lock too, so that the change
//     it missed is one whose Trigger comes after the registration.
//   - A recursive watch on a path above a shard root is matched by other shards' triggers as
//     well; to order its addWatch reply against those shards' events the caller must reserve the
//     reply's place in the connection's queue before registering (the per-shard lock of the root's
//     shard alone does not order it against other shards).
//   - SetWatches looks nodes up through the caller's lookup function; run it under the locks of
//     the shards it looks at (or per shard, splitting the lists), so that no change slips between
//     the lookup and the re-arming.
//   - RemoveWatcher after the connection's last registration: see its documentation.
//
// # Removal, checks and introspection (also 3.8 as it is)
//
//   - Remove (removeWatches) drops the entry of the named table(s) whatever its mode: WatcherData
//     on a persistent watch leaves its child half armed; WatcherAny removes it entirely.
//   - Has (checkWatches) reports whether the table holds any watch on the path, from any
//     connection, as 3.8's containsWatcher does; HasOwn is the per-connection check of 3.9.
//   - Count, Paths, Connections, ByWatcher and ByPath describe the data table only, as wchs, wchc
//     and wchp do; WatchCount is mntr's watch_count (both tables). Unlike ZooKeeper, Connections
//     stops counting a connection whose last watch has fired.
//
// TestAgainstApacheZooKeeper runs these rules side by side with a real ZooKeeper 3.8 server.
//
// # Concurrency and layout
//
// Paths are interned and striped by hash over 256 stripes, each with its own mutex, so
// registrations and triggers on different paths rarely contend. Within a stripe an
// open-addressing index maps the path's hash to a slot in fixed-size chunks; a slot holds the
// path's entries as packed words (watcher slot<<8 | modes) in a slice, or in a map once more than
// 16 watchers share the path. None of this holds Go pointers, so the collector does not scan the
// entries. Each watcher keeps a reverse index of path ids, which makes RemoveWatcher O(its
// watches). Recursive watch roots sit in a separate striped table: a trigger walks the ancestors
// of the changed path and looks each one up there (only while some recursive watch exists), so
// recursive matching never scans the watch table. Measured: about 40 bytes per watch when paths
// are shared by several watchers, about 140 when every watch has its own path (path bytes
// included); see BenchmarkMemory. Lock order: see Hub.
package watchhub
