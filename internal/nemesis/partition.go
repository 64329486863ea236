package nemesis

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Direction says which traffic of the isolated server is dropped.
type Direction int

// Directions.
const (
	// Both drops everything between the server and its peers: a symmetric partition.
	Both Direction = iota
	// Inbound drops only what the peers send to the server; its own messages still arrive.
	Inbound
	// Outbound drops only what the server sends; it still hears its peers.
	Outbound
)

func (d Direction) String() string {
	switch d {
	case Inbound:
		return "inbound"
	case Outbound:
		return "outbound"
	}
	return "both"
}

const commentPrefix = "corral-nemesis-"

// Available reports why the package cannot inject faults here, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("nemesis: needs root (iptables)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	return nil
}

// Partition is a set of rules in force; Heal removes them.
type Partition struct {
	mu    sync.Mutex
	rules [][]string // each a chain and its match and target, as passed to iptables -A
}

// Isolate cuts the server that listens for its peers on ports and runs as uid off from the
// peers listening on peers, in direction d. A direction drops every packet that
// travels that way, TCP acknowledgements included, as a broken link would: so an inbound cut
// also stalls what the server sends on its own connections, as it would between hosts.
func Isolate(ports []int, uid int, peers []int, d Direction) (*Partition, error) {
	Sweep()
	pid := os.Getpid()
	mark := strconv.Itoa(0x7c00_0000 | pid&0xffffff)
	comment := []string{"-m", "comment", "--comment", commentPrefix + strconv.Itoa(pid)}
	rule := func(chain, iface string, match ...string) []string {
		r := append([]string{chain, iface, "lo", "-p", "tcp"}, match...)
		return append(r, comment...)
	}
	drop := func(r []string) []string { return append(r, "-j", "DROP") }
	uidMatch := []string{"-m", "owner", "--uid-owner", strconv.Itoa(uid)}
	// Connections the server opens are marked, so that the peers' packets on them can be told
	// from the peers' packets on their connections to each other.
	rules := [][]string{append(rule("OUTPUT", "-o", append(uidMatch, "-m", "conntrack", "--ctdir", "ORIGINAL")...),
		"-j", "CONNMARK", "--set-mark", mark)}
	if d == Both || d == Inbound {
		// Peers to server: on the connections they opened, and on those the server opened.
		for _, p := range ports {
			rules = append(rules, drop(rule("INPUT", "-i", "--dport", strconv.Itoa(p))))
		}
		for _, p := range peers {
			rules = append(rules, drop(rule("INPUT", "-i", "--sport", strconv.Itoa(p),
				"-m", "connmark", "--mark", mark, "-m", "conntrack", "--ctdir", "REPLY")))
		}
	}
	if d == Both || d == Outbound {
		// Server to peers: on the connections it opened, and on those they opened.
		for _, p := range peers {
			rules = append(rules, drop(rule("OUTPUT", "-o", append(uidMatch, "--dport", strconv.Itoa(p))...)))
		}
		for _, p := range ports {
			rules = append(rules, drop(rule("OUTPUT", "-o", append(uidMatch, "--sport", strconv.Itoa(p))...)))
		}
	}
	return install(rules)
}

// install appends rules (each a chain with its match and target) and returns them as a
// Partition; if one fails, those added are removed again.
func install(rules [][]string) (*Partition, error) {
	pt := &Partition{}
	for _, r := range rules {
		if err := iptables(append([]string{"-A"}, r...)...); err != nil {
			pt.Heal()
			return nil, err
		}
		pt.rules = append(pt.rules, r)
	}
	return pt, nil
}

// Heal removes the partition's rules. It may be called more than once.
func (p *Partition) Heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first error
	for _, r := range p.rules {
		if err := iptables(append([]string{"-D"}, r...)...); err != nil && first == nil {
			first = err
		}
	}
	p.rules = nil
	return first
}

var ruleComment = regexp.MustCompile(`--comment "?` + commentPrefix + `(\d+)"?`)

// Sweep deletes rules left by test processes that are gone.
func Sweep() {
	for _, chain := range []string{"INPUT", "OUTPUT"} {
		out, err := exec.Command("iptables", "-S", chain).Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			m := ruleComment.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			pid, _ := strconv.Atoi(m[1])
			if pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
				continue
			}
			spec := strings.Fields(strings.Replace(line, "-A ", "-D ", 1))
			for i := range spec {
				spec[i] = strings.Trim(spec[i], `"`)
			}
			iptables(spec...)
		}
	}
}

func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nemesis: iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
