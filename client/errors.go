package client

import "errors"

// Package errors. Failures of the connection are reported wrapped together with
// wire.ErrConnectionLoss, so both errors.Is(err, wire.ErrConnectionLoss) and, for example,
// errors.Is(err, ErrProtocol) hold.
var (
	// ErrClosed: the connection was closed by Conn.Close.
	ErrClosed = errors.New("client: connection closed")
	// ErrProtocol: the server broke the protocol (a reply out of xid order, a malformed or
	// oversized frame, a reply with no outstanding request).
	ErrProtocol = errors.New("client: protocol error")
	// ErrTimeout: nothing was received for two thirds of the session timeout.
	ErrTimeout = errors.New("client: read timeout")
	// ErrNoServers: Dial was given no address.
	ErrNoServers = errors.New("client: no server addresses")
)
