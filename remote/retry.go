package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Options shape how a Client treats an upstream that rate-limits, fails or
// goes away (public RPC endpoints do all three).
type Options struct {
	// Timeout bounds one HTTP exchange (0: 10 s).
	Timeout time.Duration
	// Retries is how many more times a failed exchange is tried: transport
	// errors and timeouts, HTTP 408/429/5xx, and JSON-RPC answers that say
	// the caller is rate-limited. Zero tries once (follow mode: a late
	// answer is of no use to a flashblock).
	Retries int
	// Backoff is the wait before the first retry, doubled for each next one
	// up to MaxBackoff, with up to 50% random jitter; a Retry-After header
	// replaces it (up to MaxBackoff). Defaults: 250 ms and 5 s.
	Backoff, MaxBackoff time.Duration
	// MaxConcurrent bounds the HTTP exchanges in flight at once; more wait
	// for a turn (0: unbounded).
	MaxConcurrent int
	// Cooldown: once an exchange has failed every try, further exchanges
	// fail at once for this long, with the last error, instead of each
	// waiting through its own retries (0: never).
	Cooldown time.Duration
}

// transientError is a failure worth another try.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// post sends body, retrying transient failures as the options say.
func (c *Client) post(ctx context.Context, body []byte) ([]byte, error) {
	if until := c.downUntil.Load(); until != 0 && time.Now().UnixNano() < until {
		if p := c.lastErr.Load(); p != nil {
			return nil, fmt.Errorf("%w (upstream failing, next try in %v)", *p, time.Until(time.Unix(0, until)).Round(100*time.Millisecond))
		}
	}
	var (
		wait = c.opts.Backoff
		err  error
	)
	if wait <= 0 {
		wait = 250 * time.Millisecond
	}
	maxWait := c.opts.MaxBackoff
	if maxWait <= 0 {
		maxWait = 5 * time.Second
	}
	for try := 0; ; try++ {
		var (
			data       []byte
			retryAfter time.Duration
		)
		data, retryAfter, err = c.exchange(ctx, body)
		if err == nil {
			c.downUntil.Store(0)
			return data, nil
		}
		var te *transientError
		if !errors.As(err, &te) || ctx.Err() != nil || try >= c.opts.Retries {
			break
		}
		d := wait + rand.N(wait/2+1)
		if retryAfter > 0 {
			d = retryAfter
		}
		d = min(d, maxWait)
		wait = min(2*wait, maxWait)
		c.Retries.Add(1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %s: %v (after %d tries; last: %v)", ErrUnavailable, c.shown, ctx.Err(), try+1, err)
		case <-t.C:
		}
	}
	if c.opts.Retries > 0 {
		err = fmt.Errorf("%w (after %d tries)", err, c.opts.Retries+1)
	}
	var te *transientError
	if c.opts.Cooldown > 0 && errors.As(err, &te) && ctx.Err() == nil {
		c.lastErr.Store(&err)
		c.downUntil.Store(time.Now().Add(c.opts.Cooldown).UnixNano())
	}
	return nil, err
}

// exchange is one try, taking a turn when concurrency is bounded.
func (c *Client) exchange(ctx context.Context, body []byte) ([]byte, time.Duration, error) {
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
			defer func() { <-c.slots }()
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("%w: %s: waiting for a turn: %v", ErrUnavailable, c.shown, ctx.Err())
		}
	}
	return c.try(ctx, body)
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// parseRetryAfter reads a Retry-After header in seconds (the HTTP-date form
// is rare from RPC providers and treated as absent).
func parseRetryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// rateLimited reports a JSON-RPC answer (a single object) whose error says
// the caller is over a limit: code 429 or -32005 (Infura, Alchemy and most
// providers), or a message saying so.
func rateLimited(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 || data[0] != '{' || !bytes.Contains(data, []byte(`"error"`)) {
		return false
	}
	var w struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(data, &w) != nil || w.Error == nil {
		return false
	}
	if w.Error.Code == 429 || w.Error.Code == -32005 {
		return true
	}
	m := strings.ToLower(w.Error.Message)
	return strings.Contains(m, "rate limit") || strings.Contains(m, "too many requests")
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
