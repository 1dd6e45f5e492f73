//go:build !linux

package rpc

import (
	"net"
	"time"
)

// readyOrder is Linux's (order_linux.go); elsewhere connections wait in the
// runtime's netpoller.
type readyOrder struct{}

func newReadyOrder(time.Duration) *readyOrder             { return nil }
func (o *readyOrder) add(net.Conn) (chan struct{}, int32) { return nil, -1 }
func (o *readyOrder) remove(int32)                        {}
func (o *readyOrder) close()                              {}
