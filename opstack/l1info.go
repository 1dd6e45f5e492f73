// Package opstack builds the OP-stack protocol pieces that op-geth executes
// but leaves to the rollup node to construct: the L1-attributes deposit that
// opens every L2 block, the source hashes of deposits, and the chains of the
// superchain registry op-geth embeds, by name. The dev sequencer, the test
// chains and follow mode share them, so all three build the same bytes.
package opstack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
)

// Well-known OP-stack addresses.
var (
	// L1InfoDepositor sends the L1-attributes deposit.
	L1InfoDepositor = common.HexToAddress("0xDeaDDEaDDeAdDeAdDEAdDEaddeAddEAdDEAd0001")
	// L1Block holds the L1 origin's attributes (the L1 fee inputs).
	L1Block = types.L1BlockAddr
	// GasPriceOracle answers fee estimates from L1Block's values.
	GasPriceOracle = common.HexToAddress("0x420000000000000000000000000000000000000F")
	// SequencerFeeVault is the blocks' fee recipient (coinbase).
	SequencerFeeVault = common.HexToAddress("0x4200000000000000000000000000000000000011")
)

// L1InfoGas is the gas limit of the L1-attributes deposit from Regolith on.
const L1InfoGas = 1_000_000

// Lengths of the L1-attributes calldata by layout.
const (
	ecotoneLen = 164
	isthmusLen = types.IsthmusL1AttributesLen
	jovianLen  = types.JovianL1AttributesLen
)

// L1Info is what the L1-attributes deposit writes into L1Block: the L1
// origin block of the L2 block and the fee parameters of the chain's
// SystemConfig.
type L1Info struct {
	Number      uint64      // L1 origin block number
	Time        uint64      // L1 origin timestamp
	BaseFee     *big.Int    // L1 origin base fee
	BlobBaseFee *big.Int    // L1 origin blob base fee (at least 1 wei on a real L1)
	Hash        common.Hash // L1 origin block hash
	// SequenceNumber counts the L2 blocks since the L1 origin changed (0 for
	// the first L2 block of an epoch).
	SequenceNumber uint64
	// BatcherHash is the batcher address, left-padded (version 0).
	BatcherHash common.Hash

	BaseFeeScalar     uint32
	BlobBaseFeeScalar uint32
	// Isthmus on.
	OperatorFeeScalar   uint32
	OperatorFeeConstant uint64
	// Jovian on.
	DAFootprintGasScalar uint16
}

// Layout is the calldata format of an L1-attributes deposit.
type Layout int

// The layouts, by the fork that introduced them.
const (
	LayoutEcotone Layout = iota + 1 // setL1BlockValuesEcotone, 164 bytes
	LayoutIsthmus                   // setL1BlockValuesIsthmus, 176 bytes
	LayoutJovian                    // setL1BlockValuesJovian, 178 bytes
)

// ErrPreEcotone is a block whose L1-attributes layout (Bedrock's ABI
// encoding) is not built here.
var ErrPreEcotone = errors.New("opstack: L1 attributes before Ecotone are not supported")

// LayoutFor is the layout of the L1-attributes deposit of an L2 block at
// time whose parent is at parentTime. A fork's activation block still uses
// the previous fork's layout (its L1Block implementation is upgraded by that
// block's own deposits), as the rollup node builds it.
func LayoutFor(config *params.ChainConfig, time, parentTime uint64) (Layout, error) {
	activation := func(active func(uint64) bool) bool { return active(time) && !active(parentTime) }
	switch {
	case !config.IsOptimismEcotone(time) || activation(config.IsOptimismEcotone):
		return 0, ErrPreEcotone
	case config.IsOptimismJovian(time) && !activation(config.IsOptimismJovian):
		return LayoutJovian, nil
	case config.IsOptimismIsthmus(time) && !activation(config.IsOptimismIsthmus):
		return LayoutIsthmus, nil
	}
	return LayoutEcotone, nil
}

// Calldata encodes the L1Block call in layout l: the selector, then the
// fields packed big-endian without padding.
func (i *L1Info) Calldata(l Layout) ([]byte, error) {
	var sel []byte
	size := ecotoneLen
	switch l {
	case LayoutEcotone:
		sel = types.EcotoneL1AttributesSelector
	case LayoutIsthmus:
		sel, size = types.IsthmusL1AttributesSelector, isthmusLen
	case LayoutJovian:
		sel, size = types.JovianL1AttributesSelector, jovianLen
	default:
		return nil, fmt.Errorf("opstack: unknown L1 attributes layout %d", l)
	}
	if i.BaseFee == nil || i.BlobBaseFee == nil || i.BaseFee.Sign() < 0 || i.BlobBaseFee.Sign() < 0 ||
		i.BaseFee.BitLen() > 256 || i.BlobBaseFee.BitLen() > 256 {
		return nil, errors.New("opstack: L1 base fee and blob base fee must be set, in uint256 range")
	}
	b := make([]byte, size)
	copy(b, sel)
	binary.BigEndian.PutUint32(b[4:], i.BaseFeeScalar)
	binary.BigEndian.PutUint32(b[8:], i.BlobBaseFeeScalar)
	binary.BigEndian.PutUint64(b[12:], i.SequenceNumber)
	binary.BigEndian.PutUint64(b[20:], i.Time)
	binary.BigEndian.PutUint64(b[28:], i.Number)
	i.BaseFee.FillBytes(b[36:68])
	i.BlobBaseFee.FillBytes(b[68:100])
	copy(b[100:], i.Hash[:])
	copy(b[132:], i.BatcherHash[:])
	if l >= LayoutIsthmus {
		binary.BigEndian.PutUint32(b[164:], i.OperatorFeeScalar)
		binary.BigEndian.PutUint64(b[168:], i.OperatorFeeConstant)
	}
	if l >= LayoutJovian {
		binary.BigEndian.PutUint16(b[176:], i.DAFootprintGasScalar)
	}
	return b, nil
}

// ParseL1Info decodes L1-attributes calldata of any layout built here.
func ParseL1Info(data []byte) (*L1Info, Layout, error) {
	if len(data) < 4 {
		return nil, 0, errors.New("opstack: L1 attributes calldata too short")
	}
	var l Layout
	switch sel := data[:4]; {
	case string(sel) == string(types.EcotoneL1AttributesSelector) && len(data) == ecotoneLen:
		l = LayoutEcotone
	case string(sel) == string(types.IsthmusL1AttributesSelector) && len(data) == isthmusLen:
		l = LayoutIsthmus
	case string(sel) == string(types.JovianL1AttributesSelector) && len(data) == jovianLen:
		l = LayoutJovian
	default:
		return nil, 0, fmt.Errorf("opstack: not L1 attributes calldata (selector %x, %d bytes)", sel, len(data))
	}
	i := &L1Info{
		BaseFeeScalar:     binary.BigEndian.Uint32(data[4:]),
		BlobBaseFeeScalar: binary.BigEndian.Uint32(data[8:]),
		SequenceNumber:    binary.BigEndian.Uint64(data[12:]),
		Time:              binary.BigEndian.Uint64(data[20:]),
		Number:            binary.BigEndian.Uint64(data[28:]),
		BaseFee:           new(big.Int).SetBytes(data[36:68]),
		BlobBaseFee:       new(big.Int).SetBytes(data[68:100]),
		Hash:              common.BytesToHash(data[100:132]),
		BatcherHash:       common.BytesToHash(data[132:164]),
	}
	if l >= LayoutIsthmus {
		i.OperatorFeeScalar = binary.BigEndian.Uint32(data[164:])
		i.OperatorFeeConstant = binary.BigEndian.Uint64(data[168:])
	}
	if l >= LayoutJovian {
		i.DAFootprintGasScalar = binary.BigEndian.Uint16(data[176:])
	}
	return i, l, nil
}

// Deposit is the L1-attributes deposit transaction of the L2 block at time
// (parent at parentTime): from L1InfoDepositor to L1Block, no mint or value,
// L1InfoGas, not a system transaction (Regolith on), its source hash derived
// from the L1 origin hash and the sequence number.
func (i *L1Info) Deposit(config *params.ChainConfig, time, parentTime uint64) (*types.Transaction, error) {
	l, err := LayoutFor(config, time, parentTime)
	if err != nil {
		return nil, err
	}
	data, err := i.Calldata(l)
	if err != nil {
		return nil, err
	}
	to := L1Block
	return types.NewTx(&types.DepositTx{
		SourceHash: L1InfoSourceHash(i.Hash, i.SequenceNumber),
		From:       L1InfoDepositor,
		To:         &to,
		// A zero mint, as decoding the transaction gives it back (not
		// nil): a block being built reads as the same block stored.
		Mint:  new(big.Int),
		Value: new(big.Int),
		Gas:   L1InfoGas,
		Data:  data,
	}), nil
}

// Deposit source-hash domains (the OP-stack deposit specification).
const (
	userDepositDomain   = 0
	l1InfoDepositDomain = 1
)

func sourceHash(domain uint64, l1Hash common.Hash, n uint64) common.Hash {
	inner := crypto.Keccak256Hash(l1Hash[:], common.BigToHash(new(big.Int).SetUint64(n)).Bytes())
	return crypto.Keccak256Hash(common.BigToHash(new(big.Int).SetUint64(domain)).Bytes(), inner[:])
}

// L1InfoSourceHash is the source hash of the L1-attributes deposit:
// keccak256(bytes32(1) ++ keccak256(l1Hash ++ bytes32(sequenceNumber))).
func L1InfoSourceHash(l1Hash common.Hash, sequenceNumber uint64) common.Hash {
	return sourceHash(l1InfoDepositDomain, l1Hash, sequenceNumber)
}

// UserDepositSourceHash is the source hash of a deposit made on L1 through
// the OptimismPortal, whose TransactionDeposited event is the log at
// logIndex of L1 block l1Hash:
// keccak256(bytes32(0) ++ keccak256(l1Hash ++ bytes32(logIndex))).
func UserDepositSourceHash(l1Hash common.Hash, logIndex uint64) common.Hash {
	return sourceHash(userDepositDomain, l1Hash, logIndex)
}
