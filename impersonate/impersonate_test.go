package impersonate

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

func TestMarkRoundTrip(t *testing.T) {
	chainID := big.NewInt(1337)
	inner := types.LatestSignerForChainID(chainID)
	signer := NewSigner(inner)
	to := common.Address{9}
	txs := map[string]types.TxData{
		"legacy": &types.LegacyTx{Nonce: 1, Gas: 21000, GasPrice: big.NewInt(1), To: &to},
		"1559":   &types.DynamicFeeTx{ChainID: chainID, Nonce: 2, Gas: 21000, GasFeeCap: big.NewInt(2), GasTipCap: big.NewInt(1), To: &to},
		"create": &types.DynamicFeeTx{ChainID: chainID, Nonce: 3, Gas: 60000, GasFeeCap: big.NewInt(2)},
		"2930":   &types.AccessListTx{ChainID: chainID, Nonce: 4, Gas: 21000, GasPrice: big.NewInt(1), To: &to},
	}
	for name, data := range txs {
		for _, from := range []common.Address{{}, common.HexToAddress("0xffffffffffffffffffffffffffffffffffffffff"), {0x12, 0x34}} {
			tx, err := Sign(types.NewTx(data), inner, from)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Through the binary encoding, as the WAL and blocks carry it.
			raw, _ := tx.MarshalBinary()
			dec := new(types.Transaction)
			if err := dec.UnmarshalBinary(raw); err != nil {
				t.Fatalf("%s: decode: %v", name, err)
			}
			got, err := types.Sender(signer, dec)
			if err != nil || got != from {
				t.Errorf("%s from %v: sender %v, %v", name, from, got, err)
			}
			if !Is(dec) {
				t.Errorf("%s: mark not recognised", name)
			}
			// The chain's own signer does not recover the impersonated
			// sender from it.
			if plain, err := types.Sender(inner, dec); err == nil && plain == from {
				t.Errorf("%s: the plain signer recovers the impersonated sender", name)
			}
		}
	}
	// Two senders, one transaction: two hashes (the sender is in the signature).
	a, _ := Sign(types.NewTx(txs["1559"]), inner, common.Address{1})
	b, _ := Sign(types.NewTx(txs["1559"]), inner, common.Address{2})
	if a.Hash() == b.Hash() {
		t.Error("impersonated transactions of different senders share a hash")
	}
}

func TestRealSignatureNotMarked(t *testing.T) {
	key, _ := crypto.GenerateKey()
	signer := types.LatestSignerForChainID(big.NewInt(1))
	tx, _ := types.SignNewTx(key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(1), Gas: 21000, To: &common.Address{}})
	if Is(tx) {
		t.Fatal("a real signature reads as the mark")
	}
	from, err := types.Sender(NewSigner(signer), tx)
	if err != nil || from != crypto.PubkeyToAddress(key.PublicKey) {
		t.Fatalf("wrapped signer: %v %v", from, err)
	}
	if NewSigner(signer).Equal(signer) || !NewSigner(signer).Equal(NewSigner(types.LatestSignerForChainID(big.NewInt(1)))) {
		t.Fatal("Equal")
	}
}
