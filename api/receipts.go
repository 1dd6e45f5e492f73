package api

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
)

func (a *API) getTransactionReceipt(_ context.Context, p rpc.Params) (any, error) {
	hash, err := hashArg(p)
	if err != nil {
		return nil, err
	}
	r, err := a.receiptOf(hash)
	if r == nil || err != nil {
		return nil, err // a nil receipt answers null
	}
	return r, nil
}

// TransactionReceipt is eth_getTransactionReceipt's answer in Go: the
// receipt object (pre-confirmed or sealed) exactly as the method writes it,
// or nil when the transaction is unknown or has no receipt yet.
func (a *API) TransactionReceipt(hash common.Hash) (json.RawMessage, error) {
	r, err := a.receiptOf(hash)
	if r == nil || err != nil {
		return nil, err
	}
	b, _ := r.MarshalJSON()
	return b, nil
}

// receiptOf finds a transaction's receipt (nil: unknown, or none yet).
func (a *API) receiptOf(hash common.Hash) (*receiptJSON, error) {
	found, ok := a.lookupTx(hash)
	if !ok {
		return nil, nil
	}
	receipt := found.receipt
	if !found.preconfirmed {
		loc := found.loc
		var err error
		if receipt, err = a.chain.CanonicalReceipt(found.tx, loc.BlockHash, loc.Number, loc.Index); err != nil {
			return nil, &rpc.ServerError{Msg: err.Error()}
		}
	}
	if receipt == nil {
		return nil, nil
	}
	return &receiptJSON{receipt: receipt, tx: found.tx, loc: found.loc, signer: a.signer()}, nil
}

// receiptJSON is a receipt object the transport writes straight into its
// answer buffer (rpc.Appender), as blockJSON is: polling a receipt (how
// clients wait for a transaction) allocated and copied a 1.6 KB buffer per
// request before.
type receiptJSON struct {
	receipt *types.Receipt
	tx      *types.Transaction
	loc     ethjson.Loc
	signer  types.Signer
}

func (r *receiptJSON) AppendJSON(b []byte) []byte {
	return ethjson.AppendReceipt(b, r.receipt, r.tx, r.loc, r.signer)
}

func (r *receiptJSON) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 1600+400*len(r.receipt.Logs))), nil
}

func (a *API) getBlockReceipts(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(1); err != nil {
		return nil, err
	}
	ref, err := refParam(p, 0)
	if err != nil {
		return nil, err
	}
	v, err := a.resolveBlock(ref)
	if v == nil || err != nil {
		return nil, err
	}
	txs := v.block.Transactions()
	receipts := v.receipts(a)
	if len(txs) != len(receipts) {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("receipts length mismatch: %d vs %d", len(txs), len(receipts))}
	}
	signer := a.signer()
	b := make([]byte, 0, 16+1200*len(receipts))
	b = append(b, '[')
	for i, r := range receipts {
		if i > 0 {
			b = append(b, ',')
		}
		b = ethjson.AppendReceipt(b, r, txs[i], v.loc(a, i), signer)
	}
	b = append(b, ']')
	return json.RawMessage(b), nil
}
