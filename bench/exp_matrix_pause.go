package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral/corral/client"
	"github.com/corral/corral/router"
)

// The matrix keeps every target's ensemble running and measures each row on one target after
// the other (matrixPart). An idle ensemble is not free: an idle 3-server Corral ensemble used
// about 0.26 cores of this 2-core machine (Raft heartbeats of five groups, session renewals),
// which would be taken from whichever target is measured. So the ensembles not being measured
// are paused with SIGSTOP and continued (SIGCONT) before their next row, which then starts only
// once every server accepts a session and commits a write on every shard again.

// resumeTimeout bounds how long a continued ensemble may take to serve again.
const resumeTimeout = 90 * time.Second

// probePaths returns top-level znodes that between them land on every data shard of a Corral
// ensemble with shards shards (hash placement, router.TopLevelShard); one for an unsharded one.
// A resumed ensemble has to commit a write to each before its row starts.
func probePaths(shards int) []string {
	if shards <= 1 {
		return []string{"/probe-0"}
	}
	ids := make([]uint64, shards)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	seen := map[uint64]bool{}
	var out []string
	for i := 0; i < 64*shards && len(seen) < shards; i++ {
		name := "probe-" + strconv.Itoa(i)
		if s := router.TopLevelShard(name, ids); !seen[s] {
			seen[s] = true
			out = append(out, "/"+name)
		}
	}
	return out
}

// signal sends sig to every server process of m's ensemble.
func (m *matrixRun) signal(sig syscall.Signal) error {
	pids, err := m.pids()
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			errs = append(errs, fmt.Errorf("pid %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}

// pause stops m's servers (SIGSTOP) unless they are stopped already.
func (m *matrixRun) pause() error {
	if m.paused {
		return nil
	}
	if err := m.signal(syscall.SIGSTOP); err != nil {
		m.signal(syscall.SIGCONT) // the ones that did stop
		return err
	}
	m.paused = true
	return nil
}

// resume continues m's servers if paused and waits until each of them accepts a session and
// commits a write to every probe znode (every shard), retrying for resumeTimeout.
func (m *matrixRun) resume(ctx context.Context) error {
	if !m.paused {
		return nil
	}
	if err := m.signal(syscall.SIGCONT); err != nil {
		return err
	}
	m.paused = false
	m.e.prog.Stage("%s: continued, waiting until every server serves", m.t.Name())
	rctx, cancel := context.WithTimeout(ctx, resumeTimeout)
	defer cancel()
	for i, addr := range m.addrs {
		var last error
		for {
			if last = probeServer(rctx, addr, m.probes); last == nil {
				break
			}
			if sleepUntil(rctx, time.Now().Add(200*time.Millisecond)) {
				return fmt.Errorf("server %d does not serve %v after SIGCONT: %w", i+1, resumeTimeout, last)
			}
		}
	}
	return nil
}

// probeServer opens a session with addr alone and sets the data of every probe znode.
func probeServer(ctx context.Context, addr string, probes []string) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.Dial(pctx, []string{addr}, client.Options{DialTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	for _, p := range probes {
		if _, err := c.Set(pctx, p, nil, -1); err != nil {
			return fmt.Errorf("setData %s: %w", p, err)
		}
	}
	return nil
}

// focus makes m the only running ensemble of runs: the others are paused, m is resumed.
func focus(ctx context.Context, runs []*matrixRun, m *matrixRun) error {
	var errs []string
	for _, o := range runs {
		if o != m {
			if err := o.pause(); err != nil {
				// Measured anyway, beside a running idle ensemble; the summary says so.
				errs = append(errs, fmt.Sprintf("%s not paused: %v", o.t.Name(), err))
			}
		}
	}
	if err := m.resume(ctx); err != nil {
		return err
	}
	if len(errs) > 0 {
		m.e.prog.Logf("warning: %s", strings.Join(errs, "; "))
		m.unpausedPeers = strings.Join(errs, "; ")
	}
	return nil
}
