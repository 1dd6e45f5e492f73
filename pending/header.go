package pending

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

// Env is what a block's builder chooses for it; everything else in the header
// follows from the parent and the fork rules (see NewHeader).
type Env struct {
	Coinbase   common.Address
	GasLimit   uint64
	Time       uint64
	Extra      []byte
	Random     common.Hash // prevRandao
	BeaconRoot common.Hash // parent beacon block root (Cancun on)
	// BaseFee as announced by a remote builder; nil computes it from the
	// parent by EIP-1559.
	BaseFee *big.Int
}

// NewHeader is the header of an empty block on top of parent with the given
// environment: the starting point of both the sequencer's open block and a
// follower's re-execution of a builder's block, so the two agree field by
// field.
func NewHeader(config *params.ChainConfig, parent *types.Header, env Env) *types.Header {
	number := new(big.Int).Add(parent.Number, common.Big1)
	header := &types.Header{
		ParentHash:  parent.Hash(),
		UncleHash:   types.EmptyUncleHash,
		Coinbase:    env.Coinbase,
		Number:      number,
		GasLimit:    env.GasLimit,
		Time:        env.Time,
		Extra:       common.CopyBytes(env.Extra),
		MixDigest:   env.Random,
		Difficulty:  new(big.Int),
		TxHash:      types.EmptyTxsHash,
		ReceiptHash: types.EmptyReceiptsHash,
	}
	if config.IsLondon(number) {
		if env.BaseFee != nil {
			header.BaseFee = new(big.Int).Set(env.BaseFee)
		} else {
			header.BaseFee = eip1559.CalcBaseFee(config, parent, env.Time)
		}
	}
	if config.IsShanghai(number, env.Time) {
		header.WithdrawalsHash = &types.EmptyWithdrawalsHash
	}
	if config.IsCancun(number, env.Time) {
		var excess uint64
		if config.IsCancun(parent.Number, parent.Time) {
			excess = eip4844.CalcExcessBlobGas(config, parent, env.Time)
		}
		header.ExcessBlobGas = &excess
		header.BlobGasUsed = new(uint64)
		root := env.BeaconRoot
		header.ParentBeaconRoot = &root
	}
	if config.IsPrague(number, env.Time) {
		header.RequestsHash = &types.EmptyRequestsHash
	}
	return header
}
