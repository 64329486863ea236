package cluster

import (
	"testing"

	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// recordingLogDB records the States it is asked to save.
type recordingLogDB struct {
	raftio.ILogDB
	saved []pb.State
}

func (r *recordingLogDB) SaveRaftState(updates []pb.Update, _ uint64) error {
	for _, u := range updates {
		r.saved = append(r.saved, u.State)
	}
	return nil
}

// TestStateFillingLogDB: an empty State is replaced by the replica's last saved State, per
// (shard, replica); one before any real State passes as it is; a real State is kept.
func TestStateFillingLogDB(t *testing.T) {
	rec := &recordingLogDB{}
	db := newStateFillingLogDB(rec)
	s1 := pb.State{Term: 3, Vote: 2, Commit: 10}
	s2 := pb.State{Term: 3, Vote: 2, Commit: 12}
	o := pb.State{Term: 7, Vote: 1, Commit: 5}
	steps := []pb.Update{
		{ShardID: 1, ReplicaID: 1},            // nothing known yet: stays empty
		{ShardID: 1, ReplicaID: 1, State: s1}, // real
		{ShardID: 1, ReplicaID: 1},            // filled with s1
		{ShardID: 2, ReplicaID: 1, State: o},  // another shard
		{ShardID: 1, ReplicaID: 1, State: s2}, // real
		{ShardID: 1, ReplicaID: 1},            // filled with s2
		{ShardID: 2, ReplicaID: 1},            // filled with o
		{ShardID: 1, ReplicaID: 2},            // another replica: nothing known
	}
	for _, u := range steps {
		if err := db.SaveRaftState([]pb.Update{u}, 0); err != nil {
			t.Fatal(err)
		}
	}
	want := []pb.State{{}, s1, s1, o, s2, s2, o, {}}
	if len(rec.saved) != len(want) {
		t.Fatalf("saved %d states, want %d", len(rec.saved), len(want))
	}
	for i := range want {
		if !pb.IsStateEqual(rec.saved[i], want[i]) {
			t.Errorf("update %d saved with %+v, want %+v", i, rec.saved[i], want[i])
		}
	}
}
