package simulate

import (
	"encoding/json"

	"github.com/ethereum/go-ethereum/common"
)

// A decoder for the usual shape of eth_simulateV1 requests and call objects,
// which encoding/json spends a tenth of a simulation decoding. It takes a
// strict subset — keys spelled exactly as documented, each at most once,
// strings without escapes — and decodes every value with the same
// UnmarshalJSON/UnmarshalText methods encoding/json would call, so within
// the subset the result is identical (TestFastDecodeMatchesEncodingJSON).
// On anything outside it, or any value error, it gives up and the caller
// decodes with encoding/json, which then also words the error. The input
// must be valid JSON (the RPC layer checked the whole message).

// FastRequest decodes eth_simulateV1's first parameter if it is in the
// subset; false means: decode it with encoding/json.
func FastRequest(raw []byte, req *Request) bool {
	s := scanner{b: raw}
	var r Request
	if s.request(&r) && s.end() {
		*req = r
		return true
	}
	return false
}

// FastCallArgs decodes a call object if it is in the subset; false means:
// decode it with encoding/json.
func FastCallArgs(raw []byte, args *CallArgs) bool {
	s := scanner{b: raw}
	var a CallArgs
	if s.callArgs(&a) && s.end() {
		*args = a
		return true
	}
	return false
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) end() bool { return s.peek() == 0 && s.i == len(s.b) }

// str reads a string without escapes; it returns the token with quotes.
func (s *scanner) str() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:s.i], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// skip consumes any one value and returns it raw.
func (s *scanner) skip() ([]byte, bool) {
	s.ws()
	start, depth := s.i, 0
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			j := s.i + 1
			for j < len(s.b) && s.b[j] != '"' {
				if s.b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s.b) {
				return nil, false
			}
			s.i = j + 1
		case c == '{' || c == '[':
			depth++
			s.i++
		case c == '}' || c == ']':
			if depth == 0 {
				return s.b[start:s.i], s.i > start
			}
			depth--
			s.i++
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return s.b[start:s.i], s.i > start
		default:
			s.i++
		}
		if depth == 0 && (c == '"' || c == '}' || c == ']') {
			return s.b[start:s.i], true
		}
	}
	return s.b[start:s.i], depth == 0 && s.i > start
}

// object calls field for each member (key without quotes); field consumes
// the value.
func (s *scanner) object(field func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		k, ok := s.str()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !field(k[1 : len(k)-1]) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// array calls elem for each element; elem consumes it.
func (s *scanner) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

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
	if s.null() {
		return true
	}
	tok, ok := s.str()
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
	tok, ok := s.skip()
	return ok && json.Unmarshal(tok, v) == nil
}

func (s *scanner) boolean(dst *bool) bool {
	switch {
	case s.null():
		return true
	case s.peek() == 't' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "true":
		s.i += 4
		*dst = true
		return true
	case s.peek() == 'f' && len(s.b)-s.i >= 5 && string(s.b[s.i:s.i+5]) == "false":
		s.i += 5
		*dst = false
		return true
	}
	return false
}

func (s *scanner) request(r *Request) bool {
	var seen once
	return s.object(func(k []byte) bool {
		if !seen.first(k) {
			return false
		}
		switch string(k) {
		case "blockStateCalls":
			if s.null() {
				return true
			}
			r.BlockStateCalls = []BlockCalls{}
			return s.array(func() bool {
				var b BlockCalls
				if !s.null() && !s.blockCalls(&b) {
					return false
				}
				r.BlockStateCalls = append(r.BlockStateCalls, b)
				return true
			})
		case "traceTransfers":
			return s.boolean(&r.TraceTransfers)
		case "validation":
			return s.boolean(&r.Validation)
		case "returnFullTransactions":
			return s.boolean(&r.ReturnFullTransactions)
		}
		return false
	})
}

func (s *scanner) blockCalls(b *BlockCalls) bool {
	var seen once
	return s.object(func(k []byte) bool {
		if !seen.first(k) {
			return false
		}
		switch string(k) {
		case "blockOverrides":
			if s.null() {
				return true
			}
			b.BlockOverrides = new(BlockOverrides)
			return s.blockOverrides(b.BlockOverrides)
		case "stateOverrides":
			if s.null() {
				return true
			}
			b.StateOverrides = StateOverride{}
			return s.stateOverride(b.StateOverrides)
		case "calls":
			if s.null() {
				return true
			}
			b.Calls = []CallArgs{}
			return s.array(func() bool {
				var a CallArgs
				if !s.null() && !s.callArgs(&a) {
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
	return s.object(func(k []byte) bool {
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
	return s.object(func(k []byte) bool {
		var addr common.Address
		if addr.UnmarshalText(k) != nil {
			return false
		}
		var acct AccountOverride
		if !s.null() && !s.accountOverride(&acct) {
			return false
		}
		o[addr] = acct
		return true
	})
}

func (s *scanner) accountOverride(a *AccountOverride) bool {
	var seen once
	return s.object(func(k []byte) bool {
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
	if s.null() {
		*dst = nil
		return true
	}
	m := map[common.Hash]common.Hash{}
	*dst = m
	return s.object(func(k []byte) bool {
		var key common.Hash
		if key.UnmarshalText(k) != nil {
			return false
		}
		tok, ok := s.str()
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
	return s.object(func(k []byte) bool {
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
			tok, ok := s.skip()
			if ok {
				a.Type = append(json.RawMessage(nil), tok...)
			}
			return ok
		}
		return false
	})
}
