// Package impersonate marks transactions sent from an impersonated account
// (anvil_impersonateAccount): they carry no real signature, so their sender
// is written into the signature values instead, and a Signer that knows the
// mark recovers it. The mark travels with the transaction's encoding (WAL,
// blocks, the feed), so every reader that recovers senders through Signer
// agrees on who sent it, after a restart too.
//
// The mark is R = 2^160 + sender, S = a fixed constant no ECDSA signature
// produces in practice. Such a transaction is not valid on any real chain:
// the node that made it executes it, nobody else's pool accepts it, and a
// raw transaction carrying the mark is refused at intake (Is).
package impersonate

import (
	"errors"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

var (
	// flag is the bit above the address in R: R is never zero (a zero R
	// is an invalid signature value, even for the zero address).
	flag = new(big.Int).Lsh(big.NewInt(1), 160)
	// markS is S of every impersonated transaction: the hash of a fixed
	// text with its top bit cleared, so that it is a valid S (below the
	// curve order) that a real signature hits with probability 2^-255.
	markS = func() *big.Int {
		h := crypto.Keccak256([]byte("preconf: transaction from an impersonated account"))
		h[0] &= 0x7f
		return new(big.Int).SetBytes(h)
	}()
)

// Sender returns the impersonated sender of tx, if it carries the mark.
func Sender(tx *types.Transaction) (common.Address, bool) {
	_, r, s := tx.RawSignatureValues()
	if s == nil || r == nil || s.Cmp(markS) != 0 || r.BitLen() != 161 {
		return common.Address{}, false
	}
	return common.BigToAddress(new(big.Int).Sub(r, flag)), true
}

// Is reports whether tx carries the impersonation mark.
func Is(tx *types.Transaction) bool {
	_, ok := Sender(tx)
	return ok
}

// Sign marks tx as sent by from, with signer deriving V as it would for a
// real signature (the chain id of legacy transactions).
func Sign(tx *types.Transaction, signer types.Signer, from common.Address) (*types.Transaction, error) {
	sig := make([]byte, crypto.SignatureLength)
	new(big.Int).Add(flag, new(big.Int).SetBytes(from.Bytes())).FillBytes(sig[:32])
	markS.FillBytes(sig[32:64])
	return tx.WithSignature(signer, sig)
}

// ErrMarked refuses a raw transaction that carries the mark: only the node
// makes such transactions, for an account it impersonates.
var ErrMarked = errors.New("invalid sender: the signature is the mark of an impersonated transaction; send it unsigned with eth_sendTransaction from an account impersonated with anvil_impersonateAccount")

// Signer recovers the sender of marked transactions from the mark and of
// every other transaction as inner does.
type Signer struct{ types.Signer }

// NewSigner wraps inner.
func NewSigner(inner types.Signer) Signer { return Signer{inner} }

// Sender implements types.Signer.
func (s Signer) Sender(tx *types.Transaction) (common.Address, error) {
	if from, ok := Sender(tx); ok {
		return from, nil
	}
	return s.Signer.Sender(tx)
}

// Equal implements types.Signer: types.Sender reuses a sender cached by an
// equal signer, so a wrapped signer equals only a wrapper of an equal one.
func (s Signer) Equal(o types.Signer) bool {
	w, ok := o.(Signer)
	return ok && s.Signer.Equal(w.Signer)
}

// Message is core.TransactionToMessage with signer, except that a marked
// transaction may come from an account with code: impersonating a contract
// (a multisig, a token) is what the mark is mostly for, and EIP-3607's
// refusal of senders with code is waived for it as anvil waives it.
// (go-ethereum waives it with the other per-transaction checks; the only
// other, EIP-7825's gas cap, the pool enforces at intake.)
func Message(tx *types.Transaction, signer types.Signer, baseFee *big.Int) (*core.Message, error) {
	msg, err := core.TransactionToMessage(tx, signer, baseFee)
	if err != nil {
		return nil, err
	}
	if Is(tx) {
		msg.SkipTransactionChecks = true
	}
	return msg, nil
}
