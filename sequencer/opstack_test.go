package sequencer

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/txpool"
)

// testL1 is a simulated L1 with every fee input non-zero, the operator fee
// included (the dev chain's default has none, as Base).
func testL1(t *testing.T) *opstack.DevL1 {
	sc, err := chain.DevL2SystemConfig()
	if err != nil {
		t.Fatal(err)
	}
	return &opstack.DevL1{
		Batcher: sc.Batcher, BaseFeeScalar: sc.BaseFeeScalar, BlobBaseFeeScalar: sc.BlobBaseFeeScalar,
		BaseFee: big.NewInt(3 * params.GWei), BlobBaseFee: big.NewInt(7),
		OperatorFeeScalar: 2_000_000, OperatorFeeConstant: 100_000,
	}
}

// snapRecorder keeps every snapshot a source publishes.
type snapRecorder struct {
	mu    sync.Mutex
	snaps []*pending.Snapshot
	stop  func()
}

func recordSnaps(src *pending.Source) *snapRecorder {
	r := &snapRecorder{}
	ch, stop := src.Subscribe(1 << 12)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case s := <-ch:
				if s != nil {
					r.mu.Lock()
					r.snaps = append(r.snaps, s)
					r.mu.Unlock()
				}
			case <-quit:
				return
			}
		}
	}()
	r.stop = func() { stop(); close(quit); <-done }
	return r
}

// withdrawal calls L2ToL1MessagePasser.initiateWithdrawal from dev account
// i, which writes the passer's storage (the Isthmus withdrawals root).
func (h *harness) withdrawal(i int) *types.Transaction {
	h.t.Helper()
	from := crypto.PubkeyToAddress(h.keys[i].PublicKey)
	data := append(crypto.Keccak256([]byte("initiateWithdrawal(address,uint256,bytes)"))[:4], common.LeftPadBytes(from.Bytes(), 32)...)
	data = append(data, common.BigToHash(big.NewInt(100_000)).Bytes()...)
	data = append(data, common.BigToHash(big.NewInt(0x60)).Bytes()...)
	data = append(data, make([]byte, 32)...)
	passer := params.OptimismL2ToL1MessagePasser
	tx := h.sign(h.keys[i], &types.DynamicFeeTx{
		ChainID: h.chain.Config().ChainID, Nonce: h.nonce[from], Gas: 200_000,
		GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(params.GWei), To: &passer, Value: big.NewInt(1000), Data: data,
	})
	h.nonce[from]++
	if _, err := h.seq.Admit(tx); err != nil {
		h.t.Fatalf("admit: %v", err)
	}
	return tx
}

// TestOPStackBlocks sequences the OP-stack dev chain with user
// transactions (with calldata, a withdrawal) and injected deposits, and
// checks every block as op-geth's miner builds it: the L1-attributes
// deposit first and, with the user deposits, alone in flashblock 0; the
// SequencerFeeVault as fee recipient, Holocene's extra data, the message
// passer's storage root as withdrawals root, the empty requests hash; the
// blocks re-import into op-geth with full validation; each user
// transaction pays exactly gas × price + value + the L1 fee op-geth's cost
// function gives + the operator fee, and its pre-confirmed receipt carries
// that L1 fee.
func TestOPStackBlocks(t *testing.T) {
	h := newHarnessStarted(t, newHarnessCfg(t, "", testBlockTime, nil, testL1(t)))
	defer h.stop()
	rec := recordSnaps(h.src)
	cfg := h.chain.Config()
	ctx := context.Background()

	// Deposits: one minting and sending on, one whose value its sender
	// cannot cover (it fails; the mint stays), one with a given source hash.
	alice, bob := common.Address{0xa1}, common.Address{0xb0}
	d1, err := h.seq.Deposit(ctx, Deposit{From: alice, To: &bob, Mint: big.NewInt(1e18), Value: big.NewInt(1e17), Gas: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	d2, err := h.seq.Deposit(ctx, Deposit{From: common.Address{0xa2}, To: &bob, Mint: big.NewInt(5), Value: big.NewInt(10), Gas: 50_000, Data: []byte{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	given := common.Hash{0x5e}
	d3, err := h.seq.Deposit(ctx, Deposit{From: alice, To: &bob, Mint: big.NewInt(1), Gas: 21_000, SourceHash: given})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.seq.Deposit(ctx, Deposit{From: alice, To: &bob, Mint: big.NewInt(1), Gas: 21_000, SourceHash: given}); err == nil {
		t.Error("a duplicate deposit was accepted")
	}
	if _, err := h.seq.Deposit(ctx, Deposit{From: alice, To: &bob, Gas: 21_000, Data: []byte{1}}); err == nil {
		t.Error("a deposit below the portal's minimum gas was accepted")
	}
	var users []*types.Transaction
	for i := range 6 {
		users = append(users, h.transfer(i%3, common.BigToAddress(big.NewInt(int64(0x700+i))), int64(1000+i)))
	}
	users = append(users, h.withdrawal(4))
	h.waitFor("sealing", func() bool {
		for _, tx := range users {
			if !h.sealed(tx) {
				return false
			}
		}
		for _, d := range []common.Hash{d1, d2, d3} {
			if _, _, _, _, ok := h.chain.TxLookup(d); !ok {
				return false
			}
		}
		return true
	})
	n := h.chain.Head().Number.Uint64()
	h.waitFor("one more block", func() bool { return h.chain.Head().Number.Uint64() > n })
	rec.stop()

	// A user cannot submit a deposit.
	raw := types.NewTx(&types.DepositTx{From: alice, To: &bob, Mint: big.NewInt(1), Value: new(big.Int), Gas: 21000})
	if _, err := h.seq.Admit(raw); !errors.Is(err, txpool.ErrDepositTx) {
		t.Errorf("raw deposit: %v, want ErrDepositTx", err)
	}

	var (
		blocks types.Blocks
		prevL1 *opstack.L1Info
		seenD  int
	)
	head := h.chain.Head().Number.Uint64()
	for i := uint64(1); i <= head; i++ {
		b := h.chain.BlockByNumber(i)
		blocks = append(blocks, b)
		hd := b.Header()
		txs := b.Transactions()
		if len(txs) == 0 || txs[0].Type() != types.DepositTxType {
			t.Fatalf("block %d does not open with a deposit", i)
		}
		if from, _ := types.Sender(h.seq.signer, txs[0]); from != opstack.L1InfoDepositor || *txs[0].To() != opstack.L1Block {
			t.Fatalf("block %d: first deposit from %s to %s", i, from, txs[0].To())
		}
		info, layout, err := opstack.ParseL1Info(txs[0].Data())
		if wantLayout, _ := opstack.LayoutFor(cfg, hd.Time, h.chain.HeaderByNumber(i-1).Time); err != nil || layout != wantLayout {
			t.Fatalf("block %d: L1 attributes %v (layout %d)", i, err, layout)
		}
		if prevL1 != nil && (info.Number < prevL1.Number || (info.Number == prevL1.Number) != (info.SequenceNumber == prevL1.SequenceNumber+1)) {
			t.Errorf("block %d: origin %d/%d after %d/%d", i, info.Number, info.SequenceNumber, prevL1.Number, prevL1.SequenceNumber)
		}
		if info.OperatorFeeScalar != 2_000_000 || info.BaseFee.Int64() != 3*params.GWei || info.Time > hd.Time {
			t.Errorf("block %d: L1 info %+v", i, info)
		}
		parentL1 := prevL1
		prevL1 = info
		if hd.Coinbase != opstack.SequencerFeeVault {
			t.Errorf("block %d: coinbase %s", i, hd.Coinbase)
		}
		var minBaseFee *uint64
		if cfg.IsJovian(hd.Time) {
			minBaseFee = new(uint64)
		}
		want := eip1559.EncodeOptimismExtraData(cfg, hd.Time, cfg.BaseFeeChangeDenominator(hd.Time), cfg.ElasticityMultiplier(), minBaseFee)
		if !bytes.Equal(hd.Extra, want) {
			t.Errorf("block %d: extra %x, want %x", i, hd.Extra, want)
		}
		st, err := h.chain.StateAt(hd)
		if err != nil {
			t.Fatal(err)
		}
		if hd.WithdrawalsHash == nil || *hd.WithdrawalsHash != st.GetStorageRoot(params.OptimismL2ToL1MessagePasser) || len(b.Withdrawals()) != 0 {
			t.Errorf("block %d: withdrawals root %v", i, hd.WithdrawalsHash)
		}
		if hd.RequestsHash == nil || *hd.RequestsHash != types.EmptyRequestsHash {
			t.Errorf("block %d: requests hash %v", i, hd.RequestsHash)
		}
		// Deposits lead; a user deposit's source hash is a simulated L1 log.
		user := false
		for k, tx := range txs[1:] {
			if !tx.IsDepositTx() {
				user = true
				continue
			}
			if user {
				t.Errorf("block %d: deposit %d after a user transaction", i, k+1)
			}
			seenD++
			// d1's source hash is a log of the L1 origin of the block open
			// when it was injected: the including block's, or its parent's
			// when the simulated L1 moved on in between.
			if tx.Hash() == d1 && tx.SourceHash() != opstack.UserDepositSourceHash(info.Hash, 0) &&
				(parentL1 == nil || tx.SourceHash() != opstack.UserDepositSourceHash(parentL1.Hash, 0)) {
				t.Errorf("deposit 1 source hash %s", tx.SourceHash())
			}
			if tx.Hash() == d3 && tx.SourceHash() != given {
				t.Errorf("deposit 3 source hash %s", tx.SourceHash())
			}
		}
	}
	if seenD != 3 {
		t.Errorf("%d user deposits in the chain, want 3", seenD)
	}
	h.reimport(blocks) // op-geth's full validation

	// Flashblock 0 of every block holds its deposits and nothing else.
	pre := map[common.Hash]*types.Receipt{}
	for _, s := range rec.snaps {
		if s.Index == 0 {
			for _, tx := range s.Txs {
				if !tx.IsDepositTx() {
					t.Fatalf("block %d flashblock 0 holds user transaction %s", s.Header.Number, tx.Hash())
				}
			}
			if s.NewTxs != len(s.Txs) || s.NewTxs == 0 {
				t.Fatalf("block %d flashblock 0: %d new of %d", s.Header.Number, s.NewTxs, len(s.Txs))
			}
		}
		for k, tx := range s.Txs[len(s.Txs)-s.NewTxs:] {
			pre[tx.Hash()] = s.Receipts[len(s.Txs)-s.NewTxs+k]
		}
	}

	// The fees of every user transaction.
	for _, tx := range users {
		_, bh, num, idx, _ := h.chain.TxLookup(tx.Hash())
		b := h.chain.BlockByHash(bh)
		sealed := h.chain.Receipts(b)[idx]
		info, _, _ := opstack.ParseL1Info(b.Transactions()[0].Data())
		l1, _ := types.NewL1CostFuncFjord(info.BaseFee, info.BlobBaseFee, big.NewInt(int64(info.BaseFeeScalar)), big.NewInt(int64(info.BlobBaseFeeScalar)))(tx.RollupCostData())
		if l1.Sign() == 0 || sealed.L1Fee == nil || sealed.L1Fee.Cmp(l1) != 0 {
			t.Fatalf("tx %s: sealed l1Fee %v, op-geth's cost function %v", tx.Hash(), sealed.L1Fee, l1)
		}
		p := pre[tx.Hash()]
		if p == nil || p.L1Fee == nil || p.L1Fee.Cmp(l1) != 0 || p.L1GasUsed.Cmp(sealed.L1GasUsed) != 0 || *p.OperatorFeeScalar != 2_000_000 {
			t.Fatalf("tx %s: pre-confirmed receipt %+v", tx.Hash(), p)
		}
		// The operator fee: Isthmus's gas × scalar / 1e6, Jovian's gas ×
		// scalar × 100, plus the constant.
		operatorFee := func(gas uint64) uint64 {
			if cfg.IsJovian(b.Time()) {
				return gas*2_000_000*100 + 100_000
			}
			return gas*2_000_000/1_000_000 + 100_000
		}
		operator := new(big.Int).SetUint64(operatorFee(sealed.GasUsed))
		from, _ := types.Sender(h.seq.signer, tx)
		before, _ := h.chain.StateAt(h.chain.HeaderByNumber(num - 1))
		after, _ := h.chain.StateAt(b.Header())
		// Several transactions of one sender may share a block: check the
		// block's total for the sender.
		want := new(big.Int)
		for k, o := range b.Transactions() {
			if f, _ := types.Sender(h.seq.signer, o); f != from || o.IsDepositTx() {
				continue
			}
			r := h.chain.Receipts(b)[k]
			want.Add(want, new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice))
			want.Add(want, o.Value())
			want.Add(want, r.L1Fee)
			want.Add(want, new(big.Int).SetUint64(operatorFee(r.GasUsed)))
		}
		if got := new(big.Int).Sub(before.GetBalance(from).ToBig(), after.GetBalance(from).ToBig()); got.Cmp(want) != 0 {
			t.Errorf("tx %s: %s paid %v, want %v (gas × price + value + l1Fee %v + operator fee %v, with its block's other transactions)", tx.Hash(), from, got, want, l1, operator)
		}
	}
	// The minted deposit landed; the failing one kept its mint.
	st, _ := h.chain.StateAt(h.chain.Head())
	if got := st.GetBalance(alice).ToBig(); got.Cmp(big.NewInt(9e17+1)) != 0 {
		t.Errorf("alice %v, want 0.9 ETH + 1 wei", got)
	}
	if got := st.GetBalance(common.Address{0xa2}).Uint64(); got != 5 {
		t.Errorf("failed deposit's sender %d, want its mint 5", got)
	}
	_, bh, _, idx, _ := h.chain.TxLookup(d2)
	if r := h.chain.Receipts(h.chain.BlockByHash(bh))[idx]; r.Status != types.ReceiptStatusFailed || r.DepositNonce == nil {
		t.Errorf("failing deposit receipt %+v", r)
	}
}

func newHarnessStarted(t *testing.T, h *harness) *harness {
	t.Helper()
	if err := h.seq.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestDepositSurvivesRestart: a deposit acknowledged while the block is
// open waits in the WAL; after a stop it is in the next block, once.
func TestDepositSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir, 30*time.Second) // no sealing during the first run
	to := common.Address{0xb0}
	d, err := h.seq.Deposit(context.Background(), Deposit{From: common.Address{0xa1}, To: &to, Mint: big.NewInt(7), Value: big.NewInt(7), Gas: 21_000})
	if err != nil {
		t.Fatal(err)
	}
	open := h.src.Current().Header.Number.Uint64()
	h.stop()

	h2 := newHarness(t, dir, testBlockTime)
	defer h2.stop()
	h2.waitFor("the deposit sealed", func() bool {
		_, _, _, _, ok := h2.chain.TxLookup(d)
		return ok
	})
	_, _, num, idx, _ := h2.chain.TxLookup(d)
	if num != open+1 || idx != 1 {
		t.Errorf("deposit in block %d at %d, want block %d at 1", num, idx, open+1)
	}
	// Once: the next blocks do not carry it again, and a restart does not
	// re-queue it.
	h2.waitFor("two more blocks", func() bool { return h2.chain.Head().Number.Uint64() >= num+2 })
	for n := num + 1; n <= h2.chain.Head().Number.Uint64(); n++ {
		if len(h2.chain.BlockByNumber(n).Transactions()) != 1 {
			t.Errorf("block %d carries more than its L1-attributes deposit", n)
		}
	}
	if st, _ := h2.chain.StateAt(h2.chain.Head()); st.GetBalance(to).Uint64() != 7 {
		t.Errorf("recipient %d, want 7", st.GetBalance(to).Uint64())
	}
}

// TestOPStackManualMining: manual mining on the OP-stack dev chain. A block
// holding only its L1-attributes deposit counts as empty: it is re-opened
// at the time of its first transaction (pre-confirmed with flashblocks) or
// of the mine, with that time's L1-attributes deposit, and its timestamp can
// be chosen; a deposit injected meanwhile lands in the mined block; every
// mined block re-imports into op-geth.
func TestOPStackManualMining(t *testing.T) {
	for _, interval := range []time.Duration{0, testInterval} {
		t.Run(interval.String(), func(t *testing.T) {
			h := newManualHarnessOn(t, "", interval, nil)
			defer h.stop()
			ctx := context.Background()
			head := h.chain.Head()
			opened := h.src.Current().Header.Time
			time.Sleep(1100 * time.Millisecond) // the open block grows a second older
			// A chosen timestamp: the block holds only its deposit.
			ts := uint64(time.Now().Unix()) + 1000
			if err := h.seq.Mine(ctx, MineOptions{Blocks: 1, Timestamp: &ts}); err != nil {
				t.Fatalf("mine with a timestamp: %v", err)
			}
			b1 := h.chain.BlockByNumber(head.Number.Uint64() + 1)
			if b1 == nil || b1.Time() != ts || len(b1.Transactions()) != 1 {
				t.Fatalf("block 1 %v: want time %d and the L1-attributes deposit alone", b1, ts)
			}
			info, _, err := opstack.ParseL1Info(b1.Transactions()[0].Data())
			if err != nil || info.Time > ts || ts-info.Time >= 12 {
				t.Fatalf("block 1's L1 origin %+v (%v) is not that of its time %d", info, err, ts)
			}
			// A deposit and a transfer, then a mine: both in the mined block,
			// whose time is past the previous block's.
			to := common.Address{0xb0}
			d, err := h.seq.Deposit(ctx, Deposit{From: common.Address{0xa1}, To: &to, Mint: big.NewInt(9), Value: big.NewInt(9), Gas: 21_000})
			if err != nil {
				t.Fatal(err)
			}
			tx := h.transfer(1, to, 5)
			if interval > 0 {
				h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(tx) })
			}
			if err := h.seq.Mine(ctx, MineOptions{Blocks: 1}); err != nil {
				t.Fatal(err)
			}
			b2 := h.chain.BlockByNumber(b1.NumberU64() + 1)
			if b2 == nil || b2.Time() <= b1.Time() || b2.Time() <= opened {
				t.Fatalf("block 2 %v after block 1 at %d", b2, b1.Time())
			}
			var got []common.Hash
			for _, t := range b2.Transactions()[1:] {
				got = append(got, t.Hash())
			}
			if len(got) != 2 || got[0] != d || got[1] != tx.Hash() || !b2.Transactions()[0].IsDepositTx() {
				t.Fatalf("block 2 holds %v, want the L1-attributes deposit, deposit %s, transfer %s", got, d, tx.Hash())
			}
			h.reimport(types.Blocks{b1, b2})
		})
	}
}
