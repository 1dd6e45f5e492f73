package simulate

import (
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
)

// warmPrecompiles is the EVM's view of a StateDB in which the fork's
// precompiles are warm (EIP-2929) without being inserted into every
// transaction's access list. go-ethereum's StateDB.Prepare builds a fresh
// access list per transaction holding the sender, the recipient, the
// coinbase and all active precompiles (18 since Osaka); the precompiles make
// that map grow twice, which was a fifth of the bytes a simulated transfer
// allocated. Here Prepare gets no precompiles and the membership queries
// answer them from a set shared by every transaction of the fork: the gas
// charged, and so every result, is the same (TestWarmPrecompilesGas, and
// the conformance fixtures).
//
// Only the EVM sees this view; the list itself is the StateDB's, with its
// journal (reverted frames drop their additions as before).
type warmPrecompiles struct {
	vm.StateDB
	warm map[common.Address]struct{} // the precompiles of the last Prepare
}

// warmSets are the precompile address sets by fork, keyed by the first
// element of vm.ActivePrecompiles' (package-level) list; read-only.
var warmSets sync.Map

func warmSet(addrs []common.Address) map[common.Address]struct{} {
	if len(addrs) == 0 {
		return nil
	}
	key := &addrs[0]
	if s, ok := warmSets.Load(key); ok {
		return s.(map[common.Address]struct{})
	}
	s := make(map[common.Address]struct{}, len(addrs))
	for _, a := range addrs {
		s[a] = struct{}{}
	}
	warmSets.Store(key, s)
	return s
}

// Prepare implements vm.StateDB.
func (w *warmPrecompiles) Prepare(rules params.Rules, sender, coinbase common.Address, dst *common.Address, precompiles []common.Address, list types.AccessList) {
	w.warm = nil
	if rules.IsEIP2929 {
		w.warm = warmSet(precompiles)
	}
	w.StateDB.Prepare(rules, sender, coinbase, dst, nil, list)
}

// AddressInAccessList implements vm.StateDB.
func (w *warmPrecompiles) AddressInAccessList(addr common.Address) bool {
	if _, ok := w.warm[addr]; ok {
		return true
	}
	return w.StateDB.AddressInAccessList(addr)
}

// SlotInAccessList implements vm.StateDB.
func (w *warmPrecompiles) SlotInAccessList(addr common.Address, slot common.Hash) (addressOk, slotOk bool) {
	addressOk, slotOk = w.StateDB.SlotInAccessList(addr, slot)
	if !addressOk {
		_, addressOk = w.warm[addr]
	}
	return addressOk, slotOk
}
