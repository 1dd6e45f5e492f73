package api_test

import (
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
)

// TestOPTipSuggestion: on the OP-stack dev chain eth_maxPriorityFeePerGas
// is op-geth's: 0.001 gwei while blocks have room; after a block at
// capacity (its gas used plus its largest transaction's above the limit),
// 10% over the median effective tip of its transactions, the deposit's
// included. eth_gasPrice adds the head's base fee.
func TestOPTipSuggestion(t *testing.T) {
	g, err := chain.DevL2Genesis()
	if err != nil {
		t.Fatal(err)
	}
	// The L1-attributes deposit (gas limit 1M) and four 221k-gas
	// transactions fill a block: a fifth does not fit.
	g.GasLimit = 1_000_000
	n, err := node.New(node.Config{Genesis: g, BlockTime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	url := n.URL()
	tip := func() *big.Int {
		var v hexutil.Big
		json.Unmarshal(rpcCall(t, url, "eth_maxPriorityFeePerGas"), &v)
		return v.ToInt()
	}
	if got := tip(); got.Int64() != 1e6 {
		t.Fatalf("suggestion on an empty chain %v, want 1000000", got)
	}
	// Block 1's deposit writes L1Block's slots for the first time (cold,
	// 160k gas); later ones cost far less.
	rpcCall(t, url, "evm_mine")
	signer := types.LatestSignerForChainID(g.Config.ChainID)
	to := common.Address{0x77}
	for i := range 5 {
		key, _ := crypto.HexToECDSA(chain.DevKeys[i])
		// 20 kB of zero calldata: 221k gas, EIP-7623's floor.
		tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: g.Config.ChainID, Gas: 221_000, To: &to,
			GasTipCap: big.NewInt(int64(i+1) * params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Data: make([]byte, 20_000)})
		raw, _ := tx.MarshalBinary()
		rpcCall(t, url, "eth_sendRawTransaction", hexutil.Bytes(raw))
	}
	rpcCall(t, url, "evm_mine")
	head := n.Chain.Head()
	b := n.Chain.BlockByHash(head.Hash())
	if len(b.Transactions()) != 5 || head.GasUsed+221_000 <= head.GasLimit {
		t.Fatalf("block %d: %d transactions, %d of %d gas used: not at capacity", head.Number, len(b.Transactions()), head.GasUsed, head.GasLimit)
	}
	// Tips by size: the deposit's (negative: no fee cap), then the four
	// best-paying user transactions (5, 4, 3 and 2 gwei): the median is 3
	// gwei.
	if got := tip(); got.Cmp(big.NewInt(3_300_000_000)) != 0 {
		t.Fatalf("suggestion after a full block %v, want 3.3 gwei", got)
	}
	var price hexutil.Big
	json.Unmarshal(rpcCall(t, url, "eth_gasPrice"), &price)
	if want := new(big.Int).Add(big.NewInt(3_300_000_000), head.BaseFee); price.ToInt().Cmp(want) != 0 {
		t.Fatalf("gas price %v, want %v", price.ToInt(), want)
	}
}
