package fork_test

import (
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/fork"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/remote"
	"github.com/preconf/preconf/sequencer"
)

// box is a small contract the upstream holds:
//
//	// SPDX-License-Identifier: CC0-1.0
//	pragma solidity 0.8.26;
//
//	// Box holds a value and what each caller added to it.
//	contract Box {
//	    uint256 public value;                       // slot 0
//	    mapping(address => uint256) public credit;  // slot keccak256(caller . 1)
//
//	    event Added(address indexed by, uint256 amount);
//
//	    function set(uint256 v) external { value = v; }
//
//	    function add(uint256 amount) external {
//	        value += amount;
//	        credit[msg.sender] += amount;
//	        emit Added(msg.sender, amount);
//	    }
//	}
//
// compiled with solc 0.8.26 (solc-js from npm), optimizer on (200 runs),
// evmVersion cancun: the runtime code below.
var (
	box     = common.HexToAddress("0x000000000000000000000000000000000000b0b0")
	boxCode = common.FromHex("608060405234801561000f575f80fd5b506004361061004a575f3560e01c80631003e2d21461004e5780633fa4f2451461006357806360fe47b11461007d578063d5d44d801461008f575b5f80fd5b61006161005c36600461011e565b6100ae565b005b61006b5f5481565b60405190815260200160405180910390f35b61006161008b36600461011e565b5f55565b61006b61009d366004610135565b60016020525f908152604090205481565b805f808282546100be9190610162565b9091555050335f90815260016020526040812080548392906100e1908490610162565b909155505060405181815233907f446e00ad56f9b887844f390c87a128507b991ea0499375f13ecb115288c2df7d9060200160405180910390a250565b5f6020828403121561012e575f80fd5b5035919050565b5f60208284031215610145575f80fd5b81356001600160a01b038116811461015b575f80fd5b9392505050565b8082018082111561018157634e487b7160e01b5f52601160045260245ffd5b9291505056fea26469706673582212204c24c2e3f6f17722d192126cd58705ce5fdd1a254ec0b20d669aff410fd1688a64736f6c634300081a0033")

	selAdd    = common.FromHex("1003e2d2") // add(uint256)
	selValue  = common.FromHex("3fa4f245") // value()
	selSet    = common.FromHex("60fe47b1") // set(uint256)
	selCredit = common.FromHex("d5d44d80") // credit(address)
)

// creditSlot is the storage slot of credit[a].
func creditSlot(a common.Address) common.Hash {
	return crypto.Keccak256Hash(common.LeftPadBytes(a[:], 32), common.LeftPadBytes([]byte{1}, 32))
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// upstreamNode starts an in-memory preconf dev node holding box (value 42),
// sealing a block every 200 ms.
func upstreamNode(t *testing.T) *node.Node {
	t.Helper()
	g := chain.DevGenesis()
	g.Alloc[box] = types.Account{Code: boxCode, Balance: new(big.Int), Storage: map[common.Hash]common.Hash{{}: common.BigToHash(big.NewInt(42))}}
	return startNode(t, node.Config{
		Genesis: g, HTTPAddr: "127.0.0.1", Sequencer: &sequencer.Config{BlockTime: 200 * time.Millisecond, Interval: 100 * time.Millisecond}, Logger: quiet(),
	})
}

// startNode starts a node, closed when the test ends.
func startNode(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(nil); err != nil {
		n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// proxy relays JSON-RPC to the upstream, keeping every request, and can
// play dead (connections closed at once, as a stopped server's are) or
// rate-limit.
type proxy struct {
	srv     *httptest.Server
	down    atomic.Bool
	limit   atomic.Bool // every other request answers 429 Too Many Requests
	limited atomic.Int64

	mu     sync.Mutex
	bodies []string // every request relayed, in order
}

// about counts the requests relayed since the from'th that mention one of
// addrs (a forked node fetches the system calls' slots of coming blocks in
// the background: those requests name other accounts).
func (p *proxy) about(from int, addrs ...common.Address) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, b := range p.bodies[from:] {
		for _, a := range addrs {
			if strings.Contains(strings.ToLower(b), strings.ToLower(a.Hex())) {
				n++
				break
			}
		}
	}
	return n
}

// sent is how many requests were relayed so far.
func (p *proxy) sent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

func newProxy(t *testing.T, target string) *proxy {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &proxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
		}
		body, _ := io.ReadAll(r.Body)
		if p.limit.Load() && p.limited.Add(1)%2 == 1 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "rate limited", http.StatusTooManyRequests)
			return
		}
		p.mu.Lock()
		p.bodies = append(p.bodies, string(body))
		p.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// forkNode starts a node forking url at block (nil: the upstream's head)
// in dir, sealing every second with 100 ms flashblocks.
func forkNode(t testing.TB, dir, url string, block *uint64) (*node.Node, error) {
	t.Helper()
	n, err := node.New(node.Config{
		DataDir: dir, HTTPAddr: "127.0.0.1", Sequencer: &sequencer.Config{BlockTime: time.Second, Interval: 100 * time.Millisecond},
		Fork: &fork.Config{URL: url, Block: block, Client: fastClient}, Logger: quiet(),
	})
	if err != nil {
		return nil, err
	}
	if err := n.Start(nil); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// fastClient retries as DefaultClient does, on a test's time scale.
var fastClient = func() (o remote.Options) {
	o = fork.DefaultClient
	o.Backoff, o.MaxBackoff, o.Cooldown = 10*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond
	return o
}()

// call makes one JSON-RPC call.
func call(url string, out any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
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
		return fmt.Errorf("%v: %s", err, raw)
	}
	if w.Error != nil {
		return fmt.Errorf("rpc error %d: %s", w.Error.Code, w.Error.Message)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(w.Result, out)
}

// word is a 32-byte result as a number.
func word(t *testing.T, url, method string, params ...any) uint64 {
	t.Helper()
	var h common.Hash
	var raw hexutil.Bytes
	var err error
	if method == "eth_call" {
		err = call(url, &raw, method, params...)
		h = common.BytesToHash(raw)
	} else {
		err = call(url, &h, method, params...)
	}
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return h.Big().Uint64()
}

// boxCall is eth_call's params for calling box with data at block.
func boxCall(data []byte, block string) []any {
	return []any{map[string]any{"to": box, "data": hexutil.Bytes(data)}, block}
}

func arg(v uint64) []byte { return common.BigToHash(new(big.Int).SetUint64(v)).Bytes() }

// devKey is dev account i's key.
func devKey(t *testing.T, i int) *ecdsa.PrivateKey {
	k, err := crypto.HexToECDSA(chain.DevKeys[i])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// send signs a call of box with key and sends it to url; it returns the
// transaction's hash.
func send(t *testing.T, url string, key *ecdsa.PrivateKey, chainID uint64, data []byte) common.Hash {
	t.Helper()
	var nonce hexutil.Uint64
	if err := call(url, &nonce, "eth_getTransactionCount", crypto.PubkeyToAddress(key.PublicKey), "pending"); err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(new(big.Int).SetUint64(chainID))
	tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{
		ChainID: signer.ChainID(), Nonce: uint64(nonce), GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9),
		Gas: 200_000, To: &box, Data: data,
	})
	raw, _ := tx.MarshalBinary()
	if err := call(url, nil, "eth_sendRawTransaction", hexutil.Bytes(raw)); err != nil {
		t.Fatalf("send: %v", err)
	}
	return tx.Hash()
}

// sealed waits for the receipt of hash at url.
func sealed(t *testing.T, url string, hash common.Hash) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var r map[string]any
		if err := call(url, &r, "eth_getTransactionReceipt", hash); err != nil {
			t.Fatal(err)
		}
		if r != nil && r["blockNumber"] != nil {
			var b map[string]any
			call(url, &b, "eth_getBlockByNumber", r["blockNumber"], false)
			if b != nil && b["hash"] == r["blockHash"] {
				return r
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("transaction %s not sealed", hash)
	return nil
}

// nodeLocal opens a local dev chain in dir (no sequencer).
func nodeLocal(dir string) (*node.Node, error) {
	return node.New(node.Config{DataDir: dir, HTTPAddr: "127.0.0.1", Logger: quiet()})
}

// upstreamNodeWithID starts an in-memory dev node (no sequencer) whose
// chain id is id.
func upstreamNodeWithID(t *testing.T, id int64) *node.Node {
	g := chain.DevGenesis()
	cfg := *g.Config
	cfg.ChainID = big.NewInt(id)
	g.Config = &cfg
	return startNode(t, node.Config{Genesis: g, HTTPAddr: "127.0.0.1", Logger: quiet()})
}
