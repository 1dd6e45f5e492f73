package rpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// DefaultMaxBody is the default request body limit (5 MiB).
const DefaultMaxBody = 5 << 20

// HTTPOptions configure the HTTP transport.
type HTTPOptions struct {
	// MaxBody limits a request body in bytes (default DefaultMaxBody).
	MaxBody int64
	// CORSOrigins lists allowed browser origins; "*" allows any. Empty: CORS off.
	CORSOrigins []string
	// Other answers everything on "/" that is not a JSON-RPC POST (a GET for
	// the web page, a websocket upgrade). Nil: 405 for other methods.
	Other http.Handler
	// Hosts are the Host headers served (nil: any); others get 403.
	Hosts *HostAllowList
	// MaxConnections caps open connections, websockets included
	// (default DefaultMaxConnections). At the cap a new connection takes
	// the place of the longest-idle one; it is answered 503 only when none
	// is idle (see connTable).
	MaxConnections int
	// HealthPaths are what a loopback connection admitted past the cap may
	// ask, by GET or HEAD (default "/health").
	HealthPaths []string
	// Timeouts of a connection; zero values take the Default… constants.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// DisableFastPath serves every request through net/http (Serve): the
	// fast path is on by default.
	DisableFastPath bool
}

func (o *HTTPOptions) defaults() {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.HealthPaths == nil {
		o.HealthPaths = []string{"/health"}
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
}

// HTTPTransport is JSON-RPC over HTTP for one Server and one set of
// options: it answers "/" (JSON-RPC POSTs, GET /health) as an http.Handler,
// makes the net/http server around a mux (NewServer) and serves listeners
// (Serve: on the fast path, or net/http alone). The three share one
// request policy (requestPolicy), built here.
type HTTPTransport struct {
	srv    *Server
	opts   HTTPOptions
	policy *requestPolicy
}

// HTTPHandler returns s's HTTP transport with opts.
func (s *Server) HTTPHandler(opts HTTPOptions) *HTTPTransport {
	opts.defaults()
	return &HTTPTransport{srv: s, opts: opts, policy: newRequestPolicy(opts)}
}

// NewServer is the net/http server for h (a mux that routes "/" to t)
// with the options' timeouts; the Host allow-list applies to every
// endpoint h serves. Its write timeout, which net/http counts from the
// request's arrival, leaves room for the request deadline. Websockets
// clear both deadlines when they are accepted.
func (t *HTTPTransport) NewServer(h http.Handler) *http.Server {
	write := t.opts.WriteTimeout
	if timeout := t.srv.opts.Timeout; timeout > 0 {
		write = max(write, timeout+writeMargin)
	}
	return &http.Server{
		Handler:           t.policy.filter(h),
		ReadHeaderTimeout: t.opts.ReadHeaderTimeout,
		ReadTimeout:       t.opts.ReadTimeout,
		WriteTimeout:      write,
		IdleTimeout:       t.opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(t.srv.log.Handler(), slog.LevelDebug),
	}
}

// Serve serves ln until srv (made by NewServer) is shut down, and returns
// http.ErrServerClosed then, like http.Server.Serve. Connections are
// admitted under MaxConnections (connTable; Serve sets srv's ConnState and
// ConnContext hooks and wraps its Handler, see track), and accept errors
// (too many open files, …) never stop it. Plain JSON-RPC POSTs are
// answered on the fast path (fasthttp.go) and everything else by srv,
// unless DisableFastPath: then srv serves every connection.
func (t *HTTPTransport) Serve(ln net.Listener, srv *http.Server) error {
	table := newConnTable(t.opts.MaxConnections, t.srv.metrics)
	cl := newConnListener(ln, table, t.srv.log, t.srv.metrics)
	track(srv, t.opts)
	if t.opts.DisableFastPath {
		return srv.Serve(cl)
	}
	return t.serveFast(cl, table, srv)
}

// ServeHTTP answers one request. The fast path (fasthttp.go) answers plain
// JSON-RPC POSTs without it: what it checks comes from the same policy,
// and a change to what a POST to "/" gets here (new headers, checks,
// limits) must be made there too, or make parseHead hand such requests
// over; TestServeFastMatchesHTTPHandler and FuzzServeFast compare the two.
func (t *HTTPTransport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := t.policy
	if !p.hostOK(r.Host) {
		http.Error(w, "invalid host specified", http.StatusForbidden)
		return
	}
	if r.URL.Path == "/health" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
		return
	}
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	p.setCORS(w, r)
	switch r.Method {
	case http.MethodPost:
	case http.MethodOptions:
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		if t.opts.Other != nil {
			t.opts.Other.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed: JSON-RPC is served by POST", http.StatusMethodNotAllowed)
		return
	}
	if !contentTypeOK(r.Header.Get("Content-Type")) {
		http.Error(w, "unsupported content type: use application/json", http.StatusUnsupportedMediaType)
		return
	}
	if !p.bodyOK(r.ContentLength) {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx := context.WithValue(r.Context(), transportKey{}, "http")
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer putBuffer(buf)
	w.Header().Set("Content-Type", "application/json")
	// At the deadline the answer goes out from the deadline's goroutine
	// (lateGate) and the connection closes once the handler returns.
	if !t.srv.handleBy(ctx, body, buf, func(late []byte) { writeLate(w, late) }) {
		return
	}
	// Nothing for only notifications: an empty 200.
	w.Write(buf.Bytes())
}

// writeLate answers a request at its deadline (lateGate) while its handler
// runs on; the connection closes after it.
func writeLate(w http.ResponseWriter, b []byte) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
	http.NewResponseController(w).Flush()
}

type transportKey struct{}

// Transport names the transport a request came over ("http", "ws"); handlers
// that only make sense on a connection (subscriptions) check it.
func Transport(ctx context.Context) string {
	t, _ := ctx.Value(transportKey{}).(string)
	return t
}

// WithTransport marks ctx with a transport name (for other transports).
func WithTransport(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, transportKey{}, name)
}
