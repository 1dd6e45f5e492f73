package faultproxy

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Late imports: an upstream that imports each block late but answers at
// once, as a replica's execution node does when it imports what the
// sequencer sealed some time after. With SetImportDelay(d) a block is
// shown d after the proxy first saw it at the target (the target's head is
// asked at most every importPoll, whenever a request comes):
// eth_blockNumber and "latest" are the newest block shown, and an answer
// that holds a newer block (asked by number or hash), or its receipts or
// transactions, is null, as from a node that does not have it yet. Reads
// naming a block shown, state reads by block hash among them, are relayed
// at once.

// importPoll is how often, at most, the target's head is asked.
const importPoll = 2 * time.Millisecond

// imports is the late-import view's state (guarded by RPC.mu).
type imports struct {
	delay  time.Duration
	seen   map[uint64]time.Time // block number → first seen (zero: shown from the start)
	top    uint64               // the newest block number seen
	polled time.Time
	primed bool
}

// SetImportDelay shows each block d after the proxy first saw it (0: at
// once, the view off). The blocks the target has when it is set are shown
// from the start.
func (p *RPC) SetImportDelay(d time.Duration) {
	p.mu.Lock()
	p.imp = imports{delay: d, seen: make(map[uint64]time.Time)}
	p.mu.Unlock()
}

// refreshImports asks the target for its head (at most every importPoll)
// and notes when each new block was first seen.
func (p *RPC) refreshImports() {
	p.mu.Lock()
	due := time.Since(p.imp.polled) >= importPoll
	if due {
		p.imp.polled = time.Now()
	}
	p.mu.Unlock()
	if !due {
		return
	}
	out, _, err := p.forward([]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`))
	if err != nil {
		return
	}
	var ans struct{ Result string }
	if json.Unmarshal(out, &ans) != nil {
		return
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(ans.Result, "0x"), 16, 64)
	if err != nil {
		return
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	im := &p.imp
	if !im.primed {
		im.primed, im.top = true, n
		im.seen[n] = time.Time{}
		return
	}
	for k := im.top + 1; k <= n; k++ {
		im.seen[k] = now
	}
	im.top = max(im.top, n)
	for k := range im.seen {
		if k+64 < im.top {
			delete(im.seen, k)
		}
	}
}

// shown is the newest block shown (ok false before the target answered).
func (p *RPC) shown() (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	im := &p.imp
	if !im.primed {
		return 0, false
	}
	cut := time.Now().Add(-im.delay)
	for n := im.top; ; n-- {
		if at, ok := im.seen[n]; !ok || !at.After(cut) || n == 0 {
			return n, true
		}
	}
}

// lateImport answers body as the late-import view does.
func (p *RPC) lateImport(body []byte) ([]byte, int, error) {
	p.refreshImports()
	n, ok := p.shown()
	if !ok {
		return p.forward(body)
	}
	if m := methodRe.FindSubmatch(body); m != nil && string(m[1]) == "eth_blockNumber" && bytes.TrimSpace(body)[0] == '{' {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(body, &req)
		if len(req.ID) == 0 {
			req.ID = json.RawMessage("null")
		}
		return []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"0x` + strconv.FormatUint(n, 16) + `"}`), 200, nil
	}
	body = latestRe.ReplaceAll(body, []byte(`"0x`+strconv.FormatUint(n, 16)+`"`))
	out, status, err := p.forward(body)
	if err != nil {
		return out, status, err
	}
	p.learn(out)
	return hideNewer(out, n), status, nil
}

// answer is one JSON-RPC answer, kept as sent but for its result.
type answer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// hideNewer replaces with null every result of out (one answer or a batch)
// that holds a block above n: a block, a receipt or transaction in one, or
// a list of receipts.
func hideNewer(out []byte, n uint64) []byte {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 {
		return out
	}
	var list []answer
	batch := trimmed[0] == '['
	if batch {
		if json.Unmarshal(trimmed, &list) != nil {
			return out
		}
	} else {
		var one answer
		if json.Unmarshal(trimmed, &one) != nil {
			return out
		}
		list = []answer{one}
	}
	changed := false
	for i := range list {
		if list[i].Result != nil && above(list[i].Result, n) {
			list[i].Result, changed = json.RawMessage("null"), true
		}
	}
	if !changed {
		return out
	}
	var b []byte
	if batch {
		b, _ = json.Marshal(list)
	} else {
		b, _ = json.Marshal(list[0])
	}
	return b
}

// above reports whether a result holds a block above n.
func above(result json.RawMessage, n uint64) bool {
	type numbered struct {
		Number      string `json:"number"`
		BlockNumber string `json:"blockNumber"`
	}
	over := func(v numbered) bool {
		for _, s := range []string{v.Number, v.BlockNumber} {
			if k, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64); err == nil && s != "" && k > n {
				return true
			}
		}
		return false
	}
	switch r := bytes.TrimSpace(result); {
	case len(r) > 0 && r[0] == '{':
		var v numbered
		return json.Unmarshal(r, &v) == nil && over(v)
	case len(r) > 0 && r[0] == '[':
		var vs []numbered
		return json.Unmarshal(r, &vs) == nil && len(vs) > 0 && over(vs[0])
	}
	return false
}
