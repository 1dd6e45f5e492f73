// Package walrecord is the sequencer's write-ahead log record format: what
// a record holds and how records are framed in the log file. Each frame is
// the payload's length (4 bytes, big-endian), its CRC-32C (4 bytes,
// big-endian) and the payload, the record's RLP encoding. A log is a
// sequence of frames; reading stops at the first frame that is torn
// (shorter than its header says), oversized or corrupt (checksum or RLP),
// which is how an interrupted append looks: nothing after it was ever
// acknowledged.
//
// Records written by earlier builds must stay readable
// (sequencer/testdata/v1.wal): a new field goes at the end, tagged
// rlp:"optional".
package walrecord

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rlp"
)

// Record kinds. What each one means to recovery is the sequencer's
// (sequencer/wal.go); a kind's number never changes.
const (
	Flashblock      uint8 = 1
	Seal            uint8 = 2
	Admit           uint8 = 3
	Deposit         uint8 = 4
	Settings        uint8 = 5
	Snapshot        uint8 = 6
	Rewind          uint8 = 7
	FinalFlashblock uint8 = 8
)

// Record is one WAL record.
type Record struct {
	Kind       uint8
	Number     uint64
	Parent     common.Hash
	Index      uint64
	Time       uint64
	Coinbase   common.Address
	GasLimit   uint64
	Random     common.Hash
	BeaconRoot common.Hash
	Extra      []byte
	// Hash is a seal's block hash; in a flashblock record, the block's
	// payload id (its first 8 bytes). Zero in flashblock records written
	// by earlier builds.
	Hash common.Hash
	// Entries are the record's contents: a flashblock's changes in order
	// (each a transaction's binary encoding, or another kind of entry
	// starting with a byte no transaction encoding starts with), or one
	// RLP-encoded value.
	Entries [][]byte
	// BaseFee, when set, is the block's base fee as a dev method chose it;
	// nil follows EIP-1559.
	BaseFee *big.Int `rlp:"optional"`
}

// MaxSize bounds one record's payload (a flashblock of a full 1 GiB-gas
// block would not fit, but nothing near that is built).
const MaxSize = 256 << 20

// headerSize is a frame's length and checksum.
const headerSize = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Append appends rec's frame to buf.
func Append(buf []byte, rec *Record) ([]byte, error) {
	payload, err := rlp.EncodeToBytes(rec)
	if err != nil {
		return nil, err
	}
	if len(payload) > MaxSize {
		return nil, fmt.Errorf("wal record too large: %d bytes", len(payload))
	}
	var hdr [headerSize]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(hdr[4:], crc32.Checksum(payload, castagnoli))
	buf = append(buf, hdr[:]...)
	return append(buf, payload...), nil
}

// Read decodes frames from r up to the first one that is torn, oversized
// or corrupt, and returns the records and the offset after the last intact
// frame (where the next append goes once the rest is cut off).
func Read(r io.Reader) ([]Record, int64) {
	br := bufio.NewReaderSize(r, 1<<20)
	var (
		out  []Record
		good int64
		hdr  [headerSize]byte
	)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return out, good // the end, or a torn header
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n > MaxSize {
			return out, good
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			return out, good
		}
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
			return out, good
		}
		var rec Record
		if err := rlp.DecodeBytes(payload, &rec); err != nil {
			return out, good
		}
		out = append(out, rec)
		good += int64(headerSize + n)
	}
}
