package simulate

import (
	"math/big"
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

// TestWarmPrecompilesGas runs calls that touch precompiles (BALANCE,
// EXTCODEHASH, CALL, and SLOAD/SSTORE at a precompile's address when code is
// put there), cold and warm ordinary accounts, and a reverted inner frame,
// on a plain StateDB and through warmPrecompiles: gas, status and return
// data must be equal, at every fork of the dev chain from Berlin on and
// before it.
func TestWarmPrecompilesGas(t *testing.T) {
	var (
		from     = common.HexToAddress("0xf000000000000000000000000000000000000001")
		prober   = common.HexToAddress("0xf000000000000000000000000000000000000002")
		reverter = common.HexToAddress("0xf000000000000000000000000000000000000003")
		// SLOAD 0, SSTORE 1 at slot 0, SLOAD 0, STOP: runs at 0x05 when
		// code is set there.
		slotCode = common.FromHex("0x600054506001600055600054500000")
	)
	// BALANCE(0x01), BALANCE(0x0100), BALANCE(0xdead) twice, EXTCODEHASH(0x11),
	// CALL 0x02 (sha256), CALL 0x05 (its code above), CALL reverter (which
	// touches 0xbeef then reverts), BALANCE(0xbeef), STOP.
	probeCode := common.FromHex("0x" +
		"60013150" + "6101003150" + "61dead3150" + "61dead3150" + "60113f50" +
		"600060006000600060006002" + "5af150" +
		"600060006000600060006005" + "5af150" +
		"6000600060006000600073" + reverter.Hex()[2:] + "5af150" +
		"61beef3150" + "00")
	// BALANCE(0xbeef), then REVERT.
	revertCode := common.FromHex("0x61beef315060006000fd")

	base := chain.DevGenesis().Config
	for _, tc := range []struct {
		name string
		cfg  *params.ChainConfig
	}{
		{"dev chain (Osaka)", base},
		{"Istanbul", &params.ChainConfig{ChainID: big.NewInt(1), HomesteadBlock: new(big.Int), EIP150Block: new(big.Int),
			EIP155Block: new(big.Int), EIP158Block: new(big.Int), ByzantiumBlock: new(big.Int), ConstantinopleBlock: new(big.Int),
			PetersburgBlock: new(big.Int), IstanbulBlock: new(big.Int), Ethash: new(params.EthashConfig)}},
	} {
		cfg := *tc.cfg
		t.Run(tc.name, func(t *testing.T) {
			run := func(warm bool, withSlotCode bool) *core.ExecutionResult {
				db, err := state.New(types.EmptyRootHash, state.NewDatabaseForTesting())
				if err != nil {
					t.Fatal(err)
				}
				db.SetBalance(from, uint256.NewInt(1e18), tracing.BalanceChangeUnspecified)
				db.SetCode(prober, probeCode, tracing.CodeChangeUnspecified)
				db.SetCode(reverter, revertCode, tracing.CodeChangeUnspecified)
				if withSlotCode {
					db.SetCode(common.BytesToAddress([]byte{5}), slotCode, tracing.CodeChangeUnspecified)
				}
				db.Finalise(true)
				header := &types.Header{Number: big.NewInt(1), Time: 1, GasLimit: 30_000_000, Difficulty: new(big.Int)}
				if cfg.IsLondon(header.Number) {
					header.BaseFee = new(big.Int)
				}
				if cfg.TerminalTotalDifficulty == nil {
					header.Difficulty = big.NewInt(1)
				}
				blockCtx := core.NewEVMBlockContext(header, nil, &common.Address{}, &cfg, db)
				var sdb vm.StateDB = db
				if warm {
					sdb = &warmPrecompiles{StateDB: db}
				}
				evm := vm.NewEVM(blockCtx, sdb, &cfg, vm.Config{NoBaseFee: true})
				if withSlotCode {
					// the precompile at 0x05 moved away: its address runs the code.
					pre := vm.ActivePrecompiledContracts(cfg.Rules(header.Number, header.Difficulty.Sign() == 0, header.Time))
					delete(pre, common.BytesToAddress([]byte{5}))
					evm.SetPrecompiles(pre)
				}
				msg := &core.Message{From: from, To: &prober, GasLimit: 1_000_000, GasPrice: new(big.Int), GasFeeCap: new(big.Int),
					GasTipCap: new(big.Int), Value: new(big.Int), SkipNonceChecks: true, SkipTransactionChecks: true}
				res, err := core.ApplyMessage(evm, msg, core.NewGasPool(header.GasLimit))
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			for _, slots := range []bool{false, true} {
				plain, warm := run(false, slots), run(true, slots)
				if plain.UsedGas != warm.UsedGas || plain.Failed() != warm.Failed() || string(plain.ReturnData) != string(warm.ReturnData) {
					t.Errorf("code at 0x05 %v: plain StateDB used %d gas (failed %v), warm view %d (failed %v)",
						slots, plain.UsedGas, plain.Failed(), warm.UsedGas, warm.Failed())
				}
				if plain.Failed() {
					t.Errorf("code at 0x05 %v: probe failed: %v", slots, plain.Err)
				}
			}
		})
	}
}
