package api

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// The functions below expose this package's RPC object encoders to the
// subscription service (package subscribe), so that a notification carries
// exactly the bytes the matching eth_get* method answers.

// AppendBlockJSON appends the RPC block object of block, whose hash is hash
// (written as such, also for a pending block: flashblocks consumers need it).
func AppendBlockJSON(b []byte, block *types.Block, hash common.Hash, fullTx bool, signer types.Signer) []byte {
	return AppendBlock(b, block, hash, BlockOptions{FullTx: fullTx}, signer)
}

// AppendTxJSON appends the RPC transaction object of tx at index of the block
// (blockHash, number, time, baseFee). A zero blockHash writes a transaction in
// no block yet (location fields null), as for a pool transaction.
func AppendTxJSON(b []byte, tx *types.Transaction, blockHash common.Hash, number, time, index uint64, baseFee *big.Int, signer types.Signer) []byte {
	return AppendTx(b, tx, Loc{BlockHash: blockHash, Number: number, Time: time, Index: index, BaseFee: baseFee}, signer)
}

// AppendLogsJSON appends logs as a JSON array, stamped with blockHash and blockTime.
func AppendLogsJSON(b []byte, logs []*types.Log, blockHash common.Hash, blockTime uint64) []byte {
	return AppendLogs(b, logs, blockHash, blockTime)
}

// AppendLogJSON appends one log, stamped with blockHash and blockTime.
func AppendLogJSON(b []byte, l *types.Log, blockHash common.Hash, blockTime uint64) []byte {
	return AppendLog(b, l, blockHash, blockTime)
}

// Matches reports whether a log satisfies the filter's address and topic
// criteria (the block range is not considered).
func (f *LogFilter) Matches(l *types.Log) bool { return f.matches(l) }
