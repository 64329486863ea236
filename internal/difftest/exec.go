package difftest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Target is a ZooKeeper-protocol endpoint under test.
type Target struct {
	// Name labels the target in reports ("apache-zk", "corral").
	Name string
	// Connect is a connect string "host:port[,host:port...]". Every
	// client of a run connects to the first address only: with several
	// servers, reads on different servers may lag each other, which would
	// make two runs legitimately differ.
	Connect string
}

// Addr is the address the runner's clients use: the first entry of Connect.
func (t Target) Addr() string {
	a, _, _ := strings.Cut(t.Connect, ",")
	return strings.TrimSpace(a)
}

type chrootKey struct{}

// Chroot returns the run's path prefix inside a RawFunc ("" elsewhere).
// Script path p lives at Chroot(ctx)+p on the server ("/" at the prefix
// itself).
func Chroot(ctx context.Context) string {
	p, _ := ctx.Value(chrootKey{}).(string)
	return p
}

// side executes a script on one target.
type side struct {
	target  Target
	prefix  string
	opts    Options
	clients [MaxClients]*client
	raw     *rawStore // raw sessions kept across steps (see RawOpen)
}

// client is one logical client's current session. events is appended by
// go-zookeeper's receive goroutine through the event callback.
type client struct {
	conn   *zk.Conn
	sid    int64
	notify chan struct{} // one token per batch of new events

	mu     sync.Mutex
	events []Event
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func newSide(t Target, prefix string, opts Options) *side {
	return &side{target: t, prefix: prefix, opts: opts, raw: newRawStore(prefix)}
}

// abs maps a script path into the prefix.
func (s *side) abs(p string) string {
	switch {
	case p == "/":
		return s.prefix
	case strings.HasPrefix(p, "/"):
		return s.prefix + p
	}
	return p
}

// rel maps a server path back to script space.
func (s *side) rel(p string) string {
	switch {
	case p == s.prefix:
		return "/"
	case strings.HasPrefix(p, s.prefix+"/"):
		return p[len(s.prefix):]
	}
	return p
}

func (s *side) connect(ctx context.Context) (*client, error) {
	c := &client{notify: make(chan struct{}, 1)}
	onEvent := func(ev zk.Event) {
		if ev.Type <= 0 { // session states and go-zookeeper's NotWatching
			return
		}
		c.mu.Lock()
		c.events = append(c.events, Event{Type: EventType(ev.Type), Path: s.rel(ev.Path)})
		c.mu.Unlock()
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
	conn, ch, err := zk.Connect([]string{s.target.Addr()}, s.opts.SessionTimeout,
		zk.WithLogger(nopLogger{}), zk.WithEventCallback(onEvent))
	if err != nil {
		return nil, fmt.Errorf("difftest: connect to %s (%s): %w", s.target.Name, s.target.Addr(), err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.StepTimeout)
	defer cancel()
	for {
		select {
		case ev := <-ch:
			if ev.State == zk.StateHasSession {
				c.conn = conn
				c.sid = conn.SessionID()
				return c, nil
			}
		case <-cctx.Done():
			conn.Close()
			return nil, fmt.Errorf("difftest: no session with %s (%s): %w", s.target.Name, s.target.Addr(), cctx.Err())
		}
	}
}

// setup creates the run's prefix node with a short-lived session.
func (s *side) setup(ctx context.Context) error {
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	if _, err := c.conn.Create(s.prefix, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return fmt.Errorf("difftest: creating prefix %s on %s: %w", s.prefix, s.target.Name, err)
	}
	return nil
}

// session returns client i's session, opening one if needed; opened tells
// whether it is new.
func (s *side) session(ctx context.Context, i int) (c *client, opened bool, err error) {
	if i < 0 || i >= MaxClients {
		return nil, false, fmt.Errorf("difftest: client %d out of range [0,%d)", i, MaxClients)
	}
	if s.clients[i] != nil {
		return s.clients[i], false, nil
	}
	c, err = s.connect(ctx)
	if err != nil {
		return nil, false, err
	}
	s.clients[i] = c
	return c, true, nil
}

// closeAll closes every open session. It unblocks any request in flight.
// Raw connections are dropped without closing their sessions (use
// closeRawSessions first for a graceful end).
func (s *side) closeAll() {
	s.raw.dropAll()
	var wg sync.WaitGroup
	for i, c := range s.clients {
		if c == nil {
			continue
		}
		s.clients[i] = nil
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.conn.Close()
		}()
	}
	wg.Wait()
}

var errStepTimeout = errors.New("difftest: step timed out")

// run executes st, bounded by StepTimeout. On timeout it closes the side's
// sessions, which makes the stuck go-zookeeper call return, waits for it and
// reports errStepTimeout.
func (s *side) run(ctx context.Context, st Step) (Result, error) {
	var c *client
	if st.Op != OpRaw {
		c = s.clients[st.Client]
	}
	type out struct {
		r   Result
		err error
	}
	done := make(chan out, 1)
	var abandoned atomic.Bool
	go func() {
		r, err := s.exec(ctx, c, st, &abandoned)
		done <- out{r, err}
	}()
	t := time.NewTimer(s.opts.StepTimeout)
	defer t.Stop()
	select {
	case o := <-done:
		if st.Op == OpCloseSession {
			s.clients[st.Client] = nil
		}
		return o.r, o.err
	case <-t.C:
	case <-ctx.Done():
	}
	abandoned.Store(true)
	s.closeAll()
	<-done
	return Result{}, fmt.Errorf("%w after %v on %s", errStepTimeout, s.opts.StepTimeout, s.target.Name)
}

func (s *side) exec(ctx context.Context, c *client, st Step, abandoned *atomic.Bool) (Result, error) {
	switch st.Op {
	case OpRaw:
		if st.Raw == nil {
			return Result{}, fmt.Errorf("difftest: raw step %q has no function", st.Name)
		}
		rctx := context.WithValue(context.WithValue(ctx, chrootKey{}, s.prefix), rawStoreKey{}, s.raw)
		r, err := st.Raw(rctx, s.target.Addr())
		if err != nil {
			return Result{}, fmt.Errorf("difftest: raw step %q on %s: %w", st.Name, s.target.Name, err)
		}
		return s.relResult(r), nil
	case OpEvents:
		if c == nil {
			return Result{Events: []Event{}}, nil
		}
		return Result{Events: s.collect(c, st.Wait, abandoned)}, nil
	case OpCloseSession:
		if c == nil {
			return Result{Events: []Event{}}, nil
		}
		ev := s.collect(c, st.Wait, abandoned)
		c.conn.Close() // run forgets the client once this returns
		return Result{Events: ev}, nil
	case OpCheck:
		return Result{}, fmt.Errorf("difftest: check is only valid inside multi")
	}
	return s.call(c.conn, st), nil
}

// call performs one go-zookeeper operation.
func (s *side) call(conn *zk.Conn, st Step) Result {
	p := s.abs(st.Path)
	switch st.Op {
	case OpCreate:
		var (
			created string
			err     error
		)
		switch st.Flags {
		case zk.FlagContainer:
			created, err = conn.CreateContainer(p, st.Data, st.Flags, aclToZK(st.ACL))
		case zk.FlagTTL, zk.FlagPersistentSequentialWithTTL:
			created, err = conn.CreateTTL(p, st.Data, st.Flags, aclToZK(st.ACL), st.TTL)
		default:
			created, err = conn.Create(p, st.Data, st.Flags, aclToZK(st.ACL))
		}
		r := Result{Err: ErrName(err)}
		if err == nil {
			r.Path = s.rel(created)
			if st.Stat {
				// go-zookeeper has no create2: read the stat on the same
				// session before anything else can happen.
				_, stat, serr := conn.Exists(created)
				if serr != nil {
					r.Err = "stat after create: " + ErrName(serr)
				} else {
					r.Stat = statFromZK(stat)
				}
			}
		}
		return r
	case OpDelete:
		return Result{Err: ErrName(conn.Delete(p, st.Version))}
	case OpExists:
		var (
			ok   bool
			stat *zk.Stat
			err  error
		)
		if st.Watch {
			ok, stat, _, err = conn.ExistsW(p)
		} else {
			ok, stat, err = conn.Exists(p)
		}
		r := Result{Err: ErrName(err)}
		if err == nil {
			r.Exists = &ok
			if ok {
				r.Stat = statFromZK(stat)
			}
		}
		return r
	case OpGetData:
		var (
			data []byte
			stat *zk.Stat
			err  error
		)
		if st.Watch {
			data, stat, _, err = conn.GetW(p)
		} else {
			data, stat, err = conn.Get(p)
		}
		if err != nil {
			return Result{Err: ErrName(err)}
		}
		return Result{Data: data, Stat: statFromZK(stat)}
	case OpSetData:
		stat, err := conn.Set(p, st.Data, st.Version)
		if err != nil {
			return Result{Err: ErrName(err)}
		}
		return Result{Stat: statFromZK(stat)}
	case OpGetChildren, OpGetChildren2:
		var (
			kids []string
			stat *zk.Stat
			err  error
		)
		if st.Watch {
			kids, stat, _, err = conn.ChildrenW(p)
		} else {
			kids, stat, err = conn.Children(p)
		}
		if err != nil {
			return Result{Err: ErrName(err)}
		}
		kids = append([]string{}, kids...)
		sort.Strings(kids)
		r := Result{Children: kids}
		if st.Op == OpGetChildren2 {
			r.Stat = statFromZK(stat)
		}
		return r
	case OpGetACL:
		acl, stat, err := conn.GetACL(p)
		if err != nil {
			return Result{Err: ErrName(err)}
		}
		return Result{ACL: aclFromZK(acl), Stat: statFromZK(stat)}
	case OpSetACL:
		stat, err := conn.SetACL(p, aclToZK(st.ACL), st.Version)
		if err != nil {
			return Result{Err: ErrName(err)}
		}
		return Result{Stat: statFromZK(stat)}
	case OpSync:
		got, err := conn.Sync(p)
		if err != nil {
			return Result{Err: ErrName(err)}
		}
		return Result{Path: s.rel(got)}
	case OpAddAuth:
		return Result{Err: ErrName(conn.AddAuth("digest", []byte(st.Auth)))}
	case OpMulti:
		return s.multi(conn, st.Ops)
	}
	return Result{Err: fmt.Sprintf("client: unsupported op %v", st.Op)}
}

func (s *side) multi(conn *zk.Conn, steps []Step) Result {
	ops := make([]any, 0, len(steps))
	for _, o := range steps {
		p := s.abs(o.Path)
		switch o.Op {
		case OpCreate:
			ops = append(ops, &zk.CreateRequest{Path: p, Data: o.Data, Acl: aclToZK(o.ACL), Flags: o.Flags})
		case OpDelete:
			ops = append(ops, &zk.DeleteRequest{Path: p, Version: o.Version})
		case OpSetData:
			ops = append(ops, &zk.SetDataRequest{Path: p, Data: o.Data, Version: o.Version})
		case OpCheck:
			ops = append(ops, &zk.CheckVersionRequest{Path: p, Version: o.Version})
		default:
			return Result{Err: fmt.Sprintf("client: %v not allowed in multi", o.Op)}
		}
	}
	res, err := conn.Multi(ops...)
	r := Result{Err: ErrName(err)}
	if res != nil {
		r.Multi = make([]Result, len(res))
		for i, m := range res {
			sub := Result{Err: ErrName(m.Error), Stat: statFromZK(m.Stat)}
			if m.String != "" {
				sub.Path = s.rel(m.String)
			}
			r.Multi[i] = sub
		}
	}
	return r
}

// collect runs the barrier on c (sync, then exists on the prefix: every
// event ZooKeeper owes the client for earlier steps is delivered before that
// reply), takes the events received so far, and keeps listening for wait.
func (s *side) collect(c *client, wait time.Duration, abandoned *atomic.Bool) []Event {
	if _, err := c.conn.Sync(s.prefix); err == nil && !abandoned.Load() {
		_, _, _ = c.conn.Exists(s.prefix)
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
	listen:
		for {
			select {
			case <-c.notify:
			case <-t.C:
				break listen
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := c.events
	c.events = nil
	if ev == nil {
		ev = []Event{}
	}
	return ev
}

// relResult maps server paths of a raw result into script space.
func (s *side) relResult(r Result) Result {
	if r.Path != "" {
		r.Path = s.rel(r.Path)
	}
	if r.Events != nil {
		ev := make([]Event, len(r.Events))
		for i, e := range r.Events {
			ev[i] = Event{Type: e.Type, Path: s.rel(e.Path)}
		}
		r.Events = ev
	}
	if r.Multi != nil {
		m := make([]Result, len(r.Multi))
		for i, sub := range r.Multi {
			m[i] = s.relResult(sub)
		}
		r.Multi = m
	}
	return r
}
