//go:build !linux

package arrival

import (
	"net"
	"time"
)

// Order is Linux's (arrival_linux.go); elsewhere New returns nil and
// connections wait in the runtime's netpoller.
type Order struct{}

// Waiter is never made here.
type Waiter struct{}

func New(int, time.Duration) *Order              { return nil }
func (o *Order) Add(net.Conn) *Waiter            { return nil }
func (o *Order) Remove(*Waiter)                  {}
func (o *Order) Close()                          {}
func (w *Waiter) Wait(done <-chan struct{}) bool { return true }
