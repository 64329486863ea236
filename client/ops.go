package client

import (
	"bytes"
	"context"

	"github.com/corral/corral/wire"
)

// Callback types of the Async methods. Each runs once, on the reader goroutine, in request
// order; slices it receives are valid only until it returns.
type (
	// DataCallback receives getData's result. data aliases the read buffer.
	DataCallback = func(data []byte, stat wire.Stat, err error)
	// StatCallback receives setData's and exists' result.
	StatCallback = func(stat wire.Stat, err error)
	// CreateCallback receives create2's result: the created path (with the sequence suffix).
	CreateCallback = func(path string, stat wire.Stat, err error)
	// ChildrenCallback receives getChildren2's result.
	ChildrenCallback = func(children []string, stat wire.Stat, err error)
	// ErrCallback receives the result of delete and addWatch.
	ErrCallback = func(err error)
	// SyncCallback receives sync's result (the path the server echoes).
	SyncCallback = func(path string, err error)
	// MultiCallback receives multi's per-op results and the first failing op's code.
	MultiCallback = func(results []wire.MultiResult, err error)
)

// asAny stores a callback in an interface without turning a nil func into a non-nil interface.
func asAny[F any](f F, isNil bool) any {
	if isNil {
		return nil
	}
	return f
}

// GetDataAsync queues getData(path, watch). A watch set here fires once, as a NodeDataChanged or
// NodeDeleted event, and is registered only if the node exists.
func (c *Conn) GetDataAsync(path string, watch bool, cb DataCallback) {
	c.enqueue(wire.OpGetData, &reqBody{path: path, watch: watch}, asAny(cb, cb == nil))
}

// SetDataAsync queues setData(path, data, version); version -1 matches any version. data is
// copied into the output buffer before the call returns.
func (c *Conn) SetDataAsync(path string, data []byte, version int32, cb StatCallback) {
	c.enqueue(wire.OpSetData, &reqBody{path: path, data: data, version: version}, asAny(cb, cb == nil))
}

// ExistsAsync queues exists(path, watch); a missing node yields wire.ErrNoNode (and, with watch,
// registers a watch for its creation).
func (c *Conn) ExistsAsync(path string, watch bool, cb StatCallback) {
	c.enqueue(wire.OpExists, &reqBody{path: path, watch: watch}, asAny(cb, cb == nil))
}

// ChildrenAsync queues getChildren2(path, watch).
func (c *Conn) ChildrenAsync(path string, watch bool, cb ChildrenCallback) {
	c.enqueue(wire.OpGetChildren2, &reqBody{path: path, watch: watch}, asAny(cb, cb == nil))
}

// CreateAsync queues create2(path, data, acl, flags); flags are wire.Flag*; a nil acl means
// wire.OpenACLUnsafe.
func (c *Conn) CreateAsync(path string, data []byte, flags int32, acl []wire.ACL, cb CreateCallback) {
	if acl == nil {
		acl = wire.OpenACLUnsafe
	}
	c.enqueue(wire.OpCreate2, &reqBody{path: path, data: data, flags: flags, acl: acl}, asAny(cb, cb == nil))
}

// DeleteAsync queues delete(path, version); version -1 matches any version.
func (c *Conn) DeleteAsync(path string, version int32, cb ErrCallback) {
	c.enqueue(wire.OpDelete, &reqBody{path: path, version: version}, asAny(cb, cb == nil))
}

// SyncAsync queues sync(path): reads issued after it completes see every write committed before
// it was issued.
func (c *Conn) SyncAsync(path string, cb SyncCallback) {
	c.enqueue(wire.OpSync, &reqBody{path: path}, asAny(cb, cb == nil))
}

// AddWatchAsync queues addWatch(path, mode), mode wire.AddWatchPersistent or
// wire.AddWatchPersistentRecursive.
func (c *Conn) AddWatchAsync(path string, mode int32, cb ErrCallback) {
	c.enqueue(wire.OpAddWatch, &reqBody{path: path, mode: mode}, asAny(cb, cb == nil))
}

// MultiAsync queues multi(ops...): all ops apply atomically or none does. On failure the results
// carry per-op codes (ZooKeeper: OK for the rolled-back ops before the failing one, the real code
// for it, RUNTIMEINCONSISTENCY after it) and err is the failing op's code. ops is encoded before
// the call returns.
func (c *Conn) MultiAsync(ops []wire.MultiOp, cb MultiCallback) {
	c.enqueue(wire.OpMulti, &reqBody{ops: ops}, asAny(cb, cb == nil))
}

// wait returns the first of the reply and ctx's end.
func wait[T any](ctx context.Context, ch <-chan T) (T, error) {
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

type dataResult struct {
	data []byte
	stat wire.Stat
	err  error
}

// Get returns the node's data (a copy; nil for a node created with null data) and stat.
func (c *Conn) Get(ctx context.Context, path string, watch bool) ([]byte, wire.Stat, error) {
	ch := make(chan dataResult, 1)
	c.GetDataAsync(path, watch, func(d []byte, s wire.Stat, err error) {
		ch <- dataResult{bytes.Clone(d), s, err}
	})
	r, err := wait(ctx, ch)
	if err != nil {
		return nil, wire.Stat{}, err
	}
	return r.data, r.stat, r.err
}

type statResult struct {
	stat wire.Stat
	err  error
}

// Set replaces the node's data if its version matches (-1: any) and returns the new stat.
func (c *Conn) Set(ctx context.Context, path string, data []byte, version int32) (wire.Stat, error) {
	ch := make(chan statResult, 1)
	c.SetDataAsync(path, data, version, func(s wire.Stat, err error) { ch <- statResult{s, err} })
	r, err := wait(ctx, ch)
	if err != nil {
		return wire.Stat{}, err
	}
	return r.stat, r.err
}

// Exists reports whether the node exists, with its stat. A missing node is (false, nil).
func (c *Conn) Exists(ctx context.Context, path string, watch bool) (bool, wire.Stat, error) {
	ch := make(chan statResult, 1)
	c.ExistsAsync(path, watch, func(s wire.Stat, err error) { ch <- statResult{s, err} })
	r, err := wait(ctx, ch)
	if err != nil {
		return false, wire.Stat{}, err
	}
	if r.err == wire.ErrNoNode {
		return false, wire.Stat{}, nil
	}
	return r.err == nil, r.stat, r.err
}

type childrenResult struct {
	children []string
	stat     wire.Stat
	err      error
}

// Children returns the names of the node's children (unsorted, as the server sends them).
func (c *Conn) Children(ctx context.Context, path string, watch bool) ([]string, wire.Stat, error) {
	ch := make(chan childrenResult, 1)
	c.ChildrenAsync(path, watch, func(cs []string, s wire.Stat, err error) { ch <- childrenResult{cs, s, err} })
	r, err := wait(ctx, ch)
	if err != nil {
		return nil, wire.Stat{}, err
	}
	return r.children, r.stat, r.err
}

type createResult struct {
	path string
	stat wire.Stat
	err  error
}

// Create creates a node (create2) and returns its actual path and stat.
func (c *Conn) Create(ctx context.Context, path string, data []byte, flags int32, acl []wire.ACL) (string, wire.Stat, error) {
	ch := make(chan createResult, 1)
	c.CreateAsync(path, data, flags, acl, func(p string, s wire.Stat, err error) { ch <- createResult{p, s, err} })
	r, err := wait(ctx, ch)
	if err != nil {
		return "", wire.Stat{}, err
	}
	return r.path, r.stat, r.err
}

// Delete deletes the node if its version matches (-1: any).
func (c *Conn) Delete(ctx context.Context, path string, version int32) error {
	ch := make(chan error, 1)
	c.DeleteAsync(path, version, func(err error) { ch <- err })
	r, err := wait(ctx, ch)
	if err != nil {
		return err
	}
	return r
}

type syncResult struct {
	path string
	err  error
}

// Sync waits until the server has caught up with the leader as of the call (see SyncAsync).
func (c *Conn) Sync(ctx context.Context, path string) (string, error) {
	ch := make(chan syncResult, 1)
	c.SyncAsync(path, func(p string, err error) { ch <- syncResult{p, err} })
	r, err := wait(ctx, ch)
	if err != nil {
		return "", err
	}
	return r.path, r.err
}

// AddWatch adds a persistent (recursive) watch on path.
func (c *Conn) AddWatch(ctx context.Context, path string, mode int32) error {
	ch := make(chan error, 1)
	c.AddWatchAsync(path, mode, func(err error) { ch <- err })
	r, err := wait(ctx, ch)
	if err != nil {
		return err
	}
	return r
}

type multiResult struct {
	results []wire.MultiResult
	err     error
}

// Multi runs ops atomically and returns the per-op results; err is the failing op's code
// (see MultiAsync). Data in the results is copied.
func (c *Conn) Multi(ctx context.Context, ops ...wire.MultiOp) ([]wire.MultiResult, error) {
	ch := make(chan multiResult, 1)
	c.MultiAsync(ops, func(rs []wire.MultiResult, err error) {
		for i := range rs {
			rs[i].Data = bytes.Clone(rs[i].Data)
		}
		ch <- multiResult{rs, err}
	})
	r, err := wait(ctx, ch)
	if err != nil {
		return nil, err
	}
	return r.results, r.err
}
