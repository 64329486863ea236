package linearize

import (
	"fmt"
	"hash/maphash"
	"strconv"

	"github.com/anishathalye/porcupine"
)

// Model is the porcupine model of Get, Set, Create and Delete on znodes, partitioned by path.
// Inputs are Input values, outputs Output values, and the per-path state a Znode. It is
// deterministic: an operation with an unknown outcome takes effect when it is placed in the
// linearization (if its preconditions hold), and porcupine may place it after every other
// operation, which is the "never applied" resolution.
var Model = porcupine.Model{
	Partition: partitionByPath,
	Init:      func() any { return Znode{} },
	Step: func(state, input, output any) (bool, any) {
		return Step(state.(Znode), input.(Input), output.(Output))
	},
	Equal: func(a, b any) bool { return a.(Znode) == b.(Znode) },
	Hash:  func(state any) uint64 { return maphash.Comparable(hashSeed, state.(Znode)) },
	DescribeOperation: func(input, output any) string {
		return describeOperation(input.(Input), output.(Output))
	},
	DescribeState: func(state any) string { return state.(Znode).String() },
	DescribeOperationMetadata: func(md any) string {
		if s, ok := md.(int64); ok && s != 0 {
			return fmt.Sprintf("session %#x", s)
		}
		return ""
	},
}

var hashSeed = maphash.MakeSeed()

// Znode is the model's state of one path.
type Znode struct {
	Exists  bool
	Data    string
	Version int32
	// Czxid and Mzxid of the node when known, 0 when the history has not revealed them yet.
	Czxid, Mzxid int64
	// Base is an exclusive lower bound for an unknown Czxid: the largest zxid known of the
	// writes placed before this incarnation's create.
	Base int64
	// Floor is the largest zxid known of the writes placed so far on this path, an exclusive
	// lower bound for an unknown Mzxid and for the zxid of the next write.
	Floor int64
}

func (z Znode) String() string {
	if !z.Exists {
		return "none"
	}
	return fmt.Sprintf("%q v%d%s%s", z.Data, z.Version, zxidString(" c", z.Czxid), zxidString(" m", z.Mzxid))
}

func zxidString(prefix string, z int64) string {
	if z == 0 {
		return prefix + "=?"
	}
	return prefix + "=0x" + strconv.FormatInt(z, 16)
}

// Step is the model's transition: whether a znode in state z can answer in with out, and the
// state afterwards. It never modifies its arguments.
func Step(z Znode, in Input, out Output) (bool, Znode) {
	switch out.Result {
	case Failed:
		return true, z
	case Unknown:
		return true, applyUnknown(z, in)
	}
	versionOK := in.Version == AnyVersion || in.Version == z.Version
	switch in.Kind {
	case Get:
		switch out.Result {
		case NoNode:
			return !z.Exists, z
		case OK:
			if !z.Exists || out.Data != z.Data || out.Version != z.Version {
				return false, z
			}
			return learnStat(z, out.Czxid, out.Mzxid)
		}
	case Set:
		switch out.Result {
		case NoNode:
			return !z.Exists, z
		case BadVersion:
			return z.Exists && !versionOK, z
		case OK:
			if !z.Exists || !versionOK || out.Version != z.Version+1 {
				return false, z
			}
			// learnStat also requires the new mzxid to exceed every zxid placed before.
			n := z
			n.Data, n.Version, n.Mzxid = in.Data, z.Version+1, 0
			ok, n := learnStat(n, out.Czxid, out.Mzxid)
			return ok, n
		}
	case Create:
		switch out.Result {
		case NodeExists:
			return z.Exists, z
		case OK:
			if z.Exists {
				return false, z
			}
			return true, created(z, in.Data)
		}
	case Delete:
		switch out.Result {
		case NoNode:
			return !z.Exists, z
		case BadVersion:
			return z.Exists && !versionOK, z
		case OK:
			if !z.Exists || !versionOK {
				return false, z
			}
			return true, Znode{Floor: z.Floor}
		}
	}
	return false, z
}

// applyUnknown applies an operation of unknown outcome as if it took effect now: a write whose
// preconditions hold changes the node (with zxids unknown), anything else changes nothing.
func applyUnknown(z Znode, in Input) Znode {
	versionOK := in.Version == AnyVersion || in.Version == z.Version
	switch in.Kind {
	case Set:
		if z.Exists && versionOK {
			z.Data, z.Version, z.Mzxid = in.Data, z.Version+1, 0
		}
	case Create:
		if !z.Exists {
			z = created(z, in.Data)
		}
	case Delete:
		if z.Exists && versionOK {
			z = Znode{Floor: z.Floor}
		}
	}
	return z
}

func created(z Znode, data string) Znode {
	return Znode{Exists: true, Data: data, Base: z.Floor, Floor: z.Floor}
}

// learnStat checks the czxid and mzxid a reply revealed (0: not revealed) against z and fills in
// the unknown ones. Both bounds are taken from z as it was before.
func learnStat(z Znode, czxid, mzxid int64) (bool, Znode) {
	c, ok := learn(z.Czxid, czxid, z.Base)
	if !ok {
		return false, z
	}
	m, ok := learn(z.Mzxid, mzxid, z.Floor)
	if !ok {
		return false, z
	}
	if c != 0 && m != 0 && c > m {
		return false, z
	}
	z.Czxid, z.Mzxid = c, m
	z.Floor = max(z.Floor, c, m)
	return true, z
}

// learn checks a revealed zxid got (0: not revealed) against the known one, or, when unknown,
// against the exclusive lower bound floor; it returns the zxid now known.
func learn(known, got, floor int64) (int64, bool) {
	switch {
	case got == 0:
		return known, true
	case known != 0:
		return known, got == known
	default:
		return got, got > floor
	}
}

func partitionByPath(history []porcupine.Operation) [][]porcupine.Operation {
	index := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range history {
		p := op.Input.(Input).Path
		i, ok := index[p]
		if !ok {
			i = len(parts)
			index[p] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

func describeOperation(in Input, out Output) string {
	var call string
	switch in.Kind {
	case Get:
		call = "get(" + in.Path + ")"
		if in.Synced {
			call = "sync+" + call
		}
	case Set:
		call = fmt.Sprintf("set(%s, %q, v%d)", in.Path, in.Data, in.Version)
	case Create:
		call = fmt.Sprintf("create(%s, %q)", in.Path, in.Data)
	case Delete:
		call = fmt.Sprintf("delete(%s, v%d)", in.Path, in.Version)
	default:
		call = fmt.Sprintf("%v(%s)", in.Kind, in.Path)
	}
	var ret string
	switch {
	case out.Result == Unknown:
		ret = "?"
	case out.Result != OK:
		ret = out.Result.String()
	case in.Kind == Get:
		ret = fmt.Sprintf("%q v%d%s%s", out.Data, out.Version, zxidString(" c", out.Czxid), zxidString(" m", out.Mzxid))
	case in.Kind == Set:
		ret = fmt.Sprintf("v%d%s", out.Version, zxidString(" m", out.Mzxid))
	default:
		ret = "ok"
	}
	return call + " -> " + ret
}
