package seqapi_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/anvil"
	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/seqapi"
	"github.com/preconf/preconf/sequencer"
)

// Test timings: fast, with generous waits (never asserted as durations).
const (
	testInterval  = 20 * time.Millisecond
	testBlockTime = 100 * time.Millisecond
	waitLimit     = 20 * time.Second
)

// harness is a started sequencer on an in-memory dev chain.
type harness struct {
	t     *testing.T
	chain *chain.Chain
	src   *pending.Source
	seq   *sequencer.Sequencer
	keys  []*ecdsa.PrivateKey
	nonce map[common.Address]uint64
}

// newHarness starts a sequencer with cfg on genesis g (nil: the OP-stack
// dev chain).
func newHarness(t *testing.T, g *core.Genesis, cfg sequencer.Config) *harness {
	t.Helper()
	if g == nil {
		var err error
		if g, err = chain.DevL2Genesis(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := chain.Open(chain.Config{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, chain: c, src: new(pending.Source), nonce: make(map[common.Address]uint64)}
	for _, k := range chain.DevKeys {
		key, _ := crypto.HexToECDSA(k)
		h.keys = append(h.keys, key)
	}
	cfg.SafeLag, cfg.FinalizedLag, cfg.Logger = 2, 4, slog.New(slog.NewTextHandler(io.Discard, nil))
	if h.seq, err = sequencer.New(cfg, c, h.src); err != nil {
		t.Fatal(err)
	}
	if err := h.seq.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// newAPIHarness serves a sequencer on the OP-stack dev chain sealing every
// blockTime.
func newAPIHarness(t *testing.T, blockTime time.Duration) (*harness, *rpc.Server) {
	return serve(newHarness(t, nil, sequencer.Config{Interval: testInterval, BlockTime: blockTime}))
}

// newManualHarness starts a manual-mining sequencer (pre-confirming every
// interval, or never when it is 0) on the plain-Ethereum dev chain.
func newManualHarness(t *testing.T, interval time.Duration) *harness {
	if interval == 0 {
		interval = sequencer.NoFlashblocks
	}
	return newHarness(t, chain.DevGenesis(), sequencer.Config{Mining: sequencer.ManualMining, Interval: interval})
}

// serve registers the read methods, the sequencer's and the anvil methods
// on a server, wired as node does.
func serve(h *harness) (*harness, *rpc.Server) {
	srv := rpc.NewServer(rpc.Options{})
	reads, err := api.New(api.Local(h.chain), api.Config{Pending: h.src, PoolNonces: h.seq.Pool()})
	if err != nil {
		h.t.Fatal(err)
	}
	reads.Register(srv)
	seqapi.Register(srv, h.seq, reads, reads)
	anvil.Register(srv, h.seq, anvil.Options{})
	return h, srv
}

// stop stops the sequencer and closes the chain.
func (h *harness) stop() {
	if err := h.seq.Stop(); err != nil {
		h.t.Error(err)
	}
	if err := h.chain.Close(); err != nil {
		h.t.Error(err)
	}
}

func (h *harness) sign(key *ecdsa.PrivateKey, inner types.TxData) *types.Transaction {
	h.t.Helper()
	tx, err := types.SignNewTx(key, h.seq.Signer(), inner)
	if err != nil {
		h.t.Fatal(err)
	}
	return tx
}

// transfer admits a transfer of value wei from dev account i to `to` with
// the next nonce.
func (h *harness) transfer(i int, to common.Address, value int64) *types.Transaction {
	h.t.Helper()
	from := crypto.PubkeyToAddress(h.keys[i].PublicKey)
	tx := h.sign(h.keys[i], &types.DynamicFeeTx{
		ChainID: h.chain.Config().ChainID, Nonce: h.nonce[from], Gas: 21000,
		GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(params.GWei), To: &to, Value: big.NewInt(value),
	})
	h.nonce[from]++
	if _, err := h.seq.Admit(tx); err != nil {
		h.t.Fatalf("admit: %v", err)
	}
	return tx
}

func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s (head %d, sequencer error %v)", what, h.chain.Head().Number, h.seq.Err())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *harness) preconfirmed(tx *types.Transaction) bool {
	snap := h.src.Current()
	if snap == nil {
		return false
	}
	_, _, _, ok := snap.Tx(tx.Hash())
	return ok
}

func (h *harness) sealed(tx *types.Transaction) bool {
	_, _, _, _, ok := h.chain.TxLookup(tx.Hash())
	return ok
}

type rpcResult struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func call(t *testing.T, srv *rpc.Server, method string, params ...any) rpcResult {
	t.Helper()
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	var res rpcResult
	if err := json.Unmarshal(srv.Handle(context.Background(), req), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func raw(t *testing.T, tx *types.Transaction) hexutil.Bytes {
	b, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chainDev is dev account i's address.
func chainDev(i int) common.Address { return chain.DevAccounts()[i] }
