package faulttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/corral/corral/internal/slowdisk"
)

// The slow-disk nemesis of the robustness suite: in a slow-disk run every server keeps its
// dataDir on a disk of its own (internal/slowdisk: ext4 on a loop device, the server in a blkio
// control group), and the fault limits the victim's writes to that disk to rbDiskIOPS write
// operations per second, so that each fsync of its Raft log takes a tenth of a second or more
// instead of well under a millisecond. The heal lifts the limit. The victim keeps running and
// answering its peers' messages; what it cannot do is persist entries in time: a slow follower
// must not slow the shards' commits (the other two are a quorum), a slow leader is the one
// whose commits wait, and the sessions whose connections are on the victim must not lose their
// ephemerals while their clients keep pinging.

// rbDiskIOPS is the victim's write operations per second during a slow-disk fault (as TestSlowDisk).
const rbDiskIOPS = sdIOPS

// rbDiskSize is each server's disk; the backing files are sparse (see sdDiskSize).
const rbDiskSize = sdDiskSize

// rbSlowDisk throttles a random server's disk for the outage.
func rbSlowDisk() rbNemesis {
	return rbNemesis{name: "slow-disk", disk: true, inject: func(r *rbRun) (string, func() error, error) {
		v := r.rng.IntN(r.voters)
		d := r.disks[v]
		if err := d.Throttle(rbDiskIOPS); err != nil {
			return "", nil, err
		}
		// Say in the run's log how slow a synced write of the victim's disk is now, so that a
		// run whose limit did not bite is told apart (the limit is in force: the measure runs
		// in the disk's control group).
		lat, err := d.Measure(3)
		if err != nil {
			lat = -1
		}
		victim := fmt.Sprintf("server %d (synced 4 KB write %v at %d writes/s)", v+1, lat.Round(time.Millisecond), rbDiskIOPS)
		return victim, once(func() error { return d.Throttle(0) }), nil
	}}
}

// rbDisks makes a disk for each of n servers and returns the zoo.cfg keys that put each
// server's dataDir on its disk (myid written there). The disks are removed in t's cleanup,
// which runs after the run's ensemble is closed.
func (r *rbRun) makeDisks(n int) (map[int]map[string]string, error) {
	cfg := map[int]map[string]string{}
	for i := 0; i < n; i++ {
		d, err := slowdisk.New(rbDiskSize)
		if err != nil {
			return nil, err
		}
		r.t.Cleanup(func() {
			if err := d.Close(); err != nil {
				r.t.Errorf("removing server %d's disk: %v", i+1, err)
			}
		})
		r.disks = append(r.disks, d)
		data := filepath.Join(d.Dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
			return nil, err
		}
		cfg[i] = map[string]string{"dataDir": data}
	}
	return cfg, nil
}

// joinDisks puts every server process in its disk's control group.
func (r *rbRun) joinDisks() error {
	for i, d := range r.disks {
		if err := d.Add(r.e.Pid(i)); err != nil {
			return fmt.Errorf("server %d's disk: %w", i+1, err)
		}
	}
	return nil
}
