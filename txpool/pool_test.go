package txpool

import (
	"crypto/ecdsa"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/txpool"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
)

type fixture struct {
	pool   *Pool
	cfg    *params.ChainConfig
	key    *ecdsa.PrivateKey
	poor   *ecdsa.PrivateKey
	head   *types.Header
	signer types.Signer
	base   Env // the pending state described below
}

// newFixture: the dev chain config, a pending state where key's account has
// nonce 3 and 1 ETH, and a pending header with base fee 1 gwei.
func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	genesis := chain.DevGenesis()
	key, _ := crypto.HexToECDSA(chain.DevKeys[0])
	poor, _ := crypto.GenerateKey()
	db, sdb := newTestState(t)
	addr := crypto.PubkeyToAddress(key.PublicKey)
	sdb.SetNonce(addr, 3, tracing.NonceChangeUnspecified)
	sdb.SetBalance(addr, uint256.NewInt(params.Ether), tracing.BalanceChangeUnspecified)
	sdb.SetBalance(crypto.PubkeyToAddress(poor.PublicKey), uint256.NewInt(21000*params.GWei), tracing.BalanceChangeUnspecified)
	reader := commitReader(t, db, sdb)
	head := &types.Header{Number: big.NewInt(5), Time: 100, GasLimit: 30_000_000, BaseFee: big.NewInt(params.GWei), Difficulty: new(big.Int)}
	env := func() (*types.Header, state.Reader, error) { return head, reader, nil }
	f := &fixture{cfg: genesis.Config, key: key, poor: poor, head: head, signer: types.LatestSignerForChainID(genesis.Config.ChainID), base: env}
	f.pool = New(cfg, genesis.Config, env)
	return f
}

// newTestState is an empty state in memory and its database.
func newTestState(t *testing.T) (state.Database, *state.StateDB) {
	t.Helper()
	db := state.NewDatabase(triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil), nil)
	sdb, err := state.New(types.EmptyRootHash, db)
	if err != nil {
		t.Fatal(err)
	}
	return db, sdb
}

// commitReader commits sdb into db and returns a reader of the result.
func commitReader(t *testing.T, db state.Database, sdb *state.StateDB) state.Reader {
	t.Helper()
	root, err := sdb.Commit(0, true, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.Reader(root)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) tx(t *testing.T, key *ecdsa.PrivateKey, nonce uint64, gas uint64, feeCap, tip int64, value *big.Int) *types.Transaction {
	t.Helper()
	to := common.HexToAddress("0xdead")
	tx, err := types.SignNewTx(key, f.signer, &types.DynamicFeeTx{
		ChainID: f.cfg.ChainID, Nonce: nonce, Gas: gas, GasFeeCap: big.NewInt(feeCap), GasTipCap: big.NewInt(tip), To: &to, Value: value,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

const gwei = params.GWei

func TestAddValidation(t *testing.T) {
	f := newFixture(t, Config{AccountSlots: 4, GlobalSlots: 100})
	other, _ := crypto.GenerateKey()
	wrongChain, _ := types.SignNewTx(f.key, types.LatestSignerForChainID(big.NewInt(1)), &types.DynamicFeeTx{
		ChainID: big.NewInt(1), Nonce: 3, Gas: 21000, GasFeeCap: big.NewInt(2 * gwei), GasTipCap: big.NewInt(1), To: &common.Address{},
	})
	badSig := f.tx(t, f.key, 3, 21000, 2*gwei, 1, nil)
	v, r, s := badSig.RawSignatureValues()
	badSig, _ = badSig.WithSignature(f.signer, append(append(common.LeftPadBytes(r.Bytes(), 32), make([]byte, 32)...), byte(v.Uint64())))
	_ = s
	blob := types.NewTx(&types.BlobTx{ChainID: uint256.NewInt(1337), Nonce: 3, Gas: 21000, GasFeeCap: uint256.NewInt(2 * gwei), BlobFeeCap: uint256.NewInt(1), BlobHashes: []common.Hash{{1}}})

	tests := []struct {
		name string
		tx   *types.Transaction
		want error  // errors.Is target
		text string // message prefix (go-ethereum's)
	}{
		{"nonce too low", f.tx(t, f.key, 2, 21000, 2*gwei, 1, nil), core.ErrNonceTooLow, "nonce too low: next nonce 3, tx nonce 2"},
		{"intrinsic gas", f.tx(t, f.key, 3, 20000, 2*gwei, 1, nil), core.ErrIntrinsicGas, "intrinsic gas too low: gas 20000, minimum needed 21000"},
		{"fee cap below base fee", f.tx(t, f.key, 3, 21000, gwei-1, 1, nil), core.ErrFeeCapTooLow, "max fee per gas less than block base fee"},
		{"tip above fee cap", f.tx(t, f.key, 3, 21000, 2*gwei, 3*gwei, nil), core.ErrTipAboveFeeCap, "max priority fee per gas higher than max fee per gas"},
		{"insufficient funds", f.tx(t, f.key, 3, 21000, 2*gwei, 1, big.NewInt(params.Ether)), core.ErrInsufficientFunds, "insufficient funds for gas * price + value: balance 1000000000000000000"},
		{"no funds at all", f.tx(t, other, 0, 21000, 2*gwei, 1, nil), core.ErrInsufficientFunds, "insufficient funds for gas * price + value: balance 0"},
		{"gas above block limit", f.tx(t, f.key, 3, 31_000_000, 2*gwei, 1, nil), nil, "transaction gas limit too high"},
		{"invalid chain id", wrongChain, txpool.ErrInvalidSender, "invalid sender: invalid chain id for signer"},
		{"invalid signature", badSig, txpool.ErrInvalidSender, "invalid sender"},
		{"blob transaction without blobs", blob, core.ErrTxTypeNotSupported, "transaction type not supported: a blob transaction (type 3) needs its blobs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.pool.Add(tt.tx)
			if err == nil {
				t.Fatalf("accepted, want %q", tt.text)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %q is not %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.text) {
				t.Errorf("error %q, want prefix %q", err, tt.text)
			}
			if f.pool.Len() != 0 {
				t.Errorf("pool holds %d transactions after a rejection", f.pool.Len())
			}
		})
	}
}

func TestQueueReplaceAndLimits(t *testing.T) {
	f := newFixture(t, Config{AccountSlots: 4, GlobalSlots: 5})
	// A gap: nonce 5 waits for 3 and 4.
	res, err := f.pool.Add(f.tx(t, f.key, 5, 21000, 2*gwei, 1, nil))
	if err != nil || !res.Queued || res.NextNonce != 3 {
		t.Fatalf("gapped tx: res %+v err %v, want queued with next nonce 3", res, err)
	}
	tx3 := f.tx(t, f.key, 3, 21000, 2*gwei, gwei, nil)
	if res, err = f.pool.Add(tx3); err != nil || res.Queued || res.NextNonce != 4 {
		t.Fatalf("executable tx: res %+v err %v", res, err)
	}
	if _, err := f.pool.Add(tx3); !errors.Is(err, txpool.ErrAlreadyKnown) || err.Error() != "already known" {
		t.Errorf("duplicate: %v, want already known", err)
	}
	// Replacement needs 10% more in both caps.
	if _, err := f.pool.Add(f.tx(t, f.key, 3, 21000, 2*gwei+gwei/10, gwei+gwei/20, nil)); !errors.Is(err, txpool.ErrReplaceUnderpriced) || err.Error() != "replacement transaction underpriced" {
		t.Errorf("underpriced replacement: %v", err)
	}
	repl := f.tx(t, f.key, 3, 21000, 3*gwei, 2*gwei, nil)
	res, err = f.pool.Add(repl)
	if err != nil || res.Replaced == nil || res.Replaced.Hash() != tx3.Hash() {
		t.Fatalf("replacement: res %+v err %v", res, err)
	}
	if f.pool.Has(tx3.Hash()) || !f.pool.Has(repl.Hash()) {
		t.Error("replaced transaction still pooled / replacement missing")
	}
	// Content: 3 pending, 5 queued.
	nonceOf := func(common.Address) uint64 { return 3 }
	pend, queued := f.pool.Content(nonceOf)
	from := crypto.PubkeyToAddress(f.key.PublicKey)
	if len(pend[from]) != 1 || pend[from][0].Tx.Nonce() != 3 || len(queued[from]) != 1 || queued[from][0].Tx.Nonce() != 5 {
		t.Errorf("content: pending %v queued %v", pend[from], queued[from])
	}
	// Candidates stop at the gap.
	c := f.pool.Candidates(nonceOf)
	if len(c) != 1 || len(c[0]) != 1 || c[0][0].Tx.Hash() != repl.Hash() {
		t.Errorf("candidates %v", c)
	}
	// Account limit: 4 slots.
	for n := uint64(6); n < 8; n++ {
		if _, err := f.pool.Add(f.tx(t, f.key, n, 21000, 2*gwei, 1, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.pool.Add(f.tx(t, f.key, 9, 21000, 2*gwei, 1, nil)); !errors.Is(err, txpool.ErrAccountLimitExceeded) {
		t.Errorf("account limit: %v", err)
	}
	// Overdraft across pooled transactions: the poor account pays one.
	if _, err := f.pool.Add(f.tx(t, f.poor, 0, 21000, gwei, 0, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Add(f.tx(t, f.poor, 1, 21000, gwei, 0, nil)); !errors.Is(err, core.ErrInsufficientFunds) || !strings.Contains(err.Error(), "queued cost") {
		t.Errorf("overdraft: %v", err)
	}
	// Global limit: 5 (4 of key, 1 of poor).
	rich, _ := crypto.HexToECDSA(chain.DevKeys[0])
	_ = rich
	if _, err := f.pool.Add(f.tx(t, f.key, 8, 21000, 2*gwei, 1, nil)); err == nil {
		t.Error("accepted beyond the limits")
	}
	// Executed: pruning by nonce drops 3 when the state says 4.
	f.pool.Candidates(func(common.Address) uint64 { return 4 })
	if f.pool.Has(repl.Hash()) {
		t.Error("executed transaction still pooled after Candidates with a higher nonce")
	}
	if got := f.pool.PendingNonce(from, 4); got != 4 {
		t.Errorf("pool nonce %d, want 4 (5 is queued behind a gap)", got)
	}
}

func TestGlobalLimit(t *testing.T) {
	f := newFixture(t, Config{AccountSlots: 10, GlobalSlots: 2})
	for n := uint64(3); n < 5; n++ {
		if _, err := f.pool.Add(f.tx(t, f.key, n, 21000, 2*gwei, 1, nil)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.pool.Add(f.tx(t, f.key, 5, 21000, 2*gwei, 1, nil))
	if !errors.Is(err, ErrTxPoolOverflow) || err.Error() != "txpool is full" {
		t.Errorf("global limit: %v", err)
	}
	f.pool.Remove(f.pool.All()[0].Tx.Hash())
	if f.pool.Len() != 1 {
		t.Errorf("len %d after remove", f.pool.Len())
	}
}

// TestPruneThenAdd: a sender whose only pooled transaction was executed (its
// nonce is below the pending nonce) sends the next one; it must become a
// candidate (regression: it was stored in a dropped account record).
func TestPruneThenAdd(t *testing.T) {
	f := newFixture(t, Config{})
	// Pool a tx at nonce 3 while the pending state says 3.
	first := f.tx(t, f.key, 3, 21000, 2*gwei, 1, nil)
	if _, err := f.pool.Add(first); err != nil {
		t.Fatal(err)
	}
	// The pending state moves on to nonce 4 (first was executed) before the
	// sequencer removed it from the pool.
	h, r, _ := f.pool.env()
	f.pool.env = func() (*types.Header, state.Reader, error) { return h, nonceReader{r, 4}, nil }
	next := f.tx(t, f.key, 4, 21000, 2*gwei, 1, nil)
	if _, err := f.pool.Add(next); err != nil {
		t.Fatal(err)
	}
	c := f.pool.Candidates(func(common.Address) uint64 { return 4 })
	if len(c) != 1 || len(c[0]) != 1 || c[0][0].Tx.Hash() != next.Hash() {
		t.Fatalf("candidates %v, want the nonce-4 transaction", c)
	}
}

// nonceReader overrides every account's nonce.
type nonceReader struct {
	state.Reader
	nonce uint64
}

func (r nonceReader) Account(a common.Address) (*types.StateAccount, error) {
	acct, err := r.Reader.Account(a)
	if acct != nil {
		acct = acct.Copy()
		acct.Nonce = r.nonce
	}
	return acct, err
}

// TestClear: a cleared pool holds nothing and hands out no pool nonce.
func TestClear(t *testing.T) {
	f := newFixture(t, Config{})
	tx := f.tx(t, f.key, 3, 21000, 2*gwei, 1, nil)
	if _, err := f.pool.Add(tx); err != nil {
		t.Fatal(err)
	}
	from := crypto.PubkeyToAddress(f.key.PublicKey)
	if n := f.pool.PendingNonce(from, 3); n != 4 {
		t.Fatalf("pool nonce %d before", n)
	}
	f.pool.Clear()
	if f.pool.Len() != 0 || f.pool.Has(tx.Hash()) || f.pool.PendingNonce(from, 3) != 3 || len(f.pool.All()) != 0 {
		t.Fatalf("after Clear: len %d, has %v, pool nonce %d", f.pool.Len(), f.pool.Has(tx.Hash()), f.pool.PendingNonce(from, 3))
	}
	if _, err := f.pool.Add(tx); err != nil {
		t.Fatalf("re-adding after Clear: %v", err)
	}
}
