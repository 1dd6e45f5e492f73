package api

import (
	"encoding/hex"
	"math/big"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
)

// enc appends a JSON object to a byte slice without reflection. The RPC
// objects (blocks, transactions, receipts, logs) are written field by field
// in the exact order go-ethereum emits them, so that answers match its bytes
// and the hot paths allocate little more than the output buffer.
type enc struct {
	b     []byte
	first bool // no field written yet in the current object
}

func (e *enc) open()  { e.b = append(e.b, '{'); e.first = true }
func (e *enc) close() { e.b = append(e.b, '}'); e.first = false }

// key writes the separator and `"name":`.
func (e *enc) key(name string) {
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

func (e *enc) null(name string) { e.key(name); e.b = append(e.b, "null"...) }

func (e *enc) boolean(name string, v bool) {
	e.key(name)
	e.b = strconv.AppendBool(e.b, v)
}

func (e *enc) u64(name string, v uint64) { e.key(name); e.b = appendU64(e.b, v) }

func (e *enc) big(name string, v *big.Int) { e.key(name); e.b = appendBig(e.b, v) }

func (e *enc) bytes(name string, v []byte) { e.key(name); e.b = appendHexBytes(e.b, v) }

func (e *enc) hash(name string, h common.Hash) { e.key(name); e.b = appendHexBytes(e.b, h[:]) }

func (e *enc) addr(name string, a common.Address) { e.key(name); e.b = appendHexBytes(e.b, a[:]) }

// addrPtr writes null for a nil address (contract creation "to").
func (e *enc) addrPtr(name string, a *common.Address) {
	if a == nil {
		e.null(name)
		return
	}
	e.addr(name, *a)
}

// appendU64 is hexutil.Uint64's encoding: "0x" and minimal hex digits.
func appendU64(b []byte, v uint64) []byte {
	b = append(b, '"', '0', 'x')
	b = strconv.AppendUint(b, v, 16)
	return append(b, '"')
}

// appendBig is hexutil.Big's encoding; nil is null.
func appendBig(b []byte, v *big.Int) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	if v.IsUint64() { // no big-number formatting (it allocates)
		return appendU64(b, v.Uint64())
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

// appendQuoted writes s as a JSON string; s must need no escaping (hex).
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendHexBytes is hexutil.Bytes' encoding ("0x" for empty).
func appendHexBytes(b []byte, v []byte) []byte {
	b = append(b, '"', '0', 'x')
	b = hex.AppendEncode(b, v)
	return append(b, '"')
}

// appendHashes writes a JSON array of 32-byte hashes.
func appendHashes(b []byte, hs []common.Hash) []byte {
	b = append(b, '[')
	for i := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendHexBytes(b, hs[i][:])
	}
	return append(b, ']')
}
