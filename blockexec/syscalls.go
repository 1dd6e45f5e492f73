package blockexec

// A block's system calls around its transactions, in the order op-geth's
// state processor and miner run them: the Canyon create2 deployer, the
// EIP-4788 beacon root and EIP-2935 parent hash before the first
// transaction; the EIP-6110/7002/7251 requests after the last one (none
// from Isthmus on, where an OP-stack block commits to an empty requests
// list). Open and Finalise run them; the simulation engine and block
// replays, which make their own EVMs, call them directly.

import (
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
)

// PreSystemCalls runs the system calls that precede a block's transactions in evm,
// whose block context is the block of header (parentHash is its parent's
// hash). The EVM's StateDB receives every write, hooks included.
func PreSystemCalls(config *params.ChainConfig, header *types.Header, parentHash common.Hash, evm *vm.EVM) {
	misc.EnsureCreate2Deployer(config, header.Time, evm.StateDB)
	if root := header.ParentBeaconRoot; root != nil {
		core.ProcessBeaconBlockRoot(*root, evm)
	}
	if config.IsPrague(header.Number, header.Time) || config.IsVerkle(header.Number, header.Time) {
		core.ProcessParentBlockHash(parentHash, evm)
	}
}

// PostSystemCalls runs the system calls that follow a block's transactions (whose logs
// are logs) and returns the block's requests: nil before Prague (no
// requests hash), an empty list on OP-stack chains from Isthmus on.
func PostSystemCalls(config *params.ChainConfig, header *types.Header, logs []*types.Log, evm *vm.EVM) ([][]byte, error) {
	if config.IsIsthmus(header.Time) {
		return [][]byte{}, nil
	}
	if !config.IsPrague(header.Number, header.Time) {
		return nil, nil
	}
	requests := [][]byte{}
	if err := core.ParseDepositLogs(&requests, logs, config); err != nil {
		return nil, fmt.Errorf("deposit logs: %w", err)
	}
	if err := core.ProcessWithdrawalQueue(&requests, evm); err != nil {
		return nil, fmt.Errorf("withdrawal queue: %w", err)
	}
	if err := core.ProcessConsolidationQueue(&requests, evm); err != nil {
		return nil, fmt.Errorf("consolidation queue: %w", err)
	}
	return requests, nil
}

// RingSlots are the storage slots the block-start system calls of block
// number with timestamp time write: EIP-4788's timestamp and root ring
// buffers, EIP-2935's parent hash slot. Readers of remote state fetch them
// ahead, in one batch (every block writes new ones).
func RingSlots(number, time uint64) map[common.Address][]common.Hash {
	const ring = 8191 // EIP-4788 HISTORY_BUFFER_LENGTH
	ts := time % ring
	return map[common.Address][]common.Hash{
		params.BeaconRootsAddress:    {common.BigToHash(new(big.Int).SetUint64(ts)), common.BigToHash(new(big.Int).SetUint64(ts + ring))},
		params.HistoryStorageAddress: {common.BigToHash(new(big.Int).SetUint64((number - 1) % params.HistoryServeWindow))},
	}
}
