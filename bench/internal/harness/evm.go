package harness

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// The EVM-bound contracts of the genesis: loops whose cost is the
// interpreter and the state, not the transport. Assembled by hand; each
// round's gas is in the comment (Osaka rules, warm slots after the first
// access).
var (
	// KeccakLoop hashes memory word 0 into itself KeccakRounds times and
	// returns it (74 gas a round: 7.4M gas):
	//
	//	00 PUSH3 100000
	//	04 JUMPDEST                 ; [n]
	//	05 PUSH1 32 PUSH1 0 KECCAK256 PUSH1 0 MSTORE
	//	0d PUSH1 1 SWAP1 SUB DUP1 PUSH1 0x04 JUMPI
	//	15 PUSH1 32 PUSH1 0 RETURN
	KeccakLoop     = common.HexToAddress("0x00000000000000000000000000000000000e7001")
	KeccakLoopCode = common.FromHex("0x620186a05b60206000206000526001900380600457602060" + "00f3")
	// FreshStores writes FreshSlots slots that hold nothing, slot i := i
	// for i = 500 … 1 (22,100 gas each on an empty slot: 11.1M gas):
	//
	//	00 PUSH2 500
	//	03 JUMPDEST DUP1 DUP1 SSTORE ; [n], sstore(n, n)
	//	07 PUSH1 1 SWAP1 SUB DUP1 PUSH1 0x03 JUMPI
	//	0f STOP
	FreshStores     = common.HexToAddress("0x00000000000000000000000000000000000e7002")
	FreshStoresCode = common.FromHex("0x6101f45b80805560019003806003570000")
	// WarmLoads reads its StorageSlots filled slots in turn, slot n & 15 for
	// n = 20,000 … 1 (137 gas a round, the first 16 cold: 2.77M gas):
	//
	//	00 PUSH2 20000
	//	03 JUMPDEST PUSH1 15 DUP2 AND SLOAD POP
	//	0a PUSH1 1 SWAP1 SUB DUP1 PUSH1 0x03 JUMPI
	//	12 STOP
	WarmLoads     = common.HexToAddress("0x00000000000000000000000000000000000e7003")
	WarmLoadsCode = common.FromHex("0x614e205b600f81165450600190038060035700")
)

// KeccakRounds is KeccakLoop's number of hashes.
const KeccakRounds = 100_000

// KeccakLoopResult is what KeccakLoop returns: keccak256 applied
// KeccakRounds times to 32 zero bytes.
func KeccakLoopResult() common.Hash {
	var h common.Hash
	for range KeccakRounds {
		h = crypto.Keccak256Hash(h[:])
	}
	return h
}
