package server

import "time"

const (
	// badLogEvery and badLogBurst: one client host logs one kind of misbehaviour at most
	// badLogBurst times per badLogEvery.
	badLogEvery = 10 * time.Second
	badLogBurst = 3
	// badLogKeys bounds the (reason, host) pairs remembered; past it they share one.
	badLogKeys = 4096
)

// warnBad logs a warning about this connection's client misbehaving (bad input, failed or
// missing authentication), at most badLogBurst times per message and client host every
// badLogEvery: a client that repeats it on connection after connection costs a few lines per
// interval, and the next line allowed says how many were left out (left_out). Other clients'
// lines are not held back.
func (c *conn) warnBad(msg string, args ...any) {
	c.s.badLog.Warn(c.s.o.Log, msg, c.nc.RemoteAddr().String(), args...)
}
