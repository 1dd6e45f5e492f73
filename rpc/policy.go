package rpc

import (
	"mime"
	"net/http"
	"strings"
)

// requestPolicy is what an HTTP request must satisfy to be served, and
// what the answer carries, on both paths: the Host allow-list (every
// endpoint), CORS, the JSON-RPC content types and the body limit. It is
// built once per HTTPTransport; the fast path's head parser (parseHead)
// serves a POST itself only when this policy passes it without net/http's
// help, and hands every other request to net/http, whose handlers ask the
// same policy. The batch limit and the response cap are the Server's, the
// same for every transport.
type requestPolicy struct {
	hosts   *HostAllowList  // nil: any Host
	origins map[string]bool // CORS origins, lower case ("*": any); empty: CORS off
	maxBody int64
}

func newRequestPolicy(opts HTTPOptions) *requestPolicy {
	p := &requestPolicy{hosts: opts.Hosts, origins: make(map[string]bool), maxBody: opts.MaxBody}
	for _, o := range opts.CORSOrigins {
		p.origins[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	return p
}

// hostOK reports whether a request with this Host header is served.
func (p *requestPolicy) hostOK(host string) bool { return p.hosts.Allows(host) }

// hostOKBytes is hostOK for a header value read by the fast path.
func (p *requestPolicy) hostOKBytes(host []byte) bool { return p.hosts.allowsBytes(host) }

// bodyOK reports whether a body of n bytes is within the limit.
func (p *requestPolicy) bodyOK(n int64) bool { return n <= p.maxBody }

// corsOn reports whether CORS is on: requests with an Origin then get
// their headers from net/http's path (setCORS).
func (p *requestPolicy) corsOn() bool { return len(p.origins) > 0 }

// acceptedTypes are the Content-Types geth accepts for JSON-RPC.
var acceptedTypes = map[string]bool{
	"application/json":        true,
	"application/json-rpc":    true,
	"application/jsonrequest": true,
}

// contentTypeOK reports whether a request body of this type is JSON-RPC.
func contentTypeOK(ct string) bool {
	if ct == "application/json" { // the common case, without parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && acceptedTypes[mt]
}

// setCORS sets the CORS headers for an allowed origin; CORS stays off otherwise.
func (p *requestPolicy) setCORS(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if origin == "" || len(p.origins) == 0 {
		return
	}
	if !p.origins["*"] && !p.origins[strings.ToLower(origin)] {
		return
	}
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Add("Vary", "Origin")
	hdr.Set("Access-Control-Allow-Methods", "POST, GET, OPTIONS")
	hdr.Set("Access-Control-Allow-Headers", "Content-Type")
	hdr.Set("Access-Control-Max-Age", "600")
}

// filter answers 403 "invalid host specified" (geth's answer) to requests
// whose Host is not allowed, on every endpoint, and passes the others to
// next.
func (p *requestPolicy) filter(next http.Handler) http.Handler {
	if p.hosts == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.hostOK(r.Host) {
			http.Error(w, "invalid host specified", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
