package simulate

import (
	"fmt"
	"math/big"
	"reflect"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
)

// systemState is a state holding the four system contracts, with the given
// queue slots (excess, count, head, tail) in both queues.
func systemState(t *testing.T, queue [4]*uint256.Int) *state.StateDB {
	t.Helper()
	db, err := state.New(types.EmptyRootHash, state.NewDatabaseForTesting())
	if err != nil {
		t.Fatal(err)
	}
	for addr, code := range map[common.Address][]byte{
		params.BeaconRootsAddress: params.BeaconRootsCode, params.HistoryStorageAddress: params.HistoryStorageCode,
		params.WithdrawalQueueAddress: params.WithdrawalQueueCode, params.ConsolidationQueueAddress: params.ConsolidationQueueCode,
	} {
		db.SetNonce(addr, 1, tracing.NonceChangeUnspecified)
		db.SetCode(addr, code, tracing.CodeChangeUnspecified)
	}
	for _, q := range []common.Address{params.WithdrawalQueueAddress, params.ConsolidationQueueAddress} {
		for i, v := range queue {
			db.SetState(q, slotHash(uint64(i)), v.Bytes32())
		}
	}
	db.Finalise(true)
	return db
}

// TestSystemCallsNative checks that the directly written system-call
// effects equal running the contracts, state root for state root.
func TestSystemCallsNative(t *testing.T) {
	cfg := chain.DevGenesis().Config
	u := uint256.NewInt
	for _, q := range [][4]*uint256.Int{
		{u(0), u(0), u(0), u(0)},
		{u(7), u(0), u(0), u(0)},
		{u(1), u(0), u(0), u(0)},
		{u(0), u(3), u(0), u(0)},
		{u(2), u(5), u(4), u(4)},
		{new(uint256.Int).SetAllOne(), u(0), u(0), u(0)},
		{new(uint256.Int).SetAllOne(), u(4), u(9), u(9)},
	} {
		for _, block := range []struct{ number, time uint64 }{{1, 12}, {100, 1000}, {9000, 8191 * 3}} {
			t.Run(fmt.Sprintf("queue%v/block%d", q, block.number), func(t *testing.T) {
				parent := &types.Header{Number: new(big.Int).SetUint64(block.number - 1), Time: block.time - 12, Difficulty: new(big.Int), GasLimit: 30_000_000, BaseFee: big.NewInt(1)}
				beaconRoot := common.HexToHash("0xbeac0000000000000000000000000000000000000000000000000000000000b0")
				header := &types.Header{Number: new(big.Int).SetUint64(block.number), Time: block.time, Difficulty: new(big.Int), GasLimit: 30_000_000,
					BaseFee: big.NewInt(1), ParentHash: parent.Hash(), ParentBeaconRoot: &beaconRoot}
				run := func(useEVM bool) (common.Hash, [][]byte) {
					db := systemState(t, q)
					s := &simulator{e: &Engine{config: cfg}, evmSystemCalls: useEVM}
					coinbase := common.Address{}
					evm := vm.NewEVM(core.NewEVMBlockContext(header, nil, &coinbase, cfg, db), db, cfg, vm.Config{})
					s.preExecution(db, header, parent.Hash(), evm, nil)
					reqs, err := s.postExecution(db, header, nil, evm, nil)
					if err != nil {
						t.Fatal(err)
					}
					db.Finalise(true)
					return db.IntermediateRoot(true), reqs
				}
				evmRoot, evmReqs := run(true)
				nativeRoot, nativeReqs := run(false)
				if evmRoot != nativeRoot {
					t.Errorf("state after system calls: native %s, EVM %s", nativeRoot, evmRoot)
				}
				if !reflect.DeepEqual(evmReqs, nativeReqs) {
					t.Errorf("requests: native %x, EVM %x", nativeReqs, evmReqs)
				}
			})
		}
	}
}
