package seqapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
)

// testing_buildBlockV1 (execution-apis, testing namespace): the block the
// sequencer would build (Sequencer.BuildBlock), answered as
// engine_getPayloadV4 does, without sealing it.

// buildBlockV1 decodes testing_buildBlockV1's parameters: the parent hash,
// the payload attributes (V3), the transactions (an array of raw
// transactions, or null for the pool) and the optional extra data.
func (a *API) buildBlockV1(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(4); err != nil {
		return nil, err
	}
	var req sequencer.BuildRequest
	if err := p.Required(0, &req.Parent); err != nil {
		return nil, err
	}
	if err := p.Required(1, &req.Attrs); err != nil {
		return nil, err
	}
	var raws *[]hexutil.Bytes
	if _, err := p.Optional(2, &raws); err != nil {
		return nil, err
	}
	if raws != nil {
		req.Txs = make([]*types.Transaction, 0, len(*raws))
		for i, raw := range *raws {
			tx := new(types.Transaction)
			if err := tx.UnmarshalBinary(raw); err != nil {
				return nil, &rpc.InvalidParamsError{Msg: fmt.Sprintf("invalid transaction %d: %v", i, err)}
			}
			req.Txs = append(req.Txs, tx)
		}
	}
	var extra *hexutil.Bytes
	if _, err := p.Optional(3, &extra); err != nil {
		return nil, err
	}
	if extra != nil {
		if len(*extra) > 32 {
			return nil, &rpc.InvalidParamsError{Msg: fmt.Sprintf("extraData of %d bytes, at most 32", len(*extra))}
		}
		req.Extra = *extra
	}
	env, err := a.s.BuildBlock(ctx, req)
	if err != nil {
		return nil, Coded(err, rpc.CodeServer)
	}
	return envelopeJSON(env)
}

// envelopeJSON is env as go-ethereum answers it: from 1.17.5 on it leaves
// out the execution payload's slotNumber (an Amsterdam field) while unset,
// where op-geth's encoder writes null.
func envelopeJSON(env *engine.ExecutionPayloadEnvelope) (json.RawMessage, error) {
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, &rpc.InternalError{Msg: err.Error()}
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(raw, &outer); err != nil {
		return nil, &rpc.InternalError{Msg: err.Error()}
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(outer["executionPayload"], &payload); err != nil {
		return nil, &rpc.InternalError{Msg: err.Error()}
	}
	if string(payload["slotNumber"]) != "null" {
		return raw, nil
	}
	delete(payload, "slotNumber")
	if outer["executionPayload"], err = json.Marshal(payload); err != nil {
		return nil, &rpc.InternalError{Msg: err.Error()}
	}
	if raw, err = json.Marshal(outer); err != nil {
		return nil, &rpc.InternalError{Msg: err.Error()}
	}
	return raw, nil
}
