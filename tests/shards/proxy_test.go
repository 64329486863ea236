package shardstest

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// proxy is a TCP proxy between one client and whichever server is its current target. It lets a
// test move a session to another server (SetTarget, then Kill: the client reconnects through the
// proxy with the same session and its lastZxidSeen), cut a connection without closeSession
// (Kill), freeze the client's traffic so that the server hears nothing while the client keeps
// sending (Freeze, Thaw), and it records the header of every reply the server sends (Headers).
type proxy struct {
	t  *testing.T
	ln net.Listener

	mu      sync.Mutex
	target  string
	gate    chan struct{} // closed while traffic flows; a fresh one while frozen
	conns   map[int]*proxyConn
	nextID  int
	headers []replyHeader
	refuse  bool // drop new connections at once
}

// replyHeader is the header of one frame a server sent after the connect response.
type replyHeader struct {
	Conn int   // which proxied connection (1, 2, ... in accept order)
	Xid  int32 // -1 notification, -2 ping, >= 0 a reply to a request
	Zxid int64
	Err  int32
}

type proxyConn struct{ client, server net.Conn }

func (pc *proxyConn) close() {
	pc.client.Close()
	pc.server.Close()
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, gate: make(chan struct{}), conns: map[int]*proxyConn{}}
	close(p.gate)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.accept(&wg)
	}()
	t.Cleanup(func() {
		ln.Close()
		p.Thaw()
		p.Kill()
		wg.Wait()
	})
	return p
}

// Addr is the address clients connect to.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget changes the server that new connections go to.
func (p *proxy) SetTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// Refuse makes the proxy close every new connection at once (the client cannot reach any
// server), or lets them through again.
func (p *proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// Kill closes every current connection on both sides (no closeSession is sent).
func (p *proxy) Kill() {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[int]*proxyConn{}
	p.mu.Unlock()
	for _, pc := range conns {
		pc.close()
	}
}

// Freeze holds back everything the client sends from now on (it is buffered, not lost); the
// server's replies still flow.
func (p *proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default:
	}
}

// Thaw delivers what was held back and lets traffic flow again.
func (p *proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// Headers returns the reply headers recorded so far, in the order the server sent them.
func (p *proxy) Headers() []replyHeader {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]replyHeader(nil), p.headers...)
}

// LastReply returns the header of the last reply to a request (xid >= 0).
func (p *proxy) LastReply() (replyHeader, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.headers) - 1; i >= 0; i-- {
		if p.headers[i].Xid >= 0 {
			return p.headers[i], true
		}
	}
	return replyHeader{}, false
}

func (p *proxy) accept(wg *sync.WaitGroup) {
	for {
		cc, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target, refuse := p.target, p.refuse
		p.mu.Unlock()
		if refuse {
			cc.Close()
			continue
		}
		sc, err := net.Dial("tcp", target)
		if err != nil {
			cc.Close()
			continue
		}
		pc := &proxyConn{client: cc, server: sc}
		p.mu.Lock()
		p.nextID++
		id := p.nextID
		p.conns[id] = pc
		p.mu.Unlock()
		wg.Add(2)
		go func() {
			defer wg.Done()
			p.up(pc)
		}()
		go func() {
			defer wg.Done()
			p.down(id, pc)
		}()
	}
}

// up copies client to server, waiting at the gate before each write.
func (p *proxy) up(pc *proxyConn) {
	buf := make([]byte, 64*1024)
	for {
		n, err := pc.client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			<-gate
			if _, werr := pc.server.Write(buf[:n]); werr != nil {
				pc.close()
				return
			}
		}
		if err != nil {
			// The client went away: the server still gets what was sent before (and sees EOF),
			// as it would from a client that crashed.
			if tc, ok := pc.server.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}

// down copies server to client frame by frame, recording each reply header first. When the
// client is gone it keeps reading (and recording) until the server closes.
func (p *proxy) down(id int, pc *proxyConn) {
	defer pc.close()
	br := bufio.NewReader(pc.server)
	var lb [4]byte
	first, clientGone := true, false
	for {
		if _, err := io.ReadFull(br, lb[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(lb[:])
		if n > 64<<20 {
			return
		}
		frame := make([]byte, 4+n)
		copy(frame, lb[:])
		if _, err := io.ReadFull(br, frame[4:]); err != nil {
			return
		}
		if !first && n >= 16 {
			h := replyHeader{
				Conn: id,
				Xid:  int32(binary.BigEndian.Uint32(frame[4:])),
				Zxid: int64(binary.BigEndian.Uint64(frame[8:])),
				Err:  int32(binary.BigEndian.Uint32(frame[16:])),
			}
			p.mu.Lock()
			p.headers = append(p.headers, h)
			p.mu.Unlock()
		}
		first = false
		if !clientGone {
			if _, err := pc.client.Write(frame); err != nil {
				clientGone = true
			}
		}
	}
}
