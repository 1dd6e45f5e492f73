package api

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// appendReceipt writes the RPC receipt object with go-ethereum's keys in
// their (sorted) order. loc gives the block the receipt belongs to; the
// receipt's own location fields are not trusted, so that pre-confirmed
// receipts (whose block hash is not final) get the pending block's.
// Derived fields a freshly executed receipt may lack (effective gas price)
// are computed from tx and the block's base fee.
func appendReceipt(b []byte, r *types.Receipt, tx *types.Transaction, loc txLoc, signer types.Signer) []byte {
	from, _ := types.Sender(signer, tx)
	e := enc{b: b}
	e.open()
	if tx.Type() == types.BlobTxType {
		e.big("blobGasPrice", r.BlobGasPrice)
		e.u64("blobGasUsed", r.BlobGasUsed)
	}
	e.hash("blockHash", loc.BlockHash)
	e.u64("blockNumber", loc.Number)
	if r.ContractAddress != (common.Address{}) {
		e.addr("contractAddress", r.ContractAddress)
	} else {
		e.null("contractAddress")
	}
	e.u64("cumulativeGasUsed", r.CumulativeGasUsed)
	if r.EffectiveGasPrice != nil {
		e.big("effectiveGasPrice", r.EffectiveGasPrice)
	} else {
		e.big("effectiveGasPrice", effectiveGasPrice(tx, loc.BaseFee))
	}
	e.addr("from", from)
	e.u64("gasUsed", r.GasUsed)
	e.key("logs")
	e.b = appendLogs(e.b, r.Logs, loc.BlockHash, loc.Time)
	e.bytes("logsBloom", r.Bloom[:])
	if len(r.PostState) > 0 {
		e.bytes("root", r.PostState)
	} else {
		e.u64("status", r.Status)
	}
	e.addrPtr("to", tx.To())
	e.hash("transactionHash", tx.Hash())
	e.u64("transactionIndex", loc.Index)
	e.u64("type", uint64(tx.Type()))
	e.close()
	return e.b
}

// appendLogs writes logs as an array ([] for none), each stamped with the
// given block hash and time (see appendLog).
func appendLogs(b []byte, logs []*types.Log, blockHash common.Hash, blockTime uint64) []byte {
	b = append(b, '[')
	for i, l := range logs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLog(b, l, blockHash, blockTime)
	}
	return append(b, ']')
}

// appendLog writes one log in types.Log's JSON field order. blockHash and
// blockTime replace the log's own (unset in pre-confirmed logs).
func appendLog(b []byte, l *types.Log, blockHash common.Hash, blockTime uint64) []byte {
	e := enc{b: b}
	e.open()
	e.addr("address", l.Address)
	e.key("topics")
	if l.Topics == nil {
		e.b = append(e.b, "null"...)
	} else {
		e.b = appendHashes(e.b, l.Topics)
	}
	e.bytes("data", l.Data)
	e.u64("blockNumber", l.BlockNumber)
	e.hash("transactionHash", l.TxHash)
	e.u64("transactionIndex", uint64(l.TxIndex))
	e.hash("blockHash", blockHash)
	e.u64("blockTimestamp", blockTime)
	e.u64("logIndex", uint64(l.Index))
	e.boolean("removed", l.Removed)
	e.close()
	return e.b
}
