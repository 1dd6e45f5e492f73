package rpc

import (
	"context"
	"errors"
	"os"
	"time"
)

// watchAfter is how long a request runs before its connection is
// watched for the client going away (a read that would see EOF), as
// net/http's background read does for every request; short requests,
// nearly all of them, skip the goroutine and the syscalls.
const watchAfter = 50 * time.Millisecond

// watch notes the start of a request, whose context cancel ends: if it is
// still running after watchAfter, the watcher (startWatch) arms the
// request's deadline (Options.Timeout: its answer then, see lateGate) and
// its cancellation by
// Server.Drain, and reads the connection, as net/http's background read
// does; EOF or a reset means the client left, and the request is
// cancelled. A byte it reads instead (a pipelined request) is kept for
// Read.
//
// The connection has one timer, armed by the first request and left
// pending across the next ones: when it fires it looks at the request
// running then, and either starts watching it, waits for the rest of its
// watchAfter, or (idle connection) stays disarmed. Under steady load it
// fires once per watchAfter per connection instead of being reset and
// stopped for every request (a Reset and a Stop: 45–110 ns together,
// BenchmarkRequestBookkeeping/part/timer-reset-stop).
func (fc *fastConn) watch(cancel context.CancelCauseFunc, start time.Time, seq uint64) {
	fc.wmu.Lock()
	fc.armed, fc.cancel, fc.start, fc.wseq = true, cancel, start, seq
	if !fc.timerSet {
		fc.timerSet = true
		if fc.timer == nil {
			fc.timer = time.AfterFunc(watchAfter, fc.startWatch)
		} else {
			fc.timer.Reset(watchAfter)
		}
	}
	fc.wmu.Unlock()
}

func (fc *fastConn) startWatch() {
	fc.wmu.Lock()
	if !fc.armed || fc.reading {
		// Idle, or a watcher already reads for this request (two would
		// race for the stash).
		fc.timerSet = false
		fc.wmu.Unlock()
		return
	}
	if left := watchAfter - time.Since(fc.start); left > 0 {
		fc.timer.Reset(left) // a younger request than the one that armed the timer
		fc.wmu.Unlock()
		return
	}
	fc.timerSet = false
	fc.reading, fc.wdone = true, make(chan struct{})
	cancel, done := fc.cancel, fc.wdone
	if t := fc.srv.rpc.opts.Timeout; t > 0 {
		// At the deadline the request is cancelled and answered, while
		// its handler may run on (lateGate).
		seq := fc.wseq
		fc.deadline = time.AfterFunc(time.Until(fc.start.Add(t)), func() {
			cancel(ErrRequestTimeout)
			fc.gate.expire(fc.srv.rpc, seq, fc.writeLate)
		})
	}
	// Drain's abort cancels the requests it outlasts (those younger than
	// watchAfter then, once they reach it).
	base := fc.srv.rpc.base
	fc.abort = context.AfterFunc(base, func() { cancel(context.Cause(base)) })
	// The body's deadline no longer applies. Cleared under wmu: unwatch
	// sets its past deadline after it sees reading under wmu, so it always
	// comes later and stops the read below. Cleared after the unlock, it
	// could undo unwatch's, and the read (with unwatch waiting for it)
	// would last until the client, waiting for the answer, gave up.
	fc.c.SetReadDeadline(time.Time{})
	fc.wmu.Unlock()
	defer close(done)
	if testHookWatchUnlocked != nil {
		testHookWatchUnlocked()
	}
	var b [1]byte
	n, err := fc.c.Read(b[:])
	if n == 1 {
		fc.stash, fc.hasStash = b[0], true
		return
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		cancel(errClientGone) // EOF or reset: nobody waits for the answer
	}
}

// unwatch ends the request for the watcher and, if it is reading, stops
// its read. The timer stays pending (see watch).
func (fc *fastConn) unwatch() {
	fc.wmu.Lock()
	fc.armed, fc.cancel = false, nil
	reading, done, deadline, abort := fc.reading, fc.wdone, fc.deadline, fc.abort
	fc.reading, fc.deadline, fc.abort = false, nil, nil
	fc.wmu.Unlock()
	if !reading {
		return
	}
	if deadline != nil {
		deadline.Stop()
	}
	abort()
	fc.setReadDeadline(aLongTimeAgo)
	<-done
}

var aLongTimeAgo = time.Unix(1, 0)

// testHookWatchUnlocked, when set by a test, runs in startWatch after the
// watcher released wmu and before its read.
var testHookWatchUnlocked func()
