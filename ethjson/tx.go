package ethjson

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Loc is where a transaction sits. A zero BlockHash means "in no block":
// blockHash, blockNumber, blockTimestamp and transactionIndex are then null.
type Loc struct {
	BlockHash common.Hash
	Number    uint64
	Time      uint64
	Index     uint64
	BaseFee   *big.Int // the block's base fee (nil before London)
	// Optimism marks an OP-stack chain: receipts carry op-geth's L1 fee
	// fields (null when underived), deposit receipts their nonce.
	Optimism bool
	// Receipt is the transaction's receipt when known: an OP-stack deposit
	// shows the nonce it ran with and its depositReceiptVersion from it, as
	// op-geth does (without it, its own nonce field, 0).
	Receipt *types.Receipt
}

// BlockLoc is the location of the index-th transaction of b.
func BlockLoc(b *types.Block, hash common.Hash, index int) Loc {
	return Loc{BlockHash: hash, Number: b.NumberU64(), Time: b.Time(), Index: uint64(index), BaseFee: b.BaseFee()}
}

// HeaderLoc is the location of the index-th transaction of the block of
// header h. Its BaseFee is h's (AppendTx only reads it).
func HeaderLoc(h *types.Header, hash common.Hash, index int) Loc {
	return Loc{BlockHash: hash, Number: h.Number.Uint64(), Time: h.Time, Index: uint64(index), BaseFee: h.BaseFee}
}

// effectiveGasPrice is min(tip + baseFee, feeCap) for fee-market
// transactions, the gas price for the others.
func effectiveGasPrice(tx *types.Transaction, baseFee *big.Int) *big.Int {
	if baseFee == nil {
		return tx.GasPrice()
	}
	fee := tx.GasTipCap()
	fee.Add(fee, baseFee)
	if feeCap := tx.GasFeeCap(); feeCap.Cmp(fee) < 0 {
		return feeCap
	}
	return fee
}

// AppendTx writes the RPC transaction object, in go-ethereum's field order:
// location, sender, gas and fee fields, the payload, type-specific fields and
// the signature. The sender is recovered with signer (cached in tx).
func AppendTx(b []byte, tx *types.Transaction, loc Loc, signer types.Signer) []byte {
	from, _ := types.Sender(signer, tx)
	v, r, s := tx.RawSignatureValues()
	located := loc.BlockHash != (common.Hash{})
	typ := tx.Type()
	feeMarket := typ == types.DynamicFeeTxType || typ == types.BlobTxType || typ == types.SetCodeTxType

	e := Encoder{Buf: b}
	e.Open()
	if located {
		e.Hash("blockHash", loc.BlockHash)
		e.U64("blockNumber", loc.Number)
		e.U64("blockTimestamp", loc.Time)
	} else {
		e.Null("blockHash")
		e.Null("blockNumber")
		e.Null("blockTimestamp")
	}
	e.Addr("from", from)
	e.U64("gas", tx.Gas())
	switch {
	case feeMarket && located && loc.BaseFee != nil:
		e.Big("gasPrice", effectiveGasPrice(tx, loc.BaseFee))
	case feeMarket:
		e.Big("gasPrice", tx.GasFeeCap())
	default:
		e.Big("gasPrice", tx.GasPrice())
	}
	if feeMarket {
		e.Big("maxFeePerGas", tx.GasFeeCap())
		e.Big("maxPriorityFeePerGas", tx.GasTipCap())
	}
	if typ == types.BlobTxType {
		e.Big("maxFeePerBlobGas", tx.BlobGasFeeCap())
	}
	e.Hash("hash", tx.Hash())
	e.Bytes("input", tx.Data())
	e.U64("nonce", txNonce(tx, loc.Receipt))
	e.AddrPtr("to", tx.To())
	if located {
		e.U64("transactionIndex", loc.Index)
	} else {
		e.Null("transactionIndex")
	}
	e.Big("value", tx.Value())
	e.U64("type", uint64(typ))
	switch typ {
	case types.LegacyTxType:
		if id := tx.ChainId(); id.Sign() != 0 {
			e.Big("chainId", id)
		}
	case types.AccessListTxType, types.DynamicFeeTxType, types.BlobTxType, types.SetCodeTxType:
		e.Key("accessList")
		e.Buf = appendAccessList(e.Buf, tx.AccessList())
		e.Big("chainId", tx.ChainId())
		if hashes := tx.BlobHashes(); typ == types.BlobTxType && len(hashes) > 0 {
			e.Key("blobVersionedHashes")
			e.Buf = AppendHashes(e.Buf, hashes)
		}
		if auths := tx.SetCodeAuthorizations(); typ == types.SetCodeTxType && len(auths) > 0 {
			e.Key("authorizationList")
			e.Buf = appendAuthorizations(e.Buf, auths)
		}
	}
	e.Big("v", v)
	e.Big("r", r)
	e.Big("s", s)
	switch typ {
	case types.AccessListTxType, types.DynamicFeeTxType, types.BlobTxType, types.SetCodeTxType:
		yParity := uint64(0)
		if v.Sign() > 0 {
			yParity = 1
		}
		e.U64("yParity", yParity)
	case types.DepositTxType:
		appendDepositFields(&e, tx, loc.Receipt)
	}
	e.Close()
	return e.Buf
}

// appendDepositFields writes an OP-stack deposit's own fields, after the
// signature, as op-geth's RPCTransaction: sourceHash, mint (when minting),
// isSystemTx (only when true), depositReceiptVersion (from the receipt).
func appendDepositFields(e *Encoder, tx *types.Transaction, r *types.Receipt) {
	e.Hash("sourceHash", tx.SourceHash())
	if mint := tx.Mint(); mint != nil {
		e.Big("mint", mint)
	}
	if tx.IsSystemTx() {
		e.Bool("isSystemTx", true)
	}
	if r != nil && r.DepositNonce != nil && r.DepositReceiptVersion != nil {
		e.U64("depositReceiptVersion", *r.DepositReceiptVersion)
	}
}

// txNonce is the nonce the RPC shows: a deposit's is the sender's nonce it
// ran with, recorded in its receipt (Regolith on).
func txNonce(tx *types.Transaction, r *types.Receipt) uint64 {
	if tx.Type() == types.DepositTxType && r != nil && r.DepositNonce != nil {
		return *r.DepositNonce
	}
	return tx.Nonce()
}

// appendAccessList writes an access list; nil is null, as go-ethereum does
// for a typed transaction built without one.
func appendAccessList(b []byte, al types.AccessList) []byte {
	if al == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range al {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"address":`...)
		b = AppendHexBytes(b, al[i].Address[:])
		b = append(b, `,"storageKeys":`...)
		if al[i].StorageKeys == nil {
			b = append(b, "null"...)
		} else {
			b = AppendHashes(b, al[i].StorageKeys)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendAuthorizations writes an EIP-7702 authorization list.
func appendAuthorizations(b []byte, auths []types.SetCodeAuthorization) []byte {
	b = append(b, '[')
	for i := range auths {
		a := &auths[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"chainId":`...)
		b = AppendQuoted(b, a.ChainID.Hex())
		b = append(b, `,"address":`...)
		b = AppendHexBytes(b, a.Address[:])
		b = append(b, `,"nonce":`...)
		b = AppendU64(b, a.Nonce)
		b = append(b, `,"yParity":`...)
		b = AppendU64(b, uint64(a.V))
		b = append(b, `,"r":`...)
		b = AppendQuoted(b, a.R.Hex())
		b = append(b, `,"s":`...)
		b = AppendQuoted(b, a.S.Hex())
		b = append(b, '}')
	}
	return append(b, ']')
}
