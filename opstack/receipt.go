package opstack

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

// DeriveReceipt fills in r, the receipt of the user transaction tx in the
// block of header, the OP-stack fields op-geth derives when it serves
// receipts: l1GasPrice, l1GasUsed, l1Fee, l1BlobBaseFee, the fee scalars,
// the operator fee parameters and Jovian's DA footprint (in blobGasUsed).
// l1Info is the block's first transaction, its L1-attributes deposit. The
// values come from op-geth's own derivation, run on copies (r's logs and
// location are left alone), so a receipt of a block still being built reads
// exactly as op-geth will serve it once the block is sealed. Deposits get
// nothing (their fields come from execution).
func DeriveReceipt(config *params.ChainConfig, header *types.Header, l1Info, tx *types.Transaction, r *types.Receipt) error {
	if config.Optimism == nil || tx.IsDepositTx() {
		return nil
	}
	if !l1Info.IsDepositTx() {
		return fmt.Errorf("opstack: block %d does not open with a deposit", header.Number)
	}
	rs := types.Receipts{{Type: l1Info.Type()}, {Type: tx.Type(), CumulativeGasUsed: r.GasUsed}}
	if err := rs.DeriveFields(config, common.Hash{}, header.Number.Uint64(), header.Time, header.BaseFee, nil, types.Transactions{l1Info, tx}); err != nil {
		return fmt.Errorf("opstack: derive receipt fields: %w", err)
	}
	d := rs[1]
	r.L1GasPrice, r.L1BlobBaseFee, r.L1Fee, r.L1GasUsed, r.FeeScalar = d.L1GasPrice, d.L1BlobBaseFee, d.L1Fee, d.L1GasUsed, d.FeeScalar
	r.L1BaseFeeScalar, r.L1BlobBaseFeeScalar = d.L1BaseFeeScalar, d.L1BlobBaseFeeScalar
	r.OperatorFeeScalar, r.OperatorFeeConstant = d.OperatorFeeScalar, d.OperatorFeeConstant
	if d.DAFootprintGasScalar != nil {
		r.DAFootprintGasScalar, r.BlobGasUsed = d.DAFootprintGasScalar, d.BlobGasUsed
	}
	return nil
}
