package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/sequencer"
)

// TestOPStackStreams: on the default dev chain (OP-stack) every block's
// first /flashblocks message carries the L1-attributes deposit alone in
// Base's format (the SequencerFeeVault as fee recipient, the deposit's
// receipt with depositNonce and depositReceiptVersion), and
// eth_subscribe("newFlashblockTransactions", true) shows it as op-geth
// shows deposits (sourceHash, mint, depositReceiptVersion).
func TestOPStackStreams(t *testing.T) {
	n := startNode(t, Config{HTTPAddr: "127.0.0.1", Sequencer: &sequencer.Config{BlockTime: 500 * time.Millisecond, Interval: 100 * time.Millisecond}})
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(n.URL(), "http")
	feed, _, err := websocket.Dial(ctx, ws+"/flashblocks", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.CloseNow()
	feed.SetReadLimit(16 << 20)
	sub, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.CloseNow()
	sub.SetReadLimit(16 << 20)
	if err := sub.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newFlashblockTransactions",true]}`)); err != nil {
		t.Fatal(err)
	}

	// The feed: wait for an index-0 message.
	for {
		_, raw, err := feed.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Index uint64 `json:"index"`
			Base  *struct {
				FeeRecipient common.Address `json:"fee_recipient"`
				ExtraData    hexutil.Bytes  `json:"extra_data"`
			} `json:"base"`
			Diff struct {
				Transactions []hexutil.Bytes `json:"transactions"`
			} `json:"diff"`
			Metadata struct {
				Receipts map[common.Hash]map[string]any `json:"receipts"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Index != 0 {
			continue
		}
		// Holocene's extra data (9 bytes), Jovian's with the minimum base fee (17).
		if m.Base == nil || m.Base.FeeRecipient != opstack.SequencerFeeVault || (len(m.Base.ExtraData) != 9 && len(m.Base.ExtraData) != 17) {
			t.Fatalf("index 0 base %+v", m.Base)
		}
		if len(m.Diff.Transactions) != 1 {
			t.Fatalf("index 0 holds %d transactions, want the L1-attributes deposit alone", len(m.Diff.Transactions))
		}
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(m.Diff.Transactions[0]); err != nil || !tx.IsDepositTx() || *tx.To() != opstack.L1Block {
			t.Fatalf("index 0 transaction: %v %v", err, tx)
		}
		r := m.Metadata.Receipts[tx.Hash()]
		if r["type"] != "0x7e" || r["depositReceiptVersion"] != "0x1" || r["depositNonce"] == nil {
			t.Fatalf("deposit receipt in metadata: %v", r)
		}
		break
	}

	// The subscription: a deposit notification.
	for {
		_, raw, err := sub.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Params struct {
				Result map[string]any `json:"result"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Params.Result == nil {
			continue
		}
		tx := m.Params.Result
		if tx["type"] != "0x7e" {
			continue
		}
		if tx["from"] != strings.ToLower(opstack.L1InfoDepositor.Hex()) || tx["mint"] != "0x0" || tx["depositReceiptVersion"] != "0x1" ||
			tx["sourceHash"] == nil || tx["status"] != "0x1" || tx["gasUsed"] == nil || tx["transactionIndex"] != "0x0" {
			t.Fatalf("deposit notification %v", tx)
		}
		return
	}
}
