package testchain_test

import (
	"bytes"
	"crypto/ecdsa"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/internal/testchain"
	"github.com/preconf/preconf/opstack"
)

func keys(t *testing.T) []*ecdsa.PrivateKey {
	var out []*ecdsa.PrivateKey
	for _, k := range chain.DevKeys[:3] {
		key, err := crypto.HexToECDSA(k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, key)
	}
	return out
}

// TestGeneratedChainImports: op-geth's block validation (state root,
// receipts, Isthmus withdrawals root, Holocene extra data) accepts the
// generated blocks, and each block's last flashblock is the block.
func TestGeneratedChainImports(t *testing.T) {
	g, err := chain.DevL2Genesis()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := testchain.Generate(testchain.Config{Genesis: g, Keys: keys(t)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := chain.Open(chain.Config{Genesis: tc.Genesis})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Import(bytes.NewReader(tc.RLP())); err != nil {
		t.Fatal(err)
	}
	if c.Head().Hash() != tc.Blocks[len(tc.Blocks)-1].Hash() {
		t.Fatal("head is not the generated chain's")
	}
	var withdrawals, failedDeposits int
	for _, b := range tc.Blocks {
		fbs := b.Flashblocks
		if last := fbs[len(fbs)-1]; last.Header.Hash() != b.Hash() {
			t.Fatalf("block %d: last flashblock is not the block", b.NumberU64())
		}
		if len(fbs) != 4 || fbs[0].Txs[0].Type() != types.DepositTxType || fbs[1].Txs[0].Type() == types.DepositTxType {
			t.Fatalf("block %d: flashblock cut %d", b.NumberU64(), len(fbs))
		}
		for i := 1; i < len(fbs); i++ {
			if fbs[i].Header.Root == fbs[i-1].Header.Root || fbs[i].Header.GasUsed <= fbs[i-1].Header.GasUsed {
				t.Fatalf("block %d flashblock %d: header did not move", b.NumberU64(), i)
			}
			if *fbs[i].Header.WithdrawalsHash != *fbs[i-1].Header.WithdrawalsHash {
				withdrawals++
			}
		}
		receipts := c.Receipts(c.BlockByHash(b.Hash()))
		for i, tx := range b.Transactions() {
			r := receipts[i]
			switch {
			case i == 0: // the L1-attributes deposit
				if r.Status != 1 || r.DepositNonce == nil || r.DepositReceiptVersion == nil || r.L1Fee != nil {
					t.Fatalf("block %d: L1-attributes deposit receipt %+v", b.NumberU64(), r)
				}
			case tx.IsDepositTx():
				if r.Status == 0 {
					failedDeposits++
				}
			default: // user transactions pay the L1 fee, derived by op-geth from L1Block
				if r.L1Fee == nil || r.L1Fee.Sign() <= 0 || r.L1GasPrice.Cmp(b.L1.BaseFee) != 0 || r.L1BlobBaseFee.Cmp(b.L1.BlobBaseFee) != 0 ||
					r.OperatorFeeScalar == nil || *r.OperatorFeeScalar != uint64(b.L1.OperatorFeeScalar) {
					t.Fatalf("block %d tx %d: receipt %+v", b.NumberU64(), i, r)
				}
			}
		}
	}
	if withdrawals == 0 || failedDeposits != 2 {
		t.Fatalf("withdrawal root moves %d, failed deposits %d", withdrawals, failedDeposits)
	}
	// L1Block holds the last block's L1 origin; the GasPriceOracle reads it.
	st, err := c.StateAt(c.Head())
	if err != nil {
		t.Fatal(err)
	}
	last := tc.Blocks[len(tc.Blocks)-1].L1
	if got := st.GetState(opstack.L1Block, types.L1BaseFeeSlot).Big(); got.Cmp(last.BaseFee) != 0 {
		t.Fatalf("L1Block base fee %s, want %s", got, last.BaseFee)
	}
	if got := st.GetState(opstack.L1Block, common.Hash{}).Big(); got.Uint64() != last.Number {
		t.Fatalf("L1Block number %s, want %d", got, last.Number)
	}
	// The operator fee vault collected (scalar × gas / 1e6 + constant) per user tx.
	if st.GetBalance(params.OptimismOperatorFeeRecipient).Sign() <= 0 || st.GetBalance(params.OptimismL1FeeRecipient).Sign() <= 0 {
		t.Fatal("fee vaults empty")
	}
	t.Logf("%d blocks, withdrawals-root moves %d, failed deposits %d, L1 fee vault %s wei, operator fee vault %s wei", len(tc.Blocks), withdrawals, failedDeposits,
		st.GetBalance(params.OptimismL1FeeRecipient), st.GetBalance(params.OptimismOperatorFeeRecipient))
}
