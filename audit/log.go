package audit

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"sync"
	"time"
)

// ErrClosed is returned by Close after the first.
var ErrClosed = errors.New("audit: log closed")

// Log is an open audit log file. Methods are safe for concurrent use.
type Log struct {
	f    *os.File
	user string // the operating system user the server runs as (serverStart/serverStop lines)
	log  *slog.Logger
	now  func() time.Time

	kick chan struct{} // capacity 1: lines are waiting
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer goroutine has returned

	mu struct {
		sync.Mutex
		buf    []byte // lines not yet handed to the writer goroutine
		closed bool
	}
}

// Open opens (creating it, appending to it) the audit log at path, starts its writer goroutine
// and writes the serverStart line. log receives write errors.
func Open(path string, log *slog.Logger) (*Log, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	l := &Log{f: f, user: systemUser(), log: log, now: time.Now,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.writer()
	l.Write(Event{User: l.user, Operation: OpServerStart, Result: Success})
	return l, nil
}

// systemUser is Java's user.name, which ZooKeeper logs as the user of serverStart and serverStop
// ("<NA>" when unknown).
func systemUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "<NA>"
}

// Write queues the events' lines; the writer goroutine writes them out at once. Lines written
// after Close are dropped.
func (l *Log) Write(events ...Event) {
	if len(events) == 0 {
		return
	}
	t := l.now()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return
	}
	for _, e := range events {
		l.mu.buf = append(l.mu.buf, e.Line(t)...)
	}
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// writer writes the queued lines whenever there are some, in one write each time: lines that
// queue while a write is under way go out together in the next one.
func (l *Log) writer() {
	defer close(l.done)
	var spare []byte
	failed := false
	for {
		stopping := false
		select {
		case <-l.kick:
		case <-l.stop:
			stopping = true
		}
		l.mu.Lock()
		buf := l.mu.buf
		l.mu.buf = spare[:0]
		l.mu.Unlock()
		if len(buf) > 0 && !failed {
			if _, err := l.f.Write(buf); err != nil {
				failed = true
				l.log.Error("audit log write failed; no more audit lines are written", "file", l.f.Name(), "err", err)
			}
		}
		spare = buf
		if stopping {
			return
		}
	}
}

// Close writes the serverStop line (result=invoked, as ZooKeeper's shutdown hook), waits for
// the writer goroutine to write every queued line, and closes the file.
func (l *Log) Close() error {
	l.Write(Event{User: l.user, Operation: OpServerStop, Result: Invoked})
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.mu.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	if err := l.f.Sync(); err != nil {
		l.f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// User is the operating-system user the server runs as, the user of serverStart, serverStop
// and ephemeralZNodeDeletionOnSessionCloseOrExpire lines.
func (l *Log) User() string { return l.user }

// Path returns the file's name.
func (l *Log) Path() string { return l.f.Name() }
