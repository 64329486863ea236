package linearize

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Kind is a ZooKeeper operation the model knows.
type Kind uint8

// The operations, each on one znode.
const (
	// Get is getData: OK with data and stat, or NoNode. Synced marks sync-then-getData.
	Get Kind = iota + 1
	// Set is setData(path, data, version): OK with the new stat, BadVersion or NoNode.
	Set
	// Create is a persistent create(path, data): OK or NodeExists.
	Create
	// Delete is delete(path, version): OK, BadVersion or NoNode.
	Delete
)

func (k Kind) String() string {
	switch k {
	case Get:
		return "get"
	case Set:
		return "set"
	case Create:
		return "create"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// AnyVersion is the expected version that matches every version (ZooKeeper's -1).
const AnyVersion int32 = -1

// Input is what a client asked for.
type Input struct {
	Kind Kind
	Path string
	// Data is the data written by Set and Create. Tests make it unique per write so that a read
	// names the write it observed; ValidateNoLostWrites relies on that.
	Data string
	// Version is the expected version of Set and Delete, AnyVersion for none.
	Version int32
	// Synced marks a Get that was preceded by sync on the same session and recorded as one
	// operation from before the sync to after the read. Only synced reads are linearizable.
	Synced bool
}

// Result is the outcome kind of an operation.
type Result uint8

// The outcomes.
const (
	// OK: the operation took effect (for Get: the node was read).
	OK Result = iota + 1
	// NoNode, NodeExists and BadVersion are ZooKeeper's answers; the operation had no effect.
	NoNode
	NodeExists
	BadVersion
	// Unknown: the operation may or may not have taken effect, now or later (connection loss
	// with the request in flight, a timeout). Its return time is Open.
	Unknown
	// Failed: the operation certainly did not take effect (it was never sent).
	Failed
)

func (r Result) String() string {
	switch r {
	case OK:
		return "ok"
	case NoNode:
		return "NONODE"
	case NodeExists:
		return "NODEEXISTS"
	case BadVersion:
		return "BADVERSION"
	case Unknown:
		return "unknown"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("result(%d)", uint8(r))
}

// Output is what the client was told.
type Output struct {
	Result Result
	// Data is the data read by a Get that returned OK.
	Data string
	// Version is the node's data version after the operation: read by Get, or the new version
	// returned by Set (both only with Result OK).
	Version int32
	// Czxid and Mzxid are the node's stat zxids as returned by Get or Set (OK); 0 means not
	// known, and the model then does not check them.
	Czxid, Mzxid int64
}

// Open is the return time of an operation whose outcome is unknown: it never returned, as far as
// the history knows (porcupine's +inf).
const Open int64 = math.MaxInt64

// Op is one recorded client operation.
type Op struct {
	// Client numbers the client (zero-based; it is porcupine's ClientId and a visualization row).
	Client int
	// Session is the ZooKeeper session id the operation ran in, or 0 when not known (the session
	// changed while the operation was outstanding). Only ValidateReadsNeverGoBack uses it.
	Session int64
	Input   Input
	Output  Output
	// Call and Return are nanoseconds on the recorder's monotonic clock; Return is Open when
	// Output.Result is Unknown.
	Call, Return int64
}

// Acknowledged reports whether op is a write the client was told took effect.
func (op Op) Acknowledged() bool {
	return op.Input.Kind != Get && op.Output.Result == OK
}

func (op Op) String() string {
	ret := "open"
	if op.Return != Open {
		ret = time.Duration(op.Return).String()
	}
	return fmt.Sprintf("client %d session %#x [%v, %s] %s", op.Client, op.Session,
		time.Duration(op.Call), ret, describeOperation(op.Input, op.Output))
}

// History is a recorded history, ordered by call time.
type History []Op

// Recorder records a History. It is safe for concurrent use.
type Recorder struct {
	start time.Time // carries a monotonic clock reading; every time is time.Since(start)

	mu struct {
		sync.Mutex
		next    int
		done    []Op
		pending map[int]*Pending
	}
}

// NewRecorder returns an empty Recorder whose clock starts now.
func NewRecorder() *Recorder {
	r := &Recorder{start: time.Now()}
	r.mu.pending = map[int]*Pending{}
	return r
}

func (r *Recorder) now() int64 { return int64(time.Since(r.start)) }

// Now returns the recorder's clock, for annotating a test's own events (a server stopped).
func (r *Recorder) Now() int64 { return r.now() }

// Pending is an operation that has been called and not yet ended. Exactly one of End and
// Unknown must be called, once, from any goroutine.
type Pending struct {
	r  *Recorder
	id int
	op Op // guarded by r.mu once Begin returned
}

// Begin records the call of an operation by client, now. Call it just before sending.
func (r *Recorder) Begin(client int, in Input) *Pending {
	p := &Pending{r: r, op: Op{Client: client, Input: in}}
	r.mu.Lock()
	p.id = r.mu.next
	r.mu.next++
	r.mu.pending[p.id] = p
	p.op.Call = r.now()
	r.mu.Unlock()
	return p
}

// Call returns the operation's call time on the recorder's clock.
func (p *Pending) Call() int64 { return p.op.Call }

// End records the return of the operation, now, with what the client was told, in session. An
// Output with Result Unknown is recorded as by Unknown.
func (p *Pending) End(session int64, out Output) {
	ret := p.r.now()
	if out.Result == Unknown {
		ret = Open
		out = Output{Result: Unknown}
	}
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	if _, ok := p.r.mu.pending[p.id]; !ok {
		panic(fmt.Sprintf("linearize: operation ended twice: %v", p.op))
	}
	p.op.Session = session
	p.op.Output = out
	p.op.Return = ret
	delete(p.r.mu.pending, p.id)
	p.r.mu.done = append(p.r.mu.done, p.op)
}

// Unknown records that the outcome of the operation is unknown: it may have taken effect, or
// may yet take effect, or not. Its return time is Open.
func (p *Pending) Unknown(session int64) { p.End(session, Output{Result: Unknown}) }

// History returns everything recorded so far, ordered by call time. Operations still pending are
// included with an unknown outcome.
func (r *Recorder) History() History {
	r.mu.Lock()
	h := make(History, 0, len(r.mu.done)+len(r.mu.pending))
	h = append(h, r.mu.done...)
	for _, p := range r.mu.pending {
		op := p.op
		op.Output = Output{Result: Unknown}
		op.Return = Open
		h = append(h, op)
	}
	r.mu.Unlock()
	slices.SortStableFunc(h, func(a, b Op) int {
		if a.Call != b.Call {
			if a.Call < b.Call {
				return -1
			}
			return 1
		}
		return a.Client - b.Client
	})
	return h
}
