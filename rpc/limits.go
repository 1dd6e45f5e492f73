package rpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Defaults of the per-request limits (Options), after geth and reth.
const (
	// DefaultTimeout is a request's deadline (geth's HTTP timeouts are 30 s).
	DefaultTimeout = 30 * time.Second
	// DefaultMaxResponseSize caps one answer, single or batch (geth's
	// --rpc.batch-response-max-size is 25 MB).
	DefaultMaxResponseSize = 25 << 20
)

// NoTimeout and NoResponseCap as Options values lift the limit: the largest
// value, a limit never reached (zero is the default, as everywhere in
// preconf's configuration).
const (
	NoTimeout     time.Duration = math.MaxInt64
	NoResponseCap               = math.MaxInt
)

// CodeTimeout is geth's code for a request that ran past its deadline.
const CodeTimeout = -32002

// ErrRequestTimeout is the answer to a request past its deadline, as geth
// gives it.
var ErrRequestTimeout = &CodedError{Code: CodeTimeout, Msg: "request timed out"}

// errClientGone cancels a request whose client disconnected.
var errClientGone = errors.New("client went away")

// namespaceOf is the part of a method name before its first '_'.
func namespaceOf(method string) string {
	ns, _, _ := strings.Cut(method, "_")
	return ns
}

// allowed reports whether the namespace filter (Options.Namespaces) lets
// method be served.
func (s *Server) allowed(method string) bool {
	return s.opts.Namespaces == nil || slices.Contains(s.opts.Namespaces, namespaceOf(method))
}

// limitsKey carries the server's limits in a request's context.
type limitsKey struct{}

// requestLimits are what a handler may need to know about its limits.
type requestLimits struct {
	maxResponse int
}

// ResponseLimit is the largest answer the server will send for the request
// (0: no limit). Handlers that build large answers (traces) stop early.
func ResponseLimit(ctx context.Context) int {
	if l, ok := ctx.Value(limitsKey{}).(*requestLimits); ok {
		return l.maxResponse
	}
	return 0
}

// ResponseTooLarge is the -32005 error that replaces an answer over the
// server's size cap (handlers that stop early answer it too).
func ResponseTooLarge(limit int) error {
	return &LimitExceededError{Msg: fmt.Sprintf("response too large: exceeds %d bytes (--rpc.max-response-size)", limit)}
}

// requestContext bounds one message (a call or a whole batch, as geth's
// HTTP timeout does) by the server's deadline and carries its limits.
func (s *Server) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = s.withLimits(ctx)
	if s.opts.Timeout > 0 {
		return context.WithTimeoutCause(ctx, s.opts.Timeout, ErrRequestTimeout)
	}
	return context.WithCancel(ctx)
}

// withLimits makes the server's limits visible to handlers (ResponseLimit).
func (s *Server) withLimits(ctx context.Context) context.Context {
	if l, ok := ctx.Value(limitsKey{}).(*requestLimits); ok && l == &s.limits {
		return ctx
	}
	return context.WithValue(ctx, limitsKey{}, &s.limits)
}

// timedOut reports whether ctx ended at the request deadline.
func timedOut(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrRequestTimeout)
}

// throttle lets at most n of some methods run at once (tracing and
// simulation, whose memory and CPU per call are large); a call waits for a
// slot within its deadline.
type throttle chan struct{}

func (t throttle) acquire(ctx context.Context) error {
	select {
	case t <- struct{}{}:
		return nil
	default:
	}
	select {
	case t <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (t throttle) release() { <-t }
