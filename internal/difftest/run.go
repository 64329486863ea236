package difftest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Options tune a run. The zero value is usable.
type Options struct {
	// SessionTimeout requested by every client; default 10s.
	SessionTimeout time.Duration
	// StepTimeout bounds one step on one target (and connecting); default
	// 20s. A step that times out ends the run with a mismatch.
	StepTimeout time.Duration
	// FinalWait is how long the end-of-script event collection listens
	// for late events after its barrier; default 50ms.
	FinalWait time.Duration
	// Context is how many preceding steps a report shows; default 8.
	Context int
	// Trace, if set, is called after every step that agreed (for verbose
	// test output: difftest tests enable it with DIFFTEST_TRACE=1).
	Trace func(StepRecord)
}

func (o Options) withDefaults() Options {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 20 * time.Second
	}
	if o.FinalWait == 0 {
		o.FinalWait = 50 * time.Millisecond
	}
	if o.Context <= 0 {
		o.Context = 8
	}
	return o
}

// StepRecord is one executed step with both results.
type StepRecord struct {
	Index     int
	Step      string
	Oracle    Result
	Candidate Result
	Took      [2]time.Duration // oracle, candidate
}

// Mismatch is the first disagreement of a run.
type Mismatch struct {
	// Step is the index in Script.Steps; len(Script.Steps) stands for the
	// end-of-script event collection.
	Step      int
	Op        string // the step, rendered
	Diff      Diff
	Oracle    Result
	Candidate Result
}

// Report is the outcome of running one script against two targets.
type Report struct {
	Script    string
	Seed      int64
	NumSteps  int
	Prefix    string // the chroot-like prefix both targets used
	Oracle    string // target names
	Candidate string
	Executed  int       // steps executed (including the mismatching one)
	Mismatch  *Mismatch // nil when the targets agreed on everything
	// Recent holds the last Options.Context steps before the mismatch.
	Recent []StepRecord
}

// OK reports whether the targets agreed.
func (r *Report) OK() bool { return r.Mismatch == nil }

// String renders the report; for a mismatch it names the step, the field,
// both results, the steps leading to it and how to replay the script.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "difftest: script %q", r.Script)
	if r.Seed != 0 {
		fmt.Fprintf(&b, " (seed %d; replay with difftest.RandomScript(%d, %d))", r.Seed, r.Seed, r.NumSteps)
	}
	fmt.Fprintf(&b, ", prefix %s, oracle %q, candidate %q: ", r.Prefix, r.Oracle, r.Candidate)
	if r.Mismatch == nil {
		fmt.Fprintf(&b, "agreed on %d steps", r.Executed)
		return b.String()
	}
	m := r.Mismatch
	where := fmt.Sprintf("step %d: %s", m.Step, m.Op)
	if m.Step >= r.NumSteps {
		where = "end of script: " + m.Op
	}
	fmt.Fprintf(&b, "MISMATCH at %s\n", where)
	fmt.Fprintf(&b, "  field:     %s (%s)\n", m.Diff.Field, m.Diff.Reason)
	fmt.Fprintf(&b, "  oracle:    %s\n", m.Oracle)
	fmt.Fprintf(&b, "  candidate: %s\n", m.Candidate)
	if len(r.Recent) > 0 {
		b.WriteString("  preceding steps (oracle results):\n")
		for _, s := range r.Recent {
			fmt.Fprintf(&b, "    %3d %s => %s\n", s.Index, s.Step, s.Oracle)
		}
	}
	return b.String()
}

var prefixSeq atomic.Int64

// newPrefix makes a fresh top-level node name for one run. Both targets get
// the same one.
func newPrefix(script string) string {
	var b strings.Builder
	for _, r := range script {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return fmt.Sprintf("/difftest-%s-%x-%d", b.String(), time.Now().UnixNano(), prefixSeq.Add(1))
}

// Execute runs script against both targets in lockstep: each step runs on
// the oracle, then on the candidate, and the results are compared before the
// next step. It stops at the first mismatch. Each run uses a fresh prefix
// node (created on both targets) under which all script paths live. At the
// end, every open client's remaining events are collected and compared, and
// all sessions are closed.
//
// The error is for failures that are not differences: a target that cannot
// be reached or set up, or a malformed script.
func Execute(ctx context.Context, oracle, candidate Target, script Script, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	prefix := newPrefix(script.Name)
	rep := &Report{
		Script: script.Name, Seed: script.Seed, NumSteps: len(script.Steps), Prefix: prefix,
		Oracle: oracle.Name, Candidate: candidate.Name,
	}
	sides := [2]*side{newSide(oracle, prefix, opts), newSide(candidate, prefix, opts)}
	defer func() {
		for _, s := range sides {
			s.raw.closeSessions(ctx)
			s.closeAll()
		}
	}()
	for _, s := range sides {
		if err := s.setup(ctx); err != nil {
			return nil, err
		}
	}
	cmp := NewComparator()
	var recent []StepRecord

	mismatch := func(i int, op string, d Diff, ro, rc Result) *Report {
		rep.Mismatch = &Mismatch{Step: i, Op: op, Diff: d, Oracle: ro, Candidate: rc}
		rep.Recent = recent
		return rep
	}

	for i, st := range script.Steps {
		if err := validate(st); err != nil {
			return nil, fmt.Errorf("difftest: script %q step %d (%s): %w", script.Name, i, st, err)
		}
		rep.Executed = i + 1
		label := fmt.Sprintf("step %d", i)
		if needsSession(st.Op) {
			var sids [2]int64
			var opened [2]bool
			for j, s := range sides {
				c, o, err := s.session(ctx, st.Client)
				if err != nil {
					if j == 0 {
						return nil, err
					}
					return mismatch(i, st.String(), Diff{Field: "session", Reason: err.Error()}, Result{}, Result{}), nil
				}
				sids[j], opened[j] = c.sid, o
			}
			if opened[0] != opened[1] {
				return nil, fmt.Errorf("difftest: internal: session bookkeeping diverged at step %d", i)
			}
			if opened[0] {
				cmp.where = label + fmt.Sprintf(" (session of client %d)", st.Client)
				if err := cmp.PairSessions(sids[0], sids[1]); err != nil {
					var d *Diff
					errors.As(err, &d)
					return mismatch(i, st.String(), *d, Result{}, Result{}), nil
				}
			}
		}
		var res [2]Result
		var took [2]time.Duration
		for j, s := range sides {
			began := time.Now()
			r, err := s.run(ctx, st)
			took[j] = time.Since(began)
			if err != nil {
				if errors.Is(err, errStepTimeout) {
					res[j] = Result{Err: "client: " + err.Error()}
					continue
				}
				return nil, err
			}
			res[j] = r
		}
		if d := cmp.Compare(label, res[0], res[1]); d != nil {
			return mismatch(i, st.String(), *d, res[0], res[1]), nil
		}
		if strings.HasPrefix(res[0].Err, "client: "+errStepTimeout.Error()) {
			return mismatch(i, st.String(), Diff{Field: "err", Reason: "both targets timed out"}, res[0], res[1]), nil
		}
		rec := StepRecord{Index: i, Step: st.String(), Oracle: res[0], Candidate: res[1], Took: took}
		if opts.Trace != nil {
			opts.Trace(rec)
		}
		recent = append(recent, rec)
		if len(recent) > opts.Context {
			recent = recent[1:]
		}
	}

	// End of script: whatever events are still due must agree too.
	for ci := 0; ci < MaxClients; ci++ {
		if (sides[0].clients[ci] == nil) != (sides[1].clients[ci] == nil) {
			return nil, fmt.Errorf("difftest: internal: client %d open on one side only", ci)
		}
		if sides[0].clients[ci] == nil {
			continue
		}
		st := Step{Op: OpEvents, Client: ci, Wait: opts.FinalWait}
		var res [2]Result
		for j, s := range sides {
			r, err := s.run(ctx, st)
			if err != nil && !errors.Is(err, errStepTimeout) {
				return nil, err
			}
			res[j] = r
		}
		if d := cmp.Compare("end of script", res[0], res[1]); d != nil {
			return mismatch(len(script.Steps), st.String(), *d, res[0], res[1]), nil
		}
	}
	// And so must the events of raw sessions still open on both sides.
	names := sides[0].raw.names()
	if got := sides[1].raw.names(); !slices.Equal(names, got) {
		return nil, fmt.Errorf("difftest: internal: raw sessions %q on the oracle, %q on the candidate", names, got)
	}
	for _, name := range names {
		st := RawEvents(name, opts.FinalWait)
		var res [2]Result
		for j, s := range sides {
			r, err := s.run(ctx, st)
			if err != nil && !errors.Is(err, errStepTimeout) {
				return nil, err
			}
			res[j] = r
		}
		if d := cmp.Compare("end of script", res[0], res[1]); d != nil {
			return mismatch(len(script.Steps), st.String(), *d, res[0], res[1]), nil
		}
	}
	return rep, nil
}

func needsSession(op Op) bool {
	switch op {
	case OpRaw, OpEvents, OpCloseSession:
		return false
	}
	return true
}

func validate(st Step) error {
	if st.Client < 0 || st.Client >= MaxClients {
		return fmt.Errorf("client %d out of range [0,%d)", st.Client, MaxClients)
	}
	switch st.Op {
	case OpCheck:
		return errors.New("check outside multi")
	case OpMulti:
		for _, o := range st.Ops {
			switch o.Op {
			case OpCreate, OpDelete, OpSetData, OpCheck:
			default:
				return fmt.Errorf("%v inside multi", o.Op)
			}
		}
	case OpRaw:
		if st.Raw == nil {
			return errors.New("raw step without function")
		}
	}
	if _, ok := opNames[st.Op]; !ok {
		return fmt.Errorf("unknown op %d", st.Op)
	}
	return nil
}

// Run executes script against oracle and candidate (see Execute) and fails
// t with the report on a mismatch or error.
func Run(t testing.TB, oracle, candidate Target, script Script) {
	t.Helper()
	RunWithOptions(t, oracle, candidate, script, Options{})
}

// RunWithOptions is Run with options.
func RunWithOptions(t testing.TB, oracle, candidate Target, script Script, opts Options) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	if opts.Trace == nil && os.Getenv("DIFFTEST_TRACE") != "" {
		opts.Trace = func(r StepRecord) {
			t.Logf("%3d %s => %s [%v, %v]", r.Index, r.Step, r.Oracle, r.Took[0].Round(time.Millisecond), r.Took[1].Round(time.Millisecond))
		}
	}
	rep, err := Execute(ctx, oracle, candidate, script, opts)
	if err != nil {
		if script.Seed != 0 {
			t.Fatalf("script %q (seed %d): %v", script.Name, script.Seed, err)
		}
		t.Fatalf("script %q: %v", script.Name, err)
	}
	if !rep.OK() {
		t.Fatal(rep.String())
	}
	t.Logf("%s (%v)", rep, time.Since(began).Round(time.Millisecond))
}
