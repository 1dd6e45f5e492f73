package follower_test

import (
	"bytes"
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

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
)

// eth_sendRawTransactionSync sent to a follower is answered by the follower
// with the receipt from its own pending state (what a client of Base's
// node gets from a replica), a nonce gap with EIP-7966's error at once, and
// a timeout with code 4 and the hash — the sequencer's answers.
func TestFollowerSendRawTransactionSync(t *testing.T) {
	seq, feedURL := sequencerNode(t, time.Second, 100*time.Millisecond)
	target, _ := url.Parse(seq.URL())
	rp := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	methods := map[string]int{}
	// swallow: the upstream answers a send with its hash and drops it, so
	// the transaction is never pre-confirmed and the timeout is certain
	// (forwarded, it could be pre-confirmed before the follower's 1 ms
	// timer even starts, when the forward alone takes a flashblock
	// interval on a loaded machine, and the answer is then its receipt).
	var swallow atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage
			Method string
			Params []hexutil.Bytes
		}
		json.Unmarshal(body, &req)
		mu.Lock()
		methods[req.Method]++
		mu.Unlock()
		if swallow.Load() && req.Method == "eth_sendRawTransaction" && len(req.Params) == 1 {
			tx := new(types.Transaction)
			if err := tx.UnmarshalBinary(req.Params[0]); err == nil {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":"%s"}`, req.ID, tx.Hash().Hex())
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	defer up.Close()
	fn := followNode(t, up.URL, feedURL+"?replay=block", seq.Chain.Config())
	key, _ := crypto.HexToECDSA(chain.DevKeys[7])
	from := crypto.PubkeyToAddress(key.PublicKey)
	signer := types.LatestSignerForChainID(seq.Chain.Config().ChainID)
	sign := func(nonce uint64) hexutil.Bytes {
		to := common.Address{0x5c}
		raw, _ := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: signer.ChainID(), Nonce: nonce,
			GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(50e9), Gas: 21000, To: &to, Value: big.NewInt(7)}).MarshalBinary()
		return raw
	}
	waitFor(t, "the follower's first pending block", 30*time.Second, func() bool { return fn.Pending.Current() != nil })

	for nonce := range uint64(3) {
		var receipt map[string]any
		if err := rpcCall(fn.URL(), &receipt, "eth_sendRawTransactionSync", sign(nonce), 10000); err != nil {
			t.Fatalf("nonce %d: %v", nonce, err)
		}
		// The next request reads its effect at pending on the same follower.
		var count hexutil.Uint64
		if err := rpcCall(fn.URL(), &count, "eth_getTransactionCount", from, "pending"); err != nil || uint64(count) != nonce+1 {
			t.Fatalf("nonce %d: pending nonce after the sync answer %d (%v)", nonce, count, err)
		}
		if receipt["status"] != "0x1" || receipt["from"] != strings.ToLower(from.Hex()) {
			t.Fatalf("receipt %v", receipt)
		}
	}
	err := rpcCall(fn.URL(), nil, "eth_sendRawTransactionSync", sign(9), 10000)
	if err == nil || !strings.Contains(err.Error(), "nonce too high: tx nonce 9, expected nonce 3") {
		t.Fatalf("nonce gap: %v", err)
	}
	var answer struct {
		Error struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	raw := sign(3)
	swallow.Store(true)
	tx := new(types.Transaction)
	tx.UnmarshalBinary(raw)
	body := rawPost(t, fn.URL(), `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransactionSync","params":["`+raw.String()+`",1]}`)
	if err := json.Unmarshal(body, &answer); err != nil || answer.Error.Code != 4 || string(answer.Error.Data) != `"`+tx.Hash().Hex()+`"` {
		t.Fatalf("timeout answer %s", body)
	}
	mu.Lock()
	defer mu.Unlock()
	if methods["eth_sendRawTransactionSync"] != 0 || methods["eth_sendRawTransaction"] != 5 {
		t.Fatalf("the upstream was sent %v", methods)
	}
}

// rawPost posts a JSON-RPC body and returns the raw answer.
func rawPost(t *testing.T, url, body string) []byte {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
