package faulttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/corral/corral/internal/corralproc"
)

const (
	// fdTmpfsSize holds the full server's data directory: dragonboat's log store (tan)
	// preallocates two 64 MB files per Raft group, three groups here; the test fills the rest.
	fdTmpfsSize = "1g"
	fdFailBound = 30 * time.Second
	// fdBigValue is the size of the big writer's values: the full server's log store writes
	// into preallocated files until it needs a new one (64 MB of log), so the test writes that
	// much to make it need one.
	fdBigValue = 512 << 10
)

// fdMount mounts a tmpfs of size at a new directory and returns it; the unmount is registered
// with t.Cleanup (registered before the ensemble's Close, it runs after it, once no server
// holds files there). It skips the test when it cannot mount (not root, no mount command).
func fdMount(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("full-disk nemesis: needs root to mount a tmpfs")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		t.Skipf("full-disk nemesis: %v", err)
	}
	dir, err := os.MkdirTemp("", "corral-fulldisk-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Skipf("full-disk nemesis: mount tmpfs: %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s (unmounting lazily)", dir, err, bytes.TrimSpace(out))
			exec.Command("umount", "-l", dir).Run()
		}
		os.Remove(dir)
	})
	return dir
}

// fdFill writes a file into dir until the file system is full and returns its path.
func fdFill(dir string) (string, int64, error) {
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		return p, 0, err
	}
	defer f.Close()
	buf := bytes.Repeat([]byte{0xfd}, 1<<20)
	var n int64
	for {
		m, err := f.Write(buf)
		n += int64(m)
		if errors.Is(err, syscall.ENOSPC) {
			return p, n, nil
		}
		if err != nil {
			return p, n, err
		}
	}
}

// fdValue is the big writer's n-th value: its number, then filler.
func fdValue(n int) []byte {
	v := bytes.Repeat([]byte{'.'}, fdBigValue)
	copy(v, fmt.Sprintf("%d;", n))
	return v
}

// TestFullDisk: one server of a 3-process ensemble keeps its data directory on a 64 MB tmpfs,
// which the test fills up while a recorded load runs. The ensemble must keep serving through
// the other two servers; the full server must stop acknowledging and say why in its log (it
// cannot persist the Raft log) rather than acknowledge what it did not persist; after the space
// is freed and it is started again, it catches up and serves. Checked: no acknowledged write is
// lost (read back through every server, the full one included, at the end), the register history
// is linearizable, and the sessions of the load, including those of the full server's clients,
// did not expire.
func TestFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault test: ~30 s (skipped with -short)")
	}
	mnt := fdMount(t, fdTmpfsSize)
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const full = 1 // server 2
	data := filepath.Join(mnt, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", full+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	const shards = 2
	e, err := corralproc.Start(ctx, corralproc.Options{Servers: 3, Shards: shards, TickTime: rollTickTime,
		ServerConfig: map[int]map[string]string{full: {"dataDir": data}}, KeepDir: os.Getenv(rollKeepEnv) != ""})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	all := []int{0, 1, 2}
	t.Logf("ensemble up in %v (%s); server %d's dataDir on a %s tmpfs at %s", time.Since(begin).Round(time.Millisecond),
		e.Dir(), full+1, fdTmpfsSize, mnt)
	l, names := startShardLoad(t, e, "fd", shards)
	defer l.close()
	time.Sleep(time.Second)

	// The big writer: sets of fdBigValue on one key, one at a time; the last acknowledged value
	// (or a later one whose outcome is unknown) must be there at the end.
	bigKey := "/" + names[dataShards(shards)[0]][0] + "/big"
	bigDone := make(chan struct{})
	var bigAcked, bigTried int
	bctx, bstop := context.WithCancel(ctx)
	defer func() { bstop(); <-bigDone }()
	bc := dial(t, e.Addr(0))
	defer bc.Close()
	if _, err := bc.Create(bigKey, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(bigDone)
		for n := 1; bctx.Err() == nil; n++ {
			bigTried = n
			if _, err := bc.Set(bigKey, fdValue(n), -1); err == nil {
				bigAcked = n
			}
		}
	}()

	filler, n, err := fdFill(mnt)
	if err != nil {
		t.Fatalf("filling %s: %v", mnt, err)
	}
	filled := l.rec.Now()
	t.Logf("filled the tmpfs with %d MB at %.1fs into the load", n>>20, time.Duration(filled-l.began).Seconds())

	// The full server fails: its process exits, or it stops answering; either way its log
	// must say it could not write.
	deadline := time.Now().Add(fdFailBound)
	var said string
	for said == "" {
		logged, _ := os.ReadFile(e.LogPath(full))
		for _, line := range strings.Split(string(logged), "\n") {
			if strings.Contains(line, "no space left on device") {
				said = line
				break
			}
		}
		if said == "" && time.Now().After(deadline) {
			t.Fatalf("server %d's log does not say its disk is full %v after it filled up (running %v):\n%s",
				full+1, fdFailBound, e.Running(full), corralproc.Tail(logged, 15))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("server %d said, %v after the disk filled: %.300s", full+1, ms(l.rec.Now()-filled), said)
	bstop() // it was there to make the full server need space; spare the machine's disk
	<-bigDone
	time.Sleep(3 * time.Second) // the load goes on through the other two
	t.Logf("server %d running: %v (%v); the big writer had %d values acknowledged", full+1, e.Running(full),
		map[bool]string{true: "still up: killed before its restart", false: "it exited"}[e.Running(full)], bigAcked)

	// Free the space and start the server again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	_ = e.Kill(full) // if it still runs (stuck), as an operator would
	restarted := time.Now()
	if err := e.StartOne(ctx, full); err != nil {
		t.Fatalf("server %d after freeing space: %v", full+1, err)
	}
	t.Logf("server %d serves again %v after its restart", full+1, time.Since(restarted).Round(time.Millisecond))
	time.Sleep(time.Second)
	l.check(all, 0)
	for _, i := range all {
		c := dial(t, e.Addr(i))
		if _, err := c.Sync(bigKey); err != nil {
			t.Fatal(err)
		}
		d, _, err := c.Get(bigKey)
		c.Close()
		got := -1
		if err == nil && len(d) == fdBigValue {
			fmt.Sscanf(string(d), "%d;", &got)
		}
		if got < bigAcked || got > bigTried || !bytes.Equal(d, fdValue(got)) {
			t.Errorf("server %d: %s holds value %d (%d bytes, %v); last acknowledged %d, last tried %d", i+1, bigKey, got, len(d), err, bigAcked, bigTried)
		}
	}
	t.Logf("big writer: %d values of %d KB acknowledged, the last one read back through every server", bigAcked, fdBigValue>>10)
	t.Logf("total %v", time.Since(begin).Round(time.Millisecond))
}
