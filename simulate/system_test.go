package simulate

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"reflect"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
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

// TestCreate2DeployerAtCanyon simulates blocks around the Canyon activation
// of an OP-stack chain whose genesis lacks the create2 deployer (as Base
// mainnet's did): op-geth installs its code in the block whose timestamp is
// exactly Canyon's, and in no other. A call to the deployer's
// computeAddress in each simulated block answers the CREATE2 address once
// the code is there and nothing before; with the system calls written
// directly and run in the EVM, and in compute mode both paths must reach
// the same state root.
func TestCreate2DeployerAtCanyon(t *testing.T) {
	const canyon = 1000
	var (
		deployer = common.HexToAddress("0x13b0D85CcB8bf860b6b79AF3029fCA081AE9beF2")
		codeHash = common.HexToHash("0xb0550b5b431e30d38000efb7107aaa0ade03d48a7198a140edda9d27134468b2")
		salt     = common.HexToHash("0x5a17")
		initHash = common.HexToHash("0x1417")
		from     = chain.DevAccounts()[0]
		// computeAddress(bytes32 salt, bytes32 codeHash)
		input   = hexutil.Bytes(append(append(crypto.Keccak256([]byte("computeAddress(bytes32,bytes32)"))[:4], salt[:]...), initHash[:]...))
		created = common.BytesToHash(crypto.CreateAddress2(deployer, salt, initHash.Bytes()).Bytes())
	)
	at := func(t uint64) *uint64 { return &t }
	configs := []struct {
		name  string
		forks func(c *params.ChainConfig, t *uint64)
	}{
		// Canyon with Shanghai, the later forks not scheduled: no other
		// system call in the block.
		{"canyon only", func(c *params.ChainConfig, t *uint64) {
			c.ShanghaiTime, c.CanyonTime = t, t
			c.CancunTime, c.PragueTime, c.EcotoneTime, c.FjordTime, c.GraniteTime, c.HoloceneTime, c.IsthmusTime = nil, nil, nil, nil, nil, nil, nil
		}},
		// Canyon through Isthmus at once: the beacon-root and block-hash
		// writes of the same block take the direct path too.
		{"canyon to isthmus", func(c *params.ChainConfig, t *uint64) {
			for _, f := range []**uint64{&c.ShanghaiTime, &c.CancunTime, &c.PragueTime, &c.CanyonTime,
				&c.EcotoneTime, &c.FjordTime, &c.GraniteTime, &c.HoloceneTime, &c.IsthmusTime} {
				*f = t
			}
		}},
	}
	cases := []struct {
		name  string
		times []uint64 // of the simulated blocks
		code  []bool   // whether each block's call finds the deployer
	}{
		{"at activation", []uint64{canyon}, []bool{true}},
		{"one second before", []uint64{canyon - 1}, []bool{false}},
		{"one second after", []uint64{canyon + 1}, []bool{false}},
		{"before then at", []uint64{canyon - 1, canyon}, []bool{false, true}},
		{"at then after", []uint64{canyon, canyon + 1}, []bool{true, true}},
	}
	for _, cf := range configs {
		g, err := chain.DevL2GenesisAt(forkrules.Isthmus) // nothing after Isthmus: the cases move the forks before it
		if err != nil {
			t.Fatal(err)
		}
		g.Config.RegolithTime = at(0)
		cf.forks(g.Config, at(canyon))
		if err := g.Config.CheckConfigForkOrder(); err != nil {
			t.Fatalf("%s: %v", cf.name, err)
		}
		// Without the preinstall Canyon must put the code there; Cancun is
		// not active at genesis (no blob gas fields).
		delete(g.Alloc, deployer)
		g.ExcessBlobGas, g.BlobGasUsed = nil, nil
		c, err := chain.Open(chain.Config{Genesis: g})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		parent := c.Head()
		for _, tc := range cases {
			t.Run(cf.name+"/"+tc.name, func(t *testing.T) {
				run := func(evmSystemCalls bool, roots RootMode) []*BlockResult {
					db, err := c.StateAt(parent)
					if err != nil {
						t.Fatal(err)
					}
					prestate, err := c.StateReader(parent.Root)
					if err != nil {
						t.Fatal(err)
					}
					req := &Request{}
					for _, ts := range tc.times {
						req.BlockStateCalls = append(req.BlockStateCalls, BlockCalls{
							BlockOverrides: &BlockOverrides{Time: (*hexutil.Uint64)(at(ts))},
							Calls:          []CallArgs{{From: &from, To: &deployer, Input: &input}},
						})
					}
					opts := DefaultOptions()
					opts.Roots, opts.EVMSystemCalls = roots, evmSystemCalls
					e, err := New(c.Config(), c.ChainContext(), opts)
					if err != nil {
						t.Fatal(err)
					}
					res, err := e.Simulate(context.Background(), req, Base{Parent: parent, State: db, Prestate: prestate})
					if err != nil {
						t.Fatal(err)
					}
					last := tc.code[len(tc.code)-1]
					if got := db.GetCodeHash(deployer); (got == codeHash) != last {
						t.Errorf("evm system calls %v: deployer's code hash after the blocks %s, want the deployer's: %v", evmSystemCalls, got, last)
					}
					return res
				}
				for _, evmSystemCalls := range []bool{false, true} {
					res := run(evmSystemCalls, RootZero)
					for i, b := range res {
						call := b.Calls[0]
						want := []byte{}
						if tc.code[i] {
							want = created[:]
						}
						if call.Status != types.ReceiptStatusSuccessful || !bytes.Equal(call.ReturnData, want) {
							t.Errorf("evm system calls %v, block %d (time %d): computeAddress returned %x (status %d), want %x",
								evmSystemCalls, i, tc.times[i], call.ReturnData, call.Status, want)
						}
					}
				}
				native, evm := run(false, RootCompute), run(true, RootCompute)
				for i := range native {
					if n, e := native[i].Header().Root, evm[i].Header().Root; n != e {
						t.Errorf("block %d (time %d): state root with direct system calls %s, in the EVM %s", i, tc.times[i], n, e)
					}
				}
			})
		}
	}
}
