package simulate

import (
	"encoding/binary"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/blockexec"
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

// systemAddrs are the contracts whose calls may be written directly.
var systemAddrs = [...]common.Address{params.BeaconRootsAddress, params.HistoryStorageAddress,
	params.WithdrawalQueueAddress, params.ConsolidationQueueAddress}

// native reports whether the system calls of a block may be written
// directly: not past Osaka, and no precompile moved onto a system contract's
// address (the EVM would run the precompile there).
func (s *simulator) native(header *types.Header, precompiles vm.PrecompiledContracts) bool {
	if s.evmSystemCalls || s.e.config.IsAmsterdam(header.Number, header.Time) {
		return false
	}
	for _, a := range systemAddrs {
		if _, ok := precompiles[a]; ok {
			return false
		}
	}
	return true
}

// slotHash is i as a 32-byte big-endian word.
func slotHash(i uint64) (h common.Hash) {
	binary.BigEndian.PutUint64(h[24:], i)
	return h
}

// preExecution is blockexec.PreSystemCalls.
func (s *simulator) preExecution(db *state.StateDB, header *types.Header, parentHash common.Hash, evm *vm.EVM, precompiles vm.PrecompiledContracts) {
	cfg := s.e.config
	prague := cfg.IsPrague(header.Number, header.Time)
	if !s.native(header, precompiles) || (header.ParentBeaconRoot != nil && !s.sys.canonicalCode(db, s.base.Prestate, 0, beaconRootsCodeHash)) ||
		(prague && !s.sys.canonicalCode(db, s.base.Prestate, 1, historyCodeHash)) {
		s.sys.flush(db) // the contracts run in the EVM: their storage as it stands
		blockexec.PreSystemCalls(cfg, header, parentHash, evm)
		return
	}
	// The Canyon create2 deployer (OP stack, at exactly Canyon's timestamp)
	// is an ordinary account, not one of the contracts whose writes are
	// held: its code is set at once, before any call could run it.
	misc.EnsureCreate2Deployer(cfg, header.Time, db)
	if header.ParentBeaconRoot != nil {
		s.sys.set(db, 0, header)
	}
	if prague {
		s.sys.set(db, 1, header) // header.ParentHash is parentHash
	}
	s.sys.settle(db)
}

// postExecution is blockexec.PostSystemCalls.
func (s *simulator) postExecution(db *state.StateDB, header *types.Header, logs []*types.Log, evm *vm.EVM, precompiles vm.PrecompiledContracts) ([][]byte, error) {
	cfg := s.e.config
	if cfg.IsIsthmus(header.Time) || !cfg.IsPrague(header.Number, header.Time) {
		return blockexec.PostSystemCalls(cfg, header, logs, evm) // no queue calls
	}
	queues := [2]requestQueue{withdrawalQueue, consolidationQueue}
	var slots [2]queueSlots
	if s.native(header, precompiles) {
		ok := true
		for i, q := range queues {
			var empty bool
			slots[i], empty = s.readQueue(db, i, q)
			ok = ok && empty
		}
		if ok {
			requests := [][]byte{}
			if err := core.ParseDepositLogs(&requests, logs, cfg); err != nil {
				return nil, err
			}
			for i, q := range queues {
				if q.dequeueNone(db, slots[i]) {
					s.queueTouched[i] = true
				}
			}
			return requests, nil
		}
	}
	s.queueTouched = [2]bool{true, true}
	s.sys.flush(db)
	return blockexec.PostSystemCalls(cfg, header, logs, evm)
}

// queueSlots are a queue contract's excess, count, head and tail slots.
type queueSlots [4]common.Hash

// readQueue returns queue i's slots, and whether it holds the canonical code
// and no requests (head == tail). While nothing in the request has touched
// the queue, they are read from the prestate reader, which leaves the
// contract out of the StateDB (no state object to build for a read).
func (s *simulator) readQueue(db *state.StateDB, i int, q requestQueue) (v queueSlots, empty bool) {
	if s.base.Prestate != nil && !s.queueTouched[i] {
		f, err := prestateFact(s.base.Prestate, factWithdrawalQueue+i, func(r state.Reader) (f fact, err error) {
			acct, err := r.Account(q.addr)
			if err != nil || acct == nil || common.BytesToHash(acct.CodeHash) != q.codeHash {
				return f, err
			}
			for j := range f.slots {
				if f.slots[j], err = r.Storage(q.addr, slotHash(uint64(j))); err != nil {
					return f, err
				}
			}
			f.ok = f.slots[queueHeadSlot] == f.slots[queueTailSlot]
			return f, nil
		})
		return f.slots, err == nil && f.ok
	}
	if db.GetCodeHash(q.addr) != q.codeHash {
		return v, false
	}
	for j := range v {
		v[j] = db.GetState(q.addr, slotHash(uint64(j)))
	}
	return v, v[queueHeadSlot] == v[queueTailSlot]
}

// dequeueNone is the system call on an empty queue whose slots are v: no
// requests; the excess moves by this block's count against the target (an
// inhibited excess counts as zero), the count resets, and head and tail
// reset. Slots already holding their new value are left alone (same state);
// wrote reports whether any changed.
func (q requestQueue) dequeueNone(db *state.StateDB, v queueSlots) (wrote bool) {
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
			wrote = true
		}
	}
	return wrote
}

// enter implements frameWatcher.
func (s *simulator) enter(depth int, to common.Address) {
	s.touch(to)
	s.sys.enter(s.base.State, depth, to)
}

// exit implements frameWatcher.
func (s *simulator) exit(depth int, reverted bool) { s.sys.exit(depth, reverted) }

// touch marks the queues and the OP-stack message passer a call frame
// enters (only their own code can change their storage) or state overrides
// name as touched.
func (s *simulator) touch(addr common.Address) {
	switch addr {
	case params.WithdrawalQueueAddress:
		s.queueTouched[0] = true
	case params.ConsolidationQueueAddress:
		s.queueTouched[1] = true
	case params.OptimismL2ToL1MessagePasser:
		s.passerTouched = true
	}
}

// withdrawalsRoot is a simulated OP-stack block's withdrawals root from
// Isthmus on, the L2ToL1MessagePasser's storage root, when state roots are
// not computed: the prestate's while no call has entered the passer (at
// pending the pending block's own, which covers its pre-confirmed
// withdrawals), zero once one has (a storage root, not hashed in this mode,
// as the state root).
func (s *simulator) withdrawalsRoot(db *state.StateDB) *common.Hash {
	var root common.Hash
	switch {
	case s.passerTouched:
	case s.base.Pending != nil && s.base.Pending.WithdrawalsHash != nil:
		root = *s.base.Pending.WithdrawalsHash
	default:
		root = db.GetStorageRoot(params.OptimismL2ToL1MessagePasser)
	}
	return &root
}
