package faults_test

import (
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/tests/faultproxy"
)

// failover rewrites the feed as if a second builder took over a block
// mid-way (a new payload_id for the same block): once armed, at a block's
// index 3 the block's flashblocks so far are sent again under a new
// payload_id, and the block's later flashblocks carry it too; the old
// builder's messages keep coming alongside (late ones of a dying builder).
type failover struct {
	mu        sync.Mutex
	armed     bool
	cur       []*flashblock.Message
	old, repl flashblock.PayloadID
	on        bool
	done      chan flashblock.PayloadID
}

func (fo *failover) fault(fr faultproxy.Frame) []faultproxy.Frame {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	fb, err := flashblock.Decode(fr.Data)
	if err != nil {
		return []faultproxy.Frame{fr}
	}
	if fb.Index == 0 {
		fo.cur, fo.on = nil, false
	}
	fo.cur = append(fo.cur, fb)
	switch {
	case fo.on && fb.PayloadID == fo.old:
		return []faultproxy.Frame{fr, reissue(fb, fo.repl)}
	case fo.armed && fb.Index == 3 && fo.cur[0].Index == 0: // the block seen from its start
		fo.armed, fo.on, fo.old = false, true, fb.PayloadID
		fo.repl = fb.PayloadID
		fo.repl[7] ^= 0xff
		out := []faultproxy.Frame{fr}
		for _, f := range fo.cur {
			out = append(out, reissue(f, fo.repl))
		}
		fo.done <- fo.repl
		return out
	}
	return []faultproxy.Frame{fr}
}

// reissue is fb under another payload_id.
func reissue(fb *flashblock.Message, id flashblock.PayloadID) faultproxy.Frame {
	c := *fb
	c.PayloadID = id
	data, _ := flashblock.Encode(&c)
	return faultproxy.Frame{Data: data}
}

// A builder fail-over: a new payload_id for the block being built. The new
// payload is followed from its index 0 (the old one's late messages are
// left aside), and pending stays the sequencer's.
func TestFaultBuilderFailover(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	seenNew := make(chan bool, 1)
	var want flashblock.PayloadID
	var wantMu sync.Mutex
	ch, stop := r.follower().Pending.Subscribe(1 << 10)
	defer stop()
	go func() {
		for snap := range ch {
			wantMu.Lock()
			hit := snap != nil && snap.PayloadID == [8]byte(want) && want != (flashblock.PayloadID{})
			wantMu.Unlock()
			if hit {
				seenNew <- true
				return
			}
		}
	}()
	fo := &failover{armed: true, done: make(chan flashblock.PayloadID, 1)}
	r.ws.SetFault(fo.fault)
	id := <-fo.done
	wantMu.Lock()
	want = id
	wantMu.Unlock()
	t0 := time.Now()
	select {
	case <-seenNew:
	case <-time.After(30 * time.Second):
		t.Fatalf("the new payload never became pending: %v", r.follower().Follower.Status().Counters)
	}
	t.Logf("FIGURE failover new_payload_pending_after=%v caught_up_after=%v", time.Since(t0), r.caughtUp(t0))
	settle(2 * time.Second)
	r.ws.SetFault(nil)
	r.caughtUp(time.Now())
	r.done()
}

// A sealed block that differs from what was pre-confirmed (a valid
// transaction the sequencer never includes is injected into one
// flashblock): the follower pre-confirms it, sees the sealed block without
// it, counts a reorg, and follows the sequencer again.
func TestFaultSealedDiffers(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	// past the blocks the recorder may have joined in the middle of
	r.waitFor("block 3", func() bool { return r.seq.Chain.Head().Number.Uint64() >= 3 })
	r.foreignOK.Store(true)
	raw := r.foreignTx()
	injected := false
	r.ws.SetFault(func(fr faultproxy.Frame) []faultproxy.Frame {
		fb, err := flashblock.Decode(fr.Data)
		if err != nil || fb.Index != 4 || injected {
			return []faultproxy.Frame{fr}
		}
		injected = true
		fb.Diff.Transactions = append(fb.Diff.Transactions, raw)
		data, _ := flashblock.Encode(fb)
		return []faultproxy.Frame{{Data: data}}
	})
	r.waitFor("a reorg to be counted", func() bool { return r.counter("reorg") > 0 })
	r.waitFor("the injected block to be checked", func() bool { return r.foreign.Load() > 0 })
	t1 := time.Now()
	r.ws.SetFault(nil)
	t.Logf("FIGURE sealed_differs caught_up_after_reorg=%v", r.caughtUp(t1))
	r.foreignOK.Store(false)
	if r.foreign.Load() == 0 {
		t.Error("the injected transaction was never pre-confirmed")
	}
	r.done()
}

// foreignTx is a valid transfer the sequencer never sees (from a dev key
// the traffic does not use), to inject into a flashblock.
func (r *rig) foreignTx() []byte {
	key, _ := crypto.HexToECDSA(chain.DevKeys[9])
	to := common.Address{0x0e}
	signer := types.LatestSignerForChainID(r.seq.Chain.Config().ChainID)
	raw, _ := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{ChainID: signer.ChainID(), Nonce: 0,
		GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(50e9), Gas: 21000, To: &to, Value: big.NewInt(1)}).MarshalBinary()
	return raw
}
