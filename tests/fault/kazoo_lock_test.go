package faulttest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral/corral/internal/nemesis"
)

// python is the interpreter that has kazoo (Debian's python3-kazoo).
const python = "/usr/bin/python3"

// TestKazooLockOneHolder: kazoo's Lock recipe never has two holders when the holder's server
// is paused or cut off from its peers for longer than the session timeout. The holder (pinned
// to the victim) counts as holding from "acquired" until kazoo reports SUSPENDED or LOST, as a
// careful kazoo application treats it; the contender (on the other servers) holds from its
// "acquired". The first interval must end before the second begins.
func TestKazooLockOneHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault test")
	}
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		t.Fatalf("kazoo is required (python3-kazoo, make deps): %v", err)
	}
	faults := []fault{pauseFault}
	if nemesis.Available() == nil {
		faults = append(faults, partitionFault(nemesis.Both))
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) { failOn(t, runKazooLock(t, startCorral, f, 10*time.Second)) })
	}
}

// lockSide is one kazoo_lock.py process and the events it printed.
type lockSide struct {
	mu  sync.Mutex
	evs []lockEvent
}

type lockEvent struct {
	Ev string  `json:"ev"`
	T  float64 `json:"t"`
}

func (e lockEvent) at() time.Time { return time.Unix(0, int64(e.T*1e9)) }

func startLockSide(t *testing.T, hosts []string, name string) *lockSide {
	s := &lockSide{}
	runPython(t, "testdata/kazoo_lock.py", func(line []byte) {
		var ev lockEvent
		if json.Unmarshal(line, &ev) == nil {
			s.mu.Lock()
			s.evs = append(s.evs, ev)
			s.mu.Unlock()
		}
	}, strings.Join(hosts, ","), name, fmt.Sprint(sessionFaultTimeout.Seconds()))
	return s
}

// runPython runs a kazoo script of testdata with args, passing each line it prints to onLine
// (on another goroutine). The script runs until the test ends: then its stdin closes (it
// exits), or it is killed after 10 s; its stderr is logged if the test failed.
func runPython(t *testing.T, script string, onLine func([]byte), args ...string) {
	path, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, append([]string{path}, args...)...)
	cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			onLine(sc.Bytes())
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s %s stderr:\n%s", filepath.Base(script), strings.Join(args, " "), stderr.String())
		}
	})
}

// first returns the time of the first event named one of evs at or after from.
func (s *lockSide) first(from time.Time, evs ...string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.evs {
		for _, want := range evs {
			if e.Ev == want && !e.at().Before(from) {
				return e.at()
			}
		}
	}
	return time.Time{}
}

func (s *lockSide) wait(t *testing.T, ev string, from time.Time, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if at := s.first(from, ev); !at.IsZero() {
			return at
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}
}

func (s *lockSide) describe(from time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, e := range s.evs {
		fmt.Fprintf(&b, " %+.2fs:%s", e.at().Sub(from).Seconds(), e.Ev)
	}
	return b.String()
}

func runKazooLock(t *testing.T, start startFunc, f fault, outage time.Duration) (violations []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const victim = 0
	e, err := start(ctx, victim, f.uid)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	began := time.Now()
	holder := startLockSide(t, []string{e.Addr(victim)}, "holder")
	if holder.wait(t, "acquired", began, 60*time.Second).IsZero() {
		t.Fatalf("the holder never acquired the lock (events%s)", holder.describe(began))
	}
	contender := startLockSide(t, []string{e.Addr(1), e.Addr(2)}, "contender")
	time.Sleep(time.Second)
	cutAt, heal := f.start(t, e, victim)
	defer heal()
	took := contender.wait(t, "acquired", began, outage+30*time.Second)
	if took.IsZero() {
		t.Fatalf("the contender never acquired the lock (events%s)", contender.describe(cutAt))
	}
	if d := time.Until(cutAt.Add(outage)); d > 0 {
		time.Sleep(d)
	}
	heal()
	time.Sleep(3 * time.Second) // let the holder hear how it ended
	left := holder.first(cutAt, "SUSPENDED", "LOST")
	if left.IsZero() || !left.Before(took) {
		violations = append(violations, fmt.Sprintf("%s: two holders: the contender acquired the lock %.2fs after the cut, "+
			"the holder left CONNECTED at %s (holder events%s)", f.name, took.Sub(cutAt).Seconds(), since(cutAt, left), holder.describe(cutAt)))
	}
	t.Logf("%s: holder suspended %s after the cut, contender acquired at %.1fs", f.name, since(cutAt, left), took.Sub(cutAt).Seconds())
	return violations
}
