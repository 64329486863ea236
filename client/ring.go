package client

// ring is the FIFO of outstanding requests: a growable power-of-two circular buffer, so pushing
// and popping allocate nothing once it has grown to the connection's peak outstanding count.
type ring struct {
	buf  []pending
	head int
	n    int
}

func (r *ring) push(p pending) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = p
	r.n++
}

func (r *ring) grow() {
	size := max(2*len(r.buf), 64)
	nb := make([]pending, size)
	for i := 0; i < r.n; i++ {
		nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = nb, 0
}

// peek returns the oldest entry; the ring must not be empty.
func (r *ring) peek() *pending { return &r.buf[r.head] }

// pop removes and returns the oldest entry; the ring must not be empty.
func (r *ring) pop() pending {
	p := r.buf[r.head]
	r.buf[r.head] = pending{} // drop the callback reference
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return p
}
