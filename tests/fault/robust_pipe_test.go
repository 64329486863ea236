package faulttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	corralclient "github.com/corral/corral/client"
	"github.com/corral/corral/wire"
)

// ---- one session's pipelined writes across shards ----

// A pipe worker writes the way a client without a chroot does (Kafka's /brokers, /config,
// /admin...): one session, many creates in flight, round-robin over top-level subtrees on both
// data shards. It uses Corral's client, whose asynchronous calls fix the order the requests are
// sent in (go-zookeeper's blocking calls from several goroutines would not). A session sends
// bursts of rbPipeDepth creates, waits for their replies, and ends after rbPipeLength creates or
// at its first error (it is never resumed: each session is one ordered stream); the worker then
// opens a new session, starting with its home server and failing over to the others (after a
// session that broke, starting with the next server, as ZooKeeper clients move on).
//
// Checked at the end (checkPipe), per session, over the children of the subtrees: every
// acknowledged create is there; a create that is there was sent; and the creates that are
// there are a prefix of what the session sent: a session's writes apply in the order it sent
// them, across shards, so none applies without every earlier one. Corral runs such bursts in
// group transactions (server/group.go); a group that committed on one shard and not on the
// other, or a later group applied before an earlier one, breaks the prefix.
const (
	rbPipeDepth  = 16
	rbPipeLength = 160
	rbPipePause  = 50 * time.Millisecond
)

// rbPipe is one pipe worker.
type rbPipe struct {
	id   int
	addr []string // home first
	subs []string // top-level names, alternating between the data shards
	w    *rbWorker

	mu       sync.Mutex
	sessions []*rbPipeSession
}

// rbPipeSession is what one session of a pipe worker sent and had acknowledged.
type rbPipeSession struct {
	n     int // the session's number in its names (dials that failed used numbers too)
	sent  int
	acked map[int]bool
}

func (p *rbPipe) path(session, n int) string {
	return fmt.Sprintf("/%s/p%d-%d-%d", p.subs[n%len(p.subs)], p.id, session, n)
}

func (p *rbPipe) run(ctx context.Context, r *rbRun) {
	first := 0 // the server the next dial starts with
	for s := 0; ctx.Err() == nil; s++ {
		// As ZooKeeper clients do, a client whose session broke starts its next one with the
		// next server, not again with the one that failed it (a paused server accepts TCP
		// connections and answers nothing until the dial timeout).
		addrs := append(slices.Clone(p.addr[first:]), p.addr[:first]...)
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := corralclient.Dial(dctx, addrs, corralclient.Options{SessionTimeout: rbSessionTimeout, DialTimeout: 2 * time.Second})
		cancel()
		if err != nil {
			first = (first + 1) % len(p.addr)
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		ps := &rbPipeSession{n: s, acked: map[int]bool{}}
		p.mu.Lock()
		p.sessions = append(p.sessions, ps)
		p.mu.Unlock()
		if !p.stream(ctx, r, c, s, ps) {
			first = (first + 1) % len(p.addr)
		}
		c.Close()
	}
}

// stream sends session s's creates in bursts until rbPipeLength, an error, or the end of ctx;
// false after an error.
func (p *rbPipe) stream(ctx context.Context, r *rbRun, c *corralclient.Conn, s int, ps *rbPipeSession) bool {
	for n := 0; n < rbPipeLength && ctx.Err() == nil; {
		var wg sync.WaitGroup
		var broken bool // under p.mu
		for k := 0; k < rbPipeDepth && n < rbPipeLength; k, n = k+1, n+1 {
			n, path := n, p.path(s, n) // the callback's own n: the loops advance theirs
			p.mu.Lock()
			ps.sent = n + 1
			p.mu.Unlock()
			wg.Add(1)
			c.CreateAsync(path, nil, wire.FlagPersistent, nil, func(_ string, _ wire.Stat, err error) {
				defer wg.Done()
				p.mu.Lock()
				defer p.mu.Unlock()
				switch {
				case err == nil:
					ps.acked[n] = true
					p.w.ok(r.rec.Now())
				case errors.Is(err, wire.ErrConnectionLoss):
					broken = true
				default:
					// Unique names: no create of this worker can fail on its own.
					r.violation("pipe %d session %d: create %s: %v", p.id, s, path, err)
					broken = true
				}
			})
		}
		wg.Wait()
		p.mu.Lock()
		stop := broken
		p.mu.Unlock()
		if stop {
			return false
		}
		if !sleepCtx(ctx, rbPipePause) {
			return true
		}
	}
	return true
}

// checkPipe checks every pipe session's creates against the children of the pipe subtrees
// (see the comment at the top of this file) and returns the acknowledged creates.
func (r *rbRun) checkPipe(w *rbWorkload, checker *zk.Conn) (ops int) {
	applied := map[string]map[int]bool{} // "<worker>-<session>" -> n
	for _, sub := range w.pipeSubs {
		kids := r.children(checker, "/"+sub)
		for _, name := range kids {
			f := strings.Split(strings.TrimPrefix(name, "p"), "-")
			if !strings.HasPrefix(name, "p") || len(f) != 3 {
				r.violation("pipe: unexpected child /%s/%s", sub, name)
				continue
			}
			n, err := strconv.Atoi(f[2])
			if err != nil {
				r.violation("pipe: unexpected child /%s/%s", sub, name)
				continue
			}
			key := f[0] + "-" + f[1]
			if applied[key] == nil {
				applied[key] = map[int]bool{}
			}
			applied[key][n] = true
		}
	}
	sessions, gaps := 0, 0
	for _, p := range w.pipes {
		v, acked, n, g := p.violations(applied)
		for _, msg := range v {
			r.violation("%s", msg)
		}
		ops, sessions, gaps = ops+acked, sessions+n, gaps+g
	}
	r.t.Logf("pipe: %d sessions, %d creates acknowledged, %d sessions with a gap", sessions, ops, gaps)
	return ops
}

// violations checks p's sessions against the applied creates (worker-session key to n): it
// returns the violations, the acknowledged creates, the sessions and those with a gap.
func (p *rbPipe) violations(applied map[string]map[int]bool) (out []string, acked, sessions, gaps int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ps := range p.sessions {
		s := ps.n
		sessions++
		got := applied[fmt.Sprintf("%d-%d", p.id, s)]
		last := -1
		for n := range got {
			if n >= ps.sent {
				out = append(out, fmt.Sprintf("pipe %d session %d: %s exists but was never sent", p.id, s, p.path(s, n)))
			}
			last = max(last, n)
		}
		for n := 0; n < last; n++ {
			if !got[n] {
				gaps++
				out = append(out, fmt.Sprintf("pipe %d session %d: %s is missing but the later %s applied: the session's writes applied out of order",
					p.id, s, p.path(s, n), p.path(s, last)))
				break
			}
		}
		for n := range ps.acked {
			if !got[n] {
				out = append(out, fmt.Sprintf("pipe %d session %d: acknowledged create %s is missing", p.id, s, p.path(s, n)))
			}
			acked++
		}
	}
	return out, acked, sessions, gaps
}
