package replica

import (
	"fmt"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/corral/corral/shard"
)

// BenchmarkMachineUpdate: the same through Update (decode, apply, pebble batch, view publish).
func BenchmarkMachineUpdate(b *testing.B) {
	m := NewMachine(testConfig(b.TempDir(), nil))
	if _, err := m.Open(nil); err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	var ops []shard.Op
	for i := 0; i < 64; i++ {
		ops = append(ops, opCreate(fmt.Sprintf("/n%d", i), nil, 0))
	}
	if _, err := m.Update([]sm.Entry{{Index: 1, Cmd: batch(1, 1, 0, ops...).AppendTo(nil)}}); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 1024)
	ops = ops[:0]
	for i := 0; i < 64; i++ {
		ops = append(ops, opSet(fmt.Sprintf("/n%d", i), data, -1))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := batch(1, uint64(i+2), 0, ops...).AppendTo(nil)
		if _, err := m.Update([]sm.Entry{{Index: uint64(i + 2), Cmd: cmd}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkMachineSync: a Sync after 8,192 creates of 1 KiB (the dirty count at which a data
// replica asks for one, cluster.SyncDirty's default): building the pebble batch of the changed
// znodes, committing it and flushing the memtables. Only the Sync is timed.
func BenchmarkMachineSync(b *testing.B) {
	m := NewMachine(testConfig(b.TempDir(), nil))
	if _, err := m.Open(nil); err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	data := make([]byte, 1024)
	const perSync, perEntry = 8192, 64
	index, seq := uint64(0), uint64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for n := 0; n < perSync; n += perEntry {
			ops := make([]shard.Op, perEntry)
			for j := range ops {
				ops[j] = opCreate(fmt.Sprintf("/s%d-%d", i, n+j), data, 0)
			}
			index++
			seq++
			if _, err := m.Update([]sm.Entry{{Index: index, Cmd: batch(1, seq, 0, ops...).AppendTo(nil)}}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := m.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
