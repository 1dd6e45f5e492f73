package api

import (
	"context"
	"fmt"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
)

// The debug_getRaw* methods answer consensus encodings. Their not-found
// answers follow go-ethereum's quirks: a block selected by number that does
// not exist gives "0x" (an empty byte string, not null); one selected by
// hash gives an error for the header and block, and [] for the receipts; an
// unknown transaction gives "0x".

// rawBlock resolves the selector of the debug_getRaw* block methods.
func (a *API) rawBlock(p rpc.Params) (*blockView, ethjson.BlockRef, error) {
	if err := p.Max(1); err != nil {
		return nil, ethjson.Latest, err
	}
	ref, err := refParam(p, 0)
	if err != nil {
		return nil, ref, err
	}
	v, err := a.resolveBlock(ref)
	return v, ref, err
}

// rawEncoder builds debug_getRawHeader and debug_getRawBlock: encode gives
// the RLP of the resolved block's part; notFound formats the by-hash error.
func (a *API) rawEncoder(notFound string, encode func(*types.Block) any) rpc.Handler {
	return func(_ context.Context, p rpc.Params) (any, error) {
		v, ref, err := a.rawBlock(p)
		if err != nil {
			return nil, err
		}
		if v == nil {
			if ref.Hash != nil { // go-ethereum prints the hash's bytes in decimal
				return nil, &rpc.ServerError{Msg: fmt.Sprintf(notFound, *ref.Hash)}
			}
			return hexutil.Bytes(nil), nil
		}
		enc, err := rlp.EncodeToBytes(encode(v.block))
		if err != nil {
			return nil, &rpc.ServerError{Msg: err.Error()}
		}
		return hexutil.Bytes(enc), nil
	}
}

func rawHeader(b *types.Block) any { return b.Header() }
func rawBody(b *types.Block) any   { return b }

// debugGetRawReceipts answers the consensus encodings of a block's receipts.
func (a *API) debugGetRawReceipts(_ context.Context, p rpc.Params) (any, error) {
	v, ref, err := a.rawBlock(p)
	if err != nil {
		return nil, err
	}
	if v == nil {
		if ref.Hash != nil {
			return []hexutil.Bytes{}, nil
		}
		return nil, nil
	}
	receipts := v.receipts(a)
	out := make([]hexutil.Bytes, len(receipts))
	for i, r := range receipts {
		if out[i], err = r.MarshalBinary(); err != nil {
			return nil, &rpc.ServerError{Msg: fmt.Sprintf("encode receipt %d: %v", i, err)}
		}
	}
	return out, nil
}

// debugGetRawTransaction answers a transaction's canonical encoding,
// pre-confirmed ones included.
func (a *API) debugGetRawTransaction(_ context.Context, p rpc.Params) (any, error) {
	hash, err := hashArg(p)
	if err != nil {
		return nil, err
	}
	found, ok := a.lookupTx(hash)
	if !ok {
		return hexutil.Bytes(nil), nil
	}
	enc, err := found.tx.MarshalBinary()
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	return hexutil.Bytes(enc), nil
}
