// Package arrival wakes goroutines that wait for their sockets to become
// readable in the order the data arrived, and only a few at a time.
//
// Go's scheduler runs a goroutine made ready by the network poller on the
// run queue of the thread (P) that polled, and hands ready goroutines over
// in the reverse of the order epoll reported them. Two things follow when
// many keep-alive connections are saturated (a node serving a closed-loop
// client, or that client):
//
//   - Order. A request that arrived first in one poll is served last in the
//     next: latencies spread from zero to twice the mean (p99 ≈ 2 × mean
//     for a minimal Go server, go run ./bench -shape -pin).
//   - Capture. Every connection woken by one poll sits on one P's run queue.
//     When the kernel deschedules that P's thread (two processes sharing two
//     cores, as the bench's generator and a node do), they wait for it to
//     run again, for up to a kernel time slice (milliseconds), while the
//     other P keeps serving connections that became ready later: another P
//     steals only once its own queue is empty, and in a saturated closed
//     loop it never is.
//
// An Order keeps its own epoll instance with the sockets registered
// edge-triggered; its ready list is first in, first out. One goroutine
// drains it and wakes the waiting connections in that order, but no more
// than budget (GOMAXPROCS) of them may be woken and not yet running: the
// others queue here, and each woken connection wakes the next when it
// starts to run, onto the run queue of the thread that runs it. A stalled
// thread then holds at most the connection it runs and the one it woke,
// instead of half of them. Measured in docs/bench.md ("Capture").
package arrival
