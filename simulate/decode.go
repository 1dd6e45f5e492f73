package simulate

import (
	"encoding/json"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/internal/jsonscan"
)

// A decoder for the usual shape of eth_simulateV1 requests and call objects,
// which encoding/json spends a tenth of a simulation decoding. It takes a
// strict subset — jsonscan's (ASCII strings without escapes, …), keys
// spelled exactly as documented, each at most once — and decodes every value with the same
// UnmarshalJSON/UnmarshalText methods encoding/json would call, so within
// the subset the result is identical (TestFastDecodeMatchesEncodingJSON).
// On anything outside it, or any value error, it gives up and the caller
// decodes with encoding/json, which then also words the error. The input
// must be valid JSON (the RPC layer checked the whole message).

// FastRequest decodes eth_simulateV1's first parameter if it is in the
// subset; false means: decode it with encoding/json.
func FastRequest(raw []byte, req *Request) bool {
	s := scanner{jsonscan.New(raw)}
	var r Request
	if s.request(&r) && s.End() {
		*req = r
		return true
	}
	return false
}

// FastCallArgs decodes a call object if it is in the subset; false means:
// decode it with encoding/json.
func FastCallArgs(raw []byte, args *CallArgs) bool {
	s := scanner{jsonscan.New(raw)}
	var a CallArgs
	if s.callArgs(&a) && s.End() {
		*args = a
		return true
	}
	return false
}

// scanner is the strict JSON scanner with this package's request shapes.
type scanner struct{ jsonscan.Scanner }

// once guards against repeated keys (encoding/json's merging of repeats is
// left to encoding/json). Objects here have few keys: a list will do.
type once struct {
	keys [20][]byte
	n    int
}

func (o *once) first(k []byte) bool {
	for _, seen := range o.keys[:o.n] {
		if string(seen) == string(k) {
			return false
		}
	}
	if o.n == len(o.keys) {
		return false
	}
	o.keys[o.n] = k
	o.n++
	return true
}

// value decodes a string token with v's UnmarshalJSON; null leaves the
// pointer nil.
func value[T any, P interface {
	*T
	json.Unmarshaler
}](s *scanner, dst **T) bool {
	if s.Null() {
		return true
	}
	tok, ok := s.Str()
	if !ok {
		return false
	}
	v := P(new(T))
	if v.UnmarshalJSON(tok) != nil {
		return false
	}
	*dst = (*T)(v)
	return true
}

// raw decodes any value with encoding/json (rare, nested fields).
func raw(s *scanner, v any) bool {
	tok, ok := s.Value(0)
	return ok && json.Unmarshal(tok, v) == nil
}

func (s *scanner) request(r *Request) bool {
	var seen once
	return s.Object(func(k []byte) bool {
		if !seen.first(k) {
			return false
		}
		switch string(k) {
		case "blockStateCalls":
			if s.Null() {
				return true
			}
			r.BlockStateCalls = []BlockCalls{}
			return s.Array(func() bool {
				var b BlockCalls
				if !s.Null() && !s.blockCalls(&b) {
					return false
				}
				r.BlockStateCalls = append(r.BlockStateCalls, b)
				return true
			})
		case "traceTransfers":
			return s.Bool(&r.TraceTransfers)
		case "validation":
			return s.Bool(&r.Validation)
		case "returnFullTransactions":
			return s.Bool(&r.ReturnFullTransactions)
		}
		return false
	})
}

func (s *scanner) blockCalls(b *BlockCalls) bool {
	var seen once
	return s.Object(func(k []byte) bool {
		if !seen.first(k) {
			return false
		}
		switch string(k) {
		case "blockOverrides":
			if s.Null() {
				return true
			}
			b.BlockOverrides = new(BlockOverrides)
			return s.blockOverrides(b.BlockOverrides)
		case "stateOverrides":
			if s.Null() {
				return true
			}
			b.StateOverrides = StateOverride{}
			return s.stateOverride(b.StateOverrides)
		case "calls":
			if s.Null() {
				return true
			}
			b.Calls = []CallArgs{}
			return s.Array(func() bool {
				var a CallArgs
				if !s.Null() && !s.callArgs(&a) {
					return false
				}
				b.Calls = append(b.Calls, a)
				return true
			})
		}
		return false
	})
}

func (s *scanner) blockOverrides(o *BlockOverrides) bool {
	var seen once
	return s.Object(func(k []byte) bool {
		if !seen.first(k) {
			return false
		}
		switch string(k) {
		case "number":
			return value(s, &o.Number)
		case "difficulty":
			return value(s, &o.Difficulty)
		case "time":
			return value(s, &o.Time)
		case "gasLimit":
			return value(s, &o.GasLimit)
		case "feeRecipient":
			return value(s, &o.FeeRecipient)
		case "prevRandao":
			return value(s, &o.PrevRandao)
		case "baseFeePerGas":
			return value(s, &o.BaseFeePerGas)
		case "blobBaseFee":
			return value(s, &o.BlobBaseFee)
		case "beaconRoot":
			return value(s, &o.BeaconRoot)
		case "withdrawals":
			return raw(s, &o.Withdrawals)
		}
		return false
	})
}

func (s *scanner) stateOverride(o StateOverride) bool {
	return s.Object(func(k []byte) bool {
		var addr common.Address
		if addr.UnmarshalText(k) != nil {
			return false
		}
		var acct AccountOverride
		if !s.Null() && !s.accountOverride(&acct) {
			return false
		}
		o[addr] = acct
		return true
	})
}

func (s *scanner) accountOverride(a *AccountOverride) bool {
	var seen once
	return s.Object(func(k []byte) bool {
		if !seen.first(k) {
			return false
		}
		switch string(k) {
		case "nonce":
			return value(s, &a.Nonce)
		case "code":
			return value(s, &a.Code)
		case "balance":
			return value(s, &a.Balance)
		case "state":
			return s.slots(&a.State)
		case "stateDiff":
			return s.slots(&a.StateDiff)
		case "movePrecompileToAddress":
			return value(s, &a.MovePrecompileTo)
		}
		return false
	})
}

func (s *scanner) slots(dst *map[common.Hash]common.Hash) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	m := map[common.Hash]common.Hash{}
	*dst = m
	return s.Object(func(k []byte) bool {
		var key common.Hash
		if key.UnmarshalText(k) != nil {
			return false
		}
		tok, ok := s.Str()
		if !ok {
			return false
		}
		var v common.Hash
		if v.UnmarshalJSON(tok) != nil {
			return false
		}
		m[key] = v
		return true
	})
}

func (s *scanner) callArgs(a *CallArgs) bool {
	var seen once
	return s.Object(func(k []byte) bool {
		if !seen.first(k) {
			return false
		}
		switch string(k) {
		case "from":
			return value(s, &a.From)
		case "to":
			return value(s, &a.To)
		case "gas":
			return value(s, &a.Gas)
		case "gasPrice":
			return value(s, &a.GasPrice)
		case "maxFeePerGas":
			return value(s, &a.MaxFeePerGas)
		case "maxPriorityFeePerGas":
			return value(s, &a.MaxPriorityFeePerGas)
		case "value":
			return value(s, &a.Value)
		case "nonce":
			return value(s, &a.Nonce)
		case "data":
			return value(s, &a.Data)
		case "input":
			return value(s, &a.Input)
		case "chainId":
			return value(s, &a.ChainID)
		case "maxFeePerBlobGas":
			return value(s, &a.BlobFeeCap)
		case "accessList":
			return raw(s, &a.AccessList)
		case "blobVersionedHashes":
			return raw(s, &a.BlobHashes)
		case "authorizationList":
			return raw(s, &a.AuthorizationList)
		case "type":
			tok, ok := s.Value(0)
			if ok {
				a.Type = append(json.RawMessage(nil), tok...)
			}
			return ok
		}
		return false
	})
}
