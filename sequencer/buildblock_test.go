package sequencer

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
)

// TestBuildBlock: testing_buildBlockV1 builds a block go-ethereum accepts
// (re-imported with full validation: state root, receipts, withdrawals,
// requests), with exactly the given transactions, attributes and extra
// data, and changes neither the chain nor the pool.
func TestBuildBlock(t *testing.T) {
	h := newManualHarness(t, "", 0)
	defer h.stop()
	ctx := context.Background()
	pooled := h.transfer(0, common.Address{0xf0}, 1) // waits in the pool
	head := h.chain.Head()
	key := h.keys[1]
	var txs []*types.Transaction
	for n := range uint64(2) {
		txs = append(txs, h.sign(key, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: n, Gas: 21000,
			GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(3), To: &common.Address{0xf1}, Value: big.NewInt(5)}))
	}
	beaconRoot := common.Hash{0xbe}
	attrs := engine.PayloadAttributes{
		Timestamp: head.Time + 12, Random: common.Hash{0x5a}, SuggestedFeeRecipient: common.Address{0xfe},
		Withdrawals: []*types.Withdrawal{{Index: 0, Validator: 1, Address: common.Address{0xf2}, Amount: 7}}, BeaconRoot: &beaconRoot,
	}
	env, err := h.seq.BuildBlock(ctx, BuildRequest{Parent: head.Hash(), Attrs: attrs, Txs: txs, Extra: []byte("built")})
	if err != nil {
		t.Fatal(err)
	}
	p := env.ExecutionPayload
	if p.ParentHash != head.Hash() || p.Number != head.Number.Uint64()+1 || p.Timestamp != attrs.Timestamp || p.FeeRecipient != attrs.SuggestedFeeRecipient ||
		p.Random != attrs.Random || string(p.ExtraData) != "built" || len(p.Transactions) != 2 || p.GasUsed != 42000 || len(p.Withdrawals) != 1 {
		t.Fatalf("payload %+v", p)
	}
	if want := big.NewInt(3 * 42000); env.BlockValue.Cmp(want) != 0 {
		t.Errorf("block value %v, want %v (tip 3 × 42000 gas)", env.BlockValue, want)
	}
	if h.chain.Head().Hash() != head.Hash() || !h.seq.pool.Has(pooled.Hash()) || h.seq.pool.Len() != 1 {
		t.Fatalf("building changed the chain (head %d) or the pool (%d pooled)", h.chain.Head().Number, h.seq.pool.Len())
	}
	block, err := engine.ExecutableDataToBlock(*p, nil, &beaconRoot, env.Requests, types.DefaultBlockConfig)
	if err != nil {
		t.Fatalf("payload does not assemble to its hash: %v", err)
	}
	st, _ := h.reimport(types.Blocks{block}).State()
	if got := st.GetBalance(common.Address{0xf2}).Uint64(); got != 7*params.GWei {
		t.Errorf("withdrawal recipient balance %d, want 7 gwei", got)
	}

	// null: the next mined block's transactions (the pool's here).
	env, err = h.seq.BuildBlock(ctx, BuildRequest{Parent: head.Hash(), Attrs: attrs})
	if err != nil || len(env.ExecutionPayload.Transactions) != 1 {
		t.Fatalf("from the pool: %v, %d txs", err, len(env.ExecutionPayload.Transactions))
	}
	// An empty list: an empty block.
	if env, err = h.seq.BuildBlock(ctx, BuildRequest{Parent: head.Hash(), Attrs: attrs, Txs: []*types.Transaction{}}); err != nil || len(env.ExecutionPayload.Transactions) != 0 {
		t.Fatalf("empty: %v", err)
	}
	// Refusals, with core's words for a transaction that does not apply.
	far := h.sign(key, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: 999, Gas: 21000,
		GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(3), To: &common.Address{0xf1}})
	from := crypto.PubkeyToAddress(key.PublicKey)
	for name, tc := range map[string]struct {
		req  BuildRequest
		want string
	}{
		"nonce too high":   {BuildRequest{Parent: head.Hash(), Attrs: attrs, Txs: []*types.Transaction{far}}, "nonce too high: address " + from.Hex() + ", tx: 999 state: 0"},
		"unknown parent":   {BuildRequest{Parent: common.Hash{1}, Attrs: attrs}, "unknown parent block"},
		"timestamp":        {BuildRequest{Parent: head.Hash(), Attrs: engine.PayloadAttributes{Timestamp: head.Time}}, "invalid timestamp"},
		"stopped early by": {BuildRequest{Parent: head.Hash(), Attrs: attrs, Txs: txs}, "context canceled"},
	} {
		ctx := ctx
		if name == "stopped early by" {
			c, cancel := context.WithCancel(ctx)
			cancel()
			ctx = c
		}
		_, err := h.seq.BuildBlock(ctx, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	if h.chain.Head().Hash() != head.Hash() {
		t.Error("a refused build changed the chain")
	}
}
