package sequencer

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/eth/tracers/logger"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/forkrules"
)

// TryCallGas bounds one TryCall.
const TryCallGas = 50_000_000

// Caller is the StateView a cheat's plan gets: it can also try calls on the
// open block's state (anvil_dealERC20 finds a token's balance slot so).
type Caller interface {
	StateView
	// TryCall applies writes, calls to with data (from the zero address,
	// no value), and undoes everything; it returns the call's output and
	// the storage slots of to that the call read.
	TryCall(writes []Write, to common.Address, data []byte) (ret []byte, slots []common.Hash, err error)
}

// cheatView is the open block's state as a Caller.
type cheatView struct {
	*state.StateDB
	s *Sequencer
	b *openBlock
}

func (v *cheatView) TryCall(writes []Write, to common.Address, data []byte) ([]byte, []common.Hash, error) {
	db := v.StateDB
	snap := db.Snapshot()
	defer db.RevertToSnapshot(snap)
	for _, w := range writes {
		if err := w.check(); err != nil {
			return nil, nil, err
		}
		switch w.Kind {
		case WriteBalance:
			db.SetBalance(w.Addr, new(uint256.Int).SetBytes(w.Value), tracing.BalanceChangeUnspecified)
		case WriteNonce:
			db.SetNonce(w.Addr, new(uint256.Int).SetBytes(w.Value).Uint64(), tracing.NonceChangeUnspecified)
		case WriteCode:
			db.SetCode(w.Addr, w.Value, tracing.CodeChangeUnspecified)
		case WriteStorage:
			db.SetState(w.Addr, w.Slot, common.BytesToHash(w.Value))
		}
	}
	acl := logger.NewAccessListTracer(nil, map[common.Address]struct{}{})
	coinbase := v.b.Header.Coinbase
	ctx := core.NewEVMBlockContext(v.b.Header, v.s.chain.ChainContext(), &coinbase, v.s.config, db)
	evm := forkrules.NewEVM(ctx, db, v.s.config, vm.Config{Tracer: acl.Hooks(), NoBaseFee: true})
	rules := forkrules.At(v.s.config, v.b.Header.Number, v.b.Header.Time)
	db.Prepare(rules.Rules, common.Address{}, coinbase, &to, rules.ActivePrecompiles(), nil)
	ret, _, err := evm.Call(common.Address{}, to, data, TryCallGas, new(uint256.Int))
	var slots []common.Hash
	for _, t := range acl.AccessList() {
		if t.Address == to {
			slots = append(slots, t.StorageKeys...)
		}
	}
	return ret, slots, err
}
