package router

import "errors"

// Errors returned by the router.
var (
	// ErrStopped: the proposer was stopped (server shutting down).
	ErrStopped = errors.New("router: stopped")
	// ErrOutcomeUnknown: the request may or may not have been applied.
	ErrOutcomeUnknown = errors.New("router: outcome unknown")
	// ErrNoShard: no shard serves the path (the mount table is empty or stale).
	ErrNoShard = errors.New("router: no shard for path")
)
