package simulate

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
)

var (
	// TransferTopic is keccak256("Transfer(address,address,uint256)").
	TransferTopic = common.HexToHash("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")
	// TransferAddress is the ERC-7528 pseudo-address for native ETH.
	TransferAddress = common.HexToAddress("0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE")
)

// logTracer collects a call's logs frame by frame, so that logs of a frame
// that reverts are dropped with it, and — with transfers on — records every
// value-moving CALL/CREATE (not DELEGATECALL/CALLCODE, which move nothing)
// as an ERC-20 style Transfer log from the ETH pseudo-address.
type logTracer struct {
	transfers bool
	frames    [][]*types.Log
	count     int // logs of the block so far (the log index)
	number    uint64
	time      uint64
	txHash    common.Hash
	txIndex   uint
	watch     frameWatcher // told of every frame's entry and exit
	hooks     *tracing.Hooks
}

// frameWatcher is told of every call frame's entry (its callee) and exit.
type frameWatcher interface {
	enter(depth int, to common.Address)
	exit(depth int, reverted bool)
}

func newLogTracer(transfers bool, number, time uint64, watch frameWatcher) *logTracer {
	t := &logTracer{transfers: transfers, watch: watch}
	t.hooks = &tracing.Hooks{OnEnter: t.enter, OnExit: t.exit, OnLog: t.log}
	t.startBlock(number, time)
	return t
}

// startBlock readies the tracer for the next block of a request (log
// indexes restart; the logs handed out so far stay with their calls).
func (t *logTracer) startBlock(number, time uint64) {
	t.frames, t.count, t.number, t.time = t.frames[:0], 0, number, time
}

func (t *logTracer) startTx(hash common.Hash, index int) {
	t.frames = t.frames[:0]
	t.txHash, t.txIndex = hash, uint(index)
}

func (t *logTracer) enter(depth int, typ byte, from, to common.Address, _ []byte, _ uint64, value *big.Int) {
	t.frames = append(t.frames, nil)
	if t.watch != nil {
		t.watch.enter(depth, to)
	}
	op := vm.OpCode(typ)
	if t.transfers && op != vm.DELEGATECALL && op != vm.CALLCODE && value != nil && value.Sign() > 0 {
		t.add(TransferAddress, []common.Hash{TransferTopic, common.BytesToHash(from[:]), common.BytesToHash(to[:])},
			common.BigToHash(value).Bytes())
	}
}

func (t *logTracer) exit(depth int, _ []byte, _ uint64, _ error, reverted bool) {
	if t.watch != nil {
		t.watch.exit(depth, reverted)
	}
	n := len(t.frames)
	if depth == 0 {
		if reverted && n > 0 {
			t.frames[0] = nil
		}
		return
	}
	if n <= 1 {
		return
	}
	inner := t.frames[n-1]
	t.frames = t.frames[:n-1]
	if !reverted {
		t.frames[n-2] = append(t.frames[n-2], inner...)
	}
}

func (t *logTracer) log(l *types.Log) { t.add(l.Address, l.Topics, l.Data) }

func (t *logTracer) add(addr common.Address, topics []common.Hash, data []byte) {
	if len(t.frames) == 0 {
		t.frames = append(t.frames, nil)
	}
	n := len(t.frames) - 1
	t.frames[n] = append(t.frames[n], &types.Log{
		Address:        addr,
		Topics:         topics,
		Data:           data,
		BlockNumber:    t.number,
		BlockTimestamp: t.time,
		TxHash:         t.txHash,
		TxIndex:        t.txIndex,
		Index:          uint(t.count),
	})
	t.count++
}

// logs are the surviving logs of the transaction just executed.
func (t *logTracer) logs() []*types.Log {
	if len(t.frames) == 0 {
		return nil
	}
	return t.frames[0]
}
