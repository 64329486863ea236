package cluster

import "testing"

// TestRaftMessageBound: the linked variable is dragonboat's (it holds dragonboat's default of
// 64 MiB before any server set it: a wrong link would read 0 or fail to link), a server sets it,
// and a second server of the same process with another value is refused.
func TestRaftMessageBound(t *testing.T) {
	if raftMaxMessageEntryBytes != 64<<20 {
		t.Fatalf("dragonboat's maxEntrySize reads %d, want its default 64 MiB", raftMaxMessageEntryBytes)
	}
	if err := setRaftMessageBytes(4 << 20); err != nil {
		t.Fatal(err)
	}
	if raftMaxMessageEntryBytes != 4<<20 {
		t.Fatalf("bound not set: %d", raftMaxMessageEntryBytes)
	}
	if err := setRaftMessageBytes(4 << 20); err != nil {
		t.Fatalf("same value again: %v", err)
	}
	if err := setRaftMessageBytes(8 << 20); err == nil {
		t.Fatal("a different value while Raft groups may run was accepted")
	}
}
