package simulate

import (
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
)

// blockEncoder encodes a zero-root block's transactions and receipts once
// each. Through types.Transaction a simulated transaction was encoded three
// times (its hash, the transactions root, the block size) after NewTx had
// copied it, and core.MakeReceipt built a receipt that DeriveSha encoded by
// reflection. Here the transaction is encoded once, by hand for the
// dynamic-fee transaction eth_simulateV1 makes by default and by
// go-ethereum (Transaction.MarshalBinary) for the other types; its hash,
// its place in the root and its size come from those bytes, and the
// receipt is written in its consensus encoding from status, cumulative gas
// and logs. A 2-transfer block's transactions and receipts: 6.9 µs, 3.3 KB
// and 46 allocations through types, 3.9 µs (the hashes) and none here
// (BenchmarkBlockEncoder, 2026-11-25). The roots, bloom, hashes and sizes
// are go-ethereum's: TestBlockEncoderMatchesTypes, and
// TestZeroRootModeMatchesCompute on every eth_simulateV1 fixture.
type blockEncoder struct {
	w     rlp.EncoderBuffer
	kc    crypto.KeccakState
	arena []byte   // the encodings, back to back
	txs   [][2]int // arena ranges of the transactions' encodings
	rcpts [][2]int // and of the receipts'
	// sized is false once a blob transaction is added: its size is the
	// block's to compute (hashAndSize).
	sized   bool
	payload uint64 // the transactions list's payload size
	bloom   types.Bloom
	hash    common.Hash
}

var blockEncoders = sync.Pool{New: func() any {
	return &blockEncoder{w: rlp.NewEncoderBuffer(nil), kc: crypto.NewKeccakState()}
}}

// reset starts a block.
func (e *blockEncoder) reset() {
	e.arena, e.txs, e.rcpts = e.arena[:0], e.txs[:0], e.rcpts[:0]
	e.sized, e.payload, e.bloom = true, 0, types.Bloom{}
}

// addTx encodes the transaction call makes (as CallArgs.transaction with
// a dynamic-fee default) and returns its hash and type.
func (e *blockEncoder) addTx(call *CallArgs) (common.Hash, byte, error) {
	start := len(e.arena)
	typ := call.txType(types.DynamicFeeTxType)
	if typ == types.DynamicFeeTxType && nonNegative(call.ChainID, call.MaxPriorityFeePerGas, call.MaxFeePerGas, call.Value) {
		e.appendDynamicFeeTx(call)
	} else {
		enc, err := call.transaction(types.DynamicFeeTxType).MarshalBinary()
		if err != nil {
			return common.Hash{}, 0, err
		}
		e.arena = append(e.arena, enc...)
	}
	e.txs = append(e.txs, [2]int{start, len(e.arena)})
	n := uint64(len(e.arena) - start)
	switch typ {
	case types.LegacyTxType:
		e.payload += n // an RLP list in the block's list
	case types.BlobTxType:
		e.sized = false
	default:
		e.payload += rlp.ListSize(n) // an RLP string holding type byte and payload
	}
	e.kc.Reset()
	e.kc.Write(e.arena[start:])
	e.kc.Read(e.hash[:])
	return e.hash, typ, nil
}

// lastTx is the binary encoding of the transaction addTx added last.
func (e *blockEncoder) lastTx() []byte {
	t := e.txs[len(e.txs)-1]
	return e.arena[t[0]:t[1]]
}

// nonNegative: RLP has no negative integers (go-ethereum's encoder fails
// on one, and so does MarshalBinary, which then answers the error).
func nonNegative(xs ...*hexutil.Big) bool {
	for _, x := range xs {
		if x != nil && x.ToInt().Sign() < 0 {
			return false
		}
	}
	return true
}

// appendDynamicFeeTx appends the type byte and the RLP list of an unsigned
// types.DynamicFeeTx, fields in its order (V, R and S zero).
func (e *blockEncoder) appendDynamicFeeTx(a *CallArgs) {
	w := &e.w
	w.Reset(nil)
	l := w.List()
	w.WriteBigInt(bigOrZero(a.ChainID))
	w.WriteUint64(uint64(*a.Nonce))
	w.WriteBigInt(bigOrZero(a.MaxPriorityFeePerGas))
	w.WriteBigInt(bigOrZero(a.MaxFeePerGas))
	w.WriteUint64(uint64(*a.Gas))
	if a.To != nil {
		w.WriteBytes(a.To[:])
	} else {
		w.WriteBytes(nil) // contract creation: "to" is the empty string
	}
	w.WriteBigInt(bigOrZero(a.Value))
	w.WriteBytes(a.calldata())
	appendAccessList(w, a.AccessList)
	w.WriteUint64(0)
	w.WriteUint64(0)
	w.WriteUint64(0)
	w.ListEnd(l)
	e.arena = append(e.arena, types.DynamicFeeTxType)
	e.arena = w.AppendToBytes(e.arena)
}

func appendAccessList(w *rlp.EncoderBuffer, al *types.AccessList) {
	l := w.List()
	if al != nil {
		for _, t := range *al {
			tl := w.List()
			w.WriteBytes(t.Address[:])
			kl := w.List()
			for _, k := range t.StorageKeys {
				w.WriteBytes(k[:])
			}
			w.ListEnd(kl)
			w.ListEnd(tl)
		}
	}
	w.ListEnd(l)
}

// addReceipt encodes the receipt of call's transaction, of type typ, and
// adds its logs to the block's bloom; postState is the state root before
// Byzantium (nil after, when the receipt holds a status). It returns the
// blob gas the transaction used.
func (e *blockEncoder) addReceipt(typ byte, call *CallArgs, postState []byte, failed bool, cumulativeGas uint64, logs []*types.Log) uint64 {
	var bloom types.Bloom
	for _, l := range logs {
		bloom.Add(l.Address[:])
		for _, t := range l.Topics {
			bloom.Add(t[:])
		}
	}
	for i := range bloom {
		e.bloom[i] |= bloom[i]
	}
	w := &e.w
	w.Reset(nil)
	l := w.List()
	switch {
	case postState != nil:
		w.WriteBytes(postState)
	case failed:
		w.WriteBytes(nil)
	default:
		w.WriteBytes([]byte{1})
	}
	w.WriteUint64(cumulativeGas)
	w.WriteBytes(bloom[:])
	ll := w.List()
	for _, lg := range logs {
		one := w.List()
		w.WriteBytes(lg.Address[:])
		tl := w.List()
		for _, t := range lg.Topics {
			w.WriteBytes(t[:])
		}
		w.ListEnd(tl)
		w.WriteBytes(lg.Data)
		w.ListEnd(one)
	}
	w.ListEnd(ll)
	w.ListEnd(l)
	start := len(e.arena)
	if typ != types.LegacyTxType {
		e.arena = append(e.arena, typ)
	}
	e.arena = w.AppendToBytes(e.arena)
	e.rcpts = append(e.rcpts, [2]int{start, len(e.arena)})
	if typ == types.BlobTxType {
		return uint64(len(call.BlobHashes)) * params.BlobTxBlobGasPerBlob
	}
	return 0
}

// roots sets the header's transactions and receipts roots and its bloom.
func (e *blockEncoder) roots(h *listHasher, header *types.Header) {
	header.TxHash = e.root(h, e.txs, types.EmptyTxsHash)
	header.ReceiptHash = e.root(h, e.rcpts, types.EmptyReceiptsHash)
	header.Bloom = e.bloom
}

// root is the root of the trie types.DeriveSha builds over the list: the
// RLP of each index to its item. The keys go in in DeriveSha's order, which
// is theirs (1–127 are one byte below 0x80, the encoding of 0; 128 on start
// 0x81, 0x82, …), so the hasher does not sort.
func (e *blockEncoder) root(h *listHasher, items [][2]int, empty common.Hash) common.Hash {
	if len(items) == 0 {
		return empty
	}
	h.Reset()
	var buf [9]byte
	add := func(i int) {
		r := items[i]
		h.Update(rlp.AppendUint64(buf[:0], uint64(i)), e.arena[r[0]:r[1]])
	}
	for i := 1; i < min(len(items), 0x80); i++ {
		add(i)
	}
	add(0)
	for i := 0x80; i < len(items); i++ {
		add(i)
	}
	return h.Hash()
}
