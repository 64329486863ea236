package shard

import (
	"bytes"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

// memRecords keeps a state's records in a map: the record layer without pebble.
type memRecords map[string][]byte

func (m memRecords) Set(key, value []byte) { m[string(key)] = bytes.Clone(value) }
func (m memRecords) Delete(key []byte)     { delete(m, string(key)) }

func (m memRecords) Get(key []byte) ([]byte, bool, error) {
	v, ok := m[string(key)]
	return bytes.Clone(v), ok, nil
}

func (m memRecords) Scan(lo, hi []byte, f func(key, value []byte) error) error {
	var keys []string
	for k := range m {
		if k >= string(lo) && k < string(hi) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := f([]byte(k), m[k]); err != nil {
			return err
		}
	}
	return nil
}

// TestRecordsRoundTrip: the invariant of the record layer (records.go) that a replica's store
// and snapshots rely on. A state loaded from the records it wrote (WriteInitial once, then
// WriteChanges after every few applies) is the state that wrote them, canonical encoding and
// applied index alike, at every point of a random workload; and a state with no records loads
// as not found.
func TestRecordsRoundTrip(t *testing.T) {
	if _, _, found, err := LoadState(memRecords{}, StateConfig{Tag: 1}); found || err != nil {
		t.Fatalf("empty records: found %v, err %v", found, err)
	}
	for seed := int64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewSource(seed))
		cfg := StateConfig{OwnsRoot: true, ExtendedTypes: seed%2 == 0, Tag: uint8(seed)}
		s := NewState(cfg)
		mem := memRecords{}
		s.WriteInitial(mem)
		s.AttachReplica(nil, 1)
		now := int64(1_000_000)
		var applied uint64
		seqs := map[uint64]uint64{}
		for i := 0; i < 400; i++ {
			id := uint64(r.Intn(3) + 1)
			seqs[id]++
			now += int64(r.Intn(300))
			var ops []Op
			for j := r.Intn(4); j >= 0; j-- {
				ops = append(ops, randomOp(r))
			}
			s.Apply(&Batch{Proposer: id, Seq: seqs[id], Time: now, Ops: ops})
			applied++
			if r.Intn(5) != 0 {
				continue // changes accumulate over several applies, as between flushes
			}
			s.WriteChanges(mem, applied)
			got, gotApplied, found, err := LoadState(mem, cfg)
			if err != nil || !found || gotApplied != applied {
				t.Fatalf("seed %d apply %d: loaded applied %d, found %v, err %v", seed, i, gotApplied, found, err)
			}
			if want, have := s.AppendCanonical(nil), got.AppendCanonical(nil); !bytes.Equal(want, have) {
				t.Fatalf("seed %d apply %d: the loaded state differs from the one that wrote its records", seed, i)
			}
			if _, changed := s.Pending(); changed {
				t.Fatalf("seed %d apply %d: changes pending right after WriteChanges", seed, i)
			}
		}
		nodes := 0
		for k := range mem {
			if strings.HasPrefix(k, "n") {
				nodes++
			}
		}
		if nodes != s.Len() || nodes < 10 {
			t.Fatalf("seed %d: %d node records for %d znodes", seed, nodes, s.Len())
		}
	}
}

// stored is a state with its records kept in memory, as a replica keeps them in its store.
type stored struct {
	s   *State
	cfg StateConfig
	mem memRecords
}

func newStored(cfg StateConfig) *stored {
	st := &stored{s: NewState(cfg), cfg: cfg, mem: memRecords{}}
	st.s.WriteInitial(st.mem)
	st.s.AttachReplica(nil, 3)
	return st
}

// reload writes the state's changes (as of Raft index applied) and returns the state loaded
// back from its records: what a replica reopens, or recovers from a snapshot, after that index.
func (st *stored) reload(t *testing.T, applied uint64) *State {
	t.Helper()
	st.s.WriteChanges(st.mem, applied)
	s, got, found, err := LoadState(st.mem, st.cfg)
	if err != nil || !found || got != applied {
		t.Fatalf("reload: applied %d (want %d), found %v, err %v", got, applied, found, err)
	}
	s.AttachReplica(nil, 3)
	return s
}
