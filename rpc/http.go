package rpc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
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

// HTTPServer is the net/http server for ServeFast's hand-offs (and any
// other listener) with opts' timeouts. Its write timeout, which net/http
// counts from the request's arrival, leaves room for the request deadline.
// Websockets clear both deadlines when they are accepted.
func (s *Server) HTTPServer(h http.Handler, opts HTTPOptions) *http.Server {
	opts.defaults()
	write := opts.WriteTimeout
	if s.opts.Timeout > 0 {
		write = max(write, s.opts.Timeout+writeMargin)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      write,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// acceptedTypes are the Content-Types geth accepts for JSON-RPC.
var acceptedTypes = map[string]bool{
	"application/json":        true,
	"application/json-rpc":    true,
	"application/jsonrequest": true,
}

// HTTPHandler serves JSON-RPC over HTTP POST on "/" and GET /health.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	opts.defaults()
	h := &httpHandler{srv: s, opts: opts, origins: make(map[string]bool)}
	for _, o := range opts.CORSOrigins {
		h.origins[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	return h
}

type httpHandler struct {
	srv     *Server
	opts    HTTPOptions
	origins map[string]bool
}

// ServeHTTP answers one request. ServeFast (fasthttp.go) answers plain
// JSON-RPC POSTs without it: a change to what a POST to "/" gets here (new
// headers, checks, limits) must be made there too, or make ServeFast hand
// such requests over (readHead); TestServeFastMatchesHTTPHandler compares
// the two.
func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.opts.Hosts.Allows(r.Host) {
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
	h.cors(w, r)
	switch r.Method {
	case http.MethodPost:
	case http.MethodOptions:
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		if h.opts.Other != nil {
			h.opts.Other.ServeHTTP(w, r)
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
	if r.ContentLength > h.opts.MaxBody {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
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
	resp := h.srv.Handle(ctx, body)
	w.Header().Set("Content-Type", "application/json")
	if resp == nil { // only notifications: nothing to say
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Write(resp)
}

func contentTypeOK(ct string) bool {
	if ct == "application/json" { // the common case, without parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && acceptedTypes[mt]
}

// cors sets the CORS headers for an allowed origin; CORS stays off otherwise.
func (h *httpHandler) cors(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" || len(h.origins) == 0 {
		return
	}
	if !h.origins["*"] && !h.origins[strings.ToLower(origin)] {
		return
	}
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Add("Vary", "Origin")
	hdr.Set("Access-Control-Allow-Methods", "POST, GET, OPTIONS")
	hdr.Set("Access-Control-Allow-Headers", "Content-Type")
	hdr.Set("Access-Control-Max-Age", "600")
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
