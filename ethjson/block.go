package ethjson

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// BlockOptions says how to write a block object.
type BlockOptions struct {
	FullTx bool // transactions as objects rather than hashes
	// Pending nulls hash, nonce and miner, as go-ethereum does for the
	// pending block (its hash is not final while it is being built).
	Pending bool
	// HeaderOnly writes the header object (eth_getHeaderBy*): no size,
	// transactions, uncles or withdrawals.
	HeaderOnly bool
	// NoTxs leaves out the transactions (uncle blocks).
	NoTxs bool
	// Receipts, when given with FullTx, are the block's receipts: OP-stack
	// deposits show their nonce and receipt version from them.
	Receipts types.Receipts
	// Header, when set, is the block's header, read instead of a copy from
	// block.Header() (the caller holds one it does not change).
	Header *types.Header
	// Size, when not zero, is the block's RLP size, written instead of
	// block.Size() (which encodes the whole block to count it).
	Size uint64
	// Calls, when set, appends the value of a "calls" member (eth_simulateV1's
	// call results), written in its sorted place.
	Calls func(b []byte) []byte
}

// BlockParts are what a block object is written from: a block's header and
// body, for a caller that holds them without a types.Block.
type BlockParts struct {
	Header *types.Header
	Txs    types.Transactions
	// TxHashes, when set, are the transactions' hashes, written instead of
	// Txs' without FullTx (a caller that has them without the transactions).
	TxHashes    []common.Hash
	Uncles      []*types.Header
	Withdrawals types.Withdrawals // nil: no withdrawals member
	Size        uint64            // the block's RLP size (unused with HeaderOnly)
}

// AppendBlock writes the RPC block object of block. hash is the block's hash
// (used for the "hash" field and the location of full transaction objects).
func AppendBlock(b []byte, block *types.Block, hash common.Hash, opt BlockOptions, signer types.Signer) []byte {
	p := BlockParts{Header: opt.Header, Txs: block.Transactions(), Uncles: block.Uncles(),
		Withdrawals: block.Withdrawals(), Size: opt.Size}
	if p.Header == nil {
		p.Header = block.Header()
	}
	if p.Size == 0 && !opt.HeaderOnly {
		p.Size = block.Size()
	}
	return AppendParts(b, p, hash, opt, signer)
}

// AppendParts writes the RPC block object of p (opt's Header and Size are
// not read). go-ethereum builds it as a map, so its keys come out sorted;
// they are written here in that order.
func AppendParts(b []byte, p BlockParts, hash common.Hash, opt BlockOptions, signer types.Signer) []byte {
	h := p.Header
	e := Encoder{Buf: b}
	e.Open()
	if h.BaseFee != nil {
		e.Big("baseFeePerGas", h.BaseFee)
	}
	if h.BlobGasUsed != nil {
		e.U64("blobGasUsed", *h.BlobGasUsed)
	}
	if h.BlockAccessListHash != nil {
		e.Hash("blockAccessListHash", *h.BlockAccessListHash)
	}
	if opt.Calls != nil {
		e.Key("calls")
		e.Buf = opt.Calls(e.Buf)
	}
	e.Big("difficulty", h.Difficulty)
	if h.ExcessBlobGas != nil {
		e.U64("excessBlobGas", *h.ExcessBlobGas)
	}
	e.Bytes("extraData", h.Extra)
	e.U64("gasLimit", h.GasLimit)
	e.U64("gasUsed", h.GasUsed)
	if opt.Pending {
		e.Null("hash")
	} else {
		e.Hash("hash", hash)
	}
	e.Bloom("logsBloom", &h.Bloom)
	if opt.Pending {
		e.Null("miner")
	} else {
		e.Addr("miner", h.Coinbase)
	}
	e.Hash("mixHash", h.MixDigest)
	if opt.Pending {
		e.Null("nonce")
	} else {
		e.Bytes("nonce", h.Nonce[:])
	}
	e.Big("number", h.Number)
	if h.ParentBeaconRoot != nil {
		e.Hash("parentBeaconBlockRoot", *h.ParentBeaconRoot)
	}
	e.Hash("parentHash", h.ParentHash)
	e.Hash("receiptsRoot", h.ReceiptHash)
	if h.RequestsHash != nil {
		e.Hash("requestsHash", *h.RequestsHash)
	}
	e.Hash("sha3Uncles", h.UncleHash)
	if !opt.HeaderOnly {
		e.U64("size", p.Size)
	}
	if h.SlotNumber != nil {
		e.U64("slotNumber", *h.SlotNumber)
	}
	e.Hash("stateRoot", h.Root)
	e.U64("timestamp", h.Time)
	if !opt.HeaderOnly && !opt.NoTxs {
		e.Key("transactions")
		e.Buf = append(e.Buf, '[')
		switch {
		case opt.FullTx:
			for i, tx := range p.Txs {
				if i > 0 {
					e.Buf = append(e.Buf, ',')
				}
				loc := HeaderLoc(h, hash, i)
				if i < len(opt.Receipts) {
					loc.Receipt = opt.Receipts[i]
				}
				e.Buf = AppendTx(e.Buf, tx, loc, signer)
			}
		case p.TxHashes != nil:
			for i, h := range p.TxHashes {
				if i > 0 {
					e.Buf = append(e.Buf, ',')
				}
				e.Buf = AppendHexBytes(e.Buf, h[:])
			}
		default:
			for i, tx := range p.Txs {
				if i > 0 {
					e.Buf = append(e.Buf, ',')
				}
				h := tx.Hash()
				e.Buf = AppendHexBytes(e.Buf, h[:])
			}
		}
		e.Buf = append(e.Buf, ']')
	}
	e.Hash("transactionsRoot", h.TxHash)
	if opt.HeaderOnly {
		if h.WithdrawalsHash != nil {
			e.Hash("withdrawalsRoot", *h.WithdrawalsHash)
		}
		e.Close()
		return e.Buf
	}
	e.Key("uncles")
	e.Buf = append(e.Buf, '[')
	for i, u := range p.Uncles {
		if i > 0 {
			e.Buf = append(e.Buf, ',')
		}
		uh := u.Hash()
		e.Buf = AppendHexBytes(e.Buf, uh[:])
	}
	e.Buf = append(e.Buf, ']')
	if ws := p.Withdrawals; ws != nil {
		e.Key("withdrawals")
		e.Buf = appendWithdrawals(e.Buf, ws)
	}
	if h.WithdrawalsHash != nil {
		e.Hash("withdrawalsRoot", *h.WithdrawalsHash)
	}
	e.Close()
	return e.Buf
}

func appendWithdrawals(b []byte, ws types.Withdrawals) []byte {
	b = append(b, '[')
	for i, w := range ws {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = AppendU64(b, w.Index)
		b = append(b, `,"validatorIndex":`...)
		b = AppendU64(b, w.Validator)
		b = append(b, `,"address":`...)
		b = AppendHexBytes(b, w.Address[:])
		b = append(b, `,"amount":`...)
		b = AppendU64(b, w.Amount)
		b = append(b, '}')
	}
	return append(b, ']')
}
