//go:build !linux

package raftnet

import "syscall"

// setUserTimeout does nothing where TCP_USER_TIMEOUT does not exist; keepalives still end a
// dead idle link.
func setUserTimeout(network, address string, rc syscall.RawConn) error { return nil }

// linkOpen cannot look without reading here; a link the peer closed fails its next write but
// one, and SendMessageBatch dials again then.
func linkOpen(raw syscall.Conn) bool { return true }
