package shard

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/corral/corral/wire"
)

// Data shards added online (docs/design.md §12). The root shard's state holds the list of data
// shards added to the ensemble after its first start: each record names the new Raft group's
// id, its zxid tag and the initial membership every server bootstraps it with. The list is
// appended to by OpAddShard, in control batches of the root shard, and persisted with the state
// (store key "ms", snapshots, the canonical encoding), so every replica of the root shard — on a
// server that was down, or restarts, or replays its log — ends up with the same records in the
// same order, and every server starts the same groups with the same id, tag and members.

// OpAddShard appends an AddedShard record to the root shard's list (a control op, like the
// transaction ops). Its Body is the encoded AddShard; its result's Body the encoded
// AddShardReply. It consumes no zxid and changes neither the tree nor the last zxid.
const OpAddShard wire.OpCode = 1005

// AddedShard is a data shard added online.
type AddedShard struct {
	ID  uint64 // Raft group id; above every data shard id before it
	Tag uint8  // zxid tag; unique among the data shards, never 0
	// Voters are the new group's initial members {replica id: Raft address}: every server
	// listed starts its replica with exactly this map (dragonboat requires identical initial
	// members); any other server joins (join=true) once a member adds it.
	Voters map[uint64]string
	// NonVoting are the observers (non-voting replicas) of the root shard when the shard was
	// added; the new group's leader adds them as non-voting replicas.
	NonVoting map[uint64]string
}

// AddShard asks the root shard to record Shard. Prev is the number of records the proposer saw
// when it chose Shard's id and tag: the op applies only if the list still has that length, so
// two servers adding a shard at the same time never record the same id or tag twice.
type AddShard struct {
	Prev  int
	Shard AddedShard
}

// AddShardOutcome is what the root shard did with an AddShard.
type AddShardOutcome uint8

// Outcomes.
const (
	// AddShardAdded: recorded; Count is the new number of records.
	AddShardAdded AddShardOutcome = iota + 1
	// AddShardConflict: the list no longer has Prev records (another add came first); nothing
	// changed. Count is the current number.
	AddShardConflict
	// AddShardRefused: the record is invalid (id not above the recorded ones, tag 0 or taken,
	// no voters) or this is not the root shard; nothing changed.
	AddShardRefused
)

// AddShardReply is the result body of an OpAddShard.
type AddShardReply struct {
	Outcome AddShardOutcome
	Count   int
}

// applyAddShard applies an OpAddShard body. Pure: it depends only on the state's list.
func (s *State) applyAddShard(body []byte) (AddShardReply, error) {
	a, err := DecodeAddShard(body)
	if err != nil {
		return AddShardReply{}, err
	}
	n := len(s.added)
	if !s.cfg.OwnsRoot {
		return AddShardReply{Outcome: AddShardRefused, Count: n}, nil
	}
	if a.Prev != n {
		return AddShardReply{Outcome: AddShardConflict, Count: n}, nil
	}
	rec := a.Shard
	valid := rec.Tag != 0 && rec.ID > 1 && len(rec.Voters) > 0
	for _, o := range s.added {
		if o.ID >= rec.ID || o.Tag == rec.Tag {
			valid = false
		}
	}
	for id, addr := range rec.Voters {
		if id == 0 || addr == "" {
			valid = false
		}
	}
	if !valid {
		return AddShardReply{Outcome: AddShardRefused, Count: n}, nil
	}
	// Copy on write: views share the old slice.
	next := make([]AddedShard, n, n+1)
	copy(next, s.added)
	s.added = append(next, rec)
	if s.track {
		s.dirty.added = true
	}
	return AddShardReply{Outcome: AddShardAdded, Count: n + 1}, nil
}

// AddedShards returns the data shards added online, in the order they were added (ids
// increasing). Shared: do not modify.
func (v *View) AddedShards() []AddedShard { return v.added }

// AddedChanged reports whether v's list of added shards differs from prev's (nil: none).
func (v *View) AddedChanged(prev *View) bool {
	if prev == nil {
		return len(v.added) > 0
	}
	return len(v.added) != len(prev.added)
}

// Encodings (all integers varint-encoded, as the batch codec):
//
//	AddedShard:    uvarint ID | u8 Tag | members Voters | members NonVoting
//	members:       uvarint count | (uvarint id, str addr)... in id order
//	AddShard:      u8 version (1) | uvarint Prev | AddedShard
//	AddShardReply: u8 Outcome | uvarint Count
//	the list ("ms", canonical state): uvarint count | AddedShard...
const addShardVersion = 1

func appendMembers(dst []byte, m map[uint64]string) []byte {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst = binary.AppendUvarint(dst, uint64(len(ids)))
	for _, id := range ids {
		dst = binary.AppendUvarint(dst, id)
		dst = appendStr(dst, m[id])
	}
	return dst
}

// decodeMembers decodes a member map; an empty one is nil.
func decodeMembers(r *reader) map[uint64]string {
	n := r.count(2)
	if n == 0 {
		return nil
	}
	m := make(map[uint64]string, n)
	for i := 0; i < n && r.err == nil; i++ {
		id := r.uvarint()
		if _, dup := m[id]; dup {
			r.fail("duplicate member")
		}
		m[id] = r.str()
	}
	return m
}

func appendAddedShard(dst []byte, a *AddedShard) []byte {
	dst = binary.AppendUvarint(dst, a.ID)
	dst = append(dst, a.Tag)
	dst = appendMembers(dst, a.Voters)
	return appendMembers(dst, a.NonVoting)
}

func decodeAddedShard(r *reader) AddedShard {
	a := AddedShard{ID: r.uvarint(), Tag: r.byte()}
	a.Voters = decodeMembers(r)
	a.NonVoting = decodeMembers(r)
	return a
}

// AppendTo appends the encoded AddShard.
func (a *AddShard) AppendTo(dst []byte) []byte {
	dst = append(dst, addShardVersion)
	dst = binary.AppendUvarint(dst, uint64(a.Prev))
	return appendAddedShard(dst, &a.Shard)
}

// DecodeAddShard decodes an AddShard (the strings are copied).
func DecodeAddShard(b []byte) (AddShard, error) {
	r := reader{buf: b}
	if v := r.byte(); v != addShardVersion && r.err == nil {
		return AddShard{}, fmt.Errorf("%w: add-shard version %d", ErrMalformedTxn, v)
	}
	prev := r.uvarint()
	a := AddShard{Prev: int(prev), Shard: decodeAddedShard(&r)}
	if prev > 1<<16 {
		r.fail("prev")
	}
	if err := r.finish(); err != nil {
		return AddShard{}, fmt.Errorf("%w: add-shard: %v", ErrMalformedTxn, err)
	}
	return a, nil
}

// AppendTo appends the encoded reply.
func (r AddShardReply) AppendTo(dst []byte) []byte {
	return binary.AppendUvarint(append(dst, byte(r.Outcome)), uint64(r.Count))
}

// DecodeAddShardReply decodes an OpAddShard result body.
func DecodeAddShardReply(b []byte) (AddShardReply, error) {
	r := reader{buf: b}
	rep := AddShardReply{Outcome: AddShardOutcome(r.byte()), Count: int(r.uvarint())}
	if err := r.finish(); err != nil || rep.Outcome < AddShardAdded || rep.Outcome > AddShardRefused {
		return AddShardReply{}, fmt.Errorf("%w: add-shard reply %x", ErrMalformedTxn, b)
	}
	return rep, nil
}

func appendAddedList(dst []byte, list []AddedShard) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(list)))
	for i := range list {
		dst = appendAddedShard(dst, &list[i])
	}
	return dst
}

func decodeAddedList(b []byte) ([]AddedShard, error) {
	r := reader{buf: b}
	n := r.count(3)
	var list []AddedShard
	for i := 0; i < n && r.err == nil; i++ {
		list = append(list, decodeAddedShard(&r))
	}
	if err := r.finish(); err != nil {
		return nil, fmt.Errorf("%w: added shards: %v", ErrCorruptStore, err)
	}
	return list, nil
}
