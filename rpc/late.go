package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
)

// lateGate decides who answers a message that arrived over a transport:
// dispatch, when its calls return, or the deadline, when they have not
// returned by then. At the deadline the answer goes out at once, as geth
// gives it: -32002 for a call, and for a batch the answers made so far
// followed by what the calls not done get past the deadline (-32002 for a
// valid call, not started). The handler runs on in the background and its
// answer is dropped: a handler that ignores its context (a 20 s table
// build) no longer holds the answer past --rpc.timeout.
//
// What runs on in the background stays counted where it ran, so a client
// cannot pile up handlers past the existing limits: in flight (Drain waits
// for it); on HTTP its connection, answered "Connection: close", stays in
// use under MaxConnections until the handler returns; on a websocket it
// keeps its call slot (WSOptions.Parallel).
//
// dispatch holds mu except while a handler runs, so when the deadline
// holds it, buf ends after the last complete answer of a batch and next is
// the call running or about to.
type lateGate struct {
	mu   sync.Mutex
	seq  uint64 // the message's number (a fast-path connection reuses its gate)
	done bool   // answered, by dispatch or by the deadline
	late bool   // answered by the deadline
	body []byte
	// A batch's calls, its answers' buffer and where they start in it
	// (after '['), and the call running or next.
	batch Params
	buf   *bytes.Buffer
	from  int
	next  int
}

// timedOutCtx is the context of a call answered at the deadline: ended,
// with the timeout as its cause.
var timedOutCtx = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrRequestTimeout)
	return ctx
}()

// begin starts message seq (body) and takes mu for dispatch.
func (g *lateGate) begin(body []byte, seq uint64) {
	g.mu.Lock()
	g.seq, g.done, g.late, g.body = seq, false, false, body
	g.batch, g.buf, g.next = nil, nil, 0
}

// finish ends dispatch's hold: true when its answer stands, false when the
// deadline answered instead.
func (g *lateGate) finish() bool {
	g.done = true
	late := g.late
	g.body, g.batch, g.buf = nil, nil, nil
	g.mu.Unlock()
	return !late
}

// unlock and relock bracket a handler. relock is false once the deadline
// answered: the handler's answer is dropped. Both do nothing for a nil
// gate (Server.Handle, no transport to answer early on).
func (g *lateGate) unlock() {
	if g != nil {
		g.mu.Unlock()
	}
}

func (g *lateGate) relock() bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	return !g.late
}

// isLate reports, under mu, whether the deadline answered.
func (g *lateGate) isLate() bool { return g != nil && g.late }

// startBatch notes a batch whose answers start at buf.Len().
func (g *lateGate) startBatch(msgs Params, buf *bytes.Buffer) {
	if g != nil {
		g.batch, g.buf, g.from = msgs, buf, buf.Len()
	}
}

// at notes that call i of the batch runs next.
func (g *lateGate) at(i int) {
	if g != nil {
		g.next = i
	}
}

// expire answers message seq at its deadline unless dispatch did: deliver
// gets the answer (empty: nothing to send, only notifications) with mu
// held, so that dispatch returns, and its transport goes on, only after
// the answer went out.
func (g *lateGate) expire(s *Server, seq uint64, deliver func([]byte)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done || g.seq != seq {
		return
	}
	g.done, g.late = true, true
	var out bytes.Buffer
	if g.batch == nil {
		s.timedOutAnswer(g.body, &out)
	} else {
		out.WriteByte('[')
		// The answers so far, less the comma written before the call
		// that runs (every answer ends in '}').
		out.Write(bytes.TrimSuffix(g.buf.Bytes()[g.from:], []byte{','}))
		mark := out.Len()
		if mark > 1 {
			out.WriteByte(',')
		}
		if s.timedOutAnswer(g.batch[g.next], &out); out.Len() == mark+1 {
			out.Truncate(mark) // a notification: no answer
		}
		s.batchInto(timedOutCtx, g.batch[g.next+1:], &out, 0, nil)
	}
	deliver(out.Bytes())
}

// timedOutAnswer writes -32002 for msg, the call running at the deadline
// (a valid request: dispatch let go of mu to run it), or nothing for a
// notification. It is not dispatched again: its handler, running on,
// counts it in its method's metrics when it returns.
func (s *Server) timedOutAnswer(msg []byte, buf *bytes.Buffer) {
	msg = bytes.TrimSpace(msg)
	var env envelope
	if !fastDecode || len(msg) == 0 || msg[0] != '{' || !decodeFast(msg, &env.fastRequest) {
		var req request
		if json.Unmarshal(msg, &req) != nil {
			return
		}
		env.id = req.ID
	}
	id, ok := validID(env.id)
	if env.id == nil || !ok {
		return
	}
	s.metrics.timeouts.Inc()
	writeError(buf, id, ErrRequestTimeout)
}

// handleBy answers one message into buf, as handleInto does, unless its
// deadline passes first: then late gets the deadline's answer (lateGate)
// from another goroutine, and handleBy returns false once the handler is
// done (buf holds nothing to send).
func (s *Server) handleBy(ctx context.Context, body []byte, buf *bytes.Buffer, late func([]byte)) bool {
	s.enter()
	defer s.leave()
	ctx, cancel := s.requestContext(ctx)
	defer cancel()
	g := new(lateGate)
	stop := context.AfterFunc(ctx, func() {
		if timedOut(ctx) {
			g.expire(s, 0, late)
		}
	})
	defer stop()
	g.begin(body, 0)
	s.dispatch(ctx, body, buf, g)
	return g.finish()
}
