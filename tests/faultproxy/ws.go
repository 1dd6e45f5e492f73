package faultproxy

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// Frame is one websocket message.
type Frame struct {
	Binary bool
	Data   []byte
}

// Fault decides what the clients get for one frame from the feed: nothing,
// the frame, or several frames (it may hold frames back and send them
// later). It is called one frame at a time, whichever client's relay the
// frame is on.
type Fault func(Frame) []Frame

// WS relays a websocket feed to its clients, one upstream connection per
// client, passing every frame through the installed Fault.
type WS struct {
	target string
	srv    *http.Server
	ln     net.Listener

	mu      sync.Mutex
	faultMu sync.Mutex // serializes calls of the fault (stateful)
	fault   Fault
	clients map[*websocket.Conn]*websocket.Conn // client → its upstream connection
	frames  atomic.Int64
	wg      sync.WaitGroup
}

// NewWS listens on a loopback port and relays to the feed at target
// (ws://…, with its query).
func NewWS(target string) (*WS, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &WS{target: target, ln: ln, clients: make(map[*websocket.Conn]*websocket.Conn)}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve)}
	go p.srv.Serve(ln)
	return p, nil
}

// URL is the proxy's websocket URL.
func (p *WS) URL() string { return "ws://" + p.ln.Addr().String() + "/" }

// Addr is the proxy's host:port.
func (p *WS) Addr() string { return p.ln.Addr().String() }

// SetFault installs f (nil: relay every frame as is).
func (p *WS) SetFault(f Fault) {
	p.mu.Lock()
	p.fault = f
	p.mu.Unlock()
}

// Frames is the number of frames received from the feed.
func (p *WS) Frames() int64 { return p.frames.Load() }

// Clients is the number of connected clients.
func (p *WS) Clients() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients)
}

// Send writes fr to every connected client.
func (p *WS) Send(ctx context.Context, fr Frame) {
	p.mu.Lock()
	clients := make([]*websocket.Conn, 0, len(p.clients))
	for c := range p.clients {
		clients = append(clients, c)
	}
	p.mu.Unlock()
	for _, c := range clients {
		write(ctx, c, fr)
	}
}

func write(ctx context.Context, c *websocket.Conn, fr Frame) error {
	typ := websocket.MessageText
	if fr.Binary {
		typ = websocket.MessageBinary
	}
	return c.Write(ctx, typ, fr.Data)
}

// Close stops the proxy and its relays.
func (p *WS) Close() {
	p.srv.Close()
	p.mu.Lock()
	for c, up := range p.clients {
		c.CloseNow()
		up.CloseNow()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *WS) serve(w http.ResponseWriter, r *http.Request) {
	p.wg.Add(1)
	defer p.wg.Done()
	down, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer down.CloseNow()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	target := p.target
	if q := r.URL.RawQuery; q != "" {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + q
	}
	up, _, err := websocket.Dial(ctx, target, nil)
	if err != nil {
		down.Close(websocket.StatusTryAgainLater, "feed unreachable")
		return
	}
	defer up.CloseNow()
	up.SetReadLimit(64 << 20)
	p.mu.Lock()
	p.clients[down] = up
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.clients, down)
		p.mu.Unlock()
	}()
	go func() { down.CloseRead(ctx); <-ctx.Done() }() // answers the client's pings
	for {
		typ, data, err := up.Read(ctx)
		if err != nil {
			return
		}
		p.frames.Add(1)
		fr := Frame{Binary: typ == websocket.MessageBinary, Data: data}
		p.mu.Lock()
		f := p.fault
		p.mu.Unlock()
		out := []Frame{fr}
		if f != nil {
			p.faultMu.Lock()
			out = f(fr)
			p.faultMu.Unlock()
		}
		for _, o := range out {
			if write(ctx, down, o) != nil {
				return
			}
		}
	}
}
