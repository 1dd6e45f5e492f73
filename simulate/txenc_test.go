package simulate

import (
	"math/big"
	"math/rand"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

// randomCall is a call as the engine holds it after prepare (nonce, gas and
// chain id set), of a random type and shape.
func randomCall(r *rand.Rand) *CallArgs {
	num := func(bits int) *hexutil.Big {
		v := new(big.Int).Rand(r, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
		return (*hexutil.Big)(v)
	}
	nonce, gas := hexutil.Uint64(r.Uint64()>>r.Intn(64)), hexutil.Uint64(r.Intn(30_000_000))
	c := &CallArgs{ChainID: num(16), Nonce: &nonce, Gas: &gas}
	if r.Intn(4) > 0 {
		to := common.Address{byte(r.Intn(256)), 0xc2}
		c.To = &to
	}
	if r.Intn(2) == 0 {
		c.Value = num(r.Intn(257))
	}
	if n := r.Intn(4); n > 0 {
		data := make(hexutil.Bytes, []int{0, 1, 55, 300}[n])
		r.Read(data)
		if r.Intn(2) == 0 {
			c.Input = &data
		} else {
			c.Data = &data
		}
	}
	if r.Intn(3) == 0 {
		al := types.AccessList{}
		for i := r.Intn(3); i > 0; i-- {
			keys := make([]common.Hash, r.Intn(3))
			for k := range keys {
				keys[k] = common.Hash{byte(k), byte(i)}
			}
			al = append(al, types.AccessTuple{Address: common.Address{byte(i)}, StorageKeys: keys})
		}
		c.AccessList = &al
	}
	switch r.Intn(8) {
	case 0: // legacy
		c.GasPrice = num(40)
	case 1: // access list, or legacy without one
		c.GasPrice = num(8)
		if c.AccessList == nil {
			c.AccessList = &types.AccessList{}
		}
	case 2:
		c.BlobHashes = []common.Hash{{0x01, byte(r.Intn(256))}}
		c.BlobFeeCap = num(32)
		c.MaxFeePerGas, c.MaxPriorityFeePerGas = num(32), num(16)
	case 3:
		c.AuthorizationList = []types.SetCodeAuthorization{{ChainID: *uint256.NewInt(1337), Address: common.Address{9}, Nonce: 3}}
		c.MaxFeePerGas = num(64)
	default: // dynamic fee, the default type
		if r.Intn(2) == 0 {
			c.MaxFeePerGas, c.MaxPriorityFeePerGas = num(r.Intn(300)), num(r.Intn(64))
		}
	}
	return c
}

func randomLogs(r *rand.Rand) []*types.Log {
	logs := make([]*types.Log, r.Intn(4))
	for i := range logs {
		l := &types.Log{Address: common.Address{byte(r.Intn(256))}, Data: make([]byte, r.Intn(70))}
		for k := r.Intn(5); k > 0; k-- {
			l.Topics = append(l.Topics, common.Hash{byte(r.Intn(256)), byte(k)})
		}
		r.Read(l.Data)
		logs[i] = l
	}
	return logs
}

// The encoder's hashes, roots, bloom and list size are go-ethereum's for
// the same transactions and receipts, on lists of 0–300 of every type (the
// keys' order changes at 128), with and without a pre-Byzantium state root.
func TestBlockEncoderMatchesTypes(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	enc := blockEncoders.Get().(*blockEncoder)
	lh := listHashers.Get().(*listHasher)
	for round, n := range []int{0, 1, 2, 3, 17, 127, 128, 129, 300, 5, 9, 40} {
		preByzantium := round%3 == 2
		enc.reset()
		var (
			txs      types.Transactions
			receipts types.Receipts
			cum      uint64
			blobGas  uint64
		)
		for i := 0; i < n; i++ {
			call := randomCall(r)
			hash, typ, err := enc.addTx(call)
			if err != nil {
				t.Fatal(err)
			}
			tx := call.transaction(types.DynamicFeeTxType)
			if typ != tx.Type() || hash != tx.Hash() {
				t.Fatalf("n=%d tx %d: type %d hash %x, types' %d %x (%+v)", n, i, typ, hash, tx.Type(), tx.Hash(), call)
			}
			cum += uint64(r.Intn(100_000))
			rc := &types.Receipt{Type: typ, CumulativeGasUsed: cum, Logs: randomLogs(r), Status: uint64(r.Intn(2))}
			var post []byte
			if preByzantium {
				post = common.Hash{byte(i), 0x55}.Bytes()
				rc.PostState = post
			}
			rc.Bloom = types.CreateBloom(rc)
			blobGas += enc.addReceipt(typ, call, post, rc.Status == types.ReceiptStatusFailed, cum, rc.Logs)
			if typ == types.BlobTxType {
				blobGas -= tx.BlobGas()
			}
			txs, receipts = append(txs, tx), append(receipts, rc)
		}
		var h types.Header
		enc.roots(lh, &h)
		if want := types.DeriveSha(txs, trie.NewStackTrie(nil)); h.TxHash != want {
			t.Errorf("n=%d: transactions root %x, want %x", n, h.TxHash, want)
		}
		if want := types.DeriveSha(receipts, trie.NewStackTrie(nil)); h.ReceiptHash != want {
			t.Errorf("n=%d: receipts root %x, want %x", n, h.ReceiptHash, want)
		}
		if want := types.MergeBloom(receipts); h.Bloom != want {
			t.Errorf("n=%d: bloom differs", n)
		}
		if payload, sized := txsPayload(txs); sized != enc.sized || (sized && payload != enc.payload) {
			t.Errorf("n=%d: payload %d (%v), want %d (%v)", n, enc.payload, enc.sized, payload, sized)
		}
		if blobGas != 0 {
			t.Errorf("n=%d: blob gas off by %d", n, blobGas)
		}
	}
}

// A 2-transfer block's transactions and receipts through types (NewTx,
// Hash, DeriveSha, Size, a receipt with its bloom) and through the encoder.
func BenchmarkBlockEncoder(b *testing.B) {
	nonce, gas := hexutil.Uint64(0), hexutil.Uint64(30_000_000)
	to := common.HexToAddress("0xc1")
	calls := []*CallArgs{
		{ChainID: (*hexutil.Big)(big.NewInt(1337)), Nonce: &nonce, Gas: &gas, To: &to, Value: (*hexutil.Big)(big.NewInt(1000))},
		{ChainID: (*hexutil.Big)(big.NewInt(1337)), Nonce: &nonce, Gas: &gas, To: &to, Value: (*hexutil.Big)(big.NewInt(1000))},
	}
	b.Run("types", func(b *testing.B) {
		b.ReportAllocs()
		lh := listHashers.Get().(*listHasher)
		for i := 0; i < b.N; i++ {
			txs, receipts := make(types.Transactions, len(calls)), make(types.Receipts, len(calls))
			for k, c := range calls {
				txs[k] = c.transaction(types.DynamicFeeTxType)
				rc := &types.Receipt{Type: txs[k].Type(), Status: 1, CumulativeGasUsed: 21000 * uint64(k+1), TxHash: txs[k].Hash(), Logs: []*types.Log{}}
				rc.Bloom = types.CreateBloom(rc)
				receipts[k] = rc
			}
			types.DeriveSha(txs, lh)
			types.DeriveSha(receipts, lh)
			types.MergeBloom(receipts)
			txsPayload(txs)
		}
	})
	b.Run("encoder", func(b *testing.B) {
		b.ReportAllocs()
		lh := listHashers.Get().(*listHasher)
		enc := blockEncoders.Get().(*blockEncoder)
		var h types.Header
		for i := 0; i < b.N; i++ {
			enc.reset()
			for k, c := range calls {
				enc.addTx(c)
				enc.addReceipt(types.DynamicFeeTxType, c, nil, false, 21000*uint64(k+1), nil)
			}
			enc.roots(lh, &h)
		}
	})
}
