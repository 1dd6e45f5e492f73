package sequencer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/txpool"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/rpc"
)

// eth_sendRawTransactionSync timeouts (go-ethereum's defaults).
const (
	DefaultSyncTimeout = 20 * time.Second
	MaxSyncTimeout     = time.Minute
)

func decodeRawTx(p rpc.Params) (*types.Transaction, error) {
	var input hexutil.Bytes
	if err := p.Required(0, &input); err != nil {
		return nil, err
	}
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(input); err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()} // go-ethereum: the decoder's error, -32000
	}
	return tx, nil
}

func (a *API) sendRawTransaction(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(1); err != nil {
		return nil, err
	}
	tx, err := decodeRawTx(p)
	if err != nil {
		return nil, err
	}
	res, err := a.s.Admit(tx)
	if err != nil {
		return nil, poolError(err)
	}
	if err := a.s.automine(ctx, res); err != nil {
		return nil, mineError(err)
	}
	return tx.Hash(), nil
}

// mineError answers a failed automine seal (the transaction is admitted
// and durable; the sequencer says why it could not seal).
func mineError(err error) error {
	var coded rpc.Error
	if errors.As(err, &coded) {
		return err
	}
	return &rpc.InternalError{Msg: "transaction admitted, but the automine seal failed: " + err.Error()}
}

// SyncTimeout reads eth_sendRawTransactionSync's optional timeout in
// milliseconds (a number or a hex quantity, as viem sends it); a follower
// reads it the same way.
func SyncTimeout(p rpc.Params) (time.Duration, error) {
	if !p.Present(1) {
		return DefaultSyncTimeout, nil
	}
	raw := bytes.TrimSpace(p[1])
	var ms uint64
	if len(raw) > 0 && raw[0] == '"' {
		var q hexutil.Uint64
		if err := json.Unmarshal(raw, &q); err != nil {
			return 0, &rpc.InvalidParamsError{Msg: "invalid argument 1: timeout must be milliseconds: " + err.Error()}
		}
		ms = uint64(q)
	} else if err := json.Unmarshal(raw, &ms); err != nil {
		return 0, &rpc.InvalidParamsError{Msg: "invalid argument 1: timeout must be milliseconds"}
	}
	if ms == 0 {
		return DefaultSyncTimeout, nil
	}
	d := time.Duration(ms) * time.Millisecond
	if ms > uint64(MaxSyncTimeout/time.Millisecond) {
		d = MaxSyncTimeout
	}
	return d, nil
}

// sendRawTransactionSync (EIP-7966) answers with the receipt once the
// transaction is pre-confirmed: its flashblock is durable and published.
func (a *API) sendRawTransactionSync(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(2); err != nil {
		return nil, err
	}
	tx, err := decodeRawTx(p)
	if err != nil {
		return nil, err
	}
	timeout, err := SyncTimeout(p)
	if err != nil {
		return nil, err
	}
	hash := tx.Hash()
	if r, ok := a.receipt(hash); ok {
		return r, nil // already pre-confirmed or sealed
	}
	done, cancel := a.s.watch(hash)
	defer cancel()
	res, err := a.s.Admit(tx)
	switch {
	case errors.Is(err, txpool.ErrAlreadyKnown):
	case err != nil:
		if r, ok := a.receipt(hash); ok {
			return r, nil // pre-confirmed between the check and the admission
		}
		return nil, poolError(err)
	case res.Queued:
		return nil, NonceGapError(tx.Nonce(), res.NextNonce)
	}
	if err := a.s.automine(ctx, res); err != nil {
		return nil, mineError(err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		if r, ok := a.receipt(hash); ok {
			return r, nil
		}
		return nil, SyncTimeoutError(timeout, hash)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r, ok := a.receipt(hash); ok {
		return r, nil
	}
	return nil, &rpc.InternalError{Msg: "pre-confirmed transaction has no receipt"}
}

// NonceGapError is EIP-7966's answer to a transaction whose nonce leaves a
// gap: the expected nonce, in the data as a hex quantity.
func NonceGapError(txNonce, expected uint64) error {
	return &rpc.CodedError{
		Code: rpc.CodeServer,
		Msg:  fmt.Sprintf("nonce too high: tx nonce %d, expected nonce %d (the transaction is queued until the gap is filled)", txNonce, expected),
		Data: hexutil.Uint64(expected).String(),
	}
}

// SyncTimeoutError is EIP-7966's answer when the transaction was accepted but
// not processed within the timeout (go-ethereum's code and words; the data
// is the transaction hash).
func SyncTimeoutError(timeout time.Duration, hash common.Hash) error {
	return &rpc.CodedError{Code: 4, Msg: fmt.Sprintf("The transaction was added to the transaction pool but wasn't processed in %v", timeout), Data: hash.Hex()}
}

// receipt is the transaction's receipt as eth_getTransactionReceipt gives it.
func (a *API) receipt(hash common.Hash) (json.RawMessage, bool) {
	if a.receipts == nil {
		return nil, false
	}
	r, err := a.receipts.TransactionReceipt(hash)
	if err != nil || len(r) == 0 {
		return nil, false
	}
	return r, true
}

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
