package shard

// Zxid layout: counter<<8 | tag. The tag is the shard's 8-bit Config.Tag; the counter is a
// 55-bit hybrid logical clock (see doc.go for why the result is unique, increasing and above
// every zxid the proposing session has seen).
const (
	tagBits    = 8
	maxCounter = int64(1)<<55 - 1
	// timeShift places batch milliseconds in the counter, leaving 4096 logical ticks per
	// millisecond before the counter runs ahead of the clock.
	timeShift = 12
)

// nextZxid returns the zxid of the next write op: counter = max(prev+1, time<<12, min>>8 + 1).
// Inputs that would overflow the 55-bit counter (a batch time past the year 2248, or a
// MinZxid beyond the counter range) are ignored rather than wrapping.
func nextZxid(last int64, tag uint8, time, min int64) int64 {
	c := last>>tagBits + 1
	if time > 0 && time <= maxCounter>>timeShift {
		if t := time << timeShift; t > c {
			c = t
		}
	}
	if min > 0 {
		if m := min>>tagBits + 1; m > c && m <= maxCounter {
			c = m
		}
	}
	return c<<tagBits | int64(tag)
}

// ZxidCounter returns the counter part of a zxid.
func ZxidCounter(zxid int64) int64 { return zxid >> tagBits }

// ZxidTag returns the shard tag of a zxid.
func ZxidTag(zxid int64) uint8 { return uint8(zxid) }
