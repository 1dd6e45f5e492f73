package txpool

import (
	"math/big"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/preconf/preconf/opstack"
)

// l1BlockState is a state whose L1Block holds baseFee as the L1 base fee
// (and fixed scalars), as an L1-attributes deposit leaves it.
func l1BlockState(t *testing.T, baseFee int64) state.Reader {
	t.Helper()
	db, sdb := newTestState(t)
	setL1Fees(sdb, &opstack.L1Info{BaseFee: big.NewInt(baseFee), BlobBaseFee: big.NewInt(1), BaseFeeScalar: 0x20, BlobBaseFeeScalar: 0x10})
	return commitReader(t, db, sdb)
}

// TestRollupCostCache: the shared fee function answers what a fresh one
// would, and a new environment (a new header) reads L1Block again.
func TestRollupCostCache(t *testing.T) {
	cfg := devL2Config(t)
	key, _ := crypto.GenerateKey()
	signer := types.LatestSignerForChainID(cfg.ChainID)
	to := common.Address{0xde}
	txs := make([]*types.Transaction, 4)
	for i := range txs {
		txs[i] = types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: cfg.ChainID, Nonce: uint64(i), Gas: 30000,
			GasFeeCap: big.NewInt(params.GWei), To: &to, Data: make([]byte, 50*i)})
	}
	fresh := func(st state.Reader, h *types.Header, tx *types.Transaction) *big.Int {
		return types.NewTotalRollupCostFunc(cfg, stateGetter{st})(tx, h.Time).ToBig()
	}
	p := New(Config{}, cfg, nil)
	stA, stB := l1BlockState(t, 20*params.GWei), l1BlockState(t, 40*params.GWei)
	hA := &types.Header{Number: big.NewInt(5), Time: 100}
	hB := &types.Header{Number: big.NewInt(5), Time: 100} // the same block, a later snapshot
	tests := []struct {
		name string
		head *types.Header
		st   state.Reader
	}{{"first env", hA, stA}, {"same env again", hA, stA}, {"new env", hB, stB}, {"back to a new header", &types.Header{Number: big.NewInt(6), Time: 102}, stA}}
	var prev *big.Int
	for _, tt := range tests {
		for _, tx := range txs {
			got, want := p.rollupCost(tt.head, tt.st, tx).ToBig(), fresh(tt.st, tt.head, tx)
			if got.Cmp(want) != 0 {
				t.Fatalf("%s: fee %v, want %v", tt.name, got, want)
			}
		}
		last := p.rollupCost(tt.head, tt.st, txs[3]).ToBig()
		if tt.name == "new env" && last.Cmp(prev) <= 0 {
			t.Fatalf("doubling L1's base fee left the fee at %v (was %v)", last, prev)
		}
		prev = last
	}
	// Concurrent admissions share the function (run with -race).
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, tx := range txs {
				p.rollupCost(hB, stB, tx)
			}
		}()
	}
	wg.Wait()
	// A plain-Ethereum chain has no such fee.
	if c := New(Config{}, params.AllDevChainProtocolChanges, nil).rollupCost(hA, stA, txs[0]); c != nil {
		t.Fatalf("L1 chain fee %v, want nil", c)
	}
}
