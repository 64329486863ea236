package nemesis

import (
	"os"
	"strconv"
)

// Server is one server process as the rules see it: the ports it listens on for its peers and
// the user id it runs under.
type Server struct {
	Ports []int
	UID   int
}

// Cut drops every packet between servers a and b, both ways, on the connections either of them
// opened to the other; each keeps its links to every other server. With three servers, cutting
// two of them apart leaves the third as the only bridge between them (Jepsen's "bridge" on a
// three-node ensemble). Heal undoes it.
//
// On loopback every packet passes OUTPUT with its sending socket's owner, so the rules match
// the sender's uid: a's packets to b's ports and b's to a's, and on the connections one of them
// opened (marked when they open, one mark per side) the other's replies.
func Cut(a, b Server) (*Partition, error) {
	Sweep()
	pid := os.Getpid()
	comment := []string{"-m", "comment", "--comment", commentPrefix + strconv.Itoa(pid)}
	uid := func(s Server) []string { return []string{"-m", "owner", "--uid-owner", strconv.Itoa(s.UID)} }
	out := func(match ...string) []string {
		r := append([]string{"OUTPUT", "-o", "lo", "-p", "tcp"}, match...)
		return append(r, comment...)
	}
	markOf := func(side int) string { return strconv.Itoa(0x7d00_0000 | side<<20 | pid&0xfffff) }
	var rules [][]string
	for side, s := range []Server{a, b} {
		other := b
		if side == 1 {
			other = a
		}
		// Connections s opens are marked with its side's mark.
		rules = append(rules, append(out(append(uid(s), "-m", "conntrack", "--ctdir", "ORIGINAL")...),
			"-j", "CONNMARK", "--set-mark", markOf(side)))
		// s's packets to the other's ports (on connections s opened).
		for _, p := range other.Ports {
			rules = append(rules, append(out(append(uid(s), "--dport", strconv.Itoa(p))...), "-j", "DROP"))
		}
		// s's packets on connections the other opened (s's replies).
		rules = append(rules, append(out(append(uid(s), "-m", "connmark", "--mark", markOf(1-side))...), "-j", "DROP"))
	}
	return install(rules)
}
