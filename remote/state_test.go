package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/remote"
)

var (
	contract = common.HexToAddress("0x00000000000000000000000000000000c0ffee00")
	slotA    = common.HexToHash("0x01")
	slotB    = common.HexToHash("0xabcdef")
	missing  = common.HexToAddress("0x000000000000000000000000000000000000dead")
)

// upstream starts an in-memory preconf node (no sequencing) whose genesis
// holds a contract with code and two storage slots.
func upstream(t *testing.T) *node.Node {
	t.Helper()
	g := chain.DevGenesis()
	g.Alloc[contract] = types.Account{
		Balance: big.NewInt(7),
		Nonce:   3,
		Code:    []byte{0x60, 0x01, 0x60, 0x00, 0x55, 0x00},
		Storage: map[common.Hash]common.Hash{slotA: common.HexToHash("0x2a"), slotB: common.HexToHash("0xff00ff")},
	}
	n, err := node.New(node.Config{Genesis: g, HTTPAddr: "127.0.0.1"})
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

func TestStateMatchesLocalReader(t *testing.T) {
	n := upstream(t)
	head := n.Chain.Head()
	local, err := n.Chain.StateReader(head.Root)
	if err != nil {
		t.Fatal(err)
	}
	addrs := append(chain.DevAccounts(), contract, missing)
	for _, mode := range []remote.Proofs{remote.ProofsRequired, remote.ProofsOff, remote.ProofsAuto} {
		sh := remote.NewShared(remote.NewClient(n.URL(), 0), mode)
		st := sh.NewState(head)
		if err := st.Prefetch(addrs[:4]); err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			want, _ := local.Account(a)
			got, err := st.Account(a)
			if err != nil {
				t.Fatalf("mode %d: account %s: %v", mode, a, err)
			}
			if (want == nil) != (got == nil) {
				t.Fatalf("mode %d: account %s: got %+v want %+v", mode, a, got, want)
			}
			if want == nil {
				continue
			}
			if !got.Balance.Eq(want.Balance) || got.Nonce != want.Nonce || !bytes.Equal(got.CodeHash, want.CodeHash) {
				t.Fatalf("mode %d: account %s: got %+v want %+v", mode, a, got, want)
			}
			if mode != remote.ProofsOff && got.Root != want.Root {
				t.Fatalf("mode %d: storage root of %s: %s want %s", mode, a, got.Root, want.Root)
			}
			wc := local.Code(a, common.BytesToHash(want.CodeHash))
			if gc := st.Code(a, common.BytesToHash(got.CodeHash)); !bytes.Equal(gc, wc) || st.CodeSize(a, common.BytesToHash(got.CodeHash)) != len(wc) {
				t.Fatalf("mode %d: code of %s: %x want %x", mode, a, gc, wc)
			}
		}
		for _, k := range []common.Hash{slotA, slotB, common.HexToHash("0x77")} {
			want, _ := local.Storage(contract, k)
			got, err := st.Storage(contract, k)
			if err != nil || got != want {
				t.Fatalf("mode %d: slot %s: %s (%v) want %s", mode, k, got, err, want)
			}
		}
		if v, err := st.Storage(missing, slotA); err != nil || v != (common.Hash{}) {
			t.Fatalf("mode %d: slot of a missing account: %s %v", mode, v, err)
		}
		if mode == remote.ProofsAuto && sh.Mode() != remote.ProofsAuto {
			t.Fatalf("auto mode switched to %d although the upstream has eth_getProof", sh.Mode())
		}
		if mode != remote.ProofsOff && sh.Verified.Load() == 0 {
			t.Fatalf("mode %d: no proof verified", mode)
		}
		// Everything is cached now: reading again asks nothing.
		before := sh.Client.Calls.Load()
		for _, a := range addrs {
			st.Account(a)
		}
		st.Storage(contract, slotA)
		if after := sh.Client.Calls.Load(); after != before {
			t.Fatalf("mode %d: %d calls for cached reads", mode, after-before)
		}
	}
}

func TestStateCoalescesConcurrentReads(t *testing.T) {
	n := upstream(t)
	sh := remote.NewShared(remote.NewClient(n.URL(), 0), remote.ProofsRequired)
	st := sh.NewState(n.Chain.Head())
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st.Storage(contract, slotA); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// one proof of the account and the slot, however many readers
	if calls := sh.Client.Calls.Load(); calls != 1 {
		t.Fatalf("%d upstream calls for 32 concurrent reads of one slot, want 1", calls)
	}
	// the account came with it
	if _, err := st.Account(contract); err != nil || sh.Client.Calls.Load() != 1 {
		t.Fatalf("account after its slot: %v, %d calls", err, sh.Client.Calls.Load())
	}
}

// tamper is a proxy that rewrites upstream answers.
func tamper(t *testing.T, target string, rewrite func(req, resp []byte) []byte) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		resp, err := http.Post(target, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.Write(rewrite(body, out))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestLyingUpstreamIsDetected(t *testing.T) {
	n := upstream(t)
	dev := chain.DevAccounts()[0]
	head := n.Chain.Head()
	for _, tc := range []struct {
		name    string
		rewrite func(req, resp []byte) []byte
		read    func(st *remote.State) error
	}{
		{"inflated balance", func(req, resp []byte) []byte {
			return bytes.Replace(resp, []byte(`"balance":"0x21e19e0c9bab2400000"`), []byte(`"balance":"0x21e19e0c9bab2400001"`), 1)
		}, func(st *remote.State) error { _, err := st.Account(dev); return err }},
		{"forged storage value", func(req, resp []byte) []byte {
			return bytes.Replace(resp, []byte(`"value":"0x2a"`), []byte(`"value":"0x2b"`), 1)
		}, func(st *remote.State) error { _, err := st.Storage(contract, slotA); return err }},
		{"truncated account proof", func(req, resp []byte) []byte {
			i := bytes.Index(resp, []byte(`"accountProof":["`))
			if i < 0 {
				return resp
			}
			j := bytes.IndexByte(resp[i+17:], '"')
			return append(append(append([]byte{}, resp[:i+17]...), []byte("0xc0")...), resp[i+17+j:]...)
		}, func(st *remote.State) error { _, err := st.Account(contract); return err }},
		{"wrong code", func(req, resp []byte) []byte {
			if !bytes.Contains(req, []byte("eth_getCode")) {
				return resp
			}
			return bytes.Replace(resp, []byte(`"0x6001600055`), []byte(`"0x6002600055`), 1)
		}, func(st *remote.State) error {
			a, err := st.Account(contract)
			if err != nil {
				return err
			}
			st.Code(contract, common.BytesToHash(a.CodeHash))
			return st.CodeErr()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := remote.NewShared(remote.NewClient(tamper(t, n.URL(), tc.rewrite), 0), remote.ProofsRequired)
			err := tc.read(sh.NewState(head))
			if !errors.Is(err, remote.ErrLying) {
				t.Fatalf("tampered answer accepted: err=%v", err)
			}
		})
	}
}

func TestUnavailableUpstream(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	sh := remote.NewShared(remote.NewClient(url, 2*time.Second), remote.ProofsAuto)
	st := sh.NewState(&types.Header{Number: big.NewInt(1), Root: types.EmptyRootHash})
	_, err := st.Account(contract)
	if !errors.Is(err, remote.ErrUnavailable) || !strings.Contains(err.Error(), url) {
		t.Fatalf("error %v: want a clear 'upstream unavailable' naming %s", err, url)
	}
	// Not cached: a later read asks again.
	if _, err2 := st.Account(contract); err2 == nil {
		t.Fatal("failure was cached as a value")
	}
	if _, err := sh.Client.HeadByNumber(context.Background(), "latest"); !errors.Is(err, remote.ErrUnavailable) {
		t.Fatalf("head: %v", err)
	}
}

func TestHeadsAndRawBlocks(t *testing.T) {
	n := upstream(t)
	c := remote.NewClient(n.URL(), 0)
	ctx := context.Background()
	h, err := c.HeadByNumber(ctx, "latest")
	if err != nil || h == nil {
		t.Fatal(h, err)
	}
	if h.Header.Hash() != n.Chain.Head().Hash() || len(h.Txs) != 0 {
		t.Fatalf("head %s, want %s", h.Header.Hash(), n.Chain.Head().Hash())
	}
	byHash, err := c.HeadByHash(ctx, h.Header.Hash())
	if err != nil || byHash.Header.Hash() != h.Header.Hash() {
		t.Fatal(byHash, err)
	}
	if none, err := c.HeadByNumber(ctx, remote.Tag(1000)); none != nil || err != nil {
		t.Fatalf("unknown block: %v %v", none, err)
	}
	b, err := c.RawBlock(ctx, h.Header.Hash())
	if err != nil || b.Hash() != h.Header.Hash() {
		t.Fatal(b, err)
	}
	rs, err := c.RawReceipts(ctx, h.Header)
	if err != nil || len(rs) != 0 {
		t.Fatal(rs, err)
	}
	// A header whose claimed hash is wrong is refused.
	lying := tamper(t, n.URL(), func(_, resp []byte) []byte {
		return bytes.Replace(resp, []byte(`"gasUsed":"0x0"`), []byte(`"gasUsed":"0x1"`), 1)
	})
	if _, err := remote.NewClient(lying, 0).HeadByNumber(ctx, "latest"); !errors.Is(err, remote.ErrLying) {
		t.Fatalf("forged header accepted: %v", err)
	}
}

func TestPrefetchStorage(t *testing.T) {
	n := upstream(t)
	head := n.Chain.Head()
	local, err := n.Chain.StateReader(head.Root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[common.Address][]common.Hash{contract: {slotA, slotB, common.HexToHash("0x99")}, missing: {slotA}}
	for _, mode := range []remote.Proofs{remote.ProofsRequired, remote.ProofsOff} {
		sh := remote.NewShared(remote.NewClient(n.URL(), 0), mode)
		st := sh.NewState(head)
		if err := st.PrefetchStorage(want); err != nil {
			t.Fatal(err)
		}
		calls := sh.Client.Calls.Load()
		for a, slots := range want {
			for _, k := range slots {
				got, err := st.Storage(a, k)
				exp, _ := local.Storage(a, k)
				if err != nil || got != exp {
					t.Fatalf("mode %d: %s/%s = %s (%v), want %s", mode, a, k, got, err, exp)
				}
			}
			if _, err := st.Account(a); err != nil {
				t.Fatal(err)
			}
		}
		if after := sh.Client.Calls.Load(); after != calls {
			t.Fatalf("mode %d: %d calls after prefetching", mode, after-calls)
		}
	}
	lying := tamper(t, n.URL(), func(req, resp []byte) []byte {
		return bytes.Replace(resp, []byte(`"value":"0x2a"`), []byte(`"value":"0x2b"`), 1)
	})
	st := remote.NewShared(remote.NewClient(lying, 0), remote.ProofsRequired).NewState(head)
	st.PrefetchStorage(want)
	if _, err := st.Storage(contract, slotA); !errors.Is(err, remote.ErrLying) {
		t.Fatalf("forged prefetched slot accepted: %v", err)
	}
}

// proofless forwards to url but answers eth_getProof with -32601 while
// refuse is set, as an upstream without the method does.
func proofless(t *testing.T, url string, refuse *atomic.Bool) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if refuse.Load() && bytes.Contains(body, []byte(`"eth_getProof"`)) {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(body, &req) != nil { // a batch: answer each
				var reqs []struct {
					ID json.RawMessage `json:"id"`
				}
				json.Unmarshal(body, &reqs)
				out := make([]json.RawMessage, len(reqs))
				for i, q := range reqs {
					out[i] = json.RawMessage(`{"jsonrpc":"2.0","id":` + string(q.ID) + `,"error":{"code":-32601,"message":"the method eth_getProof does not exist/is not available"}}`)
				}
				json.NewEncoder(w).Encode(out)
				return
			}
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"the method eth_getProof does not exist/is not available"}}`))
			return
		}
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// In auto mode a -32601 turns proofs off for a while, not for good: new
// States ask again after ReprobeAfter. In required mode it is an error.
func TestProofsReprobe(t *testing.T) {
	defer func(d time.Duration) { remote.ReprobeAfter = d }(remote.ReprobeAfter)
	remote.ReprobeAfter = 100 * time.Millisecond
	n := upstream(t)
	head := n.Chain.Head()
	var refuse atomic.Bool
	refuse.Store(true)
	url := proofless(t, n.URL(), &refuse)

	sh := remote.NewShared(remote.NewClient(url, 0), remote.ProofsAuto)
	if _, err := sh.NewState(head).Account(contract); err != nil {
		t.Fatalf("auto mode without eth_getProof: %v", err)
	}
	if sh.ProofsNow() || sh.Verified.Load() != 0 {
		t.Fatal("proofs still in use after -32601")
	}
	refuse.Store(false)
	time.Sleep(2 * remote.ReprobeAfter)
	if !sh.ProofsNow() {
		t.Fatal("proofs not asked again after ReprobeAfter")
	}
	if _, err := sh.NewState(head).Account(contract); err != nil || sh.Verified.Load() == 0 {
		t.Fatalf("after the upstream gained eth_getProof: %v, %d verified", err, sh.Verified.Load())
	}

	refuse.Store(true)
	req := remote.NewShared(remote.NewClient(url, 0), remote.ProofsRequired)
	if _, err := req.NewState(head).Account(contract); err == nil {
		t.Fatal("required mode read without eth_getProof")
	}
}
