package api

import (
	"github.com/preconf/preconf/impersonate"

	"context"
	"encoding/json"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
)

// signer recovers senders. The latest signer accepts every transaction type
// and replay-protection variant of the chain's history, and being one value
// it lets types.Sender reuse the sender cached in each transaction.
func (a *API) signer() types.Signer {
	a.cache.signerOnce.Do(func() { a.cache.signer = impersonate.NewSigner(types.LatestSigner(a.chain.Config())) })
	return a.cache.signer
}

// foundTx is a transaction found by hash and where it sits.
type foundTx struct {
	tx  *types.Transaction
	loc ethjson.Loc
	// preconfirmed: the transaction is in the pending snapshot; receipt is
	// then its pre-confirmation receipt (nil if the snapshot has none yet).
	preconfirmed bool
	receipt      *types.Receipt
}

// lookupTx finds a transaction by hash: first among the pre-confirmed ones
// of the current pending snapshot, then in the sealed chain.
func (a *API) lookupTx(hash common.Hash) (foundTx, bool) {
	if snap := a.pendingSnapshot(); snap != nil {
		if tx, r, i, ok := snap.Tx(hash); ok {
			// The header's hash is the pending block's (no need to
			// assemble the block for it).
			h := snap.Header
			loc := ethjson.Loc{BlockHash: a.pendingBlockHash(snap), Number: h.Number.Uint64(), Time: h.Time, Index: uint64(i), BaseFee: h.BaseFee, Optimism: a.op}
			if tx.IsDepositTx() {
				loc.Receipt = r
			}
			return foundTx{tx: tx, loc: loc, preconfirmed: true, receipt: r}, true
		}
	}
	tx, blockHash, number, index, ok := a.chain.TxLookup(hash)
	if !ok {
		return foundTx{}, false
	}
	h := a.chain.HeaderByHash(blockHash)
	if h == nil {
		return foundTx{}, false
	}
	loc := ethjson.Loc{BlockHash: blockHash, Number: number, Time: h.Time, Index: index, BaseFee: h.BaseFee, Optimism: a.op}
	if tx.IsDepositTx() {
		loc.Receipt, _ = a.chain.CanonicalReceipt(tx, blockHash, number, index)
	}
	return foundTx{tx: tx, loc: loc}, true
}

func hashArg(p rpc.Params) (common.Hash, error) {
	var h common.Hash
	if err := p.Max(1); err != nil {
		return h, err
	}
	err := p.Required(0, &h)
	return h, err
}

func (a *API) getTransactionByHash(_ context.Context, p rpc.Params) (any, error) {
	hash, err := hashArg(p)
	if err != nil {
		return nil, err
	}
	found, ok := a.lookupTx(hash)
	if !ok {
		return nil, nil
	}
	return json.RawMessage(ethjson.AppendTx(make([]byte, 0, 1024), found.tx, found.loc, a.signer())), nil
}

// txByIndex builds eth_getTransactionByBlock*AndIndex: null for an
// unknown block or an index past its end.
func (a *API) txByIndex(sel selector) rpc.Handler {
	return func(_ context.Context, p rpc.Params) (any, error) {
		v, index, err := a.selectBlock(p, sel, true)
		if v == nil || err != nil {
			return nil, err
		}
		txs := v.block.Transactions()
		if index >= uint64(len(txs)) {
			return nil, nil
		}
		return json.RawMessage(ethjson.AppendTx(make([]byte, 0, 1024), txs[index], v.txLoc(a, int(index)), a.signer())), nil
	}
}

// rawTxByIndex builds eth_getRawTransactionByBlock*AndIndex: the
// transaction's encoding, "0x" when there is none (as go-ethereum).
func (a *API) rawTxByIndex(sel selector) rpc.Handler {
	return func(_ context.Context, p rpc.Params) (any, error) {
		v, index, err := a.selectBlock(p, sel, true)
		if err != nil {
			return nil, err
		}
		if v == nil || index >= uint64(len(v.block.Transactions())) {
			return hexutil.Bytes(nil), nil
		}
		enc, err := v.block.Transactions()[index].MarshalBinary()
		if err != nil {
			return nil, &rpc.ServerError{Msg: err.Error()}
		}
		return hexutil.Bytes(enc), nil
	}
}
