package replica

import "errors"

// Errors of the replica package. Wrapped errors carry details; test with errors.Is. A record
// that does not decode is shard.ErrCorruptStore; a store created with another configuration,
// shard.ErrConfigMismatch.
var (
	// ErrIndexRegressed: Update got an entry whose index is not above the last applied index.
	ErrIndexRegressed = errors.New("replica: applied index regressed")
	// ErrClosed: the Machine is closed.
	ErrClosed = errors.New("replica: machine closed")
)
