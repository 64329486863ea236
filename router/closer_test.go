package router

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestEnsureFresh: a replica never confirmed is not fresh; a failed catch-up round leaves it
// so and fails the caller; a successful round makes it fresh from the moment the round
// started, and a fresh replica needs no round until maxAge has passed.
func TestEnsureFresh(t *testing.T) {
	r := New([]uint64{2}, []uint8{1}, PlaceSingle, nil)
	sh := r.Shard(2)
	var rounds atomic.Int32
	var fail atomic.Bool
	r.SetSync(func(ctx context.Context, _ uint64) error {
		rounds.Add(1)
		if fail.Load() {
			return errors.New("cut off")
		}
		return nil
	})
	ctx := context.Background()
	if sh.Age() < time.Hour {
		t.Fatalf("a replica never confirmed has age %v", sh.Age())
	}
	fail.Store(true)
	if err := r.EnsureFresh(ctx, sh, time.Second); err == nil {
		t.Fatal("EnsureFresh succeeded while the round failed")
	}
	if sh.Age() < time.Hour {
		t.Fatal("a failed round made the replica fresh")
	}
	fail.Store(false)
	before := rounds.Load()
	if err := r.EnsureFresh(ctx, sh, time.Second); err != nil {
		t.Fatal(err)
	}
	if rounds.Load() != before+1 || sh.Age() > time.Second {
		t.Fatalf("rounds %d (want %d), age %v", rounds.Load(), before+1, sh.Age())
	}
	if err := r.EnsureFresh(ctx, sh, time.Second); err != nil || rounds.Load() != before+1 {
		t.Fatalf("a fresh replica ran another round: %v, rounds %d", err, rounds.Load())
	}
	time.Sleep(20 * time.Millisecond)
	if err := r.EnsureFresh(ctx, sh, 10*time.Millisecond); err != nil || rounds.Load() != before+2 {
		t.Fatalf("a replica older than maxAge ran no round: %v, rounds %d", err, rounds.Load())
	}
}

// TestEnsureFreshRejectsSlowRound: a round that succeeds but took longer than maxAge proves
// freshness as of its start only, so EnsureFresh runs another one.
func TestEnsureFreshRejectsSlowRound(t *testing.T) {
	r := New([]uint64{2}, []uint8{1}, PlaceSingle, nil)
	sh := r.Shard(2)
	var rounds atomic.Int32
	r.SetSync(func(ctx context.Context, _ uint64) error {
		if rounds.Add(1) == 1 {
			time.Sleep(50 * time.Millisecond) // the first round is slow
		}
		return nil
	})
	if err := r.EnsureFresh(context.Background(), sh, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if rounds.Load() != 2 || sh.Age() > 20*time.Millisecond {
		t.Fatalf("rounds %d (want 2), age %v", rounds.Load(), sh.Age())
	}
}

// TestQuorumAge: a catch-up noted outside the rounds (the server's before it serves) counts for
// the cut-off rule's QuorumAgeAt but not for freshness (Age); a later round counts for both.
func TestQuorumAge(t *testing.T) {
	r := New([]uint64{2}, []uint8{1}, PlaceSingle, nil)
	sh := r.Shard(2)
	r.SetSync(func(context.Context, uint64) error { return nil })
	base := time.Now()
	now := base.Add(3 * time.Second)
	if age := sh.QuorumAgeAt(now); age < time.Hour {
		t.Fatalf("a replica never confirmed has quorum age %v", age)
	}
	sh.NoteReachedQuorum(base.Add(time.Second))
	sh.NoteReachedQuorum(base) // older: ignored
	if age := sh.QuorumAgeAt(now); age < 2*time.Second || age > 2*time.Second+time.Millisecond {
		t.Fatalf("quorum age %v after a catch-up 2 s ago", age)
	}
	if age := sh.AgeAt(now); age < time.Hour {
		t.Fatalf("a noted catch-up made the replica fresh for reads: age %v", age)
	}
	if err := r.EnsureFresh(context.Background(), sh, time.Second); err != nil {
		t.Fatal(err)
	}
	if age := sh.QuorumAgeAt(time.Now()); age > time.Second {
		t.Fatalf("quorum age %v after a round", age)
	}
}
