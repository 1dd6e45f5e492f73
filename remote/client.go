// Package remote reads a chain from an upstream execution node over JSON-RPC:
// a small batching client, sealed headers and blocks, and a lazily filled,
// cached, proof-checked state.Reader at one block.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// ErrUnavailable wraps every transport failure (connection refused, timeout,
// non-JSON answer): the upstream could not be asked.
var ErrUnavailable = errors.New("upstream unavailable")

// Error is a JSON-RPC error answered by the upstream.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("upstream error %d: %s", e.Code, e.Message) }

// IsMethodNotFound reports an upstream that does not offer the method.
func IsMethodNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == -32601
}

// Client is a JSON-RPC 2.0 client over HTTP with keep-alive connections.
// Safe for concurrent use.
type Client struct {
	url   string
	shown string // url as errors show it (RedactURL)
	http  *http.Client
	opts  Options
	id    atomic.Uint64
	// slots bounds the exchanges in flight (nil: unbounded).
	slots chan struct{}
	// downUntil (unix ns) fails exchanges at once while the upstream is
	// known to be down: see Options.Cooldown.
	downUntil atomic.Int64
	lastErr   atomic.Pointer[error]
	// noDebug: the upstream answered a debug_* method with an error, so
	// blocks and receipts are asked for with eth_* methods.
	noDebug atomic.Bool

	Requests atomic.Uint64 // HTTP requests sent (each try of an exchange counts)
	Calls    atomic.Uint64 // calls sent (a batch counts each)
	Failures atomic.Uint64 // transport failures
	Retries  atomic.Uint64 // tries after a failed one
	// RoundTrip, if set (before first use), is told each exchange's time.
	RoundTrip func(time.Duration)
}

// NewClient returns a client of the node at url that tries each exchange
// once. timeout bounds one HTTP exchange (0: 10 s).
func NewClient(url string, timeout time.Duration) *Client {
	return NewClientWith(url, Options{Timeout: timeout})
}

// NewClientWith returns a client of the node at url with the given
// timeout, retry and concurrency options.
func NewClientWith(url string, o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	c := &Client{url: url, shown: RedactURL(url), http: &http.Client{Transport: tr}, opts: o}
	if o.MaxConcurrent > 0 {
		c.slots = make(chan struct{}, o.MaxConcurrent)
	}
	return c
}

// URL is the upstream's address.
func (c *Client) URL() string { return c.url }

// Shown is the upstream's address as errors and logs show it: scheme and
// host only (RedactURL).
func (c *Client) Shown() string { return c.shown }

// Request is one call of a batch. Result receives the decoded result (nil:
// discard); Err is set per call after Batch returns.
type Request struct {
	Method string
	Params []any
	Result any
	Err    error
}

type wireRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type wireResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// Call makes one call and decodes its result into out (nil: discard).
func (c *Client) Call(ctx context.Context, out any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(wireRequest{JSONRPC: "2.0", ID: c.id.Add(1), Method: method, Params: params})
	if err != nil {
		return err
	}
	c.Calls.Add(1)
	resp, err := c.post(ctx, body)
	if err != nil {
		return err
	}
	var w wireResponse
	if err := json.Unmarshal(resp, &w); err != nil {
		c.Failures.Add(1)
		return fmt.Errorf("%w: %s: bad response to %s: %v", ErrUnavailable, c.shown, method, err)
	}
	return decodeResult(&w, out)
}

func decodeResult(w *wireResponse, out any) error {
	if w.Error != nil {
		return w.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(w.Result, out); err != nil {
		return fmt.Errorf("upstream result: %w", err)
	}
	return nil
}

// Batch sends every request in one HTTP exchange. It returns an error only
// when the exchange itself failed (then every Err is set to it too).
func (c *Client) Batch(ctx context.Context, reqs []*Request) error {
	if len(reqs) == 0 {
		return nil
	}
	if len(reqs) == 1 {
		reqs[0].Err = c.Call(ctx, reqs[0].Result, reqs[0].Method, reqs[0].Params...)
		if errors.Is(reqs[0].Err, ErrUnavailable) {
			return reqs[0].Err
		}
		return nil
	}
	first := c.id.Add(uint64(len(reqs))) - uint64(len(reqs)) + 1
	wire := make([]wireRequest, len(reqs))
	for i, r := range reqs {
		params := r.Params
		if params == nil {
			params = []any{}
		}
		wire[i] = wireRequest{JSONRPC: "2.0", ID: first + uint64(i), Method: r.Method, Params: params}
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return err
	}
	c.Calls.Add(uint64(len(reqs)))
	resp, err := c.post(ctx, body)
	fail := func(err error) error {
		for _, r := range reqs {
			r.Err = err
		}
		return err
	}
	if err != nil {
		return fail(err)
	}
	var ws []wireResponse
	if err := json.Unmarshal(resp, &ws); err != nil {
		c.Failures.Add(1)
		return fail(fmt.Errorf("%w: %s: bad batch response: %v", ErrUnavailable, c.shown, err))
	}
	seen := make([]bool, len(reqs))
	for i := range ws {
		id, err := strconv.ParseUint(string(ws[i].ID), 10, 64)
		if err != nil || id < first || id >= first+uint64(len(reqs)) {
			continue
		}
		k := id - first
		seen[k] = true
		reqs[k].Err = decodeResult(&ws[i], reqs[k].Result)
	}
	for i, ok := range seen {
		if !ok {
			reqs[i].Err = fmt.Errorf("%w: %s: no answer to %s in batch", ErrUnavailable, c.shown, reqs[i].Method)
		}
	}
	return nil
}

// Forward posts a raw JSON-RPC body and returns the raw answer.
func (c *Client) Forward(ctx context.Context, body []byte) ([]byte, error) {
	return c.post(ctx, body)
}

// try is one HTTP exchange. retryAfter is the wait the upstream asked for
// (a Retry-After header), zero when it did not say.
func (c *Client) try(ctx context.Context, body []byte) (data []byte, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %v", ErrUnavailable, c.shown, err)
	}
	req.Header.Set("Content-Type", "application/json")
	c.Requests.Add(1)
	if c.RoundTrip != nil {
		defer func(start time.Time) { c.RoundTrip(time.Since(start)) }(time.Now())
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.Failures.Add(1)
		return nil, 0, &transientError{fmt.Errorf("%w: %s: %v", ErrUnavailable, c.shown, unwrapURLError(err))}
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(io.LimitReader(resp.Body, 128<<20))
	if err != nil {
		c.Failures.Add(1)
		return nil, 0, &transientError{fmt.Errorf("%w: %s: read: %v", ErrUnavailable, c.shown, err)}
	}
	if retryableStatus(resp.StatusCode) {
		c.Failures.Add(1)
		return nil, parseRetryAfter(resp.Header.Get("Retry-After")), &transientError{fmt.Errorf("%w: %s: HTTP %s", ErrUnavailable, c.shown, resp.Status)}
	}
	if resp.StatusCode != http.StatusOK && (len(data) == 0 || (data[0] != '{' && data[0] != '[')) {
		c.Failures.Add(1)
		return nil, 0, fmt.Errorf("%w: %s: HTTP %s", ErrUnavailable, c.shown, resp.Status)
	}
	if rateLimited(data) {
		return nil, 0, &transientError{fmt.Errorf("%w: %s: rate limited: %s", ErrUnavailable, c.shown, truncate(data, 200))}
	}
	return data, 0, nil
}

func unwrapURLError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}
