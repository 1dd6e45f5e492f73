package api_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/internal/peers"
	"github.com/preconf/preconf/internal/testchain"
	"github.com/preconf/preconf/opstack"
)

// TestDiffAgainstOpGeth imports the same OP-stack chain into op-geth and
// into this node, and requires identical answers for every block (hashes
// and full transactions), header, transaction (deposits with sourceHash,
// mint, nonce and depositReceiptVersion), receipt (l1Fee, l1GasPrice,
// l1GasUsed, l1BaseFeeScalar, l1BlobBaseFee(Scalar), operator fee, deposit
// nonce and version), raw encoding, state reads on the fee vaults and
// L1Block, the GasPriceOracle's views, a gas estimate and the fee methods.
// The chain: chain.DevL2Genesis with blocks op-geth's
// GenerateChain made (internal/testchain: L1-attributes deposit first, user
// deposits, one failing, user transactions paying the L1 and operator fees).
//
// It needs op-geth's geth, built from the module go.mod replaces go-ethereum
// with (peers.OpGethForTest: $PRECONF_OPGETH, or the one
// `go run ./bench -install op-geth` keeps in ~/.cache/preconf-bench/bin,
// built there under CI=true).
func TestDiffAgainstOpGeth(t *testing.T) {
	bin := peers.OpGethForTest(t)
	tc, err := testchain.DevL2(6, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	genesisFile, chainFile := filepath.Join(dir, "genesis.json"), filepath.Join(dir, "chain.rlp")
	gj, err := json.Marshal(tc.Genesis)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(genesisFile, gj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chainFile, tc.RLP(), 0o644); err != nil {
		t.Fatal(err)
	}
	opURL := startGeth(t, bin, genesisFile, chainFile)
	n := startFixtureNode(t, genesisFile, chainFile)

	blocks := make(types.Blocks, len(tc.Blocks))
	for i, b := range tc.Blocks {
		blocks[i] = b.Block
	}
	reqs, deposits, userTxs := opRequests(t, blocks, []string{"0x0000000000000000000000000000000000a11ce0"})

	same := diffAnswers(t, reqs, n.URL(), opURL, "op-geth")
	t.Logf("%d of %d answers identical to op-geth's (%d blocks, %d deposits, %d user transactions)", same, len(reqs), len(tc.Blocks), deposits, userTxs)
}

// opRequests are the read requests the op-geth differential tests send, for
// a chain of blocks (1…len(blocks)): every block (hashes and full
// transactions), header, receipt list, transaction and receipt, raw
// encoding, log query; balances and nonces of the fee vaults, the
// L1-attributes depositor and accounts; L1Block's slots and a proof; the
// GasPriceOracle's views (as wallets and viem's OP actions ask); a gas
// estimate; the fee methods. It also counts the deposits and user
// transactions.
func opRequests(t *testing.T, blocks types.Blocks, accounts []string) (reqs [][]byte, deposits, userTxs int) {
	t.Helper()
	add := func(method string, params ...any) {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, b)
	}
	last := uint64(len(blocks))
	for i := uint64(0); i <= last+1; i++ {
		num := fmt.Sprintf("0x%x", i)
		add("eth_getBlockByNumber", num, false)
		add("eth_getBlockByNumber", num, true)
		add("eth_getHeaderByNumber", num)
		add("eth_getBlockReceipts", num)
		add("eth_getBlockTransactionCountByNumber", num)
		for _, idx := range []string{"0x0", "0x1", "0x3", "0x40"} {
			add("eth_getTransactionByBlockNumberAndIndex", num, idx)
		}
		add("debug_getRawHeader", num)
		add("debug_getRawBlock", num)
		add("debug_getRawReceipts", num)
	}
	for _, b := range blocks {
		add("eth_getBlockByHash", b.Hash(), true)
		add("eth_getBlockReceipts", map[string]any{"blockHash": b.Hash(), "requireCanonical": true})
		add("eth_getLogs", map[string]any{"blockHash": b.Hash()})
		for _, tx := range b.Transactions() {
			add("eth_getTransactionByHash", tx.Hash())
			add("eth_getTransactionReceipt", tx.Hash())
			add("eth_getRawTransactionByHash", tx.Hash())
			if tx.IsDepositTx() {
				deposits++
			} else {
				userTxs++
			}
		}
	}
	for _, a := range append([]string{"0x4200000000000000000000000000000000000011", "0x4200000000000000000000000000000000000019",
		"0x420000000000000000000000000000000000001a", "0x420000000000000000000000000000000000001b",
		"0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001"}, accounts...) {
		add("eth_getBalance", a, "latest")
		add("eth_getTransactionCount", a, "latest")
	}
	for slot := range 9 {
		add("eth_getStorageAt", opstack.L1Block, fmt.Sprintf("0x%x", slot), "latest")
	}
	add("eth_getProof", opstack.L1Block, []string{"0x1", "0x3", "0x7", "0x8"}, "latest")
	// The GasPriceOracle's answers on the last block's L1 values (as wallets
	// and viem's OP actions ask), a gas estimate, the fee suggestions.
	arg := common.FromHex("0x0000000000000000000000000000000000000000000000000000000000000020" +
		"0000000000000000000000000000000000000000000000000000000000000004" + "0102030400000000000000000000000000000000000000000000000000000000")
	for _, sig := range []string{"l1BaseFee()", "blobBaseFee()", "baseFeeScalar()", "blobBaseFeeScalar()", "isIsthmus()",
		"getL1Fee(bytes)", "getL1GasUsed(bytes)", "getOperatorFee(uint256)"} {
		data := crypto.Keccak256([]byte(sig))[:4]
		switch sig {
		case "getL1Fee(bytes)", "getL1GasUsed(bytes)":
			data = append(data, arg...)
		case "getOperatorFee(uint256)":
			data = append(data, common.BigToHash(big.NewInt(50_000)).Bytes()...)
		}
		add("eth_call", map[string]any{"to": opstack.GasPriceOracle, "data": hexutil.Bytes(data)}, "latest")
	}
	add("eth_estimateGas", map[string]any{"from": "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266", "to": "0x0000000000000000000000000000000000000001", "value": "0x1", "data": "0x0102"})
	// Not eth_config: op-geth's crashes on an OP-stack chain (its
	// ChainConfig.BlobConfig dereferences the absent blob schedule); ours
	// answers (TestKarstAgainstL1Osaka, cmd/preconf).
	for _, m := range []string{"eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_blobBaseFee"} {
		add(m)
	}
	add("eth_feeHistory", "0x4", "latest", []float64{10, 50, 90})
	return reqs, deposits, userTxs
}
