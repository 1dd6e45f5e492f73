package sequencer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/preconf/preconf/sequencer/walrecord"
)

// Record kinds (the record format is walrecord's).
const (
	// recFlashblock: one flashblock: the block's environment and the
	// entries applied to the open block since the previous flashblock, in
	// order. Written and synced before the flashblock is published.
	recFlashblock = walrecord.Flashblock
	// recSeal: the block built from the preceding flashblocks is being
	// sealed with hash Hash. Written before the block goes into the chain
	// (synced first unless a final flashblock record precedes it).
	recSeal = walrecord.Seal
	// recAdmit: a transaction accepted into the pool (the one entry).
	// Written and synced before eth_sendRawTransaction answers (under
	// automine, synced by the mine that follows: Admit).
	recAdmit = walrecord.Admit
	// recDeposit: a user deposit injected for the next block of an
	// OP-stack chain (the one entry: the deposit transaction's encoding).
	// Written and synced before the injection is acknowledged.
	recDeposit = walrecord.Deposit
	// recSettings: the dev methods' settings (settings.go), the one entry
	// RLP-encoded. Written and synced before a change takes effect, and
	// again at every rotation; the last one counts.
	recSettings = walrecord.Settings
	// recSnapshot: an evm_snapshot (snapshot.go), the one entry RLP-encoded;
	// every rotation logs the live ones again.
	recSnapshot = walrecord.Snapshot
	// recRewind: an evm_revert or anvil_reset (snapshot.go), written and
	// synced before the chain is rewound; recovery redoes it.
	recRewind = walrecord.Rewind
	// recFinalFlashblock: a flashblock (as recFlashblock) after which the
	// block is sealed at once (a mine: evm_mine, anvil_mine, automine).
	// Synced before the flashblock is published, it is the seal's durable
	// point too: recovery seals the block right after replaying it, so the
	// seal record that follows is written without an fsync of its own and
	// only checks the replayed block's hash.
	recFinalFlashblock = walrecord.FinalFlashblock
)

// record is one WAL record. In a flashblock record, Hash is the block's
// payload id (a block rebuilt before its first transaction gets a new
// one; zero in records of earlier builds, whose id is derived from the
// parent: firstPayload) and Entries are the changes of the open block,
// each a transaction's binary (EIP-2718) encoding or a cheat (cheat.go,
// starting with 0x80, which no transaction encoding starts with).
type record = walrecord.Record

// WAL is an append-only, checksummed log of flashblocks and pool admissions.
// Appends are group-committed: concurrent appenders share one fsync.
type WAL struct {
	path string

	mu      sync.Mutex // file, written
	f       *os.File
	written uint64 // records written (not necessarily synced)
	size    int64  // bytes written

	syncMu     sync.Mutex // serialises fsyncs
	synced     uint64     // records known durable
	syncedSize int64      // bytes known durable (tests cut the log there)
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
	return &WAL{path: path, f: f, size: good, syncedSize: good}, recs, nil
}

// readRecords decodes the records from the start of f and returns them
// with the offset after the last intact one.
func readRecords(f *os.File) ([]record, int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	recs, good := walrecord.Read(f)
	return recs, good, nil
}

func frame(buf []byte, rec *record) ([]byte, error) { return walrecord.Append(buf, rec) }

// Append writes recs and returns once they are durable (fsync'd).
func (w *WAL) Append(recs ...*record) error {
	seq, err := w.Write(recs...)
	if err != nil {
		return err
	}
	return w.syncTo(seq)
}

// Write writes recs without waiting for them to be durable and returns
// their sequence number: a later Append, Sync or SyncTo(seq) makes them
// durable (one fsync covers every record written before it). Nothing that
// depends on them may be acknowledged before that.
func (w *WAL) Write(recs ...*record) (uint64, error) {
	var buf []byte
	for _, r := range recs {
		var err error
		if buf, err = frame(buf, r); err != nil {
			return 0, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, errors.New("wal closed")
	}
	if _, err := w.f.Write(buf); err != nil {
		return 0, fmt.Errorf("wal write: %w", err)
	}
	w.written++
	w.size += int64(len(buf))
	return w.written, nil
}

// Sync makes every record written so far durable; it returns at once when
// they are already.
func (w *WAL) Sync() error {
	w.mu.Lock()
	seq := w.written
	w.mu.Unlock()
	return w.syncTo(seq)
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
	f, target, size := w.f, w.written, w.size
	w.mu.Unlock()
	if f == nil {
		return errors.New("wal closed")
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal sync: %w", err)
	}
	w.synced, w.syncedSize = target, size
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
	w.size, w.syncedSize = int64(len(buf)), int64(len(buf))
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
