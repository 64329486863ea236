package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress is the one-line progress indicator on stderr. On a terminal the line is redrawn in
// place twice a second with the live completion rate; elsewhere (CI logs) only stage changes and
// log lines are printed, one per line. A nil *Progress prints nothing.
type Progress struct {
	out   io.Writer
	tty   bool
	start time.Time

	mu struct {
		sync.Mutex
		stage   string
		label   string
		counter func() int64
		lastN   int64
		lastT   time.Time
		rate    float64
		drawn   bool
	}
	stop chan struct{}
	done chan struct{}
}

// NewProgress starts a progress line on out (usually os.Stderr).
func NewProgress(out io.Writer) *Progress {
	p := &Progress{out: out, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	go p.loop()
	return p
}

func (p *Progress) loop() {
	defer close(p.done)
	if !p.tty {
		<-p.stop
		return
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if c := p.mu.counter; c != nil {
				n, now := c(), time.Now()
				if dt := now.Sub(p.mu.lastT).Seconds(); dt > 0 {
					p.mu.rate = float64(n-p.mu.lastN) / dt
				}
				p.mu.lastN, p.mu.lastT = n, now
			}
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

func (p *Progress) drawLocked() {
	line := fmt.Sprintf("[%6.1fs] %s", time.Since(p.start).Seconds(), p.mu.stage)
	if p.mu.counter != nil {
		line += fmt.Sprintf(" | %s %8.0f ops/s", p.mu.label, p.mu.rate)
	}
	if len(line) > 118 {
		line = line[:118]
	}
	fmt.Fprintf(p.out, "\r%-118s", line)
	p.mu.drawn = true
}

// Stage names what the run is doing now ("starting zookeeper x3", ...).
func (p *Progress) Stage(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.stage = fmt.Sprintf(format, args...)
	if p.tty {
		p.drawLocked()
	} else {
		fmt.Fprintf(p.out, "[%6.1fs] %s\n", time.Since(p.start).Seconds(), p.mu.stage)
	}
}

// Track shows the live rate of counter (nil stops tracking).
func (p *Progress) Track(label string, counter func() int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.label, p.mu.counter = label, counter
	p.mu.lastT, p.mu.lastN, p.mu.rate = time.Now(), 0, 0
	if counter != nil {
		p.mu.lastN = counter()
	}
}

// Logf prints a line of its own above the progress line.
func (p *Progress) Logf(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	if p.tty && p.mu.drawn {
		fmt.Fprintf(p.out, "\r%-118s\r", "")
	}
	fmt.Fprintln(p.out, msg)
	if p.tty {
		p.drawLocked()
	}
}

// Close stops the indicator and ends its line.
func (p *Progress) Close() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.mu.drawn {
		fmt.Fprintln(p.out)
	}
}
