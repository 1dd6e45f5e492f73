package follower_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/internal/testchain"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// opChain is the OP test chain of flashblock/testdata (same genesis, keys
// and generator), longer: its first two blocks are the recorded ones.
func opChain(t *testing.T, blocks int, mutate func(*core.Genesis)) *testchain.Chain {
	t.Helper()
	tc, err := testchain.DevL2(blocks, mutate)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// frameServer is a flashblocks feed whose frames the test sends one by one.
type frameServer struct {
	srv    *httptest.Server
	frames chan []byte
}

func newFrameServer(t *testing.T) *frameServer {
	s := &frameServer{frames: make(chan []byte, 64)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := c.CloseRead(r.Context())
		for {
			select {
			case f := <-s.frames:
				if err := c.Write(ctx, websocket.MessageText, f); err != nil {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *frameServer) url() string { return "ws" + strings.TrimPrefix(s.srv.URL, "http") }

// TestFollowOPStack follows an OP-stack chain: the upstream is a preconf
// chain (served over loopback) that imports op-geth's blocks as they seal;
// the feed sends their flashblocks in Base's current format and in the
// legacy one. After every flashblock the follower's pending block must be
// the block op-geth builds from the same prefix (same hash, with the
// builder's state and withdrawals roots), its receipts op-geth's, and its
// state op-geth's: every account and slot it wrote, the fee vaults (the L1
// data and operator fees charged), L1Block's slots (the L1-attributes
// deposit), the deposits' minted balances and nonces.
func TestFollowOPStack(t *testing.T) {
	const blocks = 4
	tc := opChain(t, blocks, nil)
	for _, format := range []struct {
		name     string
		f        testchain.Format
		recorded string
	}{
		{"base-v1", testchain.BaseV1, "../flashblock/testdata/opstack-base-v1.jsonl"},
		{"legacy", testchain.Legacy, "../flashblock/testdata/opstack-legacy.jsonl"},
	} {
		t.Run(format.name, func(t *testing.T) {
			msgs, err := tc.Messages(format.f)
			if err != nil {
				t.Fatal(err)
			}
			// The recorded payloads are the first blocks' messages: this
			// test replays them (and two more blocks).
			recorded, err := os.ReadFile(format.recorded)
			if err != nil {
				t.Fatal(err)
			}
			if lines := bytes.Split(bytes.TrimSpace(recorded), []byte("\n")); len(lines) != 8 || !bytes.Equal(bytes.Join(lines, nil), bytes.Join(msgs[:8], nil)) {
				t.Fatalf("%s is not this chain's first flashblocks", format.recorded)
			}
			followOP(t, tc, msgs, true)
		})
	}
}

// TestFollowOPStackJovian follows a chain with Jovian active: blobGasUsed
// carries the DA footprint, the extra data the minimum base fee, and the
// operator fee follows Jovian's formula. No embedded genesis has Jovian's
// L1Block, so the Isthmus one refuses the Jovian L1-attributes call (the
// deposit fails, as op-geth allows); the L1 fee inputs are seeded into
// L1Block's storage in the genesis instead (hand-set values, test only).
func TestFollowOPStackJovian(t *testing.T) {
	tc := opChain(t, 3, func(g *core.Genesis) {
		g.Config.JovianTime = new(uint64)
		l1 := g.Alloc[opstack.L1Block]
		l1.Storage = maps.Clone(l1.Storage)
		var scalars, operator common.Hash
		binary.BigEndian.PutUint32(scalars[16:], 1368)     // base fee scalar
		binary.BigEndian.PutUint32(scalars[20:], 810_949)  // blob base fee scalar
		binary.BigEndian.PutUint32(operator[20:], 3)       // operator fee scalar
		binary.BigEndian.PutUint64(operator[24:], 200_000) // operator fee constant
		l1.Storage[types.L1BaseFeeSlot] = common.BigToHash(big.NewInt(3_000_000_000))
		l1.Storage[types.L1BlobBaseFeeSlot] = common.BigToHash(big.NewInt(7))
		l1.Storage[types.L1FeeScalarsSlot] = scalars
		l1.Storage[types.OperatorFeeParamsSlot] = operator
		g.Alloc[opstack.L1Block] = l1
	})
	if !tc.Config.IsJovian(tc.Blocks[0].Time()) || *tc.Blocks[0].Header().BlobGasUsed == 0 {
		t.Fatal("not a Jovian chain with a DA footprint")
	}
	msgs, err := tc.Messages(testchain.BaseV1)
	if err != nil {
		t.Fatal(err)
	}
	followOP(t, tc, msgs, false)
}

func followOP(t *testing.T, tc *testchain.Chain, msgs [][]byte, l1Block bool) {
	up, err := chain.Open(chain.Config{Genesis: tc.Genesis})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	srv := rpc.NewServer(rpc.Options{})
	methods, err := api.New(api.Local(up), api.Config{})
	if err != nil {
		t.Fatal(err)
	}
	methods.Register(srv)
	hs := httptest.NewServer(srv.HTTPHandler(rpc.HTTPOptions{}))
	t.Cleanup(hs.Close)
	feed := newFrameServer(t)

	fn := followNode(t, hs.URL, feed.url(), tc.Config)

	l1Vault := params.OptimismL1FeeRecipient
	next := 0
	for _, b := range tc.Blocks {
		parent, err := tc.State(up.Head())
		if err != nil {
			t.Fatal(err)
		}
		prevL1Fees := parent.GetBalance(l1Vault)
		for _, fb := range b.Flashblocks {
			feed.frames <- msgs[next]
			next++
			var snap *pending.Snapshot
			waitFor(t, fmt.Sprintf("block %d flashblock %d", b.NumberU64(), fb.Index), 20*time.Second, func() bool {
				snap = fn.Pending.Current()
				return snap != nil && snap.Header.Number.Uint64() == b.NumberU64() && snap.Index == uint64(fb.Index)
			})
			if err := sameAsOpGeth(tc, snap, fb); err != nil {
				t.Fatalf("block %d flashblock %d: %v", b.NumberU64(), fb.Index, err)
			}
			// User transactions paid the L1 data fee into its vault.
			fees, _ := snap.State.Account(l1Vault)
			if fb.Index > 0 && (fees == nil || !fees.Balance.Gt(prevL1Fees)) {
				t.Fatalf("block %d flashblock %d: L1 fee vault %v, before %s", b.NumberU64(), fb.Index, fees, prevL1Fees)
			}
			if fees != nil {
				prevL1Fees = fees.Balance
			}
		}
		// The pending L1Block holds this block's L1 origin, read over RPC.
		var l1Fee common.Hash
		if err := rpcCall(fn.URL(), &l1Fee, "eth_getStorageAt", opstack.L1Block, common.Hash{}, "pending"); err != nil || (l1Block && l1Fee.Big().Uint64() != b.L1.Number) {
			t.Fatalf("block %d: pending L1Block number %s (%v), want %d", b.NumberU64(), l1Fee.Big(), err, b.L1.Number)
		}
		// Pre-confirmed transactions and receipts (deposit nonces, L1 fee
		// fields derived on the pending block), read before the seal.
		preconfirmed := map[string]string{}
		for _, tx := range b.Transactions() {
			for _, m := range []string{"eth_getTransactionByHash", "eth_getTransactionReceipt"} {
				preconfirmed[m+tx.Hash().Hex()] = rawResult(fn.URL(), m, tx.Hash())
			}
		}
		// Seal: the upstream imports op-geth's block; its receipts' L1 fees
		// (derived by op-geth) add up to what the vault received.
		raw, _ := rlp.EncodeToBytes(b.Block)
		if _, err := up.Import(bytes.NewReader(raw)); err != nil {
			t.Fatal(err)
		}
		sum := new(big.Int)
		for _, r := range up.Receipts(up.BlockByHash(b.Hash())) {
			if r.L1Fee != nil {
				sum.Add(sum, r.L1Fee)
			}
		}
		after, _ := tc.State(b.Header())
		if got := new(big.Int).Sub(after.GetBalance(l1Vault).ToBig(), parent.GetBalance(l1Vault).ToBig()); got.Cmp(sum) != 0 || sum.Sign() == 0 {
			t.Fatalf("block %d: L1 fee vault got %s, receipts' l1Fee sum %s", b.NumberU64(), got, sum)
		}
		waitFor(t, fmt.Sprintf("head %d", b.NumberU64()), 20*time.Second, func() bool {
			return fn.Follower.Status().Head == hexutil.Uint64(b.NumberU64())
		})
		// The pending block was the sealed one: the pre-confirmed answers
		// are the sealed block's, as the upstream (whose encodings the
		// op-geth differential test checks) serves them.
		for key, got := range preconfirmed {
			m, hash := key[:len(key)-66], common.HexToHash(key[len(key)-66:])
			if want := rawResult(hs.URL, m, hash); got != want {
				t.Fatalf("block %d: %s(%s)\n pre-confirmed %s\n sealed        %s", b.NumberU64(), m, hash, got, want)
			}
		}
	}
	st := fn.Follower.Status()
	if st.Counters["block_hash_mismatch"] != 0 || st.Counters["block_hash_match"] != uint64(len(msgs)) || st.Counters["exec_invalid_flashblocks"] != 0 ||
		st.Counters["carried_over"] == 0 {
		t.Fatalf("status: %v", st.Counters)
	}
	t.Logf("counters %v", st.Counters)
}

// sameAsOpGeth compares a follower's snapshot with op-geth's block of the
// same prefix.
func sameAsOpGeth(tc *testchain.Chain, snap *pending.Snapshot, fb *testchain.Flashblock) error {
	if snap.Header.Hash() != fb.Header.Hash() {
		return fmt.Errorf("pending header\n%s\nop-geth's\n%s", headerJSON(snap.Header), headerJSON(fb.Header))
	}
	if len(snap.Receipts) != len(fb.Receipts) {
		return fmt.Errorf("%d receipts, op-geth %d", len(snap.Receipts), len(fb.Receipts))
	}
	for i, r := range snap.Receipts {
		want := fb.Receipts[i]
		a, _ := r.MarshalBinary()
		b, _ := want.MarshalBinary()
		if !bytes.Equal(a, b) || r.GasUsed != want.GasUsed || !sameUint(r.DepositNonce, want.DepositNonce) || r.ContractAddress != want.ContractAddress {
			return fmt.Errorf("receipt %d: %+v, op-geth %+v", i, r, want)
		}
	}
	want, err := tc.State(fb.Header)
	if err != nil {
		return err
	}
	d := snap.State.Flatten()
	addrs := append(chain.DevAccounts(), opstack.L1InfoDepositor, opstack.SequencerFeeVault, params.OptimismBaseFeeRecipient,
		params.OptimismL1FeeRecipient, params.OptimismOperatorFeeRecipient, params.OptimismL2ToL1MessagePasser, testchain.Store)
	for a := range d.Accounts {
		addrs = append(addrs, a)
	}
	for _, tx := range snap.Txs {
		if to := tx.To(); to != nil {
			addrs = append(addrs, *to)
		}
	}
	for _, a := range addrs {
		if err := sameAccount(snap.State, want, a); err != nil {
			return err
		}
	}
	slots := map[common.Address][]common.Hash{}
	for a, m := range d.Storage {
		for k := range m {
			slots[a] = append(slots[a], k)
		}
	}
	for i := range 10 {
		slots[opstack.L1Block] = append(slots[opstack.L1Block], common.BigToHash(big.NewInt(int64(i))))
	}
	for a, ks := range slots {
		for _, k := range ks {
			got, err := snap.State.Storage(a, k)
			if err != nil {
				return err
			}
			if w := want.GetState(a, k); got != w {
				return fmt.Errorf("slot %s of %s: %s, op-geth %s", k, a, got, w)
			}
		}
	}
	return nil
}

func sameAccount(s *pending.State, want *state.StateDB, a common.Address) error {
	got, err := s.Account(a)
	if err != nil {
		return err
	}
	if !want.Exist(a) {
		if got != nil {
			return fmt.Errorf("account %s exists in pending, not in op-geth", a)
		}
		return nil
	}
	if got == nil || !got.Balance.Eq(want.GetBalance(a)) || got.Nonce != want.GetNonce(a) || common.BytesToHash(got.CodeHash) != want.GetCodeHash(a) {
		return fmt.Errorf("account %s: pending %+v, op-geth balance %s nonce %d", a, got, want.GetBalance(a), want.GetNonce(a))
	}
	return nil
}

func sameUint(a, b *uint64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func headerJSON(h *types.Header) string {
	b, _ := h.MarshalJSON()
	return string(b)
}
