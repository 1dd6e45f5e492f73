package rpc

import "time"

// setReadDeadline sets the read deadline exactly.
func (fc *fastConn) setReadDeadline(t time.Time) {
	fc.readDL = t
	fc.c.SetReadDeadline(t)
}

// keepDeadline makes the deadline *dl (set with set) fall between
// now+timeout and now+timeout+timeout/4 (timeout > 0), leaving it alone
// when it already does. Moving a socket deadline modifies a runtime timer
// under the poll descriptor's lock, and on a keep-alive connection the idle
// and write deadlines would move by microseconds on every request; so they
// move only once a quarter of the timeout has passed (as valyala/fasthttp
// does, after golang/go#15133). The bounds loosen accordingly: an idle
// connection closes 1–1.25× IdleTimeout after its last answer's write
// began (less the time that write took, itself bounded by the write
// deadline), a stalled write ends 1–1.25× WriteTimeout after it began. The
// body's deadline is exact, and set only when the body is not already
// buffered. The three deadlines a request used to set cost 0.26–0.52 µs
// together, and with the watcher's timer and context 2.2–3.9 µs against
// 0.33–0.50 µs now (BenchmarkRequestBookkeeping, busy 2-CPU machine).
func (fc *fastConn) keepDeadline(dl *time.Time, now time.Time, timeout time.Duration, set func(time.Time) error) {
	lo := now.Add(timeout)
	if !dl.IsZero() && !dl.Before(lo) && !dl.After(lo.Add(timeout/4)) {
		return
	}
	*dl = lo.Add(timeout / 4)
	set(*dl)
}
