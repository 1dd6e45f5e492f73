package api

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// txLoc is where a transaction sits. A zero BlockHash means "in no block":
// blockHash, blockNumber, blockTimestamp and transactionIndex are then null.
type txLoc struct {
	BlockHash common.Hash
	Number    uint64
	Time      uint64
	Index     uint64
	BaseFee   *big.Int // the block's base fee (nil before London)
}

// blockLoc is the location of the index-th transaction of b.
func blockLoc(b *types.Block, hash common.Hash, index int) txLoc {
	return txLoc{BlockHash: hash, Number: b.NumberU64(), Time: b.Time(), Index: uint64(index), BaseFee: b.BaseFee()}
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

// appendTx writes the RPC transaction object, in go-ethereum's field order:
// location, sender, gas and fee fields, the payload, type-specific fields and
// the signature. The sender is recovered with signer (cached in tx).
func appendTx(b []byte, tx *types.Transaction, loc txLoc, signer types.Signer) []byte {
	from, _ := types.Sender(signer, tx)
	v, r, s := tx.RawSignatureValues()
	located := loc.BlockHash != (common.Hash{})
	typ := tx.Type()
	feeMarket := typ == types.DynamicFeeTxType || typ == types.BlobTxType || typ == types.SetCodeTxType

	e := enc{b: b}
	e.open()
	if located {
		e.hash("blockHash", loc.BlockHash)
		e.u64("blockNumber", loc.Number)
		e.u64("blockTimestamp", loc.Time)
	} else {
		e.null("blockHash")
		e.null("blockNumber")
		e.null("blockTimestamp")
	}
	e.addr("from", from)
	e.u64("gas", tx.Gas())
	switch {
	case feeMarket && located && loc.BaseFee != nil:
		e.big("gasPrice", effectiveGasPrice(tx, loc.BaseFee))
	case feeMarket:
		e.big("gasPrice", tx.GasFeeCap())
	default:
		e.big("gasPrice", tx.GasPrice())
	}
	if feeMarket {
		e.big("maxFeePerGas", tx.GasFeeCap())
		e.big("maxPriorityFeePerGas", tx.GasTipCap())
	}
	if typ == types.BlobTxType {
		e.big("maxFeePerBlobGas", tx.BlobGasFeeCap())
	}
	e.hash("hash", tx.Hash())
	e.bytes("input", tx.Data())
	e.u64("nonce", tx.Nonce())
	e.addrPtr("to", tx.To())
	if located {
		e.u64("transactionIndex", loc.Index)
	} else {
		e.null("transactionIndex")
	}
	e.big("value", tx.Value())
	e.u64("type", uint64(typ))
	switch typ {
	case types.LegacyTxType:
		if id := tx.ChainId(); id.Sign() != 0 {
			e.big("chainId", id)
		}
	case types.AccessListTxType, types.DynamicFeeTxType, types.BlobTxType, types.SetCodeTxType:
		e.key("accessList")
		e.b = appendAccessList(e.b, tx.AccessList())
		e.big("chainId", tx.ChainId())
		if hashes := tx.BlobHashes(); typ == types.BlobTxType && len(hashes) > 0 {
			e.key("blobVersionedHashes")
			e.b = appendHashes(e.b, hashes)
		}
		if auths := tx.SetCodeAuthorizations(); typ == types.SetCodeTxType && len(auths) > 0 {
			e.key("authorizationList")
			e.b = appendAuthorizations(e.b, auths)
		}
	}
	e.big("v", v)
	e.big("r", r)
	e.big("s", s)
	switch typ {
	case types.AccessListTxType, types.DynamicFeeTxType, types.BlobTxType, types.SetCodeTxType:
		yParity := uint64(0)
		if v.Sign() > 0 {
			yParity = 1
		}
		e.u64("yParity", yParity)
	}
	e.close()
	return e.b
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
		b = appendHexBytes(b, al[i].Address[:])
		b = append(b, `,"storageKeys":`...)
		if al[i].StorageKeys == nil {
			b = append(b, "null"...)
		} else {
			b = appendHashes(b, al[i].StorageKeys)
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
		b = appendQuoted(b, a.ChainID.Hex())
		b = append(b, `,"address":`...)
		b = appendHexBytes(b, a.Address[:])
		b = append(b, `,"nonce":`...)
		b = appendU64(b, a.Nonce)
		b = append(b, `,"yParity":`...)
		b = appendU64(b, uint64(a.V))
		b = append(b, `,"r":`...)
		b = appendQuoted(b, a.R.Hex())
		b = append(b, `,"s":`...)
		b = appendQuoted(b, a.S.Hex())
		b = append(b, '}')
	}
	return append(b, ']')
}
