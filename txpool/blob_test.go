package txpool

import (
	"crypto/ecdsa"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"
	"github.com/holiman/uint256"
)

// blobTx is a signed blob transaction of key with nonce and one blob whose
// sidecar has the given version (0: one blob proof, 1: cell proofs).
func blobTx(t testing.TB, f *fixture, key *ecdsa.PrivateKey, nonce uint64, version byte) *types.Transaction {
	t.Helper()
	var blob kzg4844.Blob
	blob[0], blob[1] = 0x01, byte(nonce) // field elements below the modulus
	commit, err := kzg4844.BlobToCommitment(&blob)
	if err != nil {
		t.Fatal(err)
	}
	var proofs []kzg4844.Proof
	if version == types.BlobSidecarVersion0 {
		proof, err := kzg4844.ComputeBlobProof(&blob, commit)
		if err != nil {
			t.Fatal(err)
		}
		proofs = []kzg4844.Proof{proof}
	} else if proofs, err = kzg4844.ComputeCellProofs(&blob); err != nil {
		t.Fatal(err)
	}
	sc := types.NewBlobTxSidecar(version, []kzg4844.Blob{blob}, []kzg4844.Commitment{commit}, proofs)
	tx, err := types.SignNewTx(key, f.signer, &types.BlobTx{
		ChainID: uint256.MustFromBig(f.cfg.ChainID), Nonce: nonce, Gas: 21000, GasFeeCap: uint256.NewInt(2 * gwei), GasTipCap: uint256.NewInt(1),
		BlobFeeCap: uint256.NewInt(gwei), BlobHashes: sc.BlobHashes(), To: common.Address{0xb0}, Sidecar: sc,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestBlobTransactions: a blob transaction with its sidecar is pooled (the
// dev chain is past Osaka: a version-0 sidecar is converted to cell proofs,
// as go-ethereum's eth_sendRawTransaction does); its pool nonce counts.
func TestBlobTransactions(t *testing.T) {
	f := newFixture(t, Config{})
	tx := blobTx(t, f, f.key, 3, types.BlobSidecarVersion0)
	res, err := f.pool.Add(tx)
	if err != nil {
		t.Fatal(err)
	}
	pooled := f.pool.Get(tx.Hash())
	if pooled == nil || res.Tx != pooled.Tx || pooled.Tx.BlobTxSidecar().Version != types.BlobSidecarVersion1 || len(pooled.Tx.BlobTxSidecar().Proofs) != kzg4844.CellProofsPerBlob {
		t.Fatalf("pooled %+v: want the transaction with a version-1 sidecar", pooled)
	}
	if n := f.pool.PendingNonce(res.From, 3); n != 4 {
		t.Errorf("pool nonce %d, want 4", n)
	}
	// A sidecar that does not match its hashes is refused.
	bad := blobTx(t, f, f.key, 4, types.BlobSidecarVersion1)
	other := blobTx(t, f, f.key, 5, types.BlobSidecarVersion1)
	mixed := bad.WithBlobTxSidecar(other.BlobTxSidecar())
	if _, err := f.pool.Add(mixed); err == nil {
		t.Error("a sidecar of other blobs was accepted")
	}
}
