package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// logQueryLimit caps addresses and per-position topics of one query
// (go-ethereum's default --rpc.logquerylimit).
const logQueryLimit = 1000

// LogLimits cap one eth_getLogs query, as providers and reth do: the
// blocks a range may span and the logs an answer may hold. Zero is the
// default; NoLogMaxRange and NoLogMaxResults lift a cap.
type LogLimits struct {
	MaxRange   uint64 // --rpc.getlogs-max-range
	MaxResults int    // --rpc.getlogs-max-results
}

// Defaults of LogLimits (reth's --rpc.max-blocks-per-filter and
// --rpc.max-logs-per-response).
const (
	DefaultLogMaxRange   = 100_000
	DefaultLogMaxResults = 20_000
)

// NoLogMaxRange and NoLogMaxResults as LogLimits lift the cap: the largest
// value, a cap never reached.
const (
	NoLogMaxRange   uint64 = math.MaxUint64
	NoLogMaxResults int    = math.MaxInt
)

// withDefaults fills the zero values.
func (l LogLimits) withDefaults() LogLimits {
	if l.MaxRange == 0 {
		l.MaxRange = DefaultLogMaxRange
	}
	if l.MaxResults == 0 {
		l.MaxResults = DefaultLogMaxResults
	}
	return l
}

// rangeTooLarge and tooManyLogs are -32005 errors naming the limit.
func rangeTooLarge(limit uint64) error {
	return &rpc.LimitExceededError{Msg: fmt.Sprintf("query exceeds max block range %d (--rpc.getlogs-max-range)", limit)}
}

func tooManyLogs(limit int, from, to uint64) error {
	return &rpc.LimitExceededError{Msg: fmt.Sprintf("query exceeds max results %d, retry with the range %d-%d (--rpc.getlogs-max-results)", limit, from, to)}
}

var (
	errInvalidBlockRange    = &rpc.InvalidParamsError{Msg: "invalid block range params"}
	errBlockRangeIntoFuture = &rpc.InvalidParamsError{Msg: "block range extends beyond current head block"}
	errUnknownBlock         = &rpc.ServerError{Msg: "unknown block"}
	errExceedLogQueryLimit  = &rpc.ServerError{Msg: "exceed max addresses or topics per search position"}
)

// logRange is a resolved eth_getLogs range over the sealed chain, plus
// whether the pending snapshot's logs follow it.
type logRange struct {
	from, to uint64 // sealed blocks, inclusive; empty when from > to
	snap     *pending.Snapshot
}

// resolveRange turns the filter's range into block numbers. "pending" is
// the block the current snapshot builds (the head's successor) and brings
// its pre-confirmed logs; without a snapshot it means latest.
func (a *API) resolveRange(f *ethjson.LogFilter) (logRange, error) {
	from, to := ethjson.Latest, ethjson.Latest
	if f.FromBlock != nil {
		from = *f.FromBlock
	}
	if f.ToBlock != nil {
		to = *f.ToBlock
	}
	if from.Tag == ethjson.TagNone && to.Tag == ethjson.TagNone && from.Number > 0 && to.Number > 0 && from.Number > to.Number {
		return logRange{}, errInvalidBlockRange
	}
	head := a.chain.Head().Number.Uint64()
	snap := a.pendingSnapshot()
	resolve := func(r ethjson.BlockRef) (uint64, error) {
		switch r.Tag {
		case ethjson.TagLatest:
			return head, nil
		case ethjson.TagPending:
			if snap != nil {
				return head + 1, nil
			}
			return head, nil
		case ethjson.TagSafe:
			if h := a.chain.Safe(); h != nil {
				return h.Number.Uint64(), nil
			}
			return 0, &rpc.ServerError{Msg: "safe header not found"}
		case ethjson.TagFinalized:
			if h := a.chain.Finalized(); h != nil {
				return h.Number.Uint64(), nil
			}
			return 0, &rpc.ServerError{Msg: "finalized header not found"}
		case ethjson.TagEarliest:
			return 0, nil
		}
		return r.Number, nil
	}
	begin, err := resolve(from)
	if err != nil {
		return logRange{}, err
	}
	end, err := resolve(to)
	if err != nil {
		return logRange{}, err
	}
	if begin > end {
		return logRange{}, errInvalidBlockRange
	}
	limit := head
	if snap != nil {
		limit = head + 1
	}
	if end > limit {
		return logRange{}, errBlockRangeIntoFuture
	}
	r := logRange{from: begin, to: end}
	if snap != nil && end == head+1 {
		r.to = head // the sealed part; the pending block comes from the snapshot
		r.snap = snap
	}
	return r, nil
}

func (a *API) getLogs(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(1); err != nil {
		return nil, err
	}
	var f ethjson.LogFilter
	if err := argument(p, 0, &f); err != nil {
		return nil, err
	}
	if len(f.Addresses) > logQueryLimit {
		return nil, errExceedLogQueryLimit
	}
	for _, alts := range f.Topics {
		if len(alts) > logQueryLimit {
			return nil, errExceedLogQueryLimit
		}
	}
	out := make([]byte, 0, 4096)
	out = append(out, '[')
	first := true
	count, maxLogs := 0, a.logLimits.MaxResults
	emit := func(l *types.Log, blockHash common.Hash, blockTime uint64) {
		count++
		if count > maxLogs {
			return // the caller reports the overflow
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = ethjson.AppendLog(out, l, blockHash, blockTime)
	}
	if f.BlockHash != nil {
		h := a.chain.HeaderByHash(*f.BlockHash)
		if h == nil {
			return nil, errUnknownBlock
		}
		if f.MayMatch(h.Bloom) {
			for _, r := range a.chain.ReceiptsByHash(*f.BlockHash) {
				for _, l := range r.Logs {
					if f.Matches(l) {
						emit(l, l.BlockHash, l.BlockTimestamp)
					}
				}
			}
		}
		if count > maxLogs {
			n := h.Number.Uint64()
			return nil, tooManyLogs(maxLogs, n, n)
		}
		return json.RawMessage(append(out, ']')), nil
	}
	rng, err := a.resolveRange(&f)
	if err != nil {
		return nil, err
	}
	if span := a.logLimits.MaxRange; span != NoLogMaxRange && rng.from <= rng.to && rng.to-rng.from >= span {
		return nil, rangeTooLarge(span)
	}
	for n := rng.from; n <= rng.to && rng.from <= rng.to; n++ {
		if err := ctx.Err(); err != nil {
			return nil, &rpc.ServerError{Msg: err.Error()}
		}
		h := a.chain.HeaderByNumber(n)
		if h == nil {
			return nil, &rpc.ServerError{Msg: "header not found"}
		}
		hash := h.Hash()
		if !f.MayMatch(h.Bloom) {
			continue
		}
		for _, r := range a.chain.ReceiptsByHash(hash) {
			for _, l := range r.Logs {
				if f.Matches(l) {
					emit(l, l.BlockHash, l.BlockTimestamp)
				}
			}
		}
		if count > maxLogs {
			return nil, tooManyLogs(maxLogs, rng.from, max(n, rng.from+1)-1)
		}
		if n == rng.to { // guards n++ overflow at MaxUint64
			break
		}
	}
	if rng.snap != nil {
		h := rng.snap.Header
		hash := a.pendingBlockHash(rng.snap)
		for _, r := range rng.snap.Receipts {
			for _, l := range r.Logs {
				if f.Matches(l) {
					emit(l, hash, h.Time)
				}
			}
		}
		if count > maxLogs {
			return nil, tooManyLogs(maxLogs, rng.from, h.Number.Uint64()-1)
		}
	}
	return json.RawMessage(append(out, ']')), nil
}
