package sequencer

import (
	"context"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
)

// TestBlobTransactionMined: a blob transaction sent with its sidecar is
// pooled, mined into a block without the sidecar (blob gas counted in the
// header and the receipt), and the block passes go-ethereum's validation.
func TestBlobTransactionMined(t *testing.T) {
	h := newManualHarness(t, "", 0)
	defer h.stop()
	var blob kzg4844.Blob
	blob[0] = 0x01
	commit, err := kzg4844.BlobToCommitment(&blob)
	if err != nil {
		t.Fatal(err)
	}
	proofs, err := kzg4844.ComputeCellProofs(&blob)
	if err != nil {
		t.Fatal(err)
	}
	sc := types.NewBlobTxSidecar(types.BlobSidecarVersion1, []kzg4844.Blob{blob}, []kzg4844.Commitment{commit}, proofs)
	tx := h.sign(h.keys[8], &types.BlobTx{
		ChainID: uint256.MustFromBig(h.chain.Config().ChainID), Gas: 21000, GasFeeCap: uint256.NewInt(100 * params.GWei), GasTipCap: uint256.NewInt(params.GWei),
		BlobFeeCap: uint256.NewInt(params.GWei), BlobHashes: sc.BlobHashes(), To: common.Address{0xb1}, Value: uint256.NewInt(3), Sidecar: sc,
	})
	if _, err := h.seq.Admit(tx); err != nil {
		t.Fatal(err)
	}
	if err := h.seq.Mine(context.Background(), MineOptions{Blocks: 1}); err != nil {
		t.Fatal(err)
	}
	b := h.chain.BlockByNumber(1)
	if b == nil || len(b.Transactions()) != 1 || b.Transactions()[0].Hash() != tx.Hash() {
		t.Fatalf("block 1: %v", b)
	}
	if in := b.Transactions()[0]; in.BlobTxSidecar() != nil || len(in.BlobHashes()) != 1 {
		t.Error("the block carries the sidecar (or lost the blob hashes)")
	}
	if used := b.BlobGasUsed(); used == nil || *used != params.BlobTxBlobGasPerBlob {
		t.Errorf("header blob gas used %v, want %d", used, params.BlobTxBlobGasPerBlob)
	}
	if r := h.chain.Receipts(b); len(r) != 1 || r[0].BlobGasUsed != params.BlobTxBlobGasPerBlob || r[0].Status != types.ReceiptStatusSuccessful {
		t.Errorf("receipt %+v", r)
	}
	h.reimport(types.Blocks{b})
}
