package api

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// blockJSON says how to write a block object.
type blockJSON struct {
	fullTx bool // transactions as objects rather than hashes
	// pending nulls hash, nonce and miner, as go-ethereum does for the
	// pending block (its hash is not final while it is being built).
	pending bool
	// headerOnly writes the header object (eth_getHeaderBy*): no size,
	// transactions, uncles or withdrawals.
	headerOnly bool
	// noTxs leaves out the transactions (uncle blocks).
	noTxs bool
}

// appendBlock writes the RPC block object. go-ethereum builds it as a map,
// so its keys come out sorted; they are written here in that order. hash is
// the block's hash (used for the "hash" field and the location of full
// transaction objects).
func appendBlock(b []byte, block *types.Block, hash common.Hash, opt blockJSON, signer types.Signer) []byte {
	h := block.Header()
	e := enc{b: b}
	e.open()
	if h.BaseFee != nil {
		e.big("baseFeePerGas", h.BaseFee)
	}
	if h.BlobGasUsed != nil {
		e.u64("blobGasUsed", *h.BlobGasUsed)
	}
	if h.BlockAccessListHash != nil {
		e.hash("blockAccessListHash", *h.BlockAccessListHash)
	}
	e.big("difficulty", h.Difficulty)
	if h.ExcessBlobGas != nil {
		e.u64("excessBlobGas", *h.ExcessBlobGas)
	}
	e.bytes("extraData", h.Extra)
	e.u64("gasLimit", h.GasLimit)
	e.u64("gasUsed", h.GasUsed)
	if opt.pending {
		e.null("hash")
	} else {
		e.hash("hash", hash)
	}
	e.bytes("logsBloom", h.Bloom[:])
	if opt.pending {
		e.null("miner")
	} else {
		e.addr("miner", h.Coinbase)
	}
	e.hash("mixHash", h.MixDigest)
	if opt.pending {
		e.null("nonce")
	} else {
		e.bytes("nonce", h.Nonce[:])
	}
	e.big("number", h.Number)
	if h.ParentBeaconRoot != nil {
		e.hash("parentBeaconBlockRoot", *h.ParentBeaconRoot)
	}
	e.hash("parentHash", h.ParentHash)
	e.hash("receiptsRoot", h.ReceiptHash)
	if h.RequestsHash != nil {
		e.hash("requestsHash", *h.RequestsHash)
	}
	e.hash("sha3Uncles", h.UncleHash)
	if !opt.headerOnly {
		e.u64("size", block.Size())
	}
	if h.SlotNumber != nil {
		e.u64("slotNumber", *h.SlotNumber)
	}
	e.hash("stateRoot", h.Root)
	e.u64("timestamp", h.Time)
	if !opt.headerOnly && !opt.noTxs {
		e.key("transactions")
		e.b = append(e.b, '[')
		for i, tx := range block.Transactions() {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if opt.fullTx {
				e.b = appendTx(e.b, tx, blockLoc(block, hash, i), signer)
			} else {
				h := tx.Hash()
				e.b = appendHexBytes(e.b, h[:])
			}
		}
		e.b = append(e.b, ']')
	}
	e.hash("transactionsRoot", h.TxHash)
	if opt.headerOnly {
		if h.WithdrawalsHash != nil {
			e.hash("withdrawalsRoot", *h.WithdrawalsHash)
		}
		e.close()
		return e.b
	}
	e.key("uncles")
	e.b = append(e.b, '[')
	for i, u := range block.Uncles() {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		uh := u.Hash()
		e.b = appendHexBytes(e.b, uh[:])
	}
	e.b = append(e.b, ']')
	if ws := block.Withdrawals(); ws != nil {
		e.key("withdrawals")
		e.b = appendWithdrawals(e.b, ws)
	}
	if h.WithdrawalsHash != nil {
		e.hash("withdrawalsRoot", *h.WithdrawalsHash)
	}
	e.close()
	return e.b
}

func appendWithdrawals(b []byte, ws types.Withdrawals) []byte {
	b = append(b, '[')
	for i, w := range ws {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendU64(b, w.Index)
		b = append(b, `,"validatorIndex":`...)
		b = appendU64(b, w.Validator)
		b = append(b, `,"address":`...)
		b = appendHexBytes(b, w.Address[:])
		b = append(b, `,"amount":`...)
		b = appendU64(b, w.Amount)
		b = append(b, '}')
	}
	return append(b, ']')
}
