// Package format owns the ensemble's format level: which encodings of Raft entries and
// snapshots its servers may write.
//
// A server of a newer version may run beside servers of the previous one (a rolling upgrade).
// Every encoding it would write that an older server cannot read is tied to a Level; a server
// writes it only once the ensemble's active level is at least that Level. The active level is
// replicated state of the meta shard (the session table, package session): each server
// announces the highest level its binary reads (Supported), and the meta leader raises the
// active level to the lowest level every member of every shard announced (Next). The level
// never goes down, and a server whose binary cannot read the active level stops applying with
// an error that says so, rather than misread what the others write. docs/operations.md
// "Upgrading" is the procedure, docs/design.md §14 the design.
package format
