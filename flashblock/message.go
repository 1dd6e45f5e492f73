// Package flashblock is the flashblocks wire format (Base's, see
// docs/flashblocks-format.md and docs/streaming.md): the message's types,
// its encoding from a pending snapshot (the feed serves it), its decoding
// from a JSON text or brotli binary frame (the follower reads it), and the
// metadata parsed leniently on demand.
package flashblock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/andybalholm/brotli"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// PayloadID names the block a flashblock belongs to.
type PayloadID [8]byte

// String is the 0x-hex form.
func (p PayloadID) String() string { return hexutil.Encode(p[:]) }

// UnmarshalText accepts 0x-prefixed hex of exactly 8 bytes.
func (p *PayloadID) UnmarshalText(b []byte) error {
	raw, err := hexutil.Decode(string(b))
	if err != nil {
		return fmt.Errorf("payload_id: %w", err)
	}
	if len(raw) != len(p) {
		return fmt.Errorf("payload_id: want 8 bytes, got %d", len(raw))
	}
	copy(p[:], raw)
	return nil
}

// MarshalText is the 0x-hex form.
func (p PayloadID) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// Message is one feed message.
type Message struct {
	PayloadID PayloadID `json:"payload_id"`
	Index     uint64    `json:"index"`
	// Base is present only at index 0: the block's header inputs.
	Base *Base `json:"base,omitempty"`
	Diff Diff  `json:"diff"`
	// Metadata is documented as unstable: kept raw and parsed leniently on
	// demand (ParseMetadata); nothing here depends on it.
	Metadata json.RawMessage `json:"metadata,omitempty"`

	// Received is when the frame was read (set by Client; not on the wire).
	Received time.Time `json:"-"`
}

// Base holds the block's header inputs (index 0 only).
type Base struct {
	ParentBeaconBlockRoot common.Hash    `json:"parent_beacon_block_root"`
	ParentHash            common.Hash    `json:"parent_hash"`
	FeeRecipient          common.Address `json:"fee_recipient"`
	PrevRandao            common.Hash    `json:"prev_randao"`
	BlockNumber           hexutil.Uint64 `json:"block_number"`
	GasLimit              hexutil.Uint64 `json:"gas_limit"`
	Timestamp             hexutil.Uint64 `json:"timestamp"`
	ExtraData             hexutil.Bytes  `json:"extra_data"`
	BaseFeePerGas         *hexutil.Big   `json:"base_fee_per_gas"`
}

// Diff is what the flashblock adds: its new transactions, and the block's
// cumulative roots so far (claims of the builder, never trusted here).
type Diff struct {
	StateRoot       common.Hash         `json:"state_root"`
	ReceiptsRoot    common.Hash         `json:"receipts_root"`
	LogsBloom       types.Bloom         `json:"logs_bloom"`
	GasUsed         hexutil.Uint64      `json:"gas_used"`
	BlockHash       common.Hash         `json:"block_hash"`
	Transactions    []hexutil.Bytes     `json:"transactions"`
	Withdrawals     []*types.Withdrawal `json:"withdrawals"`
	WithdrawalsRoot common.Hash         `json:"withdrawals_root"`
	BlobGasUsed     *hexutil.Uint64     `json:"blob_gas_used,omitempty"`
}

// Number is the block number for index 0 (from base); 0 otherwise.
func (f *Message) Number() uint64 {
	if f.Base == nil {
		return 0
	}
	return uint64(f.Base.BlockNumber)
}

// TxHashes are the hashes of the new transactions: the keccak of each
// EIP-2718 encoding, which is the transaction hash for every type.
func (f *Message) TxHashes() []common.Hash {
	out := make([]common.Hash, len(f.Diff.Transactions))
	for i, raw := range f.Diff.Transactions {
		out[i] = crypto.Keccak256Hash(raw)
	}
	return out
}

// Errors of Decode.
var (
	ErrEmptyFrame = errors.New("empty frame")
	ErrBadBrotli  = errors.New("binary frame is not brotli-compressed JSON")
)

// MaxMessage bounds one message: a JSON frame, or a binary frame once
// decompressed (a brotli bomb guard).
const MaxMessage = 8 << 20

// Decode parses one frame: JSON if the payload is UTF-8 starting with '{',
// otherwise brotli-compressed JSON.
func Decode(frame []byte) (*Message, error) {
	data := bytes.TrimLeft(frame, " \t\r\n")
	if len(data) == 0 {
		return nil, ErrEmptyFrame
	}
	if data[0] != '{' || !utf8.Valid(data) {
		r := io.LimitReader(brotli.NewReader(bytes.NewReader(frame)), MaxMessage+1)
		plain, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadBrotli, err)
		}
		if len(plain) > MaxMessage {
			return nil, fmt.Errorf("%w: larger than %d bytes decompressed", ErrBadBrotli, MaxMessage)
		}
		data = bytes.TrimLeft(plain, " \t\r\n")
		if len(data) == 0 || data[0] != '{' {
			return nil, ErrBadBrotli
		}
	}
	fb := new(Message)
	if err := json.Unmarshal(data, fb); err != nil {
		return nil, fmt.Errorf("flashblock JSON: %w", err)
	}
	if err := fb.validate(); err != nil {
		return nil, err
	}
	return fb, nil
}

func (f *Message) validate() error {
	if f.Index == 0 && f.Base == nil {
		return errors.New("flashblock index 0 without base")
	}
	if f.Index > 0 && f.Base != nil {
		// Tolerated by the format (later messages omit it), but a base on a
		// later index would be ambiguous; ignore it.
		f.Base = nil
	}
	if f.Base != nil && f.Base.BaseFeePerGas == nil {
		return errors.New("flashblock base without base_fee_per_gas")
	}
	return nil
}

// Encode is the JSON text form of a decoded message (tests and tools
// relay or alter messages with it; a node encodes its snapshots with
// EncodeSnapshot).
func Encode(f *Message) ([]byte, error) { return json.Marshal(f) }

// brotliWriters are reused: a writer's tables cost far more to set up than
// a flashblock costs to compress.
var brotliWriters = sync.Pool{New: func() any { return brotli.NewWriterLevel(nil, 1) }}

// Compress is the brotli binary-frame form of a JSON message, at level 1:
// on flashblock messages, level 4 took about three times as long for
// output a few percent smaller.
func Compress(msg []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(msg)/3 + 64)
	w := brotliWriters.Get().(*brotli.Writer)
	w.Reset(&buf)
	w.Write(msg)
	w.Close()
	brotliWriters.Put(w)
	return buf.Bytes()
}
