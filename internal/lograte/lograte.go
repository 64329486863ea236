package lograte

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// overflowKey is the key every new key shares while a Limiter holds its maximum.
const overflowKey = "\x00other clients"

// Limiter decides which log lines to write. The zero value is not usable; use New.
// Methods are safe for concurrent use.
type Limiter struct {
	every   time.Duration
	burst   int
	maxKeys int
	now     func() time.Time // tests set it

	mu   sync.Mutex
	keys map[string]*entry
}

type entry struct {
	start      time.Time // when the key's current interval began (its first line in it)
	lines      int       // lines allowed in it
	suppressed int       // lines left out since the last one allowed
}

// New returns a Limiter that allows burst lines per key in each interval of length every (an
// interval starts with the first line after the previous one ended), keeping at most maxKeys keys.
func New(every time.Duration, burst, maxKeys int) *Limiter {
	return &Limiter{every: every, burst: max(burst, 1), maxKeys: maxKeys, now: time.Now, keys: map[string]*entry{}}
}

// Allow reports whether a line for key may be written now and, if so, how many lines for the
// same key (or, past the limit on keys, for any key that had no room) were left out since the
// last one allowed.
func (l *Limiter) Allow(key string) (ok bool, suppressed int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[key]
	if e == nil {
		if len(l.keys) >= l.maxKeys {
			l.forget(now)
		}
		if len(l.keys) >= l.maxKeys {
			key = overflowKey
			e = l.keys[key]
		}
		if e == nil {
			e = &entry{start: now}
			l.keys[key] = e
		}
	}
	switch {
	case now.Sub(e.start) >= l.every:
		e.start, e.lines = now, 1
	case e.lines < l.burst:
		e.lines++
	default:
		e.suppressed++
		return false, 0
	}
	n := e.suppressed
	e.suppressed = 0
	return true, n
}

// forget drops the keys whose interval is over and that have nothing left out to report.
func (l *Limiter) forget(now time.Time) {
	for k, e := range l.keys {
		if now.Sub(e.start) >= l.every && e.suppressed == 0 {
			delete(l.keys, k)
		}
	}
}

// Warn logs msg as a warning about the client at remote (host:port), with args, if the
// limiter allows a line for msg and remote's host; the line carries remote and, when lines were
// left out since the last one, their number (left_out).
func (l *Limiter) Warn(log *slog.Logger, msg, remote string, args ...any) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ok, leftOut := l.Allow(msg + "\x00" + host)
	if !ok {
		return
	}
	args = append([]any{"remote", remote}, args...)
	if leftOut > 0 {
		args = append(args, "left_out", leftOut)
	}
	log.Warn(msg, args...)
}
