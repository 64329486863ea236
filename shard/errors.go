package shard

import "errors"

// Errors of the shard package. Wrapped errors carry details; test with errors.Is.
var (
	// ErrMalformedBatch: a Raft entry does not decode as a Batch. Our proposers never produce
	// one, so the Machine treats it as fatal (Update returns it and dragonboat stops the replica
	// rather than diverge from the others).
	ErrMalformedBatch = errors.New("shard: malformed batch")
	// ErrMalformedResult: a Raft entry result does not decode as a BatchResult.
	ErrMalformedResult = errors.New("shard: malformed batch result")
	// ErrMalformedTxn: the body of a transaction op (TxnPrepare, TxnCommit, TxnAbort,
	// TxnResolve) or a TxnReply does not decode.
	ErrMalformedTxn = errors.New("shard: malformed transaction record")
	// ErrCorruptStore: the pebble store or a snapshot stream holds a record that does not decode.
	ErrCorruptStore = errors.New("shard: corrupt store")
	// ErrIndexRegressed: Update got an entry whose index is not above the last applied index.
	ErrIndexRegressed = errors.New("shard: applied index regressed")
	// ErrClosed: the Machine is closed.
	ErrClosed = errors.New("shard: machine closed")
	// ErrConfigMismatch: a store was opened with a Config (tag, root ownership) other than the one
	// it was created with.
	ErrConfigMismatch = errors.New("shard: store created with a different config")
)
