package opstack

import (
	"math/big"

	"github.com/ethereum-optimism/optimism/op-node/rollup/derive"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// DevL1 is a simulated L1 chain for a dev L2: blocks every BlockTime
// seconds from GenesisTime (the L2 genesis time), with constant fees, whose
// block hashes are derived from their numbers. It gives each L2 block the
// L1Info its L1-attributes deposit carries, as a rollup node following a
// real L1 would: the newest L1 block not after the L2 block is its origin,
// and the sequence number counts L2 blocks since the origin changed.
type DevL1 struct {
	GenesisTime uint64
	BlockTime   uint64 // seconds; 0 means 12
	// Number of the L1 block at GenesisTime (the L2 chain's L1 origin).
	GenesisNumber uint64

	BaseFee, BlobBaseFee *big.Int // nil: 1 gwei and 1 wei
	Batcher              common.Address

	// The SystemConfig fee parameters.
	BaseFeeScalar, BlobBaseFeeScalar uint32
	OperatorFeeScalar                uint32
	OperatorFeeConstant              uint64
	DAFootprintGasScalar             uint16 // 0: the rollup node's default, 400
}

// Hash is the simulated hash of L1 block n.
func (d *DevL1) Hash(n uint64) common.Hash {
	return crypto.Keccak256Hash([]byte("preconf dev L1"), new(big.Int).SetUint64(n).Bytes())
}

// Next is the L1Info of the L2 block at l2Time whose parent's deposit
// carried parent; nil stands for the genesis block (sequence number 0 of
// the origin GenesisNumber).
func (d *DevL1) Next(parent *L1Info, l2Time uint64) *L1Info {
	bt := d.BlockTime
	if bt == 0 {
		bt = 12
	}
	var elapsed uint64
	if l2Time > d.GenesisTime {
		elapsed = (l2Time - d.GenesisTime) / bt
	}
	number := d.GenesisNumber + elapsed
	if parent == nil {
		parent = &L1Info{Number: d.GenesisNumber}
	}
	l1Time := d.GenesisTime + elapsed*bt
	if number < parent.Number {
		// The origin never goes back, even when the L1 block time changed
		// between the parent's block and this one (a restart with another
		// --l1.block-time): stay on the parent's.
		number, l1Time = parent.Number, parent.Time
	}
	var seq uint64
	if parent.Number == number {
		seq = parent.SequenceNumber + 1
	}
	da := d.DAFootprintGasScalar
	if da == 0 { // the rollup node's default for a SystemConfig without one
		da = derive.DAFootprintGasScalarDefault
	}
	fee, blobFee := d.BaseFee, d.BlobBaseFee
	if fee == nil {
		fee = big.NewInt(1_000_000_000)
	}
	if blobFee == nil {
		blobFee = big.NewInt(1)
	}
	return &L1Info{
		Number: number, Time: l1Time, Hash: d.Hash(number), SequenceNumber: seq,
		BaseFee: new(big.Int).Set(fee), BlobBaseFee: new(big.Int).Set(blobFee),
		BatcherHash:   common.BytesToHash(d.Batcher.Bytes()),
		BaseFeeScalar: d.BaseFeeScalar, BlobBaseFeeScalar: d.BlobBaseFeeScalar,
		OperatorFeeScalar: d.OperatorFeeScalar, OperatorFeeConstant: d.OperatorFeeConstant,
		DAFootprintGasScalar: da,
	}
}
