package follower

import (
	"fmt"
	"math/big"
	"reflect"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/core/vm/program"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/remote"
)

var (
	layered   = common.HexToAddress("0x00000000000000000000000000000000001a7e75")
	twin      = common.HexToAddress("0x00000000000000000000000000000000001a7e76") // same code, no storage
	chainEnd  = common.HexToHash("0xbeef")
	resultKey = common.HexToHash("0x5000") // written the chain's last value
	zeroKey   = common.HexToHash("0x6000") // written 1 only if that value is zero
)

// layeredCode reads wide independent slots 0x1000+i, then a chain of
// layers slots each keyed by the value of the one before (slot 1, then
// the slot its value names, …), writes the last value to resultKey and,
// if it is zero, 1 to zeroKey. Read with every unknown slot zero (a
// speculation's provisional answers), it writes zeroKey: what it really
// does must be the chain's end in resultKey and nothing in zeroKey.
func layeredCode(wide, layers int) []byte {
	p := program.New()
	for i := range wide {
		p.Push(0x1000+i).Op(vm.SLOAD, vm.POP)
	}
	p.Push(1).Op(vm.SLOAD)
	for range layers - 1 {
		p.Op(vm.SLOAD)
	}
	p.Op(vm.DUP1).Push(resultKey.Big()).Op(vm.SSTORE)
	// PUSH2 dest JUMPI (4), PUSH1 1 PUSH2 0x6000 SSTORE (6), then dest.
	dest := p.Label() + 4 + 6
	p.Op(vm.PUSH2).Append([]byte{byte(dest >> 8), byte(dest)}).Op(vm.JUMPI)
	p.Push(1).Push(zeroKey.Big()).Op(vm.SSTORE)
	p.Op(vm.JUMPDEST, vm.STOP)
	return p.Bytes()
}

// layeredStorage is the chain of layers slots ending in chainEnd, and
// every other wide slot filled.
func layeredStorage(wide, layers int) map[common.Hash]common.Hash {
	st := make(map[common.Hash]common.Hash)
	key := common.BigToHash(big.NewInt(1))
	for i := range layers - 1 {
		next := common.BigToHash(big.NewInt(int64(0x2000 + i)))
		st[key], key = next, next
	}
	st[key] = chainEnd
	for i := 0; i < wide; i += 2 {
		st[common.BigToHash(big.NewInt(int64(0x1000+i)))] = common.BigToHash(big.NewInt(int64(7 + i)))
	}
	return st
}

func callTx(t *testing.T, nonce uint64, to common.Address) hexutil.Bytes {
	key, _ := crypto.HexToECDSA(chain.DevKeys[0])
	signer := types.LatestSignerForChainID(big.NewInt(chain.DevChainID))
	tx := types.MustSignNewTx(key, signer, &types.DynamicFeeTx{
		ChainID: signer.ChainID(), Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10e9), Gas: 1_000_000, To: &to,
	})
	raw, _ := tx.MarshalBinary()
	return raw
}

// applyLayered applies, after a flashblock with a call of the layered
// contract's twin (its code is then known: code is fetched once for the
// upstream's life), one whose calls read the layered contract, and returns
// the last snapshot and the upstream requests and state round trips the
// second flashblock cost.
func applyLayered(t *testing.T, mode remote.Proofs, passes, wide, layers, calls int) (*pending.Snapshot, uint64, uint64) {
	t.Helper()
	g := chain.DevGenesis()
	g.Alloc[layered] = types.Account{Code: layeredCode(wide, layers), Storage: layeredStorage(wide, layers), Balance: new(big.Int)}
	g.Alloc[twin] = types.Account{Code: layeredCode(wide, layers), Balance: new(big.Int)}
	c, url, _ := devUpstreamWith(t, g)
	client := remote.NewClient(url, 0)
	sh := remote.NewShared(client, mode)
	e := newExecutor(c.Config(), sh, newHeaders(client, c.Config()), new(pending.Source))
	e.stateAt = sh.NewState
	e.passes = passes
	parent := c.Head()
	id := flashblock.PayloadID{7}
	fb0 := &flashblock.Message{PayloadID: id, Index: 0, Base: base(parent), Diff: flashblock.Diff{Transactions: []hexutil.Bytes{callTx(t, 0, twin)}}}
	fb1 := &flashblock.Message{PayloadID: id, Index: 1}
	for i := range calls {
		fb1.Diff.Transactions = append(fb1.Diff.Transactions, callTx(t, uint64(1+i), layered))
	}
	if err := e.sync(parent, []*flashblock.Message{fb0}, nil); err != nil {
		t.Fatal(err)
	}
	before, rounds := client.Requests.Load(), e.rounds.Load()
	var snap *pending.Snapshot
	if err := e.sync(parent, []*flashblock.Message{fb0, fb1}, func(s *pending.Snapshot) { snap = s }); err != nil {
		t.Fatal(err)
	}
	return snap, client.Requests.Load() - before, e.rounds.Load() - rounds
}

// TestDiscoveryRoundTrips: a flashblock whose calls read wide slots the
// follower has never fetched and a chain of layers slots each keyed by the
// one before costs at most layers+1 upstream round trips (the recipient's
// account, then one per layer), where reading each slot as the execution
// reaches it costs one per slot; and what it publishes is exactly what
// that sequential execution publishes, although the speculation, reading
// zeros, took the branch that writes zeroKey.
func TestDiscoveryRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name                string
		mode                remote.Proofs
		wide, layers, calls int
	}{
		{"proofs, one layer", remote.ProofsRequired, 12, 1, 1},
		{"proofs, three layers", remote.ProofsRequired, 12, 3, 1},
		{"proofs, three layers, ten calls", remote.ProofsRequired, 12, 3, 10},
		{"plain reads, three layers", remote.ProofsOff, 12, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reqs, rounds := applyLayered(t, tc.mode, discoverPasses, tc.wide, tc.layers, tc.calls)
			want, seqReqs, seqRounds := applyLayered(t, tc.mode, 0, tc.wide, tc.layers, tc.calls)
			if limit := uint64(tc.layers + 1); reqs > limit || rounds > limit {
				t.Errorf("%d requests, %d round trips counted; want ≤ %d", reqs, rounds, limit)
			}
			if min := uint64(tc.wide + tc.layers); seqReqs < min || seqRounds < min {
				t.Errorf("sequential reads: %d requests, %d round trips; want ≥ %d", seqReqs, seqRounds, min)
			}
			if err := sameSnapshot(got, want); err != nil {
				t.Fatal(err)
			}
			if v, _ := got.State.Storage(layered, resultKey); v != chainEnd {
				t.Fatalf("result slot %s, want %s", v, chainEnd)
			}
			if v, _ := got.State.Storage(layered, zeroKey); v != (common.Hash{}) {
				t.Fatalf("the speculation's write reached the snapshot: %s", v)
			}
		})
	}
}

// sameSnapshot compares two snapshots of the same block: header, receipts
// and the block's whole state diff.
func sameSnapshot(a, b *pending.Snapshot) error {
	if a == nil || b == nil {
		return fmt.Errorf("snapshots %v, %v", a, b)
	}
	if a.Header.Hash() != b.Header.Hash() {
		return fmt.Errorf("header %s, sequential %s", a.Header.Hash(), b.Header.Hash())
	}
	for i := range a.Receipts {
		x, y := a.Receipts[i], b.Receipts[i]
		if x.Status != y.Status || x.GasUsed != y.GasUsed {
			return fmt.Errorf("receipt %d: status %d gas %d, sequential %d %d", i, x.Status, x.GasUsed, y.Status, y.GasUsed)
		}
	}
	if x, y := a.State.Flatten(), b.State.Flatten(); !reflect.DeepEqual(x, y) {
		return fmt.Errorf("state diff %+v, sequential %+v", x, y)
	}
	return nil
}

// BenchmarkDiscovery: applying a flashblock of 50 calls, each reading 26
// slots of the layered contract, on state already cached (after the first
// op): what discovery's speculative pass costs when it finds nothing to
// fetch (passes=4), against none (passes=0). One op is one flashblock.
func BenchmarkDiscovery(b *testing.B) {
	for _, passes := range []int{0, discoverPasses} {
		b.Run(fmt.Sprintf("passes=%d", passes), func(b *testing.B) {
			t := &testing.T{}
			g := chain.DevGenesis()
			g.Alloc[layered] = types.Account{Code: layeredCode(24, 2), Storage: layeredStorage(24, 2), Balance: new(big.Int)}
			c, url, _ := devUpstreamWith(t, g)
			client := remote.NewClient(url, 0)
			sh := remote.NewShared(client, remote.ProofsRequired)
			e := newExecutor(c.Config(), sh, newHeaders(client, c.Config()), new(pending.Source))
			parent := c.Head()
			st := sh.NewState(parent) // one State: cached after the first op
			e.stateAt = func(*types.Header) *remote.State { return st }
			e.passes = passes
			raws := make([]hexutil.Bytes, 50)
			for i := range raws {
				raws[i] = callTx(t, uint64(i), layered)
			}
			b.ResetTimer()
			cpu := cpuTime()
			reexecute(b, e, parent, raws)
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
