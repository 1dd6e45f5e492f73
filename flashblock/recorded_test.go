package flashblock_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/internal/testchain"
	"github.com/preconf/preconf/opstack"
)

var update = flag.Bool("update", false, "rewrite testdata/opstack-*.jsonl from the OP test chain")

// Recorded is the OP test chain whose flashblocks testdata/ holds.
func Recorded(t testing.TB) *testchain.Chain {
	t.Helper()
	tc, err := testchain.DevL2(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

var recordedFiles = map[testchain.Format]string{
	testchain.BaseV1: "testdata/opstack-base-v1.jsonl",
	testchain.Legacy: "testdata/opstack-legacy.jsonl",
}

// TestRecordedPayloadsAreCurrent: the files are the test chain's flashblocks
// (go test -run Recorded -update rewrites them).
func TestRecordedPayloadsAreCurrent(t *testing.T) {
	tc := Recorded(t)
	for f, path := range recordedFiles {
		msgs, err := tc.Messages(f)
		if err != nil {
			t.Fatal(err)
		}
		want := append(bytes.Join(msgs, []byte("\n")), '\n')
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s is not the test chain's flashblocks (go test ./flashblock -run Recorded -update)", path)
		}
	}
}

// TestRecordedPayloadsDecode reads both recorded formats, as text and as
// brotli frames: deposits first at index 0 (the L1-attributes deposit
// decodes, with Isthmus calldata), metadata of either generation.
func TestRecordedPayloadsDecode(t *testing.T) {
	for f, path := range recordedFiles {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
		if len(lines) != 8 {
			t.Fatalf("%s: %d messages", path, len(lines))
		}
		blocks := 0
		for i, line := range lines {
			for _, frame := range [][]byte{line, flashblock.Compress(line)} {
				fb, err := flashblock.Decode(frame)
				if err != nil {
					t.Fatalf("%s:%d: %v", path, i+1, err)
				}
				md, err := fb.ParseMetadata()
				if err != nil {
					t.Fatalf("%s:%d metadata: %v", path, i+1, err)
				}
				if fb.Diff.BlobGasUsed == nil || fb.Diff.WithdrawalsRoot == ([32]byte{}) {
					t.Fatalf("%s:%d: diff %+v", path, i+1, fb.Diff)
				}
				switch f {
				case testchain.BaseV1:
					if md.Receipts != nil || md.NewAccountBalances != nil || md.AccessList == nil || md.AccessList.FalHash == ([32]byte{}) ||
						len(md.AccessList.AccountChanges) == 0 || md.AccessList.MaxTxIndex <= md.AccessList.MinTxIndex {
						t.Fatalf("%s:%d: Base V1 metadata %+v", path, i+1, md)
					}
				case testchain.Legacy:
					if len(md.Receipts) != len(fb.Diff.Transactions) || len(md.NewAccountBalances) == 0 || md.AccessList != nil {
						t.Fatalf("%s:%d: legacy metadata %+v", path, i+1, md)
					}
				}
				if fb.Index != 0 {
					continue
				}
				blocks++
				var tx types.Transaction
				if err := tx.UnmarshalBinary(fb.Diff.Transactions[0]); err != nil || !tx.IsDepositTx() {
					t.Fatalf("%s:%d: first transaction %v", path, i+1, err)
				}
				info, layout, err := opstack.ParseL1Info(tx.Data())
				if err != nil || layout != opstack.LayoutIsthmus || info.BaseFee.Sign() == 0 || uint64(md.BlockNumber) != fb.Number() {
					t.Fatalf("%s:%d: L1 attributes %+v %v", path, i+1, info, err)
				}
				if f == testchain.BaseV1 && md.AccessList.MinTxIndex != 0 {
					t.Fatalf("%s:%d: index 0 access list from %d", path, i+1, md.AccessList.MinTxIndex)
				}
			}
		}
		if blocks != 4 {
			t.Fatalf("%s: %d index-0 frames decoded", path, blocks)
		}
	}
}

// TestUnknownFieldsIgnored: a field a newer builder adds, at any level of
// the message, changes nothing that is decoded.
func TestUnknownFieldsIgnored(t *testing.T) {
	raw, err := os.ReadFile(recordedFiles[testchain.BaseV1])
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.SplitN(raw, []byte("\n"), 2)[0]
	var msg map[string]any
	if err := json.Unmarshal(line, &msg); err != nil {
		t.Fatal(err)
	}
	extra := map[string]any{"x": []any{1, "two", nil}, "y": map[string]any{"z": true}}
	msg["future_field"] = extra
	for _, k := range []string{"base", "diff", "metadata"} {
		msg[k].(map[string]any)["future_field"] = extra
	}
	al := msg["metadata"].(map[string]any)["access_list"].(map[string]any)
	al["future_field"] = extra
	al["account_changes"].([]any)[0].(map[string]any)["storageRoot"] = "0x80"
	changed, _ := json.Marshal(msg)
	a, err := flashblock.Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	b, err := flashblock.Decode(changed)
	if err != nil {
		t.Fatal(err)
	}
	ma, _ := a.ParseMetadata()
	mb, err := b.ParseMetadata()
	if err != nil {
		t.Fatal(err)
	}
	a.Metadata, b.Metadata = nil, nil
	ea, _ := flashblock.Encode(a)
	eb, _ := flashblock.Encode(b)
	if !bytes.Equal(ea, eb) || mb.BlockNumber != ma.BlockNumber || mb.AccessList.FalHash != ma.AccessList.FalHash ||
		len(mb.AccessList.AccountChanges) != len(ma.AccessList.AccountChanges) {
		t.Fatalf("unknown fields changed the decoded message:\n%s\n%s", ea, eb)
	}
}
