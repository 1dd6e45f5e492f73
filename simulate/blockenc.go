package simulate

import (
	"bytes"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
)

// A simulated block's hash and RLP size from one encoding of its header.
// types.Block computes them apart: Hash encodes the header into the hasher,
// Size encodes the whole block (header, transactions, uncles, withdrawals)
// into a counter, which cost as much CPU as the hash on the 3-block bench
// bundle. The block's encoding is a list of the header's, the transactions
// list, the (empty) uncles list and, from Shanghai, the withdrawals list;
// the header is encoded once here, and each transaction's size is the one
// types.Transaction caches. TestHashAndSizeMatchBlock compares both with
// types.Block's on simulated blocks of every shape the engine builds.

type headerEncoder struct {
	buf bytes.Buffer
	kc  crypto.KeccakState
}

var headerEncoders = sync.Pool{New: func() any { return &headerEncoder{kc: crypto.NewKeccakState()} }}

// hashAndSize returns block's hash and RLP size; header is block's header
// (the caller's, not a copy). The size is 0 where it is not derived here
// (blob transactions, whose sidecars Transaction.Size counts, or
// withdrawals): the block is asked then.
func hashAndSize(header *types.Header, block *types.Block) (hash common.Hash, size uint64) {
	he := headerEncoders.Get().(*headerEncoder)
	defer headerEncoders.Put(he)
	he.buf.Reset()
	if err := header.EncodeRLP(&he.buf); err != nil {
		return block.Hash(), 0
	}
	he.kc.Reset()
	he.kc.Write(he.buf.Bytes())
	he.kc.Read(hash[:])

	if len(block.Withdrawals()) > 0 {
		return hash, 0
	}
	var txs uint64
	for _, tx := range block.Transactions() {
		switch tx.Type() {
		case types.BlobTxType:
			return hash, 0
		case types.LegacyTxType:
			txs += tx.Size() // an RLP list in the block's list
		default:
			txs += rlp.ListSize(tx.Size()) // an RLP string of type byte and payload; its header is sized as a list's
		}
	}
	size = uint64(he.buf.Len()) + rlp.ListSize(txs) + rlp.ListSize(0) // header, transactions, no uncles
	if block.Withdrawals() != nil {
		size += rlp.ListSize(0)
	}
	return hash, rlp.ListSize(size)
}
