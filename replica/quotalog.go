package replica

import (
	"log/slog"
	"time"
)

// quotaLogLimit logs quota messages at most quotaLogBurst a second and counts the rest, so a
// client hammering a full quota cannot flood the log.
type quotaLogLimit struct {
	second  int64
	n       int
	dropped int
}

const quotaLogBurst = 10

func (l *quotaLogLimit) log(log *slog.Logger, msgs []string) {
	now := time.Now().Unix()
	if now != l.second {
		if l.dropped > 0 {
			log.Warn("quota messages not logged (more than 10 a second)", "count", l.dropped)
		}
		l.second, l.n, l.dropped = now, 0, 0
	}
	for _, m := range msgs {
		if l.n >= quotaLogBurst {
			l.dropped++
			continue
		}
		l.n++
		log.Warn(m)
	}
}
