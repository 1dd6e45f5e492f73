package ethjson

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
)

var (
	testKey, _  = crypto.HexToECDSA(chain.DevKeys[0])
	testAddr    = crypto.PubkeyToAddress(testKey.PublicKey)
	testChainID = big.NewInt(1337)
	testSigner  = types.LatestSignerForChainID(testChainID)
	testTo      = common.HexToAddress("0x00000000000000000000000000000000000000aa")
)

func signTx(t *testing.T, signer types.Signer, key *ecdsa.PrivateKey, data types.TxData) *types.Transaction {
	t.Helper()
	tx, err := types.SignNewTx(key, signer, data)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// testTxs is one transaction of every type the chain knows.
func testTxs(t *testing.T) map[string]*types.Transaction {
	al := types.AccessList{{Address: testTo, StorageKeys: []common.Hash{{1}}}}
	return map[string]*types.Transaction{
		"legacy-unprotected": signTx(t, types.HomesteadSigner{}, testKey, &types.LegacyTx{Nonce: 1, GasPrice: big.NewInt(7), Gas: 21000, To: &testTo, Value: big.NewInt(1)}),
		"legacy-eip155":      signTx(t, testSigner, testKey, &types.LegacyTx{Nonce: 2, GasPrice: big.NewInt(7), Gas: 21000, To: &testTo, Value: big.NewInt(1), Data: []byte{1, 2}}),
		"create":             signTx(t, testSigner, testKey, &types.LegacyTx{Nonce: 3, GasPrice: big.NewInt(7), Gas: 90000, Data: []byte{0x60, 0}}),
		"access-list":        signTx(t, testSigner, testKey, &types.AccessListTx{ChainID: testChainID, Nonce: 4, GasPrice: big.NewInt(9), Gas: 30000, To: &testTo, AccessList: al}),
		"access-list-nil":    signTx(t, testSigner, testKey, &types.AccessListTx{ChainID: testChainID, Nonce: 5, GasPrice: big.NewInt(9), Gas: 30000, To: &testTo}),
		"dynamic-fee":        signTx(t, testSigner, testKey, &types.DynamicFeeTx{ChainID: testChainID, Nonce: 6, GasTipCap: big.NewInt(2), GasFeeCap: big.NewInt(100), Gas: 30000, To: &testTo, AccessList: types.AccessList{}}),
		"blob": signTx(t, testSigner, testKey, &types.BlobTx{ChainID: uint256.NewInt(1337), Nonce: 7, GasTipCap: uint256.NewInt(1), GasFeeCap: uint256.NewInt(50),
			Gas: 50000, To: testTo, BlobFeeCap: uint256.NewInt(3), BlobHashes: []common.Hash{{0x01, 0xaa}}}),
		"set-code": signTx(t, testSigner, testKey, &types.SetCodeTx{ChainID: uint256.NewInt(1337), Nonce: 8, GasTipCap: uint256.NewInt(1), GasFeeCap: uint256.NewInt(50),
			Gas: 60000, To: testTo, AccessList: types.AccessList{}, AuthList: []types.SetCodeAuthorization{{
				ChainID: *uint256.NewInt(1337), Address: testTo, Nonce: 9, V: 1, R: *uint256.NewInt(0xabc), S: *uint256.NewInt(0xdef)}}}),
	}
}

// objectKeys returns the top-level keys of a JSON object, in order.
func objectKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", b)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func decodeObject(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("invalid JSON %v: %s", err, b)
	}
	return m
}

// TestTxMatchesGethEncoding checks every field our RPC transaction shares
// with go-ethereum's own transaction JSON, for every type.
func TestTxMatchesGethEncoding(t *testing.T) {
	loc := Loc{BlockHash: common.Hash{0xbb}, Number: 5, Time: 60, Index: 2, BaseFee: big.NewInt(10)}
	for name, tx := range testTxs(t) {
		t.Run(name, func(t *testing.T) {
			got := decodeObject(t, AppendTx(nil, tx, loc, testSigner))
			ref, err := tx.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			want := decodeObject(t, ref)
			shared := 0
			for k, w := range want {
				if k == "gasPrice" && tx.Type() >= types.DynamicFeeTxType {
					continue // the RPC object shows the effective price
				}
				if g, ok := got[k]; ok {
					shared++
					if !bytes.Equal(g, w) {
						t.Errorf("%s = %s, go-ethereum encodes %s", k, g, w)
					}
				}
			}
			if shared < 9 {
				t.Errorf("only %d shared fields compared", shared)
			}
			if string(got["from"]) != `"`+hexLower(testAddr[:])+`"` {
				t.Errorf("from = %s, want %s", got["from"], testAddr)
			}
		})
	}
}

func hexLower(b []byte) string {
	const digits = "0123456789abcdef"
	out := []byte("0x")
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestTxTypeSpecificFields(t *testing.T) {
	txs := testTxs(t)
	located := Loc{BlockHash: common.Hash{0xbb}, Number: 5, Time: 60, Index: 2, BaseFee: big.NewInt(10)}
	tests := []struct {
		tx      string
		loc     Loc
		keys    []string
		checks  map[string]string
		missing []string
	}{
		{"legacy-unprotected", located,
			[]string{"blockHash", "blockNumber", "blockTimestamp", "from", "gas", "gasPrice", "hash", "input", "nonce", "to", "transactionIndex", "value", "type", "v", "r", "s"},
			map[string]string{"type": `"0x0"`, "gasPrice": `"0x7"`, "blockNumber": `"0x5"`, "blockTimestamp": `"0x3c"`, "transactionIndex": `"0x2"`}, nil},
		{"legacy-eip155", located,
			[]string{"blockHash", "blockNumber", "blockTimestamp", "from", "gas", "gasPrice", "hash", "input", "nonce", "to", "transactionIndex", "value", "type", "chainId", "v", "r", "s"},
			map[string]string{"chainId": `"0x539"`, "input": `"0x0102"`}, nil},
		{"create", located, nil, map[string]string{"to": "null"}, nil},
		// types.NewTx copies the access list, so even one built without
		// it is an empty list, not null.
		{"access-list-nil", located, nil, map[string]string{"accessList": "[]"}, []string{"maxFeePerGas"}},
		{"dynamic-fee", located,
			[]string{"blockHash", "blockNumber", "blockTimestamp", "from", "gas", "gasPrice", "maxFeePerGas", "maxPriorityFeePerGas", "hash", "input", "nonce", "to", "transactionIndex", "value", "type", "accessList", "chainId", "v", "r", "s", "yParity"},
			map[string]string{"gasPrice": `"0xc"`, "accessList": "[]", "type": `"0x2"`}, nil},
		{"dynamic-fee", Loc{}, nil, // not in a block: location null, price = fee cap
			map[string]string{"gasPrice": `"0x64"`, "blockHash": "null", "blockNumber": "null", "blockTimestamp": "null", "transactionIndex": "null"}, nil},
		{"blob", located,
			[]string{"blockHash", "blockNumber", "blockTimestamp", "from", "gas", "gasPrice", "maxFeePerGas", "maxPriorityFeePerGas", "maxFeePerBlobGas", "hash", "input", "nonce", "to", "transactionIndex", "value", "type", "accessList", "chainId", "blobVersionedHashes", "v", "r", "s", "yParity"},
			map[string]string{"gasPrice": `"0xb"`, "maxFeePerBlobGas": `"0x3"`, "accessList": "[]",
				"blobVersionedHashes": `["0x01aa000000000000000000000000000000000000000000000000000000000000"]`}, nil},
		{"set-code", Loc{BlockHash: common.Hash{1}, BaseFee: big.NewInt(100)}, nil,
			map[string]string{"gasPrice": `"0x32"`, // capped by the fee cap
				"authorizationList": `[{"chainId":"0x539","address":"0x00000000000000000000000000000000000000aa","nonce":"0x9","yParity":"0x1","r":"0xabc","s":"0xdef"}]`},
			[]string{"blobVersionedHashes", "maxFeePerBlobGas"}},
	}
	for _, tc := range tests {
		t.Run(tc.tx, func(t *testing.T) {
			b := AppendTx(nil, txs[tc.tx], tc.loc, testSigner)
			if tc.keys != nil {
				if got := objectKeys(t, b); !slices.Equal(got, tc.keys) {
					t.Errorf("keys\n got %v\nwant %v", got, tc.keys)
				}
			}
			m := decodeObject(t, b)
			for k, want := range tc.checks {
				if string(m[k]) != want {
					t.Errorf("%s = %s, want %s", k, m[k], want)
				}
			}
			for _, k := range tc.missing {
				if _, ok := m[k]; ok {
					t.Errorf("%s present, want absent", k)
				}
			}
			if y, ok := m["yParity"]; ok && string(y) != string(m["v"]) {
				t.Errorf("yParity %s != v %s", y, m["v"])
			}
			if v := string(m["v"]); txs[tc.tx].Type() == types.LegacyTxType && !txs[tc.tx].Protected() && v != `"0x1b"` && v != `"0x1c"` {
				t.Errorf("unprotected v = %s", v)
			}
		})
	}
}

func TestReceiptEncoding(t *testing.T) {
	txs := testTxs(t)
	logs := []*types.Log{{Address: testTo, Topics: []common.Hash{{7}}, Data: []byte{1}, BlockNumber: 5, TxHash: common.Hash{9}, TxIndex: 2, Index: 4}}
	loc := Loc{BlockHash: common.Hash{0xbb}, Number: 5, Time: 60, Index: 2, BaseFee: big.NewInt(10)}
	tests := []struct {
		name    string
		tx      string
		r       *types.Receipt
		checks  map[string]string
		missing []string
	}{
		{"status-and-call", "dynamic-fee",
			&types.Receipt{Status: 1, CumulativeGasUsed: 50000, GasUsed: 21000, Logs: logs, EffectiveGasPrice: big.NewInt(12)},
			map[string]string{"status": `"0x1"`, "contractAddress": "null", "effectiveGasPrice": `"0xc"`, "type": `"0x2"`,
				"logs": `[{"address":"0x00000000000000000000000000000000000000aa","topics":["0x0700000000000000000000000000000000000000000000000000000000000000"],"data":"0x01","blockNumber":"0x5","transactionHash":"0x0900000000000000000000000000000000000000000000000000000000000000","transactionIndex":"0x2","blockHash":"0xbb00000000000000000000000000000000000000000000000000000000000000","blockTimestamp":"0x3c","logIndex":"0x4","removed":false}]`},
			[]string{"root", "blobGasUsed", "blobGasPrice"}},
		{"pre-byzantium-root", "create",
			&types.Receipt{PostState: common.Hash{5}.Bytes(), ContractAddress: common.Address{0xcc}},
			map[string]string{"root": `"0x0500000000000000000000000000000000000000000000000000000000000000"`, "contractAddress": `"0xcc00000000000000000000000000000000000000"`, "to": "null", "logs": "[]",
				"effectiveGasPrice": `"0x7"`}, // computed when the receipt lacks it
			[]string{"status"}},
		{"blob", "blob",
			&types.Receipt{Status: 0, BlobGasUsed: 131072, BlobGasPrice: big.NewInt(1)},
			map[string]string{"status": `"0x0"`, "blobGasUsed": `"0x20000"`, "blobGasPrice": `"0x1"`, "effectiveGasPrice": `"0xb"`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendReceipt(nil, tc.r, txs[tc.tx], loc, testSigner)
			keys := objectKeys(t, b)
			if !slices.IsSorted(keys) {
				t.Errorf("keys not in go-ethereum's (sorted) order: %v", keys)
			}
			m := decodeObject(t, b)
			for k, want := range tc.checks {
				if string(m[k]) != want {
					t.Errorf("%s = %s, want %s", k, m[k], want)
				}
			}
			for _, k := range tc.missing {
				if _, ok := m[k]; ok {
					t.Errorf("%s present, want absent", k)
				}
			}
		})
	}
}

func TestLogNilTopicsAndEmptyData(t *testing.T) {
	got := string(AppendLog(nil, &types.Log{}, common.Hash{}, 0))
	want := `{"address":"0x0000000000000000000000000000000000000000","topics":null,"data":"0x","blockNumber":"0x0","transactionHash":"0x0000000000000000000000000000000000000000000000000000000000000000","transactionIndex":"0x0","blockHash":"0x0000000000000000000000000000000000000000000000000000000000000000","blockTimestamp":"0x0","logIndex":"0x0","removed":false}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// go-ethereum's own encoding of the same log agrees.
	ref, _ := json.Marshal(&types.Log{})
	if string(ref) != want {
		t.Errorf("go-ethereum encodes %s", ref)
	}
}

func TestBlockEncoding(t *testing.T) {
	txs := testTxs(t)
	blobGas, excess, slot := uint64(131072), uint64(0), uint64(3)
	root := common.Hash{0x77}
	header := &types.Header{
		ParentHash: common.Hash{1}, Coinbase: common.Address{2}, Number: big.NewInt(9), GasLimit: 30_000_000, GasUsed: 100,
		Time: 99, Extra: []byte("x"), Difficulty: new(big.Int), BaseFee: big.NewInt(10), WithdrawalsHash: &types.EmptyWithdrawalsHash,
		BlobGasUsed: &blobGas, ExcessBlobGas: &excess, ParentBeaconRoot: &root, RequestsHash: &root, SlotNumber: &slot,
	}
	body := types.Body{
		Transactions: types.Transactions{txs["legacy-eip155"], txs["blob"]},
		Withdrawals:  types.Withdrawals{{Index: 1, Validator: 2, Address: common.Address{3}, Amount: 4}},
	}
	block := types.NewBlockWithHeader(header).WithBody(body)
	hash := block.Hash()
	for _, opt := range []BlockOptions{{}, {FullTx: true}, {Pending: true}, {FullTx: true, Pending: true}} {
		b := AppendBlock(nil, block, hash, opt, testSigner)
		keys := objectKeys(t, b)
		if !slices.IsSorted(keys) {
			t.Errorf("%+v: keys not sorted: %v", opt, keys)
		}
		m := decodeObject(t, b)
		for _, k := range []string{"hash", "nonce", "miner"} {
			if isNull := string(m[k]) == "null"; isNull != opt.Pending {
				t.Errorf("%+v: %s = %s", opt, k, m[k])
			}
		}
		checks := map[string]string{
			"size":          appendQuotedU64(block.Size()),
			"withdrawals":   `[{"index":"0x1","validatorIndex":"0x2","address":"0x0300000000000000000000000000000000000000","amount":"0x4"}]`,
			"uncles":        "[]",
			"slotNumber":    `"0x3"`,
			"blobGasUsed":   `"0x20000"`,
			"excessBlobGas": `"0x0"`,
			"extraData":     `"0x78"`,
		}
		for k, want := range checks {
			if string(m[k]) != want {
				t.Errorf("%+v: %s = %s, want %s", opt, k, m[k], want)
			}
		}
		var txsOut []json.RawMessage
		if err := json.Unmarshal(m["transactions"], &txsOut); err != nil || len(txsOut) != 2 {
			t.Fatalf("transactions: %s", m["transactions"])
		}
		if opt.FullTx {
			tx := decodeObject(t, txsOut[1])
			if string(tx["blockHash"]) != `"`+hash.Hex()+`"` || string(tx["transactionIndex"]) != `"0x1"` {
				t.Errorf("full tx location: %s %s", tx["blockHash"], tx["transactionIndex"])
			}
		} else if string(txsOut[0]) != `"`+txs["legacy-eip155"].Hash().Hex()+`"` {
			t.Errorf("tx hash: %s", txsOut[0])
		}
	}
	// A pre-Shanghai block has neither withdrawals nor withdrawalsRoot.
	old := types.NewBlockWithHeader(&types.Header{Number: big.NewInt(1), Difficulty: big.NewInt(131072)})
	m := decodeObject(t, AppendBlock(nil, old, old.Hash(), BlockOptions{}, testSigner))
	for _, k := range []string{"withdrawals", "withdrawalsRoot", "baseFeePerGas", "blobGasUsed", "requestsHash"} {
		if _, ok := m[k]; ok {
			t.Errorf("pre-London block has %s", k)
		}
	}
	if string(m["difficulty"]) != `"0x20000"` {
		t.Errorf("difficulty = %s", m["difficulty"])
	}
}

func appendQuotedU64(v uint64) string { return string(AppendU64(nil, v)) }

func TestHexEncodings(t *testing.T) {
	tests := []struct{ got, want string }{
		{string(AppendU64(nil, 0)), `"0x0"`},
		{string(AppendU64(nil, 255)), `"0xff"`},
		{string(AppendBig(nil, nil)), `null`},
		{string(AppendBig(nil, new(big.Int))), `"0x0"`},
		{string(AppendBig(nil, big.NewInt(-17))), `"-0x11"`},
		{string(AppendBig(nil, new(big.Int).Lsh(big.NewInt(1), 70))), `"0x400000000000000000"`},
		{string(AppendBig(nil, new(big.Int).SetUint64(1<<63))), `"0x8000000000000000"`},
		{string(AppendHexBytes(nil, nil)), `"0x"`},
		{string(AppendHashes(nil, nil)), `[]`},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

// The empty bloom's shortcut writes what hex encoding does.
func TestBloomEncoding(t *testing.T) {
	var some types.Bloom
	some.Add([]byte("topic"))
	for _, b := range []types.Bloom{{}, some} {
		var e Encoder
		e.Open()
		e.Bloom("logsBloom", &b)
		e.Close()
		want, _ := json.Marshal(map[string]types.Bloom{"logsBloom": b})
		if string(e.Buf) != string(want) {
			t.Errorf("got %s\nwant %s", e.Buf, want)
		}
	}
}

func BenchmarkAppendReceipt(b *testing.B) {
	tx, _ := types.SignNewTx(testKey, testSigner, &types.DynamicFeeTx{ChainID: testChainID, GasTipCap: big.NewInt(2), GasFeeCap: big.NewInt(100), Gas: 30000, To: &testTo})
	r := &types.Receipt{Status: 1, GasUsed: 21000, Logs: []*types.Log{{Address: testTo, Topics: []common.Hash{{1}, {2}}, Data: make([]byte, 64)}}}
	loc := Loc{BlockHash: common.Hash{1}, Number: 1, BaseFee: big.NewInt(10)}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendReceipt(buf[:0], r, tx, loc, testSigner)
	}
}
