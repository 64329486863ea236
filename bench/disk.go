package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// The disk behind a run. Every write of either target waits for a synchronous write of its log
// (ZooKeeper's transaction log, Corral's Raft log) on a majority of servers, and the VMs this
// suite runs on differ most in that (docs/benchmarks.md, "The machine behind the results").
// So every run measures it before the first ensemble starts, where the ensembles keep their
// data (os.TempDir()): 4 KiB writes to a file opened with O_DSYNC, first by one writer, then by
// three at once, each on a file of its own, as three servers' logs on one machine are.

// diskProbeWrites is how many writes each writer makes; diskProbeWriters how many write at
// once in the second measurement.
const (
	diskProbeWrites  = 200
	diskProbeWriters = 3
)

// diskProbe is the latency of one synchronous 4 KiB write: its median with one writer, and
// with diskProbeWriters writers at once (over all their writes).
type diskProbe struct {
	Alone, Shared time.Duration
}

// String renders the probe for a summary.
func (p diskProbe) String() string {
	return fmt.Sprintf("a 4 KiB O_DSYNC write took %s (median) with one writer, %s with %d writers at once",
		fmtMs(p.Alone), fmtMs(p.Shared), diskProbeWriters)
}

func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// probeDisk measures dir's synchronous writes (see above). The files are removed afterwards.
func probeDisk(dir string) (diskProbe, error) {
	tmp, err := os.MkdirTemp(dir, "corral-bench-disk-")
	if err != nil {
		return diskProbe{}, err
	}
	defer os.RemoveAll(tmp)
	alone, err := syncWrites(filepath.Join(tmp, "alone"), diskProbeWrites)
	if err != nil {
		return diskProbe{}, err
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		shared []time.Duration
		first  error
	)
	for i := range diskProbeWriters {
		wg.Go(func() {
			lat, err := syncWrites(filepath.Join(tmp, fmt.Sprintf("shared-%d", i)), diskProbeWrites)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			shared = append(shared, lat...)
		})
	}
	wg.Wait()
	if first != nil {
		return diskProbe{}, first
	}
	return diskProbe{Alone: medianDuration(alone), Shared: medianDuration(shared)}, nil
}

// syncWrites makes n synchronous 4 KiB writes at the end of a new file and returns how long
// each took. O_DSYNC makes each write return once its data, and the file size it needs, are on
// the device, as the Raft log's write and fdatasync do (the bench, like the servers, builds
// on Unix only).
func syncWrites(path string, n int) ([]time.Duration, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_DSYNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	block := make([]byte, 4096)
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := f.Write(block); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

// medianDuration returns the median of ds (0 for none); it sorts ds.
func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
