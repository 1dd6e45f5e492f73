package harness

import (
	"errors"
	"net"
	"sync"
	"time"
)

// DelayProxy puts a network distance between a client and a server on
// loopback: a TCP proxy that holds every chunk of bytes, in each direction,
// half the round-trip time before passing it on, in order. It stands in for
// netem (tc qdisc … netem delay), which this machine's kernel lacks
// ("Specified qdisc kind is unknown"); like netem's delay it adds latency,
// not a bandwidth limit. It listens on 127.0.0.1 only and stops with Close.
type DelayProxy struct {
	Addr   string // where clients connect
	target string
	oneWay time.Duration
	ln     net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// NewDelayProxy proxies to target (host:port) with the round-trip time rtt.
func NewDelayProxy(target string, rtt time.Duration) (*DelayProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{Addr: ln.Addr().String(), target: target, oneWay: rtt / 2, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *DelayProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(true, c, s) {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			var pumps sync.WaitGroup
			pumps.Add(2)
			go func() { defer pumps.Done(); p.pump(s, c) }()
			go func() { defer pumps.Done(); p.pump(c, s) }()
			pumps.Wait()
			p.track(false, c, s)
		}()
	}
}

// track registers (add) or forgets and closes a pair of connections; it
// closes them and reports false when the proxy is closed already.
func (p *DelayProxy) track(add bool, cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil || !add {
		for _, c := range cs {
			c.Close()
			delete(p.conns, c)
		}
		return add && p.conns != nil
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// chunk is bytes read at one time, due at another.
type chunk struct {
	due time.Time
	b   []byte
}

// pump copies src to dst, each chunk oneWay after it was read; a reader
// and a writer, so that chunks read meanwhile are not delayed twice.
func (p *DelayProxy) pump(dst, src net.Conn) {
	q := make(chan chunk, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(c.b); err != nil {
				break
			}
		}
		// Half-close when the peer did, so a server sees the client's end.
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	for {
		b := make([]byte, 64<<10)
		n, err := src.Read(b)
		if n > 0 {
			q <- chunk{due: time.Now().Add(p.oneWay), b: b[:n]}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
}

// Close stops accepting, closes every connection and waits for the pumps.
func (p *DelayProxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
