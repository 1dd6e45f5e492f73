package simulate

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/core/vm"
)

// deadline ends a simulation when its time is up or its context ends: it
// cancels the EVM attached at that moment, and the calls not yet started
// see it expired. One timer and one context watch per request; a
// context.WithTimeout per request and a context.AfterFunc per block (each
// hooked into the caller's context) cost ~3 % of a simulation's CPU.
type deadline struct {
	done  atomic.Bool
	evm   atomic.Pointer[vm.EVM]
	timer *time.Timer
	ctx   func() bool // stops the context watch
}

// watch starts the deadline of a request under ctx.
func (e *Engine) watch(ctx context.Context) *deadline {
	d := new(deadline)
	if e.opts.timeout() > 0 {
		d.timer = time.AfterFunc(e.opts.timeout(), d.fire)
	}
	if ctx.Done() != nil {
		d.ctx = context.AfterFunc(ctx, d.fire)
	}
	return d
}

func (d *deadline) fire() {
	d.done.Store(true)
	if evm := d.evm.Load(); evm != nil {
		evm.Cancel()
	}
}

// attach makes evm the one cancelled when the deadline passes (at once if
// it has).
func (d *deadline) attach(evm *vm.EVM) {
	d.evm.Store(evm)
	if d.done.Load() {
		evm.Cancel()
	}
}

// detach stops the attached EVM from being cancelled; false if the deadline
// passed first (the EVM may be cancelled already). Both sides store before
// they load (sequentially consistent atomics): either detach sees done, or
// fire sees no EVM.
func (d *deadline) detach() bool {
	d.evm.Store(nil)
	return !d.done.Load()
}

func (d *deadline) expired() bool { return d.done.Load() }

// stop ends the watch; the request is over.
func (d *deadline) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
	if d.ctx != nil {
		d.ctx()
	}
}
