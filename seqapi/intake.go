package seqapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
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
		return nil, Coded(err, rpc.CodeServer)
	}
	if err := a.s.Automine(ctx, res); err != nil {
		return nil, mineError(err)
	}
	return tx.Hash(), nil
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
	done, cancel := a.s.Watch(hash)
	defer cancel()
	res, err := a.s.Admit(tx)
	switch {
	case errors.Is(err, txpool.ErrAlreadyKnown):
	case err != nil:
		if r, ok := a.receipt(hash); ok {
			return r, nil // pre-confirmed between the check and the admission
		}
		return nil, Coded(err, rpc.CodeServer)
	case res.Queued:
		return nil, NonceGapError(tx.Nonce(), res.NextNonce)
	}
	if err := a.s.Automine(ctx, res); err != nil {
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
