package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

const (
	// maxTopics is the number of topic positions a log can have (LOG0–LOG4).
	maxTopics = 4
	// maxSubTopics caps the alternatives within one topic position.
	maxSubTopics = 1000
	// logQueryLimit caps addresses and per-position topics of one query
	// (go-ethereum's default --rpc.logquerylimit).
	logQueryLimit = 1000
)

var (
	errInvalidTopic         = errors.New("invalid topic(s)")
	errExceedMaxTopics      = errors.New("exceed max topics")
	errInvalidBlockRange    = &rpc.InvalidParamsError{Msg: "invalid block range params"}
	errBlockRangeIntoFuture = &rpc.InvalidParamsError{Msg: "block range extends beyond current head block"}
	errUnknownBlock         = &rpc.ServerError{Msg: "unknown block"}
	errExceedLogQueryLimit  = &rpc.ServerError{Msg: "exceed max addresses or topics per search position"}
)

// LogFilter is eth_getLogs' filter object: a block range (fromBlock, toBlock;
// both default to latest) or a single blockHash, addresses (one or an array;
// none matches any) and topics (per position: null matches any, a hash
// matches it, an array matches any of its members).
type LogFilter struct {
	BlockHash *common.Hash
	FromBlock *BlockRef
	ToBlock   *BlockRef
	Addresses []common.Address
	Topics    [][]common.Hash
}

// UnmarshalJSON decodes the filter with go-ethereum's rules and messages.
func (f *LogFilter) UnmarshalJSON(data []byte) error {
	var raw struct {
		BlockHash *common.Hash `json:"blockHash"`
		FromBlock *BlockNumber `json:"fromBlock"`
		ToBlock   *BlockNumber `json:"toBlock"`
		Addresses any          `json:"address"`
		Topics    []any        `json:"topics"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*f = LogFilter{}
	if raw.BlockHash != nil {
		if raw.FromBlock != nil || raw.ToBlock != nil {
			return errors.New("cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other")
		}
		f.BlockHash = raw.BlockHash
	} else {
		if raw.FromBlock != nil {
			r := BlockRef(*raw.FromBlock)
			f.FromBlock = &r
		}
		if raw.ToBlock != nil {
			r := BlockRef(*raw.ToBlock)
			f.ToBlock = &r
		}
	}
	switch addrs := raw.Addresses.(type) {
	case nil:
	case []any:
		f.Addresses = make([]common.Address, 0, len(addrs))
		for i, v := range addrs {
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("non-string address at index %d", i)
			}
			addr, err := decodeFixedHex(s, common.AddressLength, "address")
			if err != nil {
				return fmt.Errorf("invalid address at index %d: %v", i, err)
			}
			f.Addresses = append(f.Addresses, common.BytesToAddress(addr))
		}
	case string:
		addr, err := decodeFixedHex(addrs, common.AddressLength, "address")
		if err != nil {
			return fmt.Errorf("invalid address: %v", err)
		}
		f.Addresses = []common.Address{common.BytesToAddress(addr)}
	default:
		return errors.New("invalid addresses in query")
	}
	if len(raw.Topics) > maxTopics {
		return errExceedMaxTopics
	}
	if len(raw.Topics) > 0 {
		f.Topics = make([][]common.Hash, len(raw.Topics))
	}
	for i, t := range raw.Topics {
		switch topic := t.(type) {
		case nil: // wildcard
		case string:
			h, err := decodeTopic(topic)
			if err != nil {
				return err
			}
			f.Topics[i] = []common.Hash{h}
		case []any:
			if len(topic) > maxSubTopics {
				return errExceedMaxTopics
			}
		alternatives:
			for _, alt := range topic {
				switch s := alt.(type) {
				case nil: // a null alternative matches anything
					f.Topics[i] = nil
					break alternatives
				case string:
					h, err := decodeTopic(s)
					if err != nil {
						return err
					}
					f.Topics[i] = append(f.Topics[i], h)
				default:
					return errInvalidTopic
				}
			}
		default:
			return errInvalidTopic
		}
	}
	return nil
}

func decodeFixedHex(s string, n int, what string) ([]byte, error) {
	b, err := hexutil.Decode(s)
	if err == nil && len(b) != n {
		err = fmt.Errorf("hex has invalid length %d after decoding; expected %d for %s", len(b), n, what)
	}
	return b, err
}

func decodeTopic(s string) (common.Hash, error) {
	b, err := decodeFixedHex(s, common.HashLength, "topic")
	return common.BytesToHash(b), err
}

// Matches reports whether a log satisfies the filter's address and topic
// criteria (the block range is not considered).
func (f *LogFilter) Matches(l *types.Log) bool { return f.matches(l) }

// matches reports whether a log satisfies the address and topic criteria.
func (f *LogFilter) matches(l *types.Log) bool {
	if len(f.Addresses) > 0 && !slices.Contains(f.Addresses, l.Address) {
		return false
	}
	if len(f.Topics) > len(l.Topics) {
		return false
	}
	for i, alts := range f.Topics {
		if len(alts) > 0 && !slices.Contains(alts, l.Topics[i]) {
			return false
		}
	}
	return true
}

// mayMatch reports whether a block with this bloom can hold a matching log.
func (f *LogFilter) mayMatch(bloom types.Bloom) bool {
	if len(f.Addresses) > 0 {
		found := false
		for _, addr := range f.Addresses {
			if types.BloomLookup(bloom, addr) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, alts := range f.Topics {
		if len(alts) == 0 {
			continue
		}
		found := false
		for _, t := range alts {
			if types.BloomLookup(bloom, t) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// logRange is a resolved eth_getLogs range over the sealed chain, plus
// whether the pending snapshot's logs follow it.
type logRange struct {
	from, to uint64 // sealed blocks, inclusive; empty when from > to
	snap     *pending.Snapshot
}

// resolveRange turns the filter's range into block numbers. "pending" is
// the block the current snapshot builds (the head's successor) and brings
// its pre-confirmed logs; without a snapshot it means latest.
func (a *API) resolveRange(f *LogFilter) (logRange, error) {
	from, to := Latest, Latest
	if f.FromBlock != nil {
		from = *f.FromBlock
	}
	if f.ToBlock != nil {
		to = *f.ToBlock
	}
	if from.Tag == TagNone && to.Tag == TagNone && from.Number > 0 && to.Number > 0 && from.Number > to.Number {
		return logRange{}, errInvalidBlockRange
	}
	head := a.chain.Head().Number.Uint64()
	snap := a.pendingSnapshot()
	resolve := func(r BlockRef) (uint64, error) {
		switch r.Tag {
		case TagLatest:
			return head, nil
		case TagPending:
			if snap != nil {
				return head + 1, nil
			}
			return head, nil
		case TagSafe:
			if h := a.chain.Safe(); h != nil {
				return h.Number.Uint64(), nil
			}
			return 0, &rpc.ServerError{Msg: "safe header not found"}
		case TagFinalized:
			if h := a.chain.Finalized(); h != nil {
				return h.Number.Uint64(), nil
			}
			return 0, &rpc.ServerError{Msg: "finalized header not found"}
		case TagEarliest:
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
	var f LogFilter
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
	emit := func(l *types.Log, blockHash common.Hash, blockTime uint64) {
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
		if f.mayMatch(h.Bloom) {
			for _, r := range a.chain.ReceiptsByHash(*f.BlockHash) {
				for _, l := range r.Logs {
					if f.matches(l) {
						emit(l, l.BlockHash, l.BlockTimestamp)
					}
				}
			}
		}
		return json.RawMessage(append(out, ']')), nil
	}
	rng, err := a.resolveRange(&f)
	if err != nil {
		return nil, err
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
		if !f.mayMatch(h.Bloom) {
			continue
		}
		for _, r := range a.chain.ReceiptsByHash(hash) {
			for _, l := range r.Logs {
				if f.matches(l) {
					emit(l, l.BlockHash, l.BlockTimestamp)
				}
			}
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
				if f.matches(l) {
					emit(l, hash, h.Time)
				}
			}
		}
	}
	return json.RawMessage(append(out, ']')), nil
}
