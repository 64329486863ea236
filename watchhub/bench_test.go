package watchhub

import (
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/corral/corral/shard"
	"github.com/corral/corral/wire"
)

// countConn is a Watcher that only counts deliveries.
type countConn struct {
	id uint64
	n  atomic.Int64
}

func (c *countConn) ID() uint64                     { return c.id }
func (c *countConn) AuthIDs() []wire.ID             { return nil }
func (c *countConn) DeliverEvent(wire.WatcherEvent) { c.n.Add(1) }

func newConns(n int) []*countConn {
	cs := make([]*countConn, n)
	for i := range cs {
		cs[i] = &countConn{id: uint64(i + 1)}
	}
	return cs
}

func benchPaths(n int) []string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("/app/svc%03d/node%07d", i%1000, i)
	}
	return ps
}

func BenchmarkAddWatch(b *testing.B) {
	// Each op registers a new (watcher, path) pair.
	b.Run("distinct-paths", func(b *testing.B) {
		paths := benchPaths(1 << 20)
		cs := newConns(64)
		h := New(Options{})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.AddData(cs[i%len(cs)], paths[i%len(paths)])
			if i%len(paths) == len(paths)-1 {
				b.StopTimer()
				h = New(Options{})
				b.StartTimer()
			}
		}
	})
	b.Run("shared-paths", func(b *testing.B) {
		paths := benchPaths(64)
		cs := newConns(1 << 16)
		h := New(Options{})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			j := i % (len(paths) * len(cs))
			h.AddData(cs[j/len(paths)], paths[j%len(paths)])
			if j == len(paths)*len(cs)-1 {
				b.StopTimer()
				h = New(Options{})
				b.StartTimer()
			}
		}
	})
	b.Run("rearm-existing", func(b *testing.B) {
		paths := benchPaths(1 << 16)
		cs := newConns(16)
		h := New(Options{})
		for i := range paths {
			h.AddData(cs[i%len(cs)], paths[i])
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.AddData(cs[i%len(paths)%len(cs)], paths[i%len(paths)])
		}
	})
	b.Run("parallel-distinct-paths", func(b *testing.B) {
		paths := benchPaths(1 << 20)
		h := New(Options{})
		var next atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			w := &countConn{id: uint64(next.Add(1))}
			i := int(w.id) * 7919
			for pb.Next() {
				h.AddData(w, paths[i%len(paths)])
				i++
			}
		})
	})
}

func BenchmarkTrigger(b *testing.B) {
	open := wire.OpenACLUnsafe
	b.Run("unwatched-path", func(b *testing.B) {
		h := New(Options{})
		paths := benchPaths(1 << 16)
		cs := newConns(16)
		for i, p := range paths[:1<<15] {
			h.AddPersistent(cs[i%len(cs)], p)
		}
		ev := []shard.Event{{Type: wire.EventNodeDataChanged, ACL: open}}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ev[0].Path = paths[1<<15+i%(1<<15)]
			h.Trigger(ev)
		}
	})
	b.Run("one-shot-rearm", func(b *testing.B) {
		// getData(watch) + setData, the classic cycle: one registration and one trigger per op.
		h := New(Options{})
		w := &countConn{id: 1}
		ev := []shard.Event{{Type: wire.EventNodeDataChanged, Path: "/app/config", ACL: open}}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.AddData(w, "/app/config")
			h.Trigger(ev)
		}
		if w.n.Load() != int64(b.N) {
			b.Fatalf("delivered %d of %d", w.n.Load(), b.N)
		}
	})
	for _, fan := range []int{1, 10, 100, 1000} {
		b.Run("persistent-fanout-"+strconv.Itoa(fan), func(b *testing.B) {
			h := New(Options{})
			for _, c := range newConns(fan) {
				h.AddPersistent(c, "/hot")
			}
			ev := []shard.Event{{Type: wire.EventNodeDataChanged, Path: "/hot", ACL: open}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.Trigger(ev)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fan), "ns/event")
		})
	}
	b.Run("recursive-ancestors-depth6", func(b *testing.B) {
		h := New(Options{})
		cs := newConns(11)
		for i := 0; i < 10; i++ {
			h.AddPersistentRecursive(cs[i], "/other"+strconv.Itoa(i))
		}
		h.AddPersistentRecursive(cs[10], "/a")
		ev := []shard.Event{{Type: wire.EventNodeDataChanged, Path: "/a/b/c/d/e/f", ACL: open}}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.Trigger(ev)
		}
		if cs[10].n.Load() != int64(b.N) {
			b.Fatalf("delivered %d of %d", cs[10].n.Load(), b.N)
		}
	})
	b.Run("1e6-watches-random-path", func(b *testing.B) {
		// 10^6 persistent watches, 10^4 connections x 100 paths, 10 watchers per path.
		h := New(Options{})
		paths := benchPaths(100_000)
		cs := newConns(10_000)
		for i, c := range cs {
			for k := 0; k < 100; k++ {
				h.AddPersistent(c, paths[(i*100+k)%len(paths)])
			}
		}
		ev := []shard.Event{{Type: wire.EventNodeDataChanged, ACL: open}}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ev[0].Path = paths[(i*7919)%len(paths)]
			h.Trigger(ev)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10), "ns/event")
	})
	b.Run("parallel-shards", func(b *testing.B) {
		h := New(Options{})
		paths := benchPaths(1 << 14)
		cs := newConns(64)
		for i, p := range paths {
			h.AddPersistent(cs[i%len(cs)], p)
		}
		var next atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1)) * 4099
			ev := []shard.Event{{Type: wire.EventNodeDataChanged, ACL: open}}
			for pb.Next() {
				ev[0].Path = paths[i%len(paths)]
				h.Trigger(ev)
				i++
			}
		})
	})
}

// BenchmarkMemory builds 10^6 watches in several layouts and reports the heap the hub holds per
// watch (runtime.MemStats.HeapAlloc after a GC, minus the heap before; the connections' own
// objects are allocated beforehand and excluded, interned path bytes are included).
// Run with -benchtime=1x.
func BenchmarkMemory(b *testing.B) {
	const total = 1_000_000
	layouts := []struct {
		name           string
		conns, perConn int // perConn watches per connection
		paths          int // distinct paths, shared round-robin
		kind           string
	}{
		{"distinct-paths-data", 10_000, 100, total, "data"},
		{"10-watchers-per-path-data", 10_000, 100, total / 10, "data"},
		{"1000-watchers-per-path-data", 1_000, 1_000, 1_000, "data"},
		{"10-watchers-per-path-persistent", 10_000, 100, total / 10, "pers"},
		{"distinct-paths-data+child", 10_000, 50, total / 2, "both"},
	}
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				cs := newConns(l.conns)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				h := New(Options{})
				var buf []byte
				for i, c := range cs {
					for k := 0; k < l.perConn; k++ {
						j := (i*l.perConn + k) % l.paths
						buf = strconv.AppendInt(append(buf[:0], "/app/svc"...), int64(j%1000), 10)
						buf = strconv.AppendInt(append(buf, "/node"...), int64(j), 10)
						p := string(buf)
						switch l.kind {
						case "data":
							h.AddData(c, p)
						case "pers":
							h.AddPersistent(c, p)
						case "both":
							h.AddData(c, p)
							h.AddChild(c, p)
						}
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				watches := h.WatchCount()
				if l.kind == "pers" {
					watches /= 2 // one addWatch = one watch, held in both tables
				}
				if watches != total {
					b.Fatalf("%d watches, want %d", watches, total)
				}
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(watches), "bytes/watch")
				b.ReportMetric(0, "ns/op")
				runtime.KeepAlive(h)
				runtime.KeepAlive(cs)
			}
		})
	}
}
