package difftest

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// The random generator's path space: small, so that operations collide
// (NODEEXISTS, NOTEMPTY, BADVERSION, watches firing) often.
var (
	randNodes = []string{"/d", "/d/a", "/d/b", "/d/a/b", "/d/a/c", "/d/b/a", "/e", "/e/a", "/e/a/b"}
	randSeqs  = []string{"/d/s", "/d/a/q", "/e/"}
	randBad   = []string{"d", "/d/", "/d//a", "/d/./a", "/d/../d", "", "/d/a\x00b", "/d/\u0001"}
)

// RandomScript generates a reproducible script of n steps from seed: a mix
// of every step kind on two clients over a small path space, including
// operations that fail (NONODE, NODEEXISTS, BADVERSION, NOTEMPTY,
// NOCHILDRENFOREPHEMERALS, INVALIDACL, NOAUTH, invalid paths) and session
// closes that delete ephemerals. The same (seed, n) always gives the same
// script; reports print both.
func RandomScript(seed int64, n int) Script {
	g := &gen{r: rand.New(rand.NewPCG(uint64(seed), 0x636f7272616c)), live: map[string]int{"/": -1}}
	steps := make([]Step, 0, n)
	for len(steps) < n {
		st := g.step()
		g.apply(st)
		steps = append(steps, st)
	}
	return Script{Name: fmt.Sprintf("random-%d", seed), Seed: seed, Steps: steps}
}

// gen keeps a rough model of which nodes probably exist (live: path →
// owning client for ephemerals, -1 for the rest), built from the steps it
// generated as if they all succeeded. It only steers path choice towards
// existing nodes, so that fewer steps end in NONODE; results are never
// predicted.
type gen struct {
	r    *rand.Rand
	live map[string]int
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// livePath picks a node of the model in a reproducible order.
func (g *gen) livePath(allowRoot bool) (string, bool) {
	paths := make([]string, 0, len(g.live))
	for p := range g.live {
		if p != "/" || allowRoot {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return "", false
	}
	sort.Strings(paths)
	return paths[g.r.IntN(len(paths))], true
}

func (g *gen) hasChildren(p string) bool {
	for q := range g.live {
		if q != p && parentOf(q) == p {
			return true
		}
	}
	return false
}

// apply updates the model with a generated step.
func (g *gen) apply(st Step) {
	switch st.Op {
	case OpCreate:
		if st.Flags == 2 || st.Flags == 3 || st.Flags == 6 || !validScriptPath(st.Path) {
			return
		}
		if st.Flags == 5 && st.TTL <= 0 {
			return
		}
		if _, ok := g.live[parentOf(st.Path)]; !ok {
			return
		}
		if owner, ok := g.live[parentOf(st.Path)]; ok && owner >= 0 {
			return // child of an ephemeral
		}
		if _, ok := g.live[st.Path]; ok {
			return
		}
		if aclBlocksCreate(st.ACL) {
			return
		}
		owner := -1
		if st.Flags == 1 {
			owner = st.Client
		}
		g.live[st.Path] = owner
	case OpDelete:
		if st.Version == -1 && st.Path != "/" && !g.hasChildren(st.Path) {
			delete(g.live, st.Path)
		}
	case OpCloseSession:
		for p, owner := range g.live {
			if owner == st.Client {
				delete(g.live, p)
			}
		}
	}
}

func validScriptPath(p string) bool {
	for _, b := range randBad {
		if p == b {
			return false
		}
	}
	return strings.HasPrefix(p, "/")
}

// aclBlocksCreate reports ACL choices that make the create fail.
func aclBlocksCreate(acl []ACL) bool {
	if acl == nil {
		return false
	}
	if len(acl) == 0 {
		return true
	}
	for _, a := range acl {
		if a.Scheme == "auth" || (a.Scheme == "digest" && !strings.Contains(a.ID, ":")) {
			return true
		}
	}
	return false
}

func (g *gen) pct(p int) bool { return g.r.IntN(100) < p }

func pick[T any](g *gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

func (g *gen) client() int {
	if g.pct(70) {
		return 0
	}
	return 1
}

// path picks a target path: mostly existing-or-not nodes, sometimes a
// sequential name that earlier creates may have produced, the root, or an
// invalid path.
func (g *gen) path(allowRoot bool) string {
	if g.pct(55) {
		if p, ok := g.livePath(allowRoot); ok {
			return p
		}
	}
	switch n := g.r.IntN(100); {
	case n < 72:
		return pick(g, randNodes)
	case n < 88:
		return fmt.Sprintf("%s%010d", pick(g, randSeqs), g.r.IntN(12))
	case n < 95 && allowRoot:
		return "/"
	case n < 97:
		return pick(g, randBad)
	}
	return pick(g, randNodes)
}

func (g *gen) data() []byte {
	switch n := g.r.IntN(100); {
	case n < 15:
		return nil
	case n < 25:
		return []byte{}
	case n < 95:
		buf := make([]byte, 1+g.r.IntN(32))
		for i := range buf {
			buf[i] = byte('a' + g.r.IntN(26))
		}
		return buf
	}
	return make([]byte, 1000+g.r.IntN(100))
}

func (g *gen) version() int32 {
	switch n := g.r.IntN(100); {
	case n < 50:
		return -1
	case n < 70:
		return 0
	case n < 85:
		return 1
	case n < 95:
		return 2
	}
	return 7
}

func (g *gen) acl(allowDefault bool) []ACL {
	if allowDefault && g.pct(85) {
		return nil
	}
	switch g.r.IntN(9) {
	case 0:
		return WorldACL(PermRead)
	case 1:
		return WorldACL(PermRead | PermCreate | PermDelete)
	case 2:
		return DigestACL(PermAll, userAlice)
	case 3:
		return append(WorldACL(PermRead), DigestACL(PermAll, userBob)...)
	case 4:
		return AuthACL(PermAll)
	case 5:
		return EmptyACL()
	case 6:
		return []ACL{{PermAll, "ip", "127.0.0.1"}}
	case 7:
		return []ACL{{PermAll, "digest", "nocolon"}}
	}
	return WorldACL(PermAll)
}

func (g *gen) create(c int) Step {
	flags := int32(0)
	switch n := g.r.IntN(100); {
	case n < 45:
		flags = 0
	case n < 60:
		flags = 1
	case n < 70:
		flags = 2
	case n < 78:
		flags = 3
	case n < 86:
		flags = 4
	case n < 93:
		flags = 5
	default:
		flags = 6
	}
	p := g.path(false)
	if g.pct(60) {
		// A new child of a node that probably exists.
		if parent, ok := g.livePath(true); ok && depth(parent) < 3 {
			name := pick(g, []string{"a", "b", "c"})
			if parent == "/" {
				name = pick(g, []string{"d", "e"})
				parent = ""
			}
			p = parent + "/" + name
		}
	}
	if flags == 2 || flags == 3 || flags == 6 {
		if g.pct(80) {
			p = pick(g, randSeqs)
		}
	}
	st := Step{Op: OpCreate, Client: c, Path: p, Data: g.data(), Flags: flags, ACL: g.acl(true), Stat: g.pct(50)}
	if flags == 5 || flags == 6 {
		st.TTL = time.Hour
		if g.pct(10) {
			st.TTL = 0
		}
	}
	return st
}

func (g *gen) multiOp() Step {
	switch g.r.IntN(4) {
	case 0:
		st := g.create(0)
		if st.Flags > 3 && g.pct(70) {
			st.Flags = int32(g.r.IntN(4))
		}
		st.Stat = false
		return st
	case 1:
		return Step{Op: OpDelete, Path: g.path(false), Version: g.version()}
	case 2:
		return Step{Op: OpSetData, Path: g.path(false), Data: g.data(), Version: g.version()}
	}
	return Step{Op: OpCheck, Path: g.path(false), Version: g.version()}
}

func (g *gen) step() Step {
	c := g.client()
	switch n := g.r.IntN(100); {
	case n < 24:
		return g.create(c)
	case n < 34:
		return Step{Op: OpDelete, Client: c, Path: g.path(false), Version: g.version()}
	case n < 42:
		return Step{Op: OpExists, Client: c, Path: g.path(true), Watch: g.pct(60)}
	case n < 50:
		return Step{Op: OpGetData, Client: c, Path: g.path(true), Watch: g.pct(60)}
	case n < 60:
		return Step{Op: OpSetData, Client: c, Path: g.path(false), Data: g.data(), Version: g.version()}
	case n < 64:
		return Step{Op: OpGetChildren, Client: c, Path: g.path(true), Watch: g.pct(60)}
	case n < 68:
		return Step{Op: OpGetChildren2, Client: c, Path: g.path(true), Watch: g.pct(60)}
	case n < 71:
		return Step{Op: OpGetACL, Client: c, Path: g.path(true)}
	case n < 74:
		return Step{Op: OpSetACL, Client: c, Path: g.path(false), ACL: g.acl(false), Version: g.version()}
	case n < 83:
		ops := make([]Step, 1+g.r.IntN(4))
		for i := range ops {
			ops[i] = g.multiOp()
		}
		return Step{Op: OpMulti, Client: c, Ops: ops}
	case n < 85:
		return Step{Op: OpSync, Client: c, Path: g.path(true)}
	case n < 87:
		return Step{Op: OpAddAuth, Client: c, Auth: pick(g, []string{userAlice, userBob})}
	case n < 97:
		return Step{Op: OpEvents, Client: c}
	}
	return Step{Op: OpCloseSession, Client: c}
}
