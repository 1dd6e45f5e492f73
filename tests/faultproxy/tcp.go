// Package faultproxy holds fault-injecting proxies for tests: a TCP relay
// that freezes (a half-open connection: nothing moves, nothing closes),
// resets (RST, no closing handshake) and refuses connections; a websocket
// relay that drops, reorders, duplicates, holds and bursts, replays,
// corrupts or injects messages; and a JSON-RPC relay that stalls, lags, or
// answers from a view of the chain some blocks behind (a pool's node
// behind). Every proxy listens on 127.0.0.1 only and bounds what it holds.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
)

// TCP relays connections to a target address.
type TCP struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  map[*tcpPair]struct{}
	thawed chan struct{} // closed while not frozen
	refuse bool
	wg     sync.WaitGroup
}

type tcpPair struct {
	down, up *net.TCPConn
	done     chan struct{}
	once     sync.Once
}

func (p *tcpPair) close(reset bool) {
	p.once.Do(func() {
		if reset {
			p.down.SetLinger(0)
			p.up.SetLinger(0)
		}
		p.down.Close()
		p.up.Close()
		close(p.done)
	})
}

// NewTCP listens on a loopback port and relays to target (host:port).
func NewTCP(target string) (*TCP, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &TCP{ln: ln, target: target, conns: make(map[*tcpPair]struct{}), thawed: make(chan struct{})}
	close(p.thawed)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *TCP) Addr() string { return p.ln.Addr().String() }

func (p *TCP) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		down := c.(*net.TCPConn)
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			down.SetLinger(0)
			down.Close()
			continue
		}
		c2, err := net.Dial("tcp", p.target)
		if err != nil {
			down.SetLinger(0)
			down.Close()
			continue
		}
		pair := &tcpPair{down: down, up: c2.(*net.TCPConn), done: make(chan struct{})}
		p.mu.Lock()
		p.conns[pair] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.copy(pair, pair.up, pair.down)
		go p.copy(pair, pair.down, pair.up)
	}
}

// copy relays src to dst, waiting while the proxy is frozen.
func (p *TCP) copy(pair *tcpPair, dst, src *net.TCPConn) {
	defer p.wg.Done()
	defer func() {
		pair.close(false)
		p.mu.Lock()
		delete(p.conns, pair)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thawed := p.thawed
			p.mu.Unlock()
			select {
			case <-thawed:
			case <-pair.done:
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				dst.CloseWrite()
			}
			return
		}
	}
}

// Freeze stops moving bytes on every connection, both ways, without closing
// any: the peers see a silent, half-open connection. New connections are
// accepted and frozen too.
func (p *TCP) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default:
	}
}

// Thaw lets bytes move again.
func (p *TCP) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

// Reset closes every connection with a TCP reset (no closing handshake).
func (p *TCP) Reset() {
	p.mu.Lock()
	pairs := make([]*tcpPair, 0, len(p.conns))
	for c := range p.conns {
		pairs = append(pairs, c)
	}
	p.mu.Unlock()
	for _, c := range pairs {
		c.close(true)
	}
}

// Refuse makes new connections be reset at once (on) or relayed (off).
func (p *TCP) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// Conns is the number of relayed connections.
func (p *TCP) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening and resets every connection.
func (p *TCP) Close() {
	p.ln.Close()
	p.Thaw()
	p.Reset()
	p.wg.Wait()
}
