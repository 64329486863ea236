package raftnet

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setUserTimeout sets TCP_USER_TIMEOUT on a dialled socket: data unacknowledged for
// userTimeout ends the link, so a link through a partition is abandoned (and dialled again,
// under dragonboat's back-off) instead of waiting out the kernel's retransmission back-off,
// which can reach tens of seconds, after the partition heals.
func setUserTimeout(network, address string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(userTimeout.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}

// linkOpen reports whether a sending link is still usable: the receiving side never writes on
// a message link, so a socket with anything to read — end of file, a reset, bytes (a TLS
// close alert) — or an error other than "nothing yet" belongs to a peer that is gone. One
// non-blocking peek, before each batch.
func linkOpen(raw syscall.Conn) bool {
	rc, err := raw.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var b [1]byte
	rc.Control(func(fd uintptr) {
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = err == unix.EAGAIN || err == unix.EWOULDBLOCK
	})
	return open
}
