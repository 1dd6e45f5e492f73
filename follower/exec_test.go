package follower

import (
	"crypto/ecdsa"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/remote"
	"github.com/preconf/preconf/rpc"
)

// devUpstream is an in-memory plain-Ethereum dev chain served by the api
// package on loopback, and its URL; while down is set it answers 503.
func devUpstream(t *testing.T) (c *chain.Chain, url string, down *atomic.Bool) {
	t.Helper()
	return devUpstreamWith(t, chain.DevGenesis())
}

// devUpstreamWith is devUpstream from genesis g.
func devUpstreamWith(t *testing.T, g *core.Genesis) (c *chain.Chain, url string, down *atomic.Bool) {
	t.Helper()
	c, err := chain.Open(chain.Config{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv := rpc.NewServer(rpc.Options{})
	methods, err := api.New(api.Local(c), api.Config{})
	if err != nil {
		t.Fatal(err)
	}
	methods.Register(srv)
	h := srv.HTTPHandler(rpc.HTTPOptions{})
	down = new(atomic.Bool)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "upstream down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return c, hs.URL, down
}

// execFixture is an executor over devUpstream, at its genesis.
func execFixture(t *testing.T) (*executor, *pending.Source, *types.Header) {
	t.Helper()
	e, src, genesis, _ := execFixtureDown(t)
	return e, src, genesis
}

// execFixtureDown is execFixture with devUpstream's switch.
func execFixtureDown(t *testing.T) (*executor, *pending.Source, *types.Header, *atomic.Bool) {
	t.Helper()
	c, url, down := devUpstream(t)
	client := remote.NewClient(url, 0)
	sh := remote.NewShared(client, remote.ProofsRequired)
	src := new(pending.Source)
	e := newExecutor(c.Config(), sh, newHeaders(client, c.Config()), src)
	e.stateAt = sh.NewState
	return e, src, c.Head(), down
}

func devTx(t *testing.T, nonce uint64, to common.Address, value int64) hexutil.Bytes {
	key, _ := crypto.HexToECDSA(chain.DevKeys[0])
	signer := types.LatestSignerForChainID(big.NewInt(chain.DevChainID))
	tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{
		ChainID: signer.ChainID(), Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10e9), Gas: 21000, To: &to, Value: big.NewInt(value),
	})
	raw, _ := tx.MarshalBinary()
	return raw
}

func base(parent *types.Header) *flashblock.Base {
	return &flashblock.Base{
		ParentHash: parent.Hash(), BlockNumber: hexutil.Uint64(parent.Number.Uint64() + 1), Timestamp: hexutil.Uint64(parent.Time + 2),
		GasLimit: hexutil.Uint64(parent.GasLimit), BaseFeePerGas: (*hexutil.Big)(big.NewInt(875_000_000)),
		FeeRecipient: common.Address{0xc0}, PrevRandao: common.Hash{1},
	}
}

func TestExecutorReexecutesAndRejects(t *testing.T) {
	e, src, parent := execFixture(t)
	to := common.Address{0xaa}
	id := flashblock.PayloadID{1}
	fb0 := &flashblock.Message{PayloadID: id, Index: 0, Base: base(parent), Diff: flashblock.Diff{Transactions: []hexutil.Bytes{devTx(t, 0, to, 5)}}}
	fb1 := &flashblock.Message{PayloadID: id, Index: 1, Diff: flashblock.Diff{Transactions: []hexutil.Bytes{devTx(t, 1, to, 7)}}}
	var published []*pending.Snapshot
	if err := e.sync(parent, []*flashblock.Message{fb0, fb1}, func(s *pending.Snapshot) { published = append(published, s) }); err != nil {
		t.Fatal(err)
	}
	if len(published) != 2 || src.Current() != published[1] {
		t.Fatalf("published %d snapshots", len(published))
	}
	snap := src.Current()
	acct, err := snap.State.Account(to)
	if err != nil || acct == nil || acct.Balance.Uint64() != 12 {
		t.Fatalf("recipient after two flashblocks: %+v %v", acct, err)
	}
	if len(snap.Txs) != 2 || snap.Receipts[1].Status != types.ReceiptStatusSuccessful || snap.Receipts[1].CumulativeGasUsed != 42000 || snap.NewTxs != 1 || snap.Index != 1 {
		t.Fatalf("snapshot: %d txs, receipts %+v", len(snap.Txs), snap.Receipts)
	}
	if snap.Header.Coinbase != (common.Address{0xc0}) || snap.Header.Number.Uint64() != 1 || snap.Header.GasUsed != 42000 {
		t.Fatalf("header %+v", snap.Header)
	}
	// The system calls ran at index 0: the beacon roots contract holds the
	// timestamp.
	ts, err := published[0].State.Storage(common.HexToAddress("0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02"), common.BigToHash(new(big.Int).SetUint64((parent.Time+2)%8191)))
	if err != nil || ts.Big().Uint64() != parent.Time+2 {
		t.Fatalf("beacon roots slot %s %v", ts, err)
	}

	for _, tc := range []struct {
		name string
		txs  []hexutil.Bytes
	}{
		{"nonce too high", []hexutil.Bytes{devTx(t, 9, to, 1)}},
		{"nonce reused", []hexutil.Bytes{devTx(t, 1, to, 1)}},
		{"garbage bytes", []hexutil.Bytes{{0x02, 0x01}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := &flashblock.Message{PayloadID: id, Index: 2, Diff: flashblock.Diff{Transactions: tc.txs}}
			_, err := e.syncChain(parent, []*flashblock.Message{fb0, fb1, bad}, noneAfter, noCallback)
			if !errors.Is(err, ErrInvalidFlashblock) {
				t.Fatalf("error %v", err)
			}
			if src.Current() != nil {
				t.Fatal("pending not cleared after an invalid flashblock")
			}
			// rebuilt from scratch on the next sync
			if _, err := e.syncChain(parent, []*flashblock.Message{fb0, fb1}, noneAfter, noCallback); err != nil || src.Current() == nil || len(src.Current().Txs) != 2 {
				t.Fatalf("rebuild: %v", err)
			}
		})
	}
	// A base that does not follow the parent is refused.
	wrong := &flashblock.Message{PayloadID: flashblock.PayloadID{2}, Index: 0, Base: base(parent)}
	wrong.Base.BlockNumber = 7
	if err := e.sync(parent, []*flashblock.Message{wrong}, nil); !errors.Is(err, ErrInvalidFlashblock) {
		t.Fatalf("wrong base: %v", err)
	}
}

func TestCarryOver(t *testing.T) {
	e, _, parent := execFixture(t)
	to := common.Address{0xaa}
	id := flashblock.PayloadID{1}
	fb0 := &flashblock.Message{PayloadID: id, Index: 0, Base: base(parent), Diff: flashblock.Diff{Transactions: []hexutil.Bytes{devTx(t, 0, to, 5)}}}
	if err := e.sync(parent, []*flashblock.Message{fb0}, nil); err != nil {
		t.Fatal(err)
	}
	b := e.blk
	sealedHeader := types.CopyHeader(b.last)
	sealedHeader.Root = common.Hash{0x5e}
	hashes := []common.Hash{b.Txs[0].Hash()}
	sender := crypto.PubkeyToAddress(mustKey(t).PublicKey)

	for _, tc := range []struct {
		name   string
		mutate func(h *types.Header, txs []common.Hash) []common.Hash
		ok     bool
	}{
		{"identical", func(h *types.Header, txs []common.Hash) []common.Hash { return txs }, true},
		{"other transactions", func(h *types.Header, txs []common.Hash) []common.Hash { return []common.Hash{{1}} }, false},
		{"more transactions", func(h *types.Header, txs []common.Hash) []common.Hash { return append(txs, common.Hash{1}) }, false},
		{"other gas used", func(h *types.Header, txs []common.Hash) []common.Hash { h.GasUsed++; return txs }, false},
		{"other receipts root", func(h *types.Header, txs []common.Hash) []common.Hash { h.ReceiptHash = common.Hash{1}; return txs }, false},
		{"other timestamp", func(h *types.Header, txs []common.Hash) []common.Hash { h.Time++; return txs }, false},
		{"withdrawals", func(h *types.Header, txs []common.Hash) []common.Hash {
			h.WithdrawalsHash = &common.Hash{1}
			return txs
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := types.CopyHeader(sealedHeader)
			txs := tc.mutate(h, append([]common.Hash(nil), hashes...))
			into := e.shared.NewState(h)
			if got := e.carryOver(b, &remote.Head{Header: h, Txs: txs}, into); got != tc.ok {
				t.Fatalf("carried %v, want %v", got, tc.ok)
			}
			accts, slots := into.Cached()
			if !tc.ok {
				if len(accts) != 0 || len(slots) != 0 {
					t.Fatalf("seeded although refused: %d accounts", len(accts))
				}
				return
			}
			if a := accts[to]; a == nil || a.Balance.Uint64() != 5 {
				t.Fatalf("recipient seeded as %+v", a)
			}
			if a := accts[sender]; a == nil || a.Nonce != 1 {
				t.Fatalf("sender seeded as %+v", a)
			}
			if _, ok := accts[params.WithdrawalQueueAddress]; ok {
				t.Fatal("block-end system contract seeded")
			}
			// the beacon roots contract's storage changed: its account is read
			// afresh, its written slots are carried
			if _, ok := accts[params.BeaconRootsAddress]; ok {
				t.Fatal("storage-changed account seeded")
			}
			if len(slots[params.BeaconRootsAddress]) == 0 {
				t.Fatal("written system slots not carried")
			}
		})
	}
}

// noneAfter and noCallback are syncChain's arguments for a single block
// with nothing to tell.
func noneAfter(common.Hash) []*flashblock.Message { return nil }

func noCallback([]*flashblock.Message) func(*pending.Snapshot) { return func(*pending.Snapshot) {} }

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	key, err := crypto.HexToECDSA(chain.DevKeys[0])
	if err != nil {
		t.Fatal(err)
	}
	return key
}
