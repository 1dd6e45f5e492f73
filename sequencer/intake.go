package sequencer

import (
	"fmt"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/txpool"
)

// Transaction intake as the JSON-RPC methods (package seqapi) call it.

// AdmitBuilt admits a transaction the node built and signed itself
// (eth_sendTransaction): unlike Admit it takes an impersonated sender's
// mark, which is the node's own there. Durable as Admit says.
func (s *Sequencer) AdmitBuilt(tx *types.Transaction) (txpool.Result, error) { return s.admit(tx) }

// PendingEnv is the header and state transactions are filled in and
// validated against: the pending block's, or the head's before the first
// is published.
func (s *Sequencer) PendingEnv() (*types.Header, state.Reader, error) { return s.poolEnv() }

// Signer is the chain's transaction signer.
func (s *Sequencer) Signer() types.Signer { return s.signer }

// ChainConfig is the chain's configuration.
func (s *Sequencer) ChainConfig() *params.ChainConfig { return s.config }

// OPStack reports whether the sequencer runs an OP-stack chain's L1 side
// (L1 attributes, deposits): not on a plain-Ethereum chain nor on a fork.
func (s *Sequencer) OPStack() bool { return s.op != nil }

// explainNonceTooLow rewrites the pool's "nonce too low" when the nonce was
// taken by a pre-confirmed transaction that no sealed block holds yet: a
// client that read the nonce at "latest" (cast does) is then one block
// behind. The message keeps go-ethereum's "nonce too low: next nonce N, tx
// nonce M" start, which viem, ethers and alloy classify, with N the pending
// nonce (pool-aware), and says where to read it. A nonce below the sealed
// state's keeps the pool's message.
func (s *Sequencer) explainNonceTooLow(tx *types.Transaction, err error) error {
	from, serr := types.Sender(s.signer, tx)
	if serr != nil {
		return err
	}
	head := s.chain.Head()
	r, rerr := s.chain.StateReader(head.Root)
	if rerr != nil {
		return err
	}
	var sealed uint64
	if acct, aerr := r.Account(from); aerr == nil && acct != nil {
		sealed = acct.Nonce
	}
	if tx.Nonce() < sealed {
		return err
	}
	_, st, perr := s.poolEnv()
	if perr != nil {
		return err
	}
	var stateNonce uint64
	if acct, aerr := st.Account(from); aerr == nil && acct != nil {
		stateNonce = acct.Nonce
	}
	next := s.pool.PendingNonce(from, stateNonce)
	return &nonceTakenError{
		msg: fmt.Sprintf("nonce too low: next nonce %d, tx nonce %d: nonce %d is taken by a pre-confirmed transaction not yet in a sealed block (latest is block %d, where the account's nonce is still %d); read the next nonce at the \"pending\" block tag: eth_getTransactionCount(%s, \"pending\") = %d (cast nonce --block pending)",
			next, tx.Nonce(), tx.Nonce(), head.Number.Uint64(), sealed, from.Hex(), next),
	}
}

// nonceTakenError is a "nonce too low" (errors.Is core.ErrNonceTooLow).
type nonceTakenError struct{ msg string }

func (e *nonceTakenError) Error() string { return e.msg }
func (e *nonceTakenError) Unwrap() error { return core.ErrNonceTooLow }
