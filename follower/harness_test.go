package follower_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/sequencer"
)

// store is a contract: SSTORE(calldata[0:32], calldata[32:64]), then a LOG1
// of the key, so re-executed receipts carry logs.
var (
	store     = common.HexToAddress("0x00000000000000000000000000000000005707e0")
	storeCode = []byte{
		0x60, 0x20, 0x35, // PUSH1 32 CALLDATALOAD (value)
		0x60, 0x00, 0x35, // PUSH1 0 CALLDATALOAD (key)
		0x55,             // SSTORE
		0x60, 0x00, 0x35, // key
		0x60, 0x00, 0x60, 0x00, // size 0, offset 0
		0xa1, // LOG1
		0x00,
	}
)

// sequencerNode starts an in-memory preconf dev node that sequences the
// OP-stack dev chain (flashblocks every interval); it returns the node and
// its flashblocks feed's websocket URL.
func sequencerNode(t *testing.T, blockTime, interval time.Duration) (*node.Node, string) {
	t.Helper()
	g, err := chain.DevL2Genesis() // the default dev chain: OP-stack, deposits first
	if err != nil {
		t.Fatal(err)
	}
	g.Alloc[store] = types.Account{Code: storeCode, Balance: new(big.Int), Storage: map[common.Hash]common.Hash{{31: 1}: {31: 9}}}
	n, err := node.New(node.Config{
		Genesis: g, HTTPAddr: "127.0.0.1", Sequencer: &sequencer.Config{BlockTime: blockTime, Interval: interval},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(nil); err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, "ws" + strings.TrimPrefix(n.URL(), "http") + "/flashblocks"
}

// faultProxy relays a websocket feed to its clients, dropping, duplicating
// or reordering frames on demand, and can cut every connection.
type faultProxy struct {
	target string
	srv    *httptest.Server

	mu     sync.Mutex
	conns  map[*websocket.Conn]struct{}
	fault  func(n int) string // "", "drop", "dup", "hold" (sent after the next frame)
	mutate func(data []byte) []byte
	frames atomic.Int64
	refuse atomic.Bool
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	p := &faultProxy{target: target, conns: make(map[*websocket.Conn]struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() { p.kill(); p.srv.Close() })
	return p
}

func (p *faultProxy) url() string { return "ws" + strings.TrimPrefix(p.srv.URL, "http") }

func (p *faultProxy) setFault(f func(n int) string) {
	p.mu.Lock()
	p.fault = f
	p.mu.Unlock()
}

func (p *faultProxy) setMutate(m func([]byte) []byte) {
	p.mu.Lock()
	p.mutate = m
	p.mu.Unlock()
}

func (p *faultProxy) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.CloseNow()
	}
}

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request) {
	if p.refuse.Load() {
		http.Error(w, "feed down", http.StatusServiceUnavailable)
		return
	}
	down, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	up, _, err := websocket.Dial(ctx, p.target, nil)
	if err != nil {
		down.Close(websocket.StatusTryAgainLater, "upstream feed down")
		return
	}
	up.SetReadLimit(64 << 20)
	p.mu.Lock()
	p.conns[down] = struct{}{}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, down)
		delete(p.conns, up)
		p.mu.Unlock()
		up.CloseNow()
		down.CloseNow()
	}()
	go func() { down.CloseRead(ctx); <-ctx.Done() }()
	type frame struct {
		typ  websocket.MessageType
		data []byte
	}
	var held *frame
	for {
		typ, data, err := up.Read(ctx)
		if err != nil {
			return
		}
		n := int(p.frames.Add(1))
		p.mu.Lock()
		f, m := p.fault, p.mutate
		p.mu.Unlock()
		action := ""
		if f != nil {
			action = f(n)
		}
		if m != nil {
			data = m(data)
		}
		switch action {
		case "drop":
			continue
		case "hold":
			held = &frame{typ, data}
			continue
		}
		if err := down.Write(ctx, typ, data); err != nil {
			return
		}
		if action == "dup" {
			down.Write(ctx, typ, data)
		}
		if held != nil {
			down.Write(ctx, held.typ, held.data)
			held = nil
		}
	}
}

// switchProxy forwards HTTP JSON-RPC to an upstream, or plays dead.
type switchProxy struct {
	srv  *httptest.Server
	down atomic.Bool
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = nil
	p := &switchProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			// a dead upstream: the connection just closes
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// rpcCall makes one JSON-RPC call over HTTP.
func rpcCall(url string, out any, method string, params ...any) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var w struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return fmt.Errorf("%s: %s", err, raw)
	}
	if w.Error != nil {
		return fmt.Errorf("rpc error %d: %s", w.Error.Code, w.Error.Message)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(w.Result, out)
}

// sender signs transactions from the dev keys.
type sender struct {
	keys   []*ecdsa.PrivateKey
	nonces []uint64
	signer types.Signer
	url    string
	last   common.Hash // the last transaction sent
	// deposits makes traffic inject a user deposit every tenth send.
	deposits     bool
	depositsSent atomic.Int64
}

func newSender(t *testing.T, url string, chainID *big.Int, keys int) *sender {
	s := &sender{signer: types.LatestSignerForChainID(chainID), url: url}
	for _, k := range chain.DevKeys[:keys] {
		key, err := crypto.HexToECDSA(k)
		if err != nil {
			t.Fatal(err)
		}
		s.keys = append(s.keys, key)
		s.nonces = append(s.nonces, 0)
	}
	return s
}

// keys0 is the first key's address.
func (s *sender) keys0() common.Address { return crypto.PubkeyToAddress(s.keys[0].PublicKey) }

// send submits one transaction from key i: a transfer to a fresh-ish
// address, or a storage write on the store contract.
func (s *sender) send(i int, storeWrite bool, n uint64) error {
	var to common.Address
	var data []byte
	value := big.NewInt(int64(1000 + n))
	gas := uint64(21000)
	if storeWrite {
		to, gas, value = store, 80000, new(big.Int)
		data = append(common.BigToHash(big.NewInt(int64(n%8))).Bytes(), common.BigToHash(big.NewInt(int64(n))).Bytes()...)
	} else {
		to = common.BigToAddress(big.NewInt(int64(0x100000 + n%16)))
	}
	tx := types.MustSignNewTx(s.keys[i], s.signer, &types.DynamicFeeTx{
		ChainID: s.signer.ChainID(), Nonce: s.nonces[i], GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(50e9),
		Gas: gas, To: &to, Value: value, Data: data,
	})
	raw, _ := tx.MarshalBinary()
	if err := rpcCall(s.url, nil, "eth_sendRawTransaction", hexutil.Bytes(raw)); err != nil {
		return err
	}
	s.nonces[i]++
	s.last = tx.Hash()
	return nil
}

// deposit injects a user deposit (eth_sendTransaction with a mint) from
// depositor n%4, minting and sending on to a transfer recipient.
func (s *sender) deposit(n uint64) error {
	to := common.BigToAddress(big.NewInt(int64(0x100000 + n%16)))
	return rpcCall(s.url, nil, "eth_sendTransaction", map[string]any{
		"from": depositor(n), "to": to, "gas": "0x7530", "value": hexutil.Big(*big.NewInt(int64(500 + n))), "mint": hexutil.Big(*big.NewInt(int64(1000 + n))),
	})
}

// depositor is the sender of deposit n.
func depositor(n uint64) common.Address { return common.Address{0xd0, 19: byte(n % 4)} }

// watched are the accounts and slots compared between nodes: the senders,
// recipients and depositors, the store contract, and on the OP-stack
// chain the fee vaults (base, L1 data and operator fees, tips) and
// L1Block's slots (written by every block's L1-attributes deposit).
func watched() ([]common.Address, []common.Hash) {
	addrs := append(chain.DevAccounts(), store, common.Address{})
	for k := range 16 {
		addrs = append(addrs, common.BigToAddress(big.NewInt(int64(0x100000+k))))
	}
	for k := range 4 {
		addrs = append(addrs, depositor(uint64(k)))
	}
	addrs = append(addrs, params.OptimismBaseFeeRecipient, params.OptimismL1FeeRecipient, params.OptimismOperatorFeeRecipient,
		opstack.SequencerFeeVault, opstack.L1Block, opstack.L1InfoDepositor, params.OptimismL2ToL1MessagePasser)
	var slots []common.Hash
	for k := range 8 {
		slots = append(slots, common.BigToHash(big.NewInt(int64(k))))
	}
	slots = append(slots, common.Hash{31: 1})
	return addrs, slots
}

// l1BlockSlots are L1Block's storage slots the L1-attributes deposit writes.
const l1BlockSlots = 9

// sameState compares two pending states on the watched accounts and slots.
func sameState(a, b *pending.State) error {
	addrs, slots := watched()
	for _, addr := range addrs {
		x, err := a.Account(addr)
		if err != nil {
			return fmt.Errorf("follower account %s: %w", addr, err)
		}
		y, err := b.Account(addr)
		if err != nil {
			return err
		}
		if (x == nil) != (y == nil) || (x != nil && (!x.Balance.Eq(y.Balance) || x.Nonce != y.Nonce || common.BytesToHash(x.CodeHash) != common.BytesToHash(y.CodeHash))) {
			return fmt.Errorf("account %s: follower %+v, sequencer %+v", addr, x, y)
		}
	}
	for _, k := range slots {
		x, err := a.Storage(store, k)
		if err != nil {
			return fmt.Errorf("follower slot %s: %w", k, err)
		}
		y, _ := b.Storage(store, k)
		if x != y {
			return fmt.Errorf("slot %s: follower %s, sequencer %s", k, x, y)
		}
	}
	for k := range l1BlockSlots {
		slot := common.BigToHash(big.NewInt(int64(k)))
		x, err := a.Storage(opstack.L1Block, slot)
		if err != nil {
			return fmt.Errorf("follower L1Block slot %d: %w", k, err)
		}
		if y, _ := b.Storage(opstack.L1Block, slot); x != y {
			return fmt.Errorf("L1Block slot %d: follower %s, sequencer %s", k, x, y)
		}
	}
	return nil
}
