package flashblock

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// sample is the message of the format note, with both receipt encodings.
var sample = `{
  "payload_id": "0x0a0a0a0a0a0a0a0a",
  "index": 0,
  "base": {
    "parent_beacon_block_root": "0x2222222222222222222222222222222222222222222222222222222222222222",
    "parent_hash": "0x3333333333333333333333333333333333333333333333333333333333333333",
    "fee_recipient": "0x4200000000000000000000000000000000000011",
    "prev_randao": "0x4444444444444444444444444444444444444444444444444444444444444444",
    "block_number": "0x64",
    "gas_limit": "0x1c9c380",
    "timestamp": "0x686d6600",
    "extra_data": "0x000102",
    "base_fee_per_gas": "0x3b9aca00"
  },
  "diff": {
    "state_root": "0x5555555555555555555555555555555555555555555555555555555555555555",
    "receipts_root": "0x6666666666666666666666666666666666666666666666666666666666666666",
    "logs_bloom": "0x` + zeros512 + `",
    "gas_used": "0xc350",
    "block_hash": "0x7777777777777777777777777777777777777777777777777777777777777777",
    "transactions": ["0x02f801", "0xf86b"],
    "withdrawals": [],
    "withdrawals_root": "0x8888888888888888888888888888888888888888888888888888888888888888"
  },
  "metadata": {
    "block_number": 100,
    "unknown_field": {"x": 1},
    "new_account_balances": { "0x00000000000000000000000000000000000000bb": "0x2540be400" },
    "receipts": {
      "0x1111111111111111111111111111111111111111111111111111111111111111": { "type": "0x2", "status": "0x1", "cumulativeGasUsed": "0xc350", "logs": [] },
      "0x9999999999999999999999999999999999999999999999999999999999999999": { "Eip1559": { "status": "0x0", "cumulativeGasUsed": "0xa410", "logs": [{"address": "0x00000000000000000000000000000000000000aa", "topics": [], "data": "0x01"}] } }
    }
  }
}`

var zeros512 = strings.Repeat("0", 512)

func TestDecodeJSONAndBrotli(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"json text frame", []byte(sample)},
		{"brotli binary frame", Compress([]byte(sample))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb, err := Decode(tc.frame)
			if err != nil {
				t.Fatal(err)
			}
			if fb.PayloadID.String() != "0x0a0a0a0a0a0a0a0a" || fb.Index != 0 || fb.Base == nil {
				t.Fatalf("header fields: %+v", fb)
			}
			if fb.Number() != 100 || uint64(fb.Base.GasLimit) != 30_000_000 || fb.Base.BaseFeePerGas.ToInt().Uint64() != 1_000_000_000 {
				t.Fatalf("base: %+v", fb.Base)
			}
			if fb.Base.FeeRecipient != common.HexToAddress("0x4200000000000000000000000000000000000011") {
				t.Fatalf("fee recipient %s", fb.Base.FeeRecipient)
			}
			if len(fb.Diff.Transactions) != 2 || fb.Diff.BlobGasUsed != nil || uint64(fb.Diff.GasUsed) != 50000 {
				t.Fatalf("diff: %+v", fb.Diff)
			}
			hashes := fb.TxHashes()
			if hashes[0] != crypto.Keccak256Hash([]byte{0x02, 0xf8, 0x01}) {
				t.Fatalf("tx hash %s", hashes[0])
			}
			md, err := fb.ParseMetadata()
			if err != nil {
				t.Fatal(err)
			}
			if md.BlockNumber != 100 || len(md.NewAccountBalances) != 1 || len(md.Receipts) != 2 {
				t.Fatalf("metadata: %+v", md)
			}
			in := md.Receipts[common.HexToHash("0x1111111111111111111111111111111111111111111111111111111111111111")]
			ex := md.Receipts[common.HexToHash("0x9999999999999999999999999999999999999999999999999999999999999999")]
			if in.Type != types.DynamicFeeTxType || in.Status != 1 || in.CumulativeGasUsed != 50000 {
				t.Fatalf("internally tagged receipt: %+v", in)
			}
			if ex.Type != types.DynamicFeeTxType || ex.Status != 0 || ex.CumulativeGasUsed != 0xa410 || len(ex.Logs) != 1 || ex.Logs[0].Data[0] != 1 {
				t.Fatalf("externally tagged receipt: %+v", ex)
			}
		})
	}
}

func TestDecodeLaterIndexAndRoundTrip(t *testing.T) {
	msg := `{"payload_id":"0x0102030405060708","index":3,"diff":{"state_root":"0x` + strings.Repeat("1", 64) +
		`","receipts_root":"0x` + strings.Repeat("2", 64) + `","logs_bloom":"0x` + zeros512 +
		`","gas_used":"0x0","block_hash":"0x` + strings.Repeat("3", 64) + `","transactions":[],"withdrawals":[],"withdrawals_root":"0x` + strings.Repeat("4", 64) + `","blob_gas_used":"0x0"},"metadata":{"block_number":7}}`
	fb, err := Decode([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	if fb.Index != 3 || fb.Base != nil || fb.Number() != 0 || fb.Diff.BlobGasUsed == nil {
		t.Fatalf("decoded %+v", fb)
	}
	enc, err := Encode(fb)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Decode(Compress(enc))
	if err != nil {
		t.Fatal(err)
	}
	if again.PayloadID != fb.PayloadID || again.Index != 3 || again.Diff.BlockHash != fb.Diff.BlockHash {
		t.Fatalf("round trip: %+v", again)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
		want  error // nil: any error
	}{
		{"empty", nil, ErrEmptyFrame},
		{"blank", []byte("  \n"), ErrEmptyFrame},
		{"binary garbage", []byte{0xff, 0x00, 0x13, 0x37}, ErrBadBrotli},
		{"brotli of non-json", Compress([]byte("hello")), ErrBadBrotli},
		{"bad json", []byte(`{"payload_id":`), nil},
		{"short payload id", []byte(`{"payload_id":"0x01","index":1,"diff":{}}`), nil},
		{"index 0 without base", []byte(`{"payload_id":"0x0102030405060708","index":0,"diff":{}}`), nil},
		{"base without base fee", []byte(`{"payload_id":"0x0102030405060708","index":0,"base":{"block_number":"0x1"},"diff":{}}`), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.frame)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMetadataIsNeverFatal(t *testing.T) {
	var fb Message
	if err := json.Unmarshal([]byte(`{"payload_id":"0x0102030405060708","index":2,"diff":{},"metadata":{"receipts":{"0x11":{"Weird":{}}}}}`), &fb); err != nil {
		t.Fatalf("the flashblock itself must decode: %v", err)
	}
	if _, err := fb.ParseMetadata(); err == nil {
		t.Fatal("malformed metadata parsed without error")
	}
}
