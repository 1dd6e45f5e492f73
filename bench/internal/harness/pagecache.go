package harness

// The big state's reads are meant to measure the nodes, not the disk. This
// VM pages out memory that has not been touched for about a second (DAMON
// reclaim: /sys/kernel/mm/damon/admin, action "pageout", minimum age 12
// aggregation intervals), so between runs most of a datadir leaves the page
// cache: fincore found 125 MiB of preconf's 2.1 GiB store resident before a
// run. From an empty page cache (drop_caches), one pinned round measured
// preconf's p99 at 1.08–6.03 ms (eth_getStorageAt at latest 6.03 ms, max
// 81 ms: the slots' snapshot is the larger part) against 0.83–1.07 ms after
// one read of the files (go run ./bench -bigstate -pin -rounds 1, quiet
// machine). A node that has been serving such a state keeps it in memory,
// so every file of the datadirs is read once before each node starts.

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// WarmDir reads every regular file under dir once (into the OS page cache)
// and returns the bytes read and the time taken.
func WarmDir(dir string) (int64, time.Duration, error) {
	start := time.Now()
	var total int64
	buf := make([]byte, 1<<20)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		total += n
		return err
	})
	return total, time.Since(start), err
}
