package followload

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/core/vm/program"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
)

// A DeFi-shaped transaction, the way a swap through a router touches a
// chain: the sender calls the router, which calls three pools; each of the
// four contracts reads hotReads of its hotSlots filled slots (reserves,
// prices, fee accumulators: read by every transaction), writing
// hotWrites of them, and touches two slots no transaction touched before
// (a new position, a new holder's balance): one read and written, one only
// read. That is slotsPerTx slots per transaction across four contracts, a
// quarter of them new.
const (
	hotSlots   = 64 // filled slots per contract (0 … 63)
	hotReads   = 6
	hotWrites  = 3
	freshSlots = 2
	contracts  = 4
	slotsPerTx = contracts * (hotReads + freshSlots)
)

// The contracts: Router (called by the sender, calls the pools) and three
// pools with the same code.
var (
	Router = common.HexToAddress("0x000000000000000000000000000000000de00001")
	Pools  = []common.Address{
		common.HexToAddress("0x000000000000000000000000000000000de00002"),
		common.HexToAddress("0x000000000000000000000000000000000de00003"),
		common.HexToAddress("0x000000000000000000000000000000000de00004"),
	}
)

// work is what each contract does with the 32-byte seed of calldata[0:32]:
// hot slot (seed+j) mod 64 for j < hotReads, read, and written +1 for
// j < hotWrites; then fresh slot seed + (j+1)·2^128 for j < freshSlots,
// read, and the first written 1. A seed is unique per transaction, so its
// fresh slots are new to the chain.
func work(p *program.Program) {
	for j := range hotReads {
		p.Push(j).Push(0).Op(vm.CALLDATALOAD, vm.ADD).Push(hotSlots - 1).Op(vm.AND) // [slot]
		if j < hotWrites {
			p.Op(vm.DUP1, vm.SLOAD).Push(1).Op(vm.ADD, vm.SWAP1, vm.SSTORE) // slot := slot+1
		} else {
			p.Op(vm.SLOAD, vm.POP)
		}
	}
	for j := range freshSlots {
		p.Push(freshOffset(j)).Push(0).Op(vm.CALLDATALOAD, vm.ADD) // [key]
		if j == 0 {
			p.Op(vm.DUP1, vm.SLOAD).Push(1).Op(vm.ADD, vm.SWAP1, vm.SSTORE)
		} else {
			p.Op(vm.SLOAD, vm.POP)
		}
	}
}

func freshOffset(j int) *uint256.Int {
	return new(uint256.Int).Lsh(uint256.NewInt(uint64(j+1)), 128)
}

// PoolCode does work and stops.
func PoolCode() []byte {
	p := program.New()
	work(p)
	return p.Op(vm.STOP).Bytes()
}

// RouterCode does work, then calls each pool with the seed, reverting
// unless every call succeeded.
func RouterCode() []byte {
	p := program.New()
	work(p)
	p.Push(32).Push(0).Push(0).Op(vm.CALLDATACOPY) // memory[0:32] = seed
	for _, pool := range Pools {
		p.Call(nil, pool, 0, 0, 32, 0, 0) // [ok…]
	}
	p.Op(vm.AND, vm.AND) // [all ok]
	// JUMPI to the end past the revert: PUSH2 dest (3) JUMPI (1), then
	// PUSH1 0 DUP1 REVERT (4).
	dest := p.Label() + 3 + 1 + 4
	p.Op(vm.PUSH2).Append([]byte{byte(dest >> 8), byte(dest)}).Op(vm.JUMPI)
	p.Push(0).Op(vm.DUP1, vm.REVERT)
	p.Op(vm.JUMPDEST, vm.STOP)
	return p.Bytes()
}

// hotValue is hot slot i's value in the genesis: nonzero, so the hot slots
// exist from the start (their writes change a value, as a pool's do).
func hotValue(i int) common.Hash { return common.BigToHash(big.NewInt(int64(1_000_000 + i))) }

// AddContracts puts the router and the pools, their hot slots filled, into
// a genesis allocation.
func AddContracts(alloc types.GenesisAlloc) {
	storage := make(map[common.Hash]common.Hash, hotSlots)
	for i := range hotSlots {
		storage[common.BigToHash(big.NewInt(int64(i)))] = hotValue(i)
	}
	clone := func() map[common.Hash]common.Hash {
		m := make(map[common.Hash]common.Hash, len(storage))
		for k, v := range storage {
			m[k] = v
		}
		return m
	}
	alloc[Router] = types.Account{Code: RouterCode(), Storage: clone(), Balance: new(big.Int), Nonce: 1}
	for _, p := range Pools {
		alloc[p] = types.Account{Code: PoolCode(), Storage: clone(), Balance: new(big.Int), Nonce: 1}
	}
}

// Seed is transaction k's seed: keccak256 of a label and k, so that seeds
// (and the fresh slots derived from them) never repeat and the hot slots
// they pick are spread evenly.
func Seed(k int) common.Hash {
	return crypto.Keccak256Hash([]byte("preconf bench followload"), big.NewInt(int64(k)).Bytes())
}

// FreshKey is transaction k's j-th fresh slot (in every contract).
func FreshKey(k, j int) common.Hash {
	s := new(uint256.Int).SetBytes(Seed(k).Bytes())
	return common.Hash(s.Add(s, freshOffset(j)).Bytes32())
}
