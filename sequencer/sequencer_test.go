package sequencer

import (
	"crypto/ecdsa"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/pending"
)

// Test timings: fast, with generous waits (never asserted as durations).
const (
	testInterval  = 20 * time.Millisecond
	testBlockTime = 100 * time.Millisecond
	waitLimit     = 20 * time.Second
)

type harness struct {
	t       *testing.T
	genesis *core.Genesis
	chain   *chain.Chain
	src     *pending.Source
	seq     *Sequencer
	keys    []*ecdsa.PrivateKey
	nonce   map[common.Address]uint64
}

func newHarness(t *testing.T, dir string, blockTime time.Duration) *harness {
	t.Helper()
	return newHarnessOn(t, dir, blockTime, nil)
}

// newHarnessOn starts a sequencer on a chain with genesis g (nil: the
// default dev chain, the OP-stack one).
func newHarnessOn(t *testing.T, dir string, blockTime time.Duration, g *core.Genesis) *harness {
	t.Helper()
	h := newHarnessCfg(t, dir, blockTime, g, nil)
	if err := h.seq.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// newHarnessNoStart opens the chain and a sequencer without starting it.
func newHarnessNoStart(t *testing.T, dir string) *harness {
	t.Helper()
	return newHarnessCfg(t, dir, testBlockTime, nil, nil)
}

// chainKinds are the two built-in dev chains, for tests that run on both.
var chainKinds = []struct {
	name    string
	genesis func() *core.Genesis
}{
	{"op-stack", func() *core.Genesis { return nil }},
	{"l1", chain.DevGenesis},
}

// newHarnessCfg opens a chain with genesis g (nil: the OP-stack dev chain,
// the default) and a sequencer on it with simulated L1 l1 (nil: the
// default), without starting it.
func newHarnessCfg(t *testing.T, dir string, blockTime time.Duration, g *core.Genesis, l1 *opstack.DevL1) *harness {
	t.Helper()
	return newHarnessWith(t, dir, g, Config{Interval: testInterval, BlockTime: blockTime, L1: l1})
}

// newManualHarness starts a manual-mining sequencer (pre-confirming every
// interval, or never when it is 0) on the plain-Ethereum dev chain (its
// tests use blobs and withdrawals; opstack_test.go mines the OP-stack one).
func newManualHarness(t *testing.T, dir string, interval time.Duration) *harness {
	t.Helper()
	return newManualHarnessOn(t, dir, interval, chain.DevGenesis())
}

// newManualHarnessOn is newManualHarness on genesis g (nil: the OP-stack
// dev chain).
func newManualHarnessOn(t *testing.T, dir string, interval time.Duration, g *core.Genesis) *harness {
	t.Helper()
	if interval == 0 {
		interval = NoFlashblocks
	}
	h := newHarnessWith(t, dir, g, Config{Mining: ManualMining, Interval: interval})
	if err := h.seq.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// newHarnessWith opens the chain with genesis g (in dir, or in memory; nil:
// the OP-stack dev chain, the default) and a sequencer with cfg (lags 2 and
// 4, the WAL in dir) without starting it.
func newHarnessWith(t *testing.T, dir string, g *core.Genesis, cfg Config) *harness {
	t.Helper()
	if g == nil {
		var err error
		if g, err = chain.DevL2Genesis(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := chain.Open(chain.Config{Dir: dir, Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, genesis: g, chain: c, src: new(pending.Source), nonce: make(map[common.Address]uint64)}
	for _, k := range chain.DevKeys {
		key, _ := crypto.HexToECDSA(k)
		h.keys = append(h.keys, key)
	}
	cfg.SafeLag, cfg.FinalizedLag, cfg.Logger = 2, 4, testLogger()
	if dir != "" {
		cfg.WALPath = dir + "/sequencer/flashblocks.wal"
	}
	if h.seq, err = New(cfg, c, h.src); err != nil {
		t.Fatal(err)
	}
	return h
}

// userTxs are a block's transactions other than deposits.
func userTxs(b *types.Block) types.Transactions {
	var out types.Transactions
	for _, tx := range b.Transactions() {
		if !tx.IsDepositTx() {
			out = append(out, tx)
		}
	}
	return out
}

// stop stops the sequencer and closes the chain (a clean shutdown).
func (h *harness) stop() {
	if err := h.seq.Stop(); err != nil {
		h.t.Error(err)
	}
	if err := h.chain.Close(); err != nil {
		h.t.Error(err)
	}
}

// testLogger is quiet unless PRECONF_TEST_LOG=debug.
func testLogger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("PRECONF_TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func (h *harness) sign(key *ecdsa.PrivateKey, inner types.TxData) *types.Transaction {
	h.t.Helper()
	tx, err := types.SignNewTx(key, h.seq.signer, inner)
	if err != nil {
		h.t.Fatal(err)
	}
	return tx
}

// transfer sends value wei from dev account i to `to` with the next nonce.
func (h *harness) transfer(i int, to common.Address, value int64) *types.Transaction {
	h.t.Helper()
	from := crypto.PubkeyToAddress(h.keys[i].PublicKey)
	tx := h.sign(h.keys[i], &types.DynamicFeeTx{
		ChainID: h.chain.Config().ChainID, Nonce: h.nonce[from], Gas: 21000,
		GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(params.GWei), To: &to, Value: big.NewInt(value),
	})
	h.nonce[from]++
	if _, err := h.seq.Admit(tx); err != nil {
		h.t.Fatalf("admit: %v", err)
	}
	return tx
}

// deploy sends a contract creation from dev account i.
func (h *harness) deploy(i int, code []byte) *types.Transaction {
	h.t.Helper()
	from := crypto.PubkeyToAddress(h.keys[i].PublicKey)
	tx := h.sign(h.keys[i], &types.DynamicFeeTx{
		ChainID: h.chain.Config().ChainID, Nonce: h.nonce[from], Gas: 500_000,
		GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(params.GWei), Data: code,
	})
	h.nonce[from]++
	if _, err := h.seq.Admit(tx); err != nil {
		h.t.Fatalf("admit: %v", err)
	}
	return tx
}

func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			var pooled []string
			for _, e := range h.seq.pool.All() {
				st, _ := h.chain.StateAt(h.chain.Head())
				pooled = append(pooled, fmt.Sprintf("%s nonce %d (state %d)", e.From, e.Tx.Nonce(), st.GetNonce(e.From)))
			}
			h.t.Fatalf("timed out waiting for %s (head %d, sequencer error %v, pooled %v)", what, h.chain.Head().Number, h.seq.Err(), pooled)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *harness) preconfirmed(tx *types.Transaction) bool {
	snap := h.src.Current()
	if snap == nil {
		return false
	}
	_, _, _, ok := snap.Tx(tx.Hash())
	return ok
}

func (h *harness) sealed(tx *types.Transaction) bool {
	_, _, _, _, ok := h.chain.TxLookup(tx.Hash())
	return ok
}

func balance(t *testing.T, r state.Reader, a common.Address) *uint256.Int {
	t.Helper()
	acct, err := r.Account(a)
	if err != nil {
		t.Fatal(err)
	}
	if acct == nil {
		return new(uint256.Int)
	}
	return acct.Balance
}

// logger emits LOG1 with topic 0x01, stores calldata word at slot 1 and
// stops: PUSH1 0 CALLDATALOAD PUSH1 1 SSTORE PUSH1 1 PUSH1 0 PUSH1 0 LOG1 STOP.
var loggerRuntime = common.FromHex("0x600035600155600160006000a100")

// initcode returning loggerRuntime.
func initcode(runtime []byte) []byte {
	// PUSH1 len DUP1 PUSH1 off PUSH1 0 CODECOPY PUSH1 0 RETURN
	pre := []byte{0x60, byte(len(runtime)), 0x80, 0x60, 0x0c, 0x60, 0x00, 0x39, 0x60, 0x00, 0xf3, 0x00}
	return append(pre, runtime...)
}

// TestPendingBeforeLatest: a transfer shows at pending (state, block,
// receipt with logs) within a flashblock while latest does not have it, then
// latest catches up when the block is sealed; empty blocks keep coming.
func TestPendingBeforeLatest(t *testing.T) {
	for _, k := range chainKinds {
		t.Run(k.name, func(t *testing.T) { testPendingBeforeLatest(t, k.genesis()) })
	}
}

func testPendingBeforeLatest(t *testing.T, g *core.Genesis) {
	h := newHarnessOn(t, "", 2*time.Second, g) // long block: pending and latest differ for a while
	defer h.stop()
	to := common.HexToAddress("0xbeef")
	startHead := h.chain.Head().Number.Uint64()
	tx := h.transfer(0, to, 12345)
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(tx) })
	snap := h.src.Current()
	if snap.Parent.Hash() == h.chain.Head().Hash() { // not sealed yet
		if got := balance(t, snap.State, to); got.Uint64() != 12345 {
			t.Errorf("pending balance %v, want 12345", got)
		}
		latest, _ := h.chain.StateReader(h.chain.Head().Root)
		if got := balance(t, latest, to); !got.IsZero() {
			t.Errorf("latest balance %v before sealing, want 0", got)
		}
		_, r, idx, _ := snap.Tx(tx.Hash())
		if r == nil || r.Status != types.ReceiptStatusSuccessful || r.BlockNumber.Uint64() != snap.Header.Number.Uint64() || r.TxHash != tx.Hash() || uint(idx) != r.TransactionIndex {
			t.Errorf("pre-confirmed receipt %+v", r)
		}
		if snap.Header.Number.Uint64() != snap.Parent.Number.Uint64()+1 || snap.Header.GasUsed < 21000 {
			t.Errorf("pending header number %v gas %d", snap.Header.Number, snap.Header.GasUsed)
		}
	}
	h.waitFor("sealing", func() bool { return h.sealed(tx) })
	latest, _ := h.chain.StateReader(h.chain.Head().Root)
	if got := balance(t, latest, to); got.Uint64() != 12345 {
		t.Errorf("latest balance %v after sealing, want 12345", got)
	}
	// Empty blocks are sealed on schedule too.
	n := h.chain.Head().Number.Uint64()
	h.waitFor("two more (empty) blocks", func() bool { return h.chain.Head().Number.Uint64() >= n+2 })
	if h.chain.Head().Number.Uint64() <= startHead {
		t.Error("head did not move")
	}
	b := h.chain.BlockByNumber(n + 1)
	if b == nil || len(userTxs(b)) != 0 || b.Time() <= h.chain.HeaderByNumber(n).Time {
		t.Errorf("empty block %v", b)
	}
	// Safe and finalized lag behind.
	head := h.chain.Head().Number.Uint64()
	if s := h.chain.Safe(); s == nil || s.Number.Uint64() > head || head-s.Number.Uint64() > 3 {
		t.Errorf("safe %v with head %d and lag 2", s.Number, head)
	}
	if f := h.chain.Finalized(); f == nil || f.Number.Uint64() > h.chain.Safe().Number.Uint64() {
		t.Errorf("finalized %v", f.Number)
	}
}

// TestBlocksValidate re-imports sealed blocks (transfers, a contract with
// storage and logs, flashblock boundaries, empty blocks) into a fresh chain
// with go-ethereum's full validation: state root, receipts, bloom, gas,
// requests hash all check out. It also checks each flashblock's diff: the
// parent state plus the stacked diffs hashes to the flashblock's state root.
func TestBlocksValidate(t *testing.T) {
	for _, k := range chainKinds {
		t.Run(k.name, func(t *testing.T) { testBlocksValidate(t, k.genesis()) })
	}
}

func testBlocksValidate(t *testing.T, g *core.Genesis) {
	h := newHarnessOn(t, "", testBlockTime, g)
	defer h.stop()
	var (
		mu     sync.Mutex
		snaps  []*pending.Snapshot
		ch, un = h.src.Subscribe(1024)
		doneCh = make(chan struct{})
		quit   = make(chan struct{})
	)
	go func() {
		defer close(doneCh)
		for {
			select {
			case s := <-ch:
				if s == nil {
					continue
				}
				mu.Lock()
				snaps = append(snaps, s)
				mu.Unlock()
			case <-quit:
				return
			}
		}
	}()
	dep := h.deploy(1, initcode(loggerRuntime))
	h.waitFor("deployment", func() bool { return h.sealed(dep) })
	contract := crypto.CreateAddress(crypto.PubkeyToAddress(h.keys[1].PublicKey), dep.Nonce())
	var last, lastCall *types.Transaction
	for i := 0; i < 30; i++ {
		last = h.transfer(i%3, common.BigToAddress(big.NewInt(int64(1000+i))), int64(i+1))
		if i%5 == 0 {
			from := crypto.PubkeyToAddress(h.keys[4].PublicKey)
			lastCall = h.sign(h.keys[4], &types.DynamicFeeTx{
				ChainID: h.chain.Config().ChainID, Nonce: h.nonce[from], Gas: 100_000,
				GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(2 * params.GWei), To: &contract,
				Data: common.BigToHash(big.NewInt(int64(i + 7))).Bytes(),
			})
			h.nonce[from]++
			if _, err := h.seq.Admit(lastCall); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * time.Millisecond)
	}
	h.waitFor("last txs sealed", func() bool { return h.sealed(last) && h.sealed(lastCall) })
	n := h.chain.Head().Number.Uint64()
	h.waitFor("one more block", func() bool { return h.chain.Head().Number.Uint64() > n })
	un()
	close(quit)
	<-doneCh

	// Re-import into a fresh chain with full validation.
	var blocks types.Blocks
	txs := 0
	for i := uint64(1); i <= h.chain.Head().Number.Uint64(); i++ {
		b := h.chain.BlockByNumber(i)
		txs += len(userTxs(b))
		blocks = append(blocks, b)
	}
	h.reimport(blocks)
	if txs < 31 {
		t.Errorf("only %d transactions in %d blocks", txs, len(blocks))
	}
	// Logs and storage landed.
	st, _ := h.chain.StateAt(h.chain.Head())
	if v := st.GetState(contract, common.BigToHash(big.NewInt(1))); v != common.BigToHash(big.NewInt(32)) {
		t.Errorf("contract slot 1 = %v, want 32 (the last call's word)", v)
	}

	// Every flashblock's diff stack reproduces its state root.
	mu.Lock()
	defer mu.Unlock()
	checked := 0
	for _, s := range snaps {
		if s.Header.Number.Uint64() > h.chain.Head().Number.Uint64() || s.NewTxs == 0 {
			continue
		}
		db, err := h.chain.StateAt(s.Parent)
		if err != nil {
			t.Fatal(err)
		}
		s.State.ApplyTo(db)
		if root := db.IntermediateRoot(true); root != s.Header.Root {
			t.Fatalf("block %d flashblock %d: diffs give root %v, header says %v", s.Header.Number, s.Index, root, s.Header.Root)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no flashblock with transactions was observed")
	}
}

// TestReadersDuringSequencing reads published snapshots concurrently with
// the sequencer under -race: published data is never written again, and a
// snapshot is internally consistent (its receipts match its transactions).
func TestReadersDuringSequencing(t *testing.T) {
	h := newHarness(t, "", testBlockTime)
	defer h.stop()
	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		reads atomic.Int64
	)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s := h.src.Current()
				if s == nil {
					continue
				}
				if len(s.Txs) != len(s.Receipts) {
					t.Errorf("snapshot with %d txs and %d receipts", len(s.Txs), len(s.Receipts))
					return
				}
				for i, tx := range s.Txs {
					r := s.Receipts[i]
					if r.TxHash != tx.Hash() || r.TransactionIndex != uint(i) {
						t.Errorf("receipt %d does not match its transaction", i)
						return
					}
					_ = r.BlockHash
					for _, l := range r.Logs {
						_ = l.BlockHash
					}
				}
				_ = s.Header.Hash()
				for a := range s.Diff.Accounts {
					if _, err := s.State.Account(a); err != nil {
						t.Error(err)
						return
					}
				}
				reads.Add(1)
			}
		}()
	}
	var last *types.Transaction
	for i := 0; i < 60; i++ {
		last = h.transfer(i%4, common.BigToAddress(big.NewInt(int64(i))), 1)
		time.Sleep(time.Millisecond)
	}
	h.waitFor("sealing", func() bool { return h.sealed(last) })
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("no reads happened")
	}
}

// TestTxTypes runs legacy, EIP-2930 and EIP-7702 transactions through the
// sequencer: the delegation's code shows at pending (through the diff) and
// the sealed block re-validates.
func TestTxTypes(t *testing.T) {
	for _, k := range chainKinds {
		t.Run(k.name, func(t *testing.T) { testTxTypes(t, k.genesis()) })
	}
}

func testTxTypes(t *testing.T, g *core.Genesis) {
	h := newHarnessOn(t, "", testBlockTime, g)
	defer h.stop()
	cid := h.chain.Config().ChainID
	k0, k1 := h.keys[5], h.keys[6]
	a1 := crypto.PubkeyToAddress(k1.PublicKey)
	to := common.Address{0x42}
	legacy := h.sign(k0, &types.LegacyTx{Nonce: 0, GasPrice: big.NewInt(100 * params.GWei), Gas: 21000, To: &to, Value: big.NewInt(1)})
	al := h.sign(k0, &types.AccessListTx{ChainID: cid, Nonce: 1, GasPrice: big.NewInt(100 * params.GWei), Gas: 30000, To: &to,
		AccessList: types.AccessList{{Address: to, StorageKeys: []common.Hash{{1}}}}})
	// k1 delegates its account to `to` (authorization nonce 1: the sender is
	// the authority, whose nonce is bumped by the transaction first).
	auth, err := types.SignSetCode(k1, types.SetCodeAuthorization{ChainID: *uint256.MustFromBig(cid), Address: to, Nonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	setCode := h.sign(k1, &types.SetCodeTx{ChainID: uint256.MustFromBig(cid), Nonce: 0, GasTipCap: uint256.NewInt(1), GasFeeCap: uint256.NewInt(100 * params.GWei),
		Gas: 100_000, To: to, AuthList: []types.SetCodeAuthorization{auth}})
	for _, tx := range []*types.Transaction{legacy, al, setCode} {
		if _, err := h.seq.Admit(tx); err != nil {
			t.Fatalf("type %d: %v", tx.Type(), err)
		}
	}
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(legacy) && h.preconfirmed(al) && h.preconfirmed(setCode) })
	snap := h.src.Current()
	if snap.Parent.Hash() == h.chain.Head().Hash() {
		acct, _ := snap.State.Account(a1)
		want := types.AddressToDelegation(to)
		if acct == nil || common.BytesToHash(acct.CodeHash) != crypto.Keccak256Hash(want) {
			t.Fatalf("pending account %v: code hash does not match the delegation", acct)
		}
		if code := snap.State.Code(a1, common.BytesToHash(acct.CodeHash)); string(code) != string(want) {
			t.Errorf("pending code %x, want %x", code, want)
		}
	}
	h.waitFor("sealing", func() bool { return h.sealed(setCode) && h.sealed(legacy) && h.sealed(al) })
	st, _ := h.chain.StateAt(h.chain.Head())
	if code := st.GetCode(a1); string(code) != string(types.AddressToDelegation(to)) {
		t.Errorf("sealed code %x", code)
	}
	var blocks types.Blocks
	for i := uint64(1); i <= h.chain.Head().Number.Uint64(); i++ {
		blocks = append(blocks, h.chain.BlockByNumber(i))
	}
	h.reimport(blocks)
}

// reimport inserts blocks into a fresh chain on the harness's genesis with
// go-ethereum's (op-geth's) full validation (state root, receipts, bloom,
// gas, withdrawals, requests) and returns that chain; a rejection fails the
// test.
func (h *harness) reimport(blocks types.Blocks) *core.BlockChain {
	t := h.t
	t.Helper()
	fresh, err := core.NewBlockChain(rawdb.NewMemoryDatabase(), h.genesis, beacon.New(ethash.NewFaker()), core.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fresh.Stop)
	if idx, err := fresh.InsertChain(blocks); err != nil {
		t.Fatalf("go-ethereum rejects block %d: %v", blocks[idx].NumberU64(), err)
	}
	return fresh
}

func addressOf(k *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(k.PublicKey) }

func nowUnix() int64 { return time.Now().Unix() }
