package simulate

import (
	"bytes"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
)

// A simulated block's hash and RLP size from one encoding of its header.
// types.Block computes them apart: Hash encodes the header into the hasher,
// Size encodes the whole block (header, transactions, uncles, withdrawals)
// into a counter, which cost as much CPU as the hash on the 3-block bench
// bundle. The block's encoding is a list of the header's, the transactions
// list, the (empty) uncles list and, from Shanghai, the withdrawals list;
// the header is encoded once here, and the transactions list's payload is
// the caller's (the zero-root mode's encoder has it, txsPayload sums what
// types.Transaction caches). TestHashAndSizeMatchBlock compares both with
// types.Block's on simulated blocks of every shape the engine builds.

type headerEncoder struct {
	buf bytes.Buffer
	kc  crypto.KeccakState
}

var headerEncoders = sync.Pool{New: func() any { return &headerEncoder{kc: crypto.NewKeccakState()} }}

// hashAndSize returns the hash and RLP size of the block of header,
// transactions and withdrawals (nil before Shanghai); header is the block's
// own, payload the size of the transactions list's items. When !sized (a
// blob transaction, whose sidecar Transaction.Size would count) and with
// withdrawals, which eth_simulateV1 only has when a request overrides them,
// the size is a types.Block's, of the transactions txs returns.
func hashAndSize(header *types.Header, withdrawals types.Withdrawals, payload uint64, sized bool, txs func() types.Transactions) (hash common.Hash, size uint64) {
	he := headerEncoders.Get().(*headerEncoder)
	defer headerEncoders.Put(he)
	blockSize := func() uint64 {
		return types.NewBlockWithHeader(header).WithBody(types.Body{Transactions: txs(), Withdrawals: withdrawals}).Size()
	}
	he.buf.Reset()
	if err := header.EncodeRLP(&he.buf); err != nil {
		return header.Hash(), blockSize()
	}
	he.kc.Reset()
	he.kc.Write(he.buf.Bytes())
	he.kc.Read(hash[:])
	if len(withdrawals) > 0 || !sized {
		return hash, blockSize()
	}
	size = uint64(he.buf.Len()) + rlp.ListSize(payload) + rlp.ListSize(0) // header, transactions, no uncles
	if withdrawals != nil {
		size += rlp.ListSize(0)
	}
	return hash, rlp.ListSize(size)
}

// txsPayload is the size of the items of the block's transactions list;
// false with a blob transaction.
func txsPayload(txs types.Transactions) (n uint64, sized bool) {
	for _, tx := range txs {
		switch tx.Type() {
		case types.BlobTxType:
			return 0, false
		case types.LegacyTxType:
			n += tx.Size() // an RLP list in the block's list
		default:
			n += rlp.ListSize(tx.Size()) // an RLP string of type byte and payload; its header is sized as a list's
		}
	}
	return n, true
}

// zeroRootBlock sets in header the roots and bloom types.NewBlock would
// derive from the transactions and receipts enc holds and from
// withdrawals, without building the block (which deep-copies the header):
// the block of the zero-root mode is its header and body. It returns the
// withdrawals the block holds.
func zeroRootBlock(header *types.Header, enc *blockEncoder, withdrawals types.Withdrawals,
	cfg *params.ChainConfig, hasher *listHasher) (types.Withdrawals, error) {
	enc.roots(hasher, header)
	header.UncleHash = types.EmptyUncleHash
	switch {
	case cfg.HasOptimismWithdrawalsRoot(header.Time):
		// Isthmus: the header's root is the L2-to-L1 message passer's
		// storage root, set by the caller; the block has no withdrawals.
		if len(withdrawals) > 0 {
			return nil, &Error{Code: CodeInvalidParams, Msg: "withdrawals are not allowed on this OP-stack chain"}
		}
		return types.Withdrawals{}, nil
	case withdrawals == nil:
		header.WithdrawalsHash = nil
		return nil, nil
	case len(withdrawals) == 0:
		header.WithdrawalsHash = &types.EmptyWithdrawalsHash
		return types.Withdrawals{}, nil
	default:
		h := types.DeriveSha(withdrawals, hasher)
		header.WithdrawalsHash = &h
		return withdrawals, nil
	}
}
