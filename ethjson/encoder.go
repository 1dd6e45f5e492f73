// Package ethjson holds go-ethereum's JSON-RPC objects in their exact wire
// form: the encoders of blocks, transactions, receipts and logs, written byte
// for byte as go-ethereum answers them and without reflection, and the block
// selectors (BlockRef) and log filters (LogFilter) requests carry, decoded
// with go-ethereum's rules and messages. The method handlers (package api)
// and the subscriptions (package subscribe) share them, so that a
// notification carries exactly the bytes the matching eth_get* method
// answers and a filter means the same in eth_getLogs and eth_subscribe.
package ethjson

import (
	"encoding/hex"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Encoder appends a JSON object to Buf without reflection. The RPC objects
// (blocks, transactions, receipts, logs) are written field by field in the
// exact order go-ethereum emits them, so that answers match its bytes and the
// hot paths allocate little more than the output buffer. Open starts an
// object, each field method writes `"name":value` (with the separator),
// Close ends it; Key alone starts a field whose value the caller appends.
type Encoder struct {
	Buf   []byte
	first bool // no field written yet in the current object
}

// Open starts an object; Close ends it.
func (e *Encoder) Open()  { e.Buf = append(e.Buf, '{'); e.first = true }
func (e *Encoder) Close() { e.Buf = append(e.Buf, '}'); e.first = false }

// Key writes the separator and `"name":`.
func (e *Encoder) Key(name string) {
	if !e.first {
		e.Buf = append(e.Buf, ',')
	}
	e.first = false
	e.Buf = append(e.Buf, '"')
	e.Buf = append(e.Buf, name...)
	e.Buf = append(e.Buf, '"', ':')
}

// Null, Bool, U64, Big, Bytes, Hash and Addr write one field, the value in
// go-ethereum's (hexutil) encoding.
func (e *Encoder) Null(name string) { e.Key(name); e.Buf = append(e.Buf, "null"...) }

func (e *Encoder) Bool(name string, v bool) {
	e.Key(name)
	e.Buf = strconv.AppendBool(e.Buf, v)
}

func (e *Encoder) U64(name string, v uint64) { e.Key(name); e.Buf = AppendU64(e.Buf, v) }

func (e *Encoder) Big(name string, v *big.Int) { e.Key(name); e.Buf = AppendBig(e.Buf, v) }

func (e *Encoder) Bytes(name string, v []byte) { e.Key(name); e.Buf = AppendHexBytes(e.Buf, v) }

func (e *Encoder) Hash(name string, h common.Hash) { e.Key(name); e.Buf = AppendHexBytes(e.Buf, h[:]) }

// zeroBloomHex is an empty bloom's hex, the logsBloom of every block and
// receipt without logs: copied rather than hex-encoded (512 digits).
var zeroBloomHex = "0x" + strings.Repeat("0", 2*types.BloomByteLength)

// Bloom writes a logs bloom.
func (e *Encoder) Bloom(name string, b *types.Bloom) {
	e.Key(name)
	if *b == (types.Bloom{}) {
		e.Buf = append(e.Buf, '"')
		e.Buf = append(e.Buf, zeroBloomHex...)
		e.Buf = append(e.Buf, '"')
		return
	}
	e.Buf = AppendHexBytes(e.Buf, b[:])
}

func (e *Encoder) Addr(name string, a common.Address) {
	e.Key(name)
	e.Buf = AppendHexBytes(e.Buf, a[:])
}

// AddrPtr writes null for a nil address (contract creation "to").
func (e *Encoder) AddrPtr(name string, a *common.Address) {
	if a == nil {
		e.Null(name)
		return
	}
	e.Addr(name, *a)
}

// AppendU64 is hexutil.Uint64's encoding: "0x" and minimal hex digits.
func AppendU64(b []byte, v uint64) []byte {
	b = append(b, '"', '0', 'x')
	b = strconv.AppendUint(b, v, 16)
	return append(b, '"')
}

// AppendBig is hexutil.Big's encoding; nil is null.
func AppendBig(b []byte, v *big.Int) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	if v.IsUint64() { // no big-number formatting (it allocates)
		return AppendU64(b, v.Uint64())
	}
	b = append(b, '"')
	if v.Sign() < 0 {
		b = append(b, '-')
		b = append(b, '0', 'x')
		b = new(big.Int).Neg(v).Append(b, 16)
	} else {
		b = append(b, '0', 'x')
		b = v.Append(b, 16)
	}
	return append(b, '"')
}

// AppendQuoted writes s as a JSON string; s must need no escaping (hex).
func AppendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendHexBytes is hexutil.Bytes' encoding ("0x" for empty).
func AppendHexBytes(b []byte, v []byte) []byte {
	b = append(b, '"', '0', 'x')
	b = hex.AppendEncode(b, v)
	return append(b, '"')
}

// AppendHashes writes a JSON array of 32-byte hashes.
func AppendHashes(b []byte, hs []common.Hash) []byte {
	b = append(b, '[')
	for i := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendHexBytes(b, hs[i][:])
	}
	return append(b, ']')
}
