package ethjson

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// AppendReceipt writes the RPC receipt object with go-ethereum's keys in
// their (sorted) order. loc gives the block the receipt belongs to; the
// receipt's own location fields are not trusted, so that pre-confirmed
// receipts (whose block hash is not final) get the pending block's.
// Derived fields a freshly executed receipt may lack (effective gas price)
// are computed from tx and the block's base fee.
func AppendReceipt(b []byte, r *types.Receipt, tx *types.Transaction, loc Loc, signer types.Signer) []byte {
	from, _ := types.Sender(signer, tx)
	e := Encoder{Buf: b}
	e.Open()
	if tx.Type() == types.BlobTxType {
		e.Big("blobGasPrice", r.BlobGasPrice)
		e.U64("blobGasUsed", r.BlobGasUsed)
	}
	e.Hash("blockHash", loc.BlockHash)
	e.U64("blockNumber", loc.Number)
	if r.ContractAddress != (common.Address{}) {
		e.Addr("contractAddress", r.ContractAddress)
	} else {
		e.Null("contractAddress")
	}
	e.U64("cumulativeGasUsed", r.CumulativeGasUsed)
	if r.EffectiveGasPrice != nil {
		e.Big("effectiveGasPrice", r.EffectiveGasPrice)
	} else {
		e.Big("effectiveGasPrice", effectiveGasPrice(tx, loc.BaseFee))
	}
	e.Addr("from", from)
	e.U64("gasUsed", r.GasUsed)
	e.Key("logs")
	e.Buf = AppendLogs(e.Buf, r.Logs, loc.BlockHash, loc.Time)
	e.Bytes("logsBloom", r.Bloom[:])
	if len(r.PostState) > 0 {
		e.Bytes("root", r.PostState)
	} else {
		e.U64("status", r.Status)
	}
	e.AddrPtr("to", tx.To())
	e.Hash("transactionHash", tx.Hash())
	e.U64("transactionIndex", loc.Index)
	e.U64("type", uint64(tx.Type()))
	e.Close()
	return e.Buf
}

// AppendLogs writes logs as an array ([] for none), each stamped with the
// given block hash and time (see AppendLog).
func AppendLogs(b []byte, logs []*types.Log, blockHash common.Hash, blockTime uint64) []byte {
	b = append(b, '[')
	for i, l := range logs {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendLog(b, l, blockHash, blockTime)
	}
	return append(b, ']')
}

// AppendLog writes one log in types.Log's JSON field order. blockHash and
// blockTime replace the log's own (unset in pre-confirmed logs).
func AppendLog(b []byte, l *types.Log, blockHash common.Hash, blockTime uint64) []byte {
	e := Encoder{Buf: b}
	e.Open()
	e.Addr("address", l.Address)
	e.Key("topics")
	if l.Topics == nil {
		e.Buf = append(e.Buf, "null"...)
	} else {
		e.Buf = AppendHashes(e.Buf, l.Topics)
	}
	e.Bytes("data", l.Data)
	e.U64("blockNumber", l.BlockNumber)
	e.Hash("transactionHash", l.TxHash)
	e.U64("transactionIndex", uint64(l.TxIndex))
	e.Hash("blockHash", blockHash)
	e.U64("blockTimestamp", blockTime)
	e.U64("logIndex", uint64(l.Index))
	e.Bool("removed", l.Removed)
	e.Close()
	return e.Buf
}
