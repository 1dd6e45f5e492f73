package harness

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"os"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
)

// The state every node starts from: preconf's built-in dev genesis (chain id
// 1337, every fork through Osaka at genesis, the ten test-mnemonic accounts
// with 10000 ETH each — the same accounts anvil funds by default) plus one
// storage contract with StorageSlots filled slots and the EVM-bound loops
// of evm.go. It is written as a
// go-ethereum genesis file and loaded the same way by all three nodes:
// preconf --genesis, anvil --init, geth init. No node produces a block during
// the run, so "latest" is this genesis everywhere and "pending" is the same
// state (no transaction is pending).

// ContractAddr holds the storage contract.
var ContractAddr = common.HexToAddress("0x00000000000000000000000000000000000b3c11")

// ContractCode returns the word at the storage slot given as calldata[0:32]:
// PUSH1 0 CALLDATALOAD SLOAD PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN.
var ContractCode = common.FromHex("0x6000355460005260206000f3")

// StorageSlots is the number of filled slots (0 … storageSlots-1).
const StorageSlots = 16

// SlotValue is the value stored at slot i: keccak256(i), never zero.
func SlotValue(i int) common.Hash {
	return crypto.Keccak256Hash(SlotKey(i).Bytes())
}

// SlotKey is storage slot i as a key.
func SlotKey(i int) common.Hash { return common.BigToHash(big.NewInt(int64(i))) }

// Accounts are the funded accounts the workloads read.
func Accounts() []common.Address { return chain.DevAccounts() }

// DevBalance is each funded account's balance (10000 ETH).
func DevBalance() *big.Int {
	eth := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	return new(big.Int).Mul(big.NewInt(10000), eth)
}

// BenchGenesis is the shared genesis.
func BenchGenesis() *core.Genesis {
	g := chain.DevGenesis()
	storage := make(map[common.Hash]common.Hash, StorageSlots)
	for i := 0; i < StorageSlots; i++ {
		storage[SlotKey(i)] = SlotValue(i)
	}
	g.Alloc[ContractAddr] = types.Account{Code: ContractCode, Storage: storage, Balance: big.NewInt(0), Nonce: 1}
	g.Alloc[KeccakLoop] = types.Account{Code: KeccakLoopCode, Balance: big.NewInt(0), Nonce: 1}
	g.Alloc[FreshStores] = types.Account{Code: FreshStoresCode, Balance: big.NewInt(0), Nonce: 1}
	g.Alloc[WarmLoads] = types.Account{Code: WarmLoadsCode, Storage: maps.Clone(storage), Balance: big.NewInt(0), Nonce: 1}
	return g
}

// WriteGenesis writes the shared genesis file to path.
func WriteGenesis(path string) error { return WriteGenesisFile(path, BenchGenesis()) }

// WriteGenesisFile writes g to path as a genesis JSON file.
func WriteGenesisFile(path string, g *core.Genesis) error {
	raw, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return fmt.Errorf("encode genesis: %w", err)
	}
	return os.WriteFile(path, raw, 0o644)
}
