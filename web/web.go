// Package web serves the node's page for people: the node's status, the
// wallet's registry, pending approval requests with Approve/Reject buttons,
// and an "Add this network to your wallet" button. Its assets are embedded
// (no external requests; it works offline). The page reads the node only
// through its public interfaces: JSON-RPC on "/", the /flashblocks websocket
// feed when the node has one, and the wallet endpoints below.
//
// Routes:
//
//	GET /                 the page, for a browser (Accept: text/html); other
//	                      non-POST requests on "/" get 405 as before
//	GET /chain.json       this node's chain as EIP-3085 chainData
//	GET /assets/…         the page's script and style
//	GET /wallet/state     registry, selection, pending approvals (local only;
//	                      ?since=VERSION long-polls for the next change)
//	POST /wallet/approvals/{id}/approve, …/reject            (local only)
//
// "Local only" means the request comes from a loopback address, names a
// loopback host (against DNS rebinding), and a POST carries
// Content-Type: application/json with no foreign Origin (against other web
// pages in the person's browser, which cannot send that without a CORS
// preflight that is never granted here). A remote caller of the node can
// therefore never approve its own wallet request.
package web

import (
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/wallet"
)

//go:embed assets
var assetsFS embed.FS

// Site is the page and its endpoints.
type Site struct {
	w      *wallet.Wallet
	log    *slog.Logger
	page   []byte
	assets http.Handler
}

// New returns the site over a wallet (which may be disabled).
func New(w *wallet.Wallet, log *slog.Logger) *Site {
	if log == nil {
		log = slog.Default()
	}
	page, err := assetsFS.ReadFile("assets/index.html")
	if err != nil {
		panic(err) // embedded at build time
	}
	sub, _ := fs.Sub(assetsFS, "assets")
	return &Site{w: w, log: log, page: page, assets: http.StripPrefix("/assets/", http.FileServer(http.FS(sub)))}
}

// Mount registers the site's routes other than "/" (the node serves "/"
// with JSON-RPC and hands the rest to the Site itself, see ServeHTTP).
func (s *Site) Mount(handle func(pattern string, h http.Handler)) {
	handle("/chain.json", http.HandlerFunc(s.chainJSON))
	handle("/assets/", http.HandlerFunc(s.asset))
	handle("/wallet/state", localOnly(http.HandlerFunc(s.state)))
	handle("/wallet/approvals/", localOnly(http.HandlerFunc(s.decide)))
}

// ServeHTTP answers what the JSON-RPC handler passes on for "/": the page to
// a browser, 405 to anything else (as the node did before the page).
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && acceptsHTML(r.Header.Get("Accept")) {
		securityHeaders(w, r)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodGet {
			w.Write(s.page)
		}
		return
	}
	w.Header().Set("Allow", "POST")
	http.Error(w, "method not allowed: JSON-RPC is served by POST", http.StatusMethodNotAllowed)
}

// acceptsHTML reports whether an Accept header asks for text/html (with a
// non-zero quality).
func acceptsHTML(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || (mt != "text/html" && mt != "application/xhtml+xml") {
			continue
		}
		if q, ok := params["q"]; ok && (q == "0" || strings.Trim(q, "0.") == "") {
			continue
		}
		return true
	}
	return false
}

// securityHeaders: the page runs only its own script and style and talks
// only to this node (HTTP and its websocket feed).
func securityHeaders(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	csp := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self' ws://" + r.Host + " wss://" + r.Host + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

func (s *Site) asset(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	securityHeaders(w, r)
	w.Header().Set("Cache-Control", "no-cache")
	s.assets.ServeHTTP(w, r)
}

// chainJSON serves the node's own chain as wallet_addEthereumChain's
// parameter. It is public data, readable from any origin.
func (s *Site) chainJSON(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, s.w.Self())
}

// State is what GET /wallet/state answers.
type State struct {
	Enabled      bool              `json:"enabled"`
	Mode         string            `json:"mode"`
	AllowPrivate bool              `json:"allowPrivateTargets"`
	Self         wallet.Chain      `json:"self"`
	Selected     string            `json:"selected"`
	Chains       []wallet.Chain    `json:"chains"`
	Pending      []wallet.Approval `json:"pending"`
	Version      uint64            `json:"version"` // pass as ?since= to wait for the next change
	Now          time.Time         `json:"now"`
}

// state answers the wallet's state. With ?since=V (a version it answered
// before) it first waits, up to 25 s, until the state differs from V: a long
// poll, so the page sees new requests at once and misses none.
func (s *Site) state(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	version, changed := s.w.Changes()
	if since, err := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64); err == nil && since == version && s.w.Enabled() {
		t := time.NewTimer(25 * time.Second)
		select {
		case <-changed:
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
		version, _ = s.w.Changes()
	}
	st := State{Enabled: s.w.Enabled(), Mode: s.w.Mode(), AllowPrivate: s.w.AllowsPrivateTargets(), Self: s.w.Self(),
		Version: version, Now: time.Now().UTC()}
	if st.Enabled {
		st.Chains, st.Selected = s.w.Chains()
		st.Pending = s.w.Pending()
	} else {
		st.Mode = "disabled"
	}
	if st.Chains == nil {
		st.Chains = []wallet.Chain{}
	}
	if st.Pending == nil {
		st.Pending = []wallet.Approval{}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, st)
}

// decide handles POST /wallet/approvals/{id}/approve|reject.
func (s *Site) decide(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/wallet/approvals/")
	id, action, ok := strings.Cut(rest, "/")
	if !ok || id == "" || (action != "approve" && action != "reject") {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found: use POST /wallet/approvals/{id}/approve or /reject"})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed: use POST"})
		return
	}
	if !s.w.Enabled() {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "the wallet is disabled"})
		return
	}
	var err error
	if action == "approve" {
		err = s.w.Approve(id)
	} else {
		err = s.w.Reject(id)
	}
	if errors.Is(err, wallet.ErrNoSuchApproval) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no pending approval " + id + " (decided already, timed out or never made)"})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	s.log.Info("wallet approval decided over HTTP", "id", id, "action", action, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "approved": action == "approve"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// localOnly admits requests from this machine made by the page or the CLI.
func localOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := notLocal(r); reason != "" {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "forbidden: " + reason})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// notLocal says why a request is not a local one ("" if it is).
func notLocal(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err != nil || !a.Unmap().IsLoopback() {
		return "wallet approvals are served only to callers on this machine (loopback)"
	}
	if !rpc.LoopbackHosts.Allows(r.Host) { // the node's Host allow-list, pinned to loopback here
		return "the Host header must name a loopback host (localhost, 127.0.0.1 or [::1])"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "cross-origin request"
		}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "cross-site request"
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return "a POST must have Content-Type: application/json"
		}
	}
	return ""
}
