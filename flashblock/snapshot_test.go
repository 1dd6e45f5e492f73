package flashblock

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// The decoder (written separately from the encoder, to the same format
// note) reads every field of an encoded snapshot back, as JSON and as
// brotli.
func TestDecodeEncodedSnapshot(t *testing.T) {
	for _, index := range []uint64{0, 3} {
		snap, tx := fixture(t, index)
		msg, err := EncodeSnapshot(snap)
		if err != nil {
			t.Fatal(err)
		}
		for name, frame := range map[string][]byte{"json": msg, "brotli": Compress(msg)} {
			fb, err := Decode(frame)
			if err != nil {
				t.Fatalf("index %d %s: %v", index, name, err)
			}
			h := snap.Header
			if fb.PayloadID != PayloadID(snap.PayloadID) || fb.Index != index {
				t.Fatalf("%s: payload %s index %d", name, fb.PayloadID, fb.Index)
			}
			if (fb.Base != nil) != (index == 0) {
				t.Fatalf("%s index %d: base present %v", name, index, fb.Base != nil)
			}
			if b := fb.Base; b != nil {
				if b.ParentHash != h.ParentHash || b.ParentBeaconBlockRoot != *h.ParentBeaconRoot || b.FeeRecipient != h.Coinbase ||
					b.PrevRandao != h.MixDigest || uint64(b.BlockNumber) != h.Number.Uint64() || uint64(b.GasLimit) != h.GasLimit ||
					uint64(b.Timestamp) != h.Time || string(b.ExtraData) != string(h.Extra) || b.BaseFeePerGas.ToInt().Cmp(h.BaseFee) != 0 {
					t.Fatalf("%s: base %+v", name, b)
				}
			}
			d := fb.Diff
			if d.StateRoot != h.Root || d.ReceiptsRoot != h.ReceiptHash || d.LogsBloom != h.Bloom || uint64(d.GasUsed) != h.GasUsed ||
				d.BlockHash != h.Hash() || d.WithdrawalsRoot != *h.WithdrawalsHash || d.BlobGasUsed == nil || uint64(*d.BlobGasUsed) != *h.BlobGasUsed {
				t.Fatalf("%s: diff %+v", name, d)
			}
			if hs := fb.TxHashes(); len(hs) != 1 || hs[0] != tx.Hash() {
				t.Fatalf("%s: transactions %v", name, hs)
			}
			md, err := fb.ParseMetadata()
			if err != nil {
				t.Fatalf("%s: metadata: %v", name, err)
			}
			r := md.Receipts[tx.Hash()]
			if md.BlockNumber != 100 || md.NewAccountBalances[balanceOf].ToInt().Uint64() != 0x2540be400 || r == nil ||
				r.Type != 2 || r.Status != 1 || r.CumulativeGasUsed != 50_000 || len(r.Logs) != 1 ||
				r.Logs[0].Address != logAddr || len(r.Logs[0].Topics) != 1 || r.Logs[0].Topics[0] != logTopic || common.Bytes2Hex(r.Logs[0].Data) != "0102" {
				t.Fatalf("%s: metadata %+v receipt %+v", name, md, r)
			}
		}
	}
}
