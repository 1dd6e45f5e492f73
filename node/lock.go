package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// ErrDataDirInUse reports a datadir another process (or node) holds.
var ErrDataDirInUse = errors.New("another preconf is using")

// lockDataDir takes dir/LOCK, an advisory lock held for the node's life, so
// that a second node on the same datadir stops at once with a clear error
// instead of failing inside Pebble (whose own lock covers the chain store
// only, not the sequencer log or the wallet registry beside it). The kernel
// releases the lock when the process exits, even on kill -9.
func lockDataDir(dir string) (unlock func() error, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create datadir: %w", err)
	}
	lock := flock.New(filepath.Join(dir, "LOCK"))
	ok, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock datadir %s: %w", dir, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w %s (its %s is locked): stop it, or choose another --datadir", ErrDataDirInUse, dir, lock.Path())
	}
	return lock.Unlock, nil
}
