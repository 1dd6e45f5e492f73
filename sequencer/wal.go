package sequencer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rlp"
)

// Record kinds.
const (
	// recFlashblock: one flashblock: the block's environment and the
	// entries applied to the open block since the previous flashblock, in
	// order. Written and synced before the flashblock is published.
	recFlashblock uint8 = 1
	// recSeal: the block built from the preceding flashblocks is being
	// sealed with hash Hash. Written before the block goes into the chain.
	recSeal uint8 = 2
	// recAdmit: a transaction accepted into the pool (the one entry).
	// Written and synced before eth_sendRawTransaction answers.
	recAdmit uint8 = 3
	// recDeposit: a user deposit injected for the next block of an
	// OP-stack chain (the one entry: the deposit transaction's encoding).
	// Written and synced before the injection is acknowledged.
	recDeposit uint8 = 4
	// recSettings: the dev methods' settings (settings.go), the one entry
	// RLP-encoded. Written and synced before a change takes effect, and
	// again at every rotation; the last one counts.
	recSettings uint8 = 5
	// recSnapshot: an evm_snapshot (snapshot.go), the one entry RLP-encoded;
	// every rotation logs the live ones again.
	recSnapshot uint8 = 6
	// recRewind: an evm_revert or anvil_reset (snapshot.go), written and
	// synced before the chain is rewound; recovery redoes it.
	recRewind uint8 = 7
)

// record is one WAL record (RLP-encoded inside a length and CRC frame).
// Records written by earlier builds must stay readable (testdata/v1.wal): a
// new field goes at the end, tagged rlp:"optional".
type record struct {
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
	// payload id (its first 8 bytes: a block rebuilt before its first
	// transaction gets a new one). Zero in flashblock records written by
	// earlier builds, whose id is derived from the parent (firstPayload).
	Hash common.Hash
	// Entries are the changes of the open block, each a transaction's
	// binary (EIP-2718) encoding. Another kind of entry must start with a
	// byte no transaction encoding starts with: cheats (cheat.go) start
	// with 0x80.
	Entries [][]byte
	// BaseFee, when set, is the block's base fee (a flashblock's with
	// index 0 whose base fee a dev method chose); nil follows EIP-1559.
	BaseFee *big.Int `rlp:"optional"`
}

// maxRecord bounds one record (a flashblock of a full 1 GiB-gas block would
// not fit, but nothing near that is built).
const maxRecord = 256 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WAL is an append-only, checksummed log of flashblocks and pool admissions.
// Appends are group-committed: concurrent appenders share one fsync.
type WAL struct {
	path string

	mu      sync.Mutex // file, written
	f       *os.File
	written uint64 // records written (not necessarily synced)

	syncMu sync.Mutex // serialises fsyncs
	synced uint64     // records known durable
}

// openWAL opens (creating) the log at path and returns its intact records.
// A torn or corrupt tail (a crash mid-append: never acknowledged) is cut off.
func openWAL(path string) (*WAL, []record, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open wal: %w", err)
	}
	recs, good, err := readRecords(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("truncate wal tail: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &WAL{path: path, f: f}, recs, nil
}

// readRecords decodes frames from the start of f and returns the records and
// the offset after the last intact one.
func readRecords(f *os.File) ([]record, int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var (
		out  []record
		good int64
		hdr  [8]byte
	)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return out, good, nil // EOF or torn header
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		sum := binary.BigEndian.Uint32(hdr[4:])
		if n > maxRecord {
			return out, good, nil
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return out, good, nil
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			return out, good, nil
		}
		var rec record
		if err := rlp.DecodeBytes(payload, &rec); err != nil {
			return out, good, nil
		}
		out = append(out, rec)
		good += int64(8 + n)
	}
}

func frame(buf []byte, rec *record) ([]byte, error) {
	payload, err := rlp.EncodeToBytes(rec)
	if err != nil {
		return nil, err
	}
	if len(payload) > maxRecord {
		return nil, fmt.Errorf("wal record too large: %d bytes", len(payload))
	}
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(hdr[4:], crc32.Checksum(payload, castagnoli))
	buf = append(buf, hdr[:]...)
	return append(buf, payload...), nil
}

// Append writes recs and returns once they are durable (fsync'd).
func (w *WAL) Append(recs ...*record) error {
	var buf []byte
	for _, r := range recs {
		var err error
		if buf, err = frame(buf, r); err != nil {
			return err
		}
	}
	w.mu.Lock()
	if w.f == nil {
		w.mu.Unlock()
		return errors.New("wal closed")
	}
	if _, err := w.f.Write(buf); err != nil {
		w.mu.Unlock()
		return fmt.Errorf("wal write: %w", err)
	}
	w.written++
	mine := w.written
	w.mu.Unlock()
	return w.syncTo(mine)
}

// syncTo makes every record up to seq durable. Whoever holds syncMu syncs
// everything written so far, so waiting appenders usually find their record
// already synced.
func (w *WAL) syncTo(seq uint64) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.synced >= seq {
		return nil
	}
	w.mu.Lock()
	f, target := w.f, w.written
	w.mu.Unlock()
	if f == nil {
		return errors.New("wal closed")
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal sync: %w", err)
	}
	w.synced = target
	return nil
}

// Rotate atomically replaces the log with recs (the pool's transactions
// after a block was sealed and synced): written to a temporary file, synced,
// renamed over the log, and the directory synced.
func (w *WAL) Rotate(recs func() []*record) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	var buf []byte
	for _, r := range recs() {
		var err error
		if buf, err = frame(buf, r); err != nil {
			return err
		}
	}
	tmp := w.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("wal rotate: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("wal rotate: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("wal rotate: %w", err)
	}
	if err := os.Rename(tmp, w.path); err != nil {
		f.Close()
		return fmt.Errorf("wal rotate: %w", err)
	}
	if d, err := os.Open(filepath.Dir(w.path)); err == nil {
		d.Sync()
		d.Close()
	}
	w.f.Close()
	w.f = f
	w.synced = w.written
	return nil
}

// Close closes the file.
func (w *WAL) Close() error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	return err
}
