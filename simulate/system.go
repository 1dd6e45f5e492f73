package simulate

import (
	"context"
	"encoding/binary"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/types/bal"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"
)

// The block's system calls (EIP-4788 beacon root, EIP-2935 parent hash,
// EIP-7002/7251 request queues) run the system contracts in the EVM for
// every simulated block, which costs as much as the simulated calls
// themselves. Where the canonical contracts are deployed and the queues are
// empty, their storage effects — which the contracts' specifications define
// — are written directly instead. Anything else (a contract overridden by
// the caller, a non-empty queue, forks past Osaka) runs the contracts as
// go-ethereum does. TestSystemCallsNative checks that both paths leave the
// same state root and requests, and the compute-mode fixtures check the
// roots of whole simulated chains against go-ethereum's.

const (
	historyWindow = 8191 // EIP-4788 HISTORY_BUFFER_LENGTH, EIP-2935 HISTORY_SERVE_WINDOW

	queueExcessSlot = 0
	queueCountSlot  = 1
	queueHeadSlot   = 2
	queueTailSlot   = 3
)

var (
	beaconRootsCodeHash   = crypto.Keccak256Hash(params.BeaconRootsCode)
	historyCodeHash       = crypto.Keccak256Hash(params.HistoryStorageCode)
	withdrawalCodeHash    = crypto.Keccak256Hash(params.WithdrawalQueueCode)
	consolidationCodeHash = crypto.Keccak256Hash(params.ConsolidationQueueCode)
	excessInhibitor       = new(uint256.Int).SetAllOne()
)

// requestQueue is an EIP-7002 / EIP-7251 queue contract.
type requestQueue struct {
	addr     common.Address
	codeHash common.Hash
	target   uint64 // target requests per block
}

var (
	withdrawalQueue    = requestQueue{params.WithdrawalQueueAddress, withdrawalCodeHash, 2}
	consolidationQueue = requestQueue{params.ConsolidationQueueAddress, consolidationCodeHash, 1}
)

// native reports whether the system calls of a block may be written
// directly.
func (s *simulator) native(header *types.Header) bool {
	return !s.evmSystemCalls && !s.e.config.IsAmsterdam(header.Number, header.Time)
}

// slotHash is i as a 32-byte big-endian word.
func slotHash(i uint64) (h common.Hash) {
	binary.BigEndian.PutUint64(h[24:], i)
	return h
}

// preExecution is core.PreExecution.
func (s *simulator) preExecution(ctx context.Context, db *state.StateDB, header, parent *types.Header, parentHash common.Hash, evm *vm.EVM) *bal.ConstructionBlockAccessList {
	cfg := s.e.config
	if !s.native(header) || (header.ParentBeaconRoot != nil && db.GetCodeHash(params.BeaconRootsAddress) != beaconRootsCodeHash) ||
		(cfg.IsPrague(header.Number, header.Time) && db.GetCodeHash(params.HistoryStorageAddress) != historyCodeHash) {
		return core.PreExecution(ctx, header.ParentBeaconRoot, parent, cfg, evm, header.Number, header.Time)
	}
	if root := header.ParentBeaconRoot; root != nil {
		i := header.Time % historyWindow
		db.SetState(params.BeaconRootsAddress, slotHash(i), slotHash(header.Time))
		db.SetState(params.BeaconRootsAddress, slotHash(i+historyWindow), *root)
	}
	if cfg.IsPrague(header.Number, header.Time) {
		db.SetState(params.HistoryStorageAddress, slotHash((header.Number.Uint64()-1)%historyWindow), parentHash)
	}
	return nil
}

// postExecution is core.PostExecution.
func (s *simulator) postExecution(ctx context.Context, db *state.StateDB, header *types.Header, logs []*types.Log, evm *vm.EVM, index uint32) ([][]byte, *bal.ConstructionBlockAccessList, error) {
	cfg := s.e.config
	if !cfg.IsPrague(header.Number, header.Time) {
		return nil, nil, nil
	}
	if !s.native(header) {
		return core.PostExecution(ctx, cfg, header.Number, header.Time, logs, evm, index)
	}
	withdrawals, ok1 := withdrawalQueue.read(db)
	consolidations, ok2 := consolidationQueue.read(db)
	if !ok1 || !ok2 {
		return core.PostExecution(ctx, cfg, header.Number, header.Time, logs, evm, index)
	}
	requests := [][]byte{}
	if err := core.ParseDepositLogs(&requests, logs, cfg); err != nil {
		return nil, nil, err
	}
	withdrawalQueue.dequeueNone(db, withdrawals)
	consolidationQueue.dequeueNone(db, consolidations)
	return requests, nil, nil
}

// queueSlots are a queue contract's excess, count, head and tail slots.
type queueSlots [4]common.Hash

// read returns the queue's slots, and whether it holds the canonical code
// and no requests (head == tail).
func (q requestQueue) read(db *state.StateDB) (v queueSlots, empty bool) {
	if db.GetCodeHash(q.addr) != q.codeHash {
		return v, false
	}
	for i := range v {
		v[i] = db.GetState(q.addr, slotHash(uint64(i)))
	}
	return v, v[queueHeadSlot] == v[queueTailSlot]
}

// dequeueNone is the system call on an empty queue whose slots are v: no
// requests; the excess moves by this block's count against the target (an
// inhibited excess counts as zero), the count resets, and head and tail
// reset. Slots already holding their new value are left alone (same state).
func (q requestQueue) dequeueNone(db *state.StateDB, v queueSlots) {
	excess := new(uint256.Int).SetBytes32(v[queueExcessSlot][:])
	if excess.Eq(excessInhibitor) {
		excess.Clear()
	}
	count := new(uint256.Int).SetBytes32(v[queueCountSlot][:])
	sum, overflow := new(uint256.Int).AddOverflow(excess, count)
	target := uint256.NewInt(q.target)
	next := new(uint256.Int)
	if overflow || sum.Gt(target) {
		next.Sub(sum, target)
	}
	want := queueSlots{queueExcessSlot: next.Bytes32()}
	for i := range want {
		if v[i] != want[i] {
			db.SetState(q.addr, slotHash(uint64(i)), want[i])
		}
	}
}
