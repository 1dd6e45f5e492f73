package api

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
)

// simulateV1 is eth_simulateV1. At "pending" the first simulated block is the
// block being pre-confirmed (its number, timestamp, base fee, fee recipient,
// gas limit) over the pre-confirmed state, and later blocks step by the
// chain's block time.
func (a *API) simulateV1(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(2); err != nil {
		return nil, err
	}
	var req simulate.Request
	if !p.Present(0) || !simulate.FastRequest(p[0], &req) {
		if err := p.Required(0, &req); err != nil {
			return nil, err
		}
	}
	if err := req.CheckLimits(); err != nil {
		return nil, err
	}
	ref, err := blockRefParam(p, 1)
	if err != nil {
		return nil, err
	}
	eng := a.engine
	h, db, snap, err := a.execState(ref, eng.Options().Roots == simulate.RootCompute)
	if err != nil {
		return nil, err
	}
	base := simulate.Base{Parent: h, State: db}
	if snap == nil || eng.Options().Roots == simulate.RootZero {
		base.Prestate = db.Reader() // nothing written into db yet
	}
	if snap != nil {
		base.Parent, base.Pending = snap.Parent, snap.Header
		base.BlockTime = 1
		if snap.Header.Time > snap.Parent.Time+1 {
			base.BlockTime = snap.Header.Time - snap.Parent.Time
		}
	}
	blocks, err := eng.Simulate(ctx, &req, base)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, &rpc.ServerError{Msg: err.Error()}
		}
		return nil, rpcError(err)
	}
	return simResult{blocks: blocks, fullTx: req.ReturnFullTransactions}, nil
}

// simResult is eth_simulateV1's answer, written by the transport straight
// into the response (rpc.Appender).
type simResult struct {
	blocks []*simulate.BlockResult
	fullTx bool
}

func (r simResult) AppendJSON(b []byte) []byte { return appendSimResult(b, r.blocks, r.fullTx) }

func (r simResult) MarshalJSON() ([]byte, error) {
	size := 0
	for _, b := range r.blocks {
		size += 1600 + 512*len(b.Calls) // a 2-call block is about 2 KB
	}
	return r.AppendJSON(make([]byte, 0, size)), nil
}

// senderSigner answers the sender of simulated (unsigned) transactions from
// the calls' "from", so that full transaction objects show it.
type senderSigner struct {
	types.Signer
	from map[*types.Transaction]common.Address
}

func (s *senderSigner) Sender(tx *types.Transaction) (common.Address, error) {
	return s.from[tx], nil
}

func (s *senderSigner) Equal(o types.Signer) bool { return o == types.Signer(s) }

// appendSimResult writes the blocks as go-ethereum does: each block object
// (sorted keys) with a "calls" member.
func appendSimResult(b []byte, blocks []*simulate.BlockResult, fullTx bool) []byte {
	b = append(b, '[')
	for i, r := range blocks {
		if i > 0 {
			b = append(b, ',')
		}
		var signer types.Signer
		parts := ethjson.BlockParts{Header: r.Header(), TxHashes: r.TxHashes, Withdrawals: r.Withdrawals, Size: r.Size}
		if fullTx {
			parts.Txs = r.Transactions()
			s := &senderSigner{Signer: types.HomesteadSigner{}, from: make(map[*types.Transaction]common.Address, len(r.Senders))}
			for j, tx := range parts.Txs {
				s.from[tx] = r.Senders[j]
			}
			signer = s
		}
		hash, calls, time := r.Hash, r.Calls, r.Header().Time
		b = ethjson.AppendParts(b, parts, hash, ethjson.BlockOptions{FullTx: fullTx,
			Calls: func(b []byte) []byte { return appendCallResults(b, calls, hash, time) }}, signer)
	}
	return append(b, ']')
}

func appendCallResults(b []byte, calls []simulate.CallResult, hash common.Hash, time uint64) []byte {
	b = append(b, '[')
	for i := range calls {
		c := &calls[i]
		if i > 0 {
			b = append(b, ',')
		}
		e := ethjson.Encoder{Buf: b}
		e.Open()
		e.Bytes("returnData", c.ReturnData)
		e.Key("logs")
		e.Buf = ethjson.AppendLogs(e.Buf, c.Logs, hash, time)
		e.U64("gasUsed", c.GasUsed)
		e.U64("maxUsedGas", c.MaxUsedGas)
		e.U64("status", c.Status)
		if c.Error != nil {
			e.Key("error")
			e.Open()
			e.Key("message")
			msg, _ := json.Marshal(c.Error.Message)
			e.Buf = append(e.Buf, msg...)
			e.Key("code")
			e.Buf = strconv.AppendInt(e.Buf, int64(c.Error.Code), 10)
			if c.Error.Data != "" {
				e.Key("data")
				e.Buf = ethjson.AppendQuoted(e.Buf, c.Error.Data)
			}
			e.Close()
		}
		e.Close()
		b = e.Buf
	}
	return append(b, ']')
}
