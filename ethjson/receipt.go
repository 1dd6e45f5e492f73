package ethjson

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/impersonate"
)

// AppendReceipt writes the RPC receipt object with go-ethereum's keys in
// their (sorted) order; on OP-stack chains (loc.Optimism) with op-geth's
// additions: the L1 fee fields of user transactions, the nonce and receipt
// version of deposits. loc gives the block the receipt belongs to; the
// receipt's own location fields are not trusted, so that pre-confirmed
// receipts (whose block hash is not final) get the pending block's.
// Derived fields a freshly executed receipt may lack (effective gas price)
// are computed from tx and the block's base fee.
func AppendReceipt(b []byte, r *types.Receipt, tx *types.Transaction, loc Loc, signer types.Signer) []byte {
	from, _ := types.Sender(signer, tx)
	op := loc.Optimism && tx.Type() != types.DepositTxType // op-geth's L1 fee fields
	deposit := loc.Optimism && tx.Type() == types.DepositTxType && r.DepositNonce != nil
	e := Encoder{Buf: b}
	e.Open()
	if tx.Type() == types.BlobTxType {
		e.Big("blobGasPrice", r.BlobGasPrice)
		e.U64("blobGasUsed", r.BlobGasUsed)
	} else if op && r.DAFootprintGasScalar != nil {
		e.U64("blobGasUsed", r.BlobGasUsed) // Jovian: the DA footprint
	}
	e.Hash("blockHash", loc.BlockHash)
	e.U64("blockNumber", loc.Number)
	if tx.To() == nil && impersonate.Is(tx) {
		// Stored receipts derive it with the chain's signer, which does
		// not know the impersonated sender.
		e.Addr("contractAddress", crypto.CreateAddress(from, tx.Nonce()))
	} else if r.ContractAddress != (common.Address{}) {
		e.Addr("contractAddress", r.ContractAddress)
	} else {
		e.Null("contractAddress")
	}
	e.U64("cumulativeGasUsed", r.CumulativeGasUsed)
	if op && r.DAFootprintGasScalar != nil {
		e.U64("daFootprintGasScalar", *r.DAFootprintGasScalar)
	}
	if deposit {
		e.U64("depositNonce", *r.DepositNonce)
		if r.DepositReceiptVersion != nil {
			e.U64("depositReceiptVersion", *r.DepositReceiptVersion)
		}
	}
	if r.EffectiveGasPrice != nil {
		e.Big("effectiveGasPrice", r.EffectiveGasPrice)
	} else {
		e.Big("effectiveGasPrice", effectiveGasPrice(tx, loc.BaseFee))
	}
	e.Addr("from", from)
	e.U64("gasUsed", r.GasUsed)
	if op {
		appendL1Fees(&e, r)
	}
	e.Key("logs")
	e.Buf = AppendLogs(e.Buf, r.Logs, loc.BlockHash, loc.Time)
	e.Bloom("logsBloom", &r.Bloom)
	if op && r.OperatorFeeScalar != nil {
		e.U64("operatorFeeConstant", *r.OperatorFeeConstant)
		e.U64("operatorFeeScalar", *r.OperatorFeeScalar)
	}
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

// appendL1Fees writes op-geth's L1 data fee fields of a user transaction's
// receipt, in their sorted place between gasUsed and logs: l1GasPrice,
// l1GasUsed and l1Fee always (null when not derived), the rest when set.
func appendL1Fees(e *Encoder, r *types.Receipt) {
	if r.L1BaseFeeScalar != nil {
		e.U64("l1BaseFeeScalar", *r.L1BaseFeeScalar)
	}
	if r.L1BlobBaseFee != nil {
		e.Big("l1BlobBaseFee", r.L1BlobBaseFee)
	}
	if r.L1BlobBaseFeeScalar != nil {
		e.U64("l1BlobBaseFeeScalar", *r.L1BlobBaseFeeScalar)
	}
	e.Big("l1Fee", r.L1Fee)
	if r.FeeScalar != nil { // before Ecotone: a decimal string
		e.Key("l1FeeScalar")
		e.Buf = AppendQuoted(e.Buf, r.FeeScalar.String())
	}
	e.Big("l1GasPrice", r.L1GasPrice)
	e.Big("l1GasUsed", r.L1GasUsed)
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
