package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RPC relays JSON-RPC over HTTP to an upstream node and can stall (hold
// every request until released), lag (delay every answer), or answer some
// requests from a view of the chain some blocks behind, as a pool of
// nodes with one lagging does.
type RPC struct {
	target string
	srv    *http.Server
	ln     net.Listener
	client *http.Client

	mu       sync.Mutex
	released chan struct{} // closed while not stalled
	lag      time.Duration
	behind   uint64            // blocks the lagging view is behind
	every    int               // every n-th request of a method goes to the lagging view (0: none)
	n        map[string]int    // requests by method (the first of a batch)
	head     uint64            // the newest block number seen (answers, polls)
	polled   time.Time         // when the target's head was last asked
	numbers  map[string]uint64 // block hash (lower-case hex) → number, from answers
	imp      imports           // the late-import view (imports.go)
	requests atomic.Int64
	waiting  atomic.Int64
}

// maxHeldRequests bounds the requests a stall holds; more are refused.
const maxHeldRequests = 1024

// NewRPC listens on a loopback port and relays to the node at target
// (http://…).
func NewRPC(target string) (*RPC, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &RPC{target: target, ln: ln, client: &http.Client{}, released: make(chan struct{}), numbers: make(map[string]uint64)}
	close(p.released)
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve)}
	go p.srv.Serve(ln)
	return p, nil
}

// URL is the proxy's address.
func (p *RPC) URL() string { return "http://" + p.ln.Addr().String() }

// Requests is the number of requests received.
func (p *RPC) Requests() int64 { return p.requests.Load() }

// Stall holds every request (new and in flight to the proxy) until Release.
func (p *RPC) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.released:
		p.released = make(chan struct{})
	default:
	}
}

// Release lets held requests through.
func (p *RPC) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.released:
	default:
		close(p.released)
	}
}

// SetLag delays every answer by d (0: none).
func (p *RPC) SetLag(d time.Duration) {
	p.mu.Lock()
	p.lag = d
	p.mu.Unlock()
}

// SetBehind sends every n-th request of each method (0: none) to a view of
// the chain k blocks behind the newest block seen: "latest" is that older
// block, and a request naming the hash of a newer block is answered "header
// not found". Counting by method makes a poll of the head alternate
// whatever else is asked in between.
func (p *RPC) SetBehind(k uint64, n int) {
	p.mu.Lock()
	p.behind, p.every, p.n = k, n, make(map[string]int)
	p.mu.Unlock()
}

var methodRe = regexp.MustCompile(`"method"\s*:\s*"([^"]*)"`)

// Close stops the proxy, releasing held requests.
func (p *RPC) Close() {
	p.Release()
	p.srv.Close()
}

func (p *RPC) serve(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return
	}
	p.mu.Lock()
	released, lag := p.released, p.lag
	lagging := false
	if p.every > 0 {
		var method string
		if m := methodRe.FindSubmatch(body); m != nil {
			method = string(m[1])
		}
		p.n[method]++
		lagging = p.n[method]%p.every == 0
	}
	p.mu.Unlock()
	if p.waiting.Add(1) > maxHeldRequests {
		p.waiting.Add(-1)
		http.Error(w, "too many held requests", http.StatusServiceUnavailable)
		return
	}
	select {
	case <-released:
	case <-r.Context().Done():
	}
	p.waiting.Add(-1)
	if lag > 0 {
		time.Sleep(lag)
	}
	p.mu.Lock()
	late := p.imp.delay > 0
	p.mu.Unlock()
	if late {
		out, status, err := p.lateImport(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(out)
		return
	}
	if lagging {
		if out, ok := p.behindAnswer(body); ok {
			w.Header().Set("Content-Type", "application/json")
			w.Write(out)
			return
		}
		body = p.behindLatest(body)
	}
	out, status, err := p.forward(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.learn(out)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(out)
}

func (p *RPC) forward(body []byte) ([]byte, int, error) {
	resp, err := p.client.Post(p.target, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 128<<20))
	return out, resp.StatusCode, err
}

var (
	hashRe   = regexp.MustCompile(`"(0x[0-9a-fA-F]{64})"`)
	blockRe  = regexp.MustCompile(`"hash":"(0x[0-9a-f]{64})"[^{}]*?"number":"(0x[0-9a-f]+)"|"number":"(0x[0-9a-f]+)"[^{}]*?"hash":"(0x[0-9a-f]{64})"`)
	latestRe = regexp.MustCompile(`"latest"`)
)

// learn records the blocks an answer shows (hash and number).
func (p *RPC) learn(answer []byte) {
	ms := blockRe.FindAllSubmatch(answer, -1)
	if len(ms) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.numbers) > 8192 {
		clear(p.numbers)
	}
	for _, m := range ms {
		hash, num := string(m[1]), string(m[2])
		if hash == "" {
			hash, num = string(m[4]), string(m[3])
		}
		n, err := strconv.ParseUint(strings.TrimPrefix(num, "0x"), 16, 64)
		if err != nil {
			continue
		}
		p.numbers[strings.ToLower(hash)] = n
		p.head = max(p.head, n)
	}
}

// cutoff is the lagging view's head (ok false before any block was seen):
// the target's head, asked at most every 50 ms, less the lag.
func (p *RPC) cutoff() (uint64, bool) {
	p.mu.Lock()
	stale := time.Since(p.polled) > 50*time.Millisecond
	if stale {
		p.polled = time.Now()
	}
	p.mu.Unlock()
	if stale {
		if out, _, err := p.forward([]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`)); err == nil {
			var ans struct{ Result string }
			if json.Unmarshal(out, &ans) == nil {
				if n, err := strconv.ParseUint(strings.TrimPrefix(ans.Result, "0x"), 16, 64); err == nil {
					p.mu.Lock()
					p.head = max(p.head, n)
					p.mu.Unlock()
				}
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head < p.behind || p.head == 0 {
		return 0, false
	}
	return p.head - p.behind, true
}

// behindAnswer answers a request naming a block newer than the lagging
// view's head with "header not found" (every call of a batch alike).
func (p *RPC) behindAnswer(body []byte) ([]byte, bool) {
	cut, ok := p.cutoff()
	if !ok {
		return nil, false
	}
	newer := false
	p.mu.Lock()
	for _, m := range hashRe.FindAllSubmatch(body, -1) {
		if n, known := p.numbers[strings.ToLower(string(m[1]))]; known && n > cut {
			newer = true
			break
		}
	}
	p.mu.Unlock()
	if !newer {
		return nil, false
	}
	var calls []struct {
		ID json.RawMessage `json:"id"`
	}
	batch := len(bytes.TrimSpace(body)) > 0 && bytes.TrimSpace(body)[0] == '['
	if batch {
		json.Unmarshal(body, &calls)
	} else {
		calls = make([]struct {
			ID json.RawMessage `json:"id"`
		}, 1)
		json.Unmarshal(body, &calls[0])
	}
	var out bytes.Buffer
	if batch {
		out.WriteByte('[')
	}
	for i, c := range calls {
		if i > 0 {
			out.WriteByte(',')
		}
		id := c.ID
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		fmt.Fprintf(&out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"header not found"}}`, id)
	}
	if batch {
		out.WriteByte(']')
	}
	return out.Bytes(), true
}

// behindLatest replaces "latest" with the lagging view's head.
func (p *RPC) behindLatest(body []byte) []byte {
	cut, ok := p.cutoff()
	if !ok {
		return body
	}
	return latestRe.ReplaceAll(body, []byte(`"0x`+strconv.FormatUint(cut, 16)+`"`))
}
