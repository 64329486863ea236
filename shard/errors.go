package shard

import "errors"

// Errors of the shard package. Wrapped errors carry details; test with errors.Is.
var (
	// ErrMalformedBatch: a Raft entry does not decode as a Batch. Our proposers never produce
	// one, so the replica treats it as fatal (replica.Machine.Update returns it and dragonboat
	// stops the replica rather than diverge from the others).
	ErrMalformedBatch = errors.New("shard: malformed batch")
	// ErrMalformedResult: a Raft entry result does not decode as a BatchResult.
	ErrMalformedResult = errors.New("shard: malformed batch result")
	// ErrMalformedTxn: the body of a transaction op (TxnPrepare, TxnCommit, TxnAbort,
	// TxnResolve) or a TxnReply does not decode.
	ErrMalformedTxn = errors.New("shard: malformed transaction record")
	// ErrCorruptStore: a stored record (records.go; in a replica's pebble store or a snapshot
	// stream) does not decode.
	ErrCorruptStore = errors.New("shard: corrupt store")
	// ErrConfigMismatch: stored records were loaded with a StateConfig (tag, root ownership)
	// other than the one they were written with.
	ErrConfigMismatch = errors.New("shard: store created with a different config")
)
