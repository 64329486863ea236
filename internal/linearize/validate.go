package linearize

import (
	"errors"
	"fmt"
	"sort"
)

// maxReported bounds the violations one validator reports.
const maxReported = 10

// Validate runs every validator and joins their errors.
func Validate(h History) error {
	return errors.Join(ValidateNoLostWrites(h), ValidateReadsNeverGoBack(h))
}

// ValidateNoLostWrites checks that every acknowledged write is reflected by every synced read of
// its path that began after the write returned, and that every written path has a final read:
// a synced read with a definite outcome that began after every write of the path with a definite
// outcome returned. Errors wrap ErrLostAcknowledgedWrite, ErrNoFinalRead or ErrAmbiguousHistory.
//
// A read reflects an acknowledged write W when the operation that produced what it read did not
// end before W began: for data d, the one create or set that wrote d; for NONODE, a delete
// (acknowledged or of unknown outcome) — the initial absence ends before everything. In any
// linearization that read follows W, so the last write before it is W or one placed after W,
// which cannot have returned before W was called. A write's end is its return, or, if earlier,
// the return of the first read (synced or not) that returned its data: a value is visible on a
// ZooKeeper replica only once its write is committed, so the write took effect by then; this
// matters for writes of unknown outcome, which otherwise never end. The check is therefore
// implied by linearizability (plus that rule for plain reads); it exists to name the failure,
// and it relies on writes' data being unique per path.
func ValidateNoLostWrites(h History) error {
	var errs []error
	for _, path := range paths(h) {
		if err := validatePathWrites(path, h); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func validatePathWrites(path string, h History) error {
	var (
		writerOf  = map[string]Op{} // data → the create or set that may have written it
		deletes   []Op              // deletes that may have applied
		acked     []Op
		reads     []Op
		lastWrite int64 = -1 // largest definite return of a write
		errs      []error
	)
	for _, op := range h {
		if op.Input.Path != path {
			continue
		}
		r := op.Output.Result
		if op.Input.Kind == Get {
			if op.Input.Synced && (r == OK || r == NoNode) {
				reads = append(reads, op)
			}
			continue
		}
		if r != Unknown && r != Failed {
			lastWrite = max(lastWrite, op.Return)
		}
		if r == OK {
			acked = append(acked, op)
		}
		if r != OK && r != Unknown {
			continue
		}
		switch op.Input.Kind {
		case Create, Set:
			if prev, dup := writerOf[op.Input.Data]; dup {
				return fmt.Errorf("%w: %s and %s both wrote %q", ErrAmbiguousHistory, prev, op, op.Input.Data)
			}
			writerOf[op.Input.Data] = op
		case Delete:
			deletes = append(deletes, op)
		}
	}
	if len(acked) == 0 {
		return nil
	}
	// A write whose data a read returned took effect before that read returned, whatever its
	// client was told: tighten the return of writes of unknown outcome (and late replies).
	for _, op := range h {
		if op.Input.Path == path && op.Input.Kind == Get && op.Output.Result == OK {
			if x, ok := writerOf[op.Output.Data]; ok && op.Return < x.Return {
				x.Return = op.Return
				writerOf[op.Output.Data] = x
			}
		}
	}
	final := false
	for _, rd := range reads {
		final = final || rd.Call > lastWrite
		// The acknowledged write that is hardest to reflect: the latest-called one that returned
		// before the read began. A read that reflects it reflects every earlier one.
		var w *Op
		for i := range acked {
			if acked[i].Return < rd.Call && (w == nil || acked[i].Call > w.Call) {
				w = &acked[i]
			}
		}
		if w == nil {
			continue
		}
		if rd.Output.Result == OK {
			x, ok := writerOf[rd.Output.Data]
			if ok && x.Return >= w.Call {
				continue
			}
			cause := "no operation wrote that data"
			if ok {
				cause = "it was written by " + x.String() + ", which returned before the acknowledged write began"
			}
			errs = append(errs, fmt.Errorf("%w: %s does not reflect %s: %s", ErrLostAcknowledgedWrite, rd, *w, cause))
		} else {
			reflected := false
			for _, d := range deletes {
				reflected = reflected || d.Return >= w.Call
			}
			if reflected {
				continue
			}
			errs = append(errs, fmt.Errorf("%w: %s does not reflect %s: no delete of %s could follow it",
				ErrLostAcknowledgedWrite, rd, *w, path))
		}
		if len(errs) == maxReported {
			break
		}
	}
	if !final {
		errs = append(errs, fmt.Errorf("%w: %s has %d acknowledged writes and no synced read after the last write returned",
			ErrNoFinalRead, path, len(acked)))
	}
	return errors.Join(errs...)
}

// ValidateReadsNeverGoBack checks ZooKeeper's sequential consistency for a session's view of each
// znode: an operation of a session that observes a node — a read (synced or not) returning OK,
// or the session's own set returning OK — observes a (czxid, version, mzxid) no smaller than
// any observed by an operation of the same session that returned before it was called. Versions
// restart at 0 when a node is deleted and created again, so the comparison is by czxid (which
// incarnation), then version, and mzxid must not decrease either. Operations with Session 0 and
// observations without zxids are skipped. Errors wrap ErrReadWentBack.
func ValidateReadsNeverGoBack(h History) error {
	type key struct {
		session int64
		path    string
	}
	seen := map[key][]Op{} // observations so far, in call order
	var errs []error
	for _, op := range h {
		if op.Session == 0 || op.Output.Result != OK || op.Output.Mzxid == 0 ||
			(op.Input.Kind != Get && op.Input.Kind != Set) {
			continue
		}
		k := key{op.Session, op.Input.Path}
		for _, prev := range seen[k] {
			if prev.Return < op.Call && (newer(prev.Output, op.Output) || prev.Output.Mzxid > op.Output.Mzxid) {
				if len(errs) < maxReported {
					errs = append(errs, fmt.Errorf("%w: %s after %s", ErrReadWentBack, op, prev))
				}
				break
			}
		}
		seen[k] = append(seen[k], op)
	}
	return errors.Join(errs...)
}

// newer reports whether observation a is of a later state of the node than b.
func newer(a, b Output) bool {
	switch {
	case a.Czxid != 0 && b.Czxid != 0 && a.Czxid != b.Czxid:
		return a.Czxid > b.Czxid
	case a.Czxid != 0 && a.Czxid == b.Czxid && a.Version != b.Version:
		return a.Version > b.Version
	}
	return a.Mzxid > b.Mzxid
}

func paths(h History) []string {
	set := map[string]bool{}
	for _, op := range h {
		set[op.Input.Path] = true
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
