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
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/sequencer"
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
	// transactions fill a block: a fifth does not fit. Manual mining with
	// no flashblock interval keeps all five in the pool until evm_mine, so
	// the block takes the best tips whatever their arrival times (with
	// timed flashblocks a slow machine pre-confirmed them in arrival order).
	g.GasLimit = 1_000_000
	n, err := node.New(node.Config{Genesis: g, Sequencer: &sequencer.Config{Mining: sequencer.ManualMining, Interval: sequencer.NoFlashblocks}})
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

// rpcState reads storage at a block tag over JSON-RPC, as op-geth's fee
// functions read a StateDB.
type rpcState struct {
	t   *testing.T
	url string
	tag string
}

func (s rpcState) GetState(addr common.Address, slot common.Hash) common.Hash {
	var v common.Hash
	if err := json.Unmarshal(rpcCall(s.t, s.url, "eth_getStorageAt", addr, slot, s.tag), &v); err != nil {
		s.t.Fatal(err)
	}
	return v
}

// TestOPFeesAtPending: on the OP-stack dev chain a user transaction's
// pre-confirmed receipt shows the L1 fee op-geth's cost function gives for
// it (on the pending block's L1Block values), the sender's pending balance
// falls by exactly gas × price + value + l1Fee + operator fee, and
// GasPriceOracle.getL1Fee at pending prices the unsigned transaction as on
// Base (its compressed size plus 68 bytes for the signature).
func TestOPFeesAtPending(t *testing.T) {
	sc, err := chain.DevL2SystemConfig()
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{Sequencer: &sequencer.Config{BlockTime: 10 * time.Second, L1: &opstack.DevL1{
		Batcher: sc.Batcher, BaseFeeScalar: sc.BaseFeeScalar, BlobBaseFeeScalar: sc.BlobBaseFeeScalar,
		BaseFee: big.NewInt(4 * params.GWei), BlobBaseFee: big.NewInt(2), OperatorFeeScalar: 3_000_000, OperatorFeeConstant: 777}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	url := n.URL()
	cfg := n.Chain.Config()
	key, _ := crypto.HexToECDSA(chain.DevKeys[3])
	from := crypto.PubkeyToAddress(key.PublicKey)
	balance := func() *big.Int {
		var v hexutil.Big
		json.Unmarshal(rpcCall(t, url, "eth_getBalance", from, "pending"), &v)
		return v.ToInt()
	}
	var head struct {
		Number hexutil.Uint64 `json:"number"`
		Time   hexutil.Uint64 `json:"timestamp"`
	}
	json.Unmarshal(rpcCall(t, url, "eth_getBlockByNumber", "pending", false), &head)
	before := balance()
	to := common.Address{0x7e}
	// Incompressible calldata, so the L1 fee is priced above the minimum
	// size and the estimate of the unsigned transaction differs from it.
	var data []byte
	for i := range 16 {
		data = append(data, crypto.Keccak256([]byte{byte(i)})...)
	}
	inner := &types.DynamicFeeTx{ChainID: cfg.ChainID, Gas: 100_000, To: &to, Value: big.NewInt(12345),
		GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(50 * params.GWei), Data: data}
	tx := types.MustSignNewTx(key, types.LatestSignerForChainID(cfg.ChainID), inner)
	raw, _ := tx.MarshalBinary()
	rpcCall(t, url, "eth_sendRawTransaction", hexutil.Bytes(raw))
	var r struct {
		BlockNumber       hexutil.Uint64 `json:"blockNumber"`
		GasUsed           hexutil.Uint64 `json:"gasUsed"`
		EffectiveGasPrice *hexutil.Big   `json:"effectiveGasPrice"`
		L1Fee             *hexutil.Big   `json:"l1Fee"`
		OperatorScalar    hexutil.Uint64 `json:"operatorFeeScalar"`
		OperatorConstant  hexutil.Uint64 `json:"operatorFeeConstant"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if raw := rpcCall(t, url, "eth_getTransactionReceipt", tx.Hash()); string(raw) != "null" {
			json.Unmarshal(raw, &r)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never pre-confirmed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var latest hexutil.Uint64
	json.Unmarshal(rpcCall(t, url, "eth_blockNumber"), &latest)
	if r.BlockNumber != head.Number || latest >= r.BlockNumber {
		t.Fatalf("receipt in block %d, pending was %d, latest %d: not checked before the seal", r.BlockNumber, head.Number, latest)
	}
	pending := rpcState{t, url, "pending"}
	l1 := types.NewL1CostFunc(cfg, pending)(tx.RollupCostData(), uint64(head.Time))
	operator := types.NewOperatorCostFunc(cfg, pending)(uint64(r.GasUsed), uint64(head.Time)).ToBig()
	if l1 == nil || l1.Sign() == 0 || r.L1Fee == nil || r.L1Fee.ToInt().Cmp(l1) != 0 {
		t.Fatalf("pre-confirmed l1Fee %v, op-geth's cost function %v", r.L1Fee, l1)
	}
	perGas := int64(3) // Isthmus: gas × scalar / 1e6; Jovian: gas × scalar × 100
	if cfg.IsJovian(uint64(head.Time)) {
		perGas = 3_000_000 * 100
	}
	if r.OperatorScalar != 3_000_000 || r.OperatorConstant != 777 || operator.Int64() != int64(r.GasUsed)*perGas+777 {
		t.Fatalf("operator fee %v (scalar %d, constant %d)", operator, r.OperatorScalar, r.OperatorConstant)
	}
	want := new(big.Int).Mul(big.NewInt(int64(r.GasUsed)), r.EffectiveGasPrice.ToInt())
	want.Add(want, tx.Value())
	want.Add(want, l1)
	want.Add(want, operator)
	if got := new(big.Int).Sub(before, balance()); got.Cmp(want) != 0 {
		t.Fatalf("balance fell by %v, want gas × price + value + l1Fee + operator fee = %v", got, want)
	}

	// GasPriceOracle.getL1Fee(unsigned transaction) at pending.
	unsigned, _ := rlp.EncodeToBytes([]any{inner.ChainID, inner.Nonce, inner.GasTipCap, inner.GasFeeCap, inner.Gas, inner.To, inner.Value, inner.Data, types.AccessList{}})
	unsigned = append([]byte{types.DynamicFeeTxType}, unsigned...)
	sel := crypto.Keccak256([]byte("getL1Fee(bytes)"))[:4]
	input := append(sel, common.BigToHash(big.NewInt(32)).Bytes()...)
	input = append(input, common.BigToHash(big.NewInt(int64(len(unsigned)))).Bytes()...)
	input = append(input, common.RightPadBytes(unsigned, (len(unsigned)+31)/32*32)...)
	var est hexutil.Bytes
	json.Unmarshal(rpcCall(t, url, "eth_call", map[string]any{"to": opstack.GasPriceOracle, "input": hexutil.Bytes(input)}, "pending"), &est)
	got := new(big.Int).SetBytes(est)
	var dep struct {
		Input hexutil.Bytes `json:"input"`
	}
	json.Unmarshal(rpcCall(t, url, "eth_getTransactionByBlockNumberAndIndex", "pending", "0x0"), &dep)
	info, _, err := opstack.ParseL1Info(dep.Input)
	if err != nil {
		t.Fatal(err)
	}
	fjord, _ := types.NewL1CostFuncFjord(info.BaseFee, info.BlobBaseFee, big.NewInt(int64(info.BaseFeeScalar)), big.NewInt(int64(info.BlobBaseFeeScalar)))(
		types.RollupCostData{FastLzSize: uint64(types.FlzCompressLen(unsigned)) + 68})
	if got.Sign() == 0 || got.Cmp(fjord) != 0 {
		t.Fatalf("getL1Fee at pending %v, Fjord's cost of the unsigned transaction plus 68 bytes %v", got, fjord)
	}
	diff := new(big.Int).Abs(new(big.Int).Sub(got, l1))
	if diff.Mul(diff, big.NewInt(50)).Cmp(l1) > 0 {
		t.Errorf("getL1Fee's estimate %v is more than 2%% off the fee charged %v", got, l1)
	}
	t.Logf("l1Fee %v (getL1Fee estimate %v), operator fee %v, gas %d × %v", l1, got, operator, r.GasUsed, r.EffectiveGasPrice.ToInt())
}
